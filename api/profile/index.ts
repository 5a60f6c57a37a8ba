import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { buildProfile } from "../../services/profile.ts";
import { SearchRequestError } from "../../services/search-documents.ts";
import type { FilterNode } from "../../store/filters.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { badRequest } from "../errors.ts";
import { ContainerTag, errorResponses, Filters } from "../schemas.ts";
import { validationHook } from "../validation.ts";

const ProfileBody = z
  .object({
    containerTag: ContainerTag,
    q: z.string().trim().min(1).max(10_000).optional().openapi({ description: "Also search the memories" }),
    threshold: z.number().min(0).max(1).default(0),
    filters: Filters.optional(),
  })
  .openapi("ProfileRequest");

const ProfileResult = z
  .object({
    profile: z.object({
      static: z.array(z.string()).openapi({ description: "Long-lived facts (memories marked isStatic)" }),
      dynamic: z.array(z.string()).openapi({ description: "The most recent other memories" }),
    }),
    searchResults: z
      .object({ results: z.array(z.unknown()), timing: z.number(), total: z.number() })
      .optional(),
  })
  .openapi("Profile");

const profileRoute = createRoute({
  method: "post",
  path: "/",
  tags: ["memories"],
  security: [{ bearer: [] }],
  summary: "A container's profile: static facts and recent memories, optionally with a memory search",
  request: { body: { content: { "application/json": { schema: ProfileBody } }, required: true } },
  responses: {
    200: { description: "The profile", content: { "application/json": { schema: ProfileResult } } },
    ...errorResponses,
  },
});

/** Mounted at /v4/profile. */
export function profileApp(deps: ApiDeps) {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(profileRoute, async (c) => {
    const body = c.req.valid("json");
    const scope = c.get("scope");
    scope.check([body.containerTag]);
    try {
      const profile = await buildProfile(
        deps,
        { ...body, filters: body.filters as FilterNode | undefined },
        scope.tags,
      );
      return c.json(profile, 200);
    } catch (error) {
      if (error instanceof SearchRequestError) throw badRequest(error.message, error.field);
      throw error;
    }
  });
}
