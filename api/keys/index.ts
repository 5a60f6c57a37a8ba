import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { createKey, disableScopedKey } from "../../store/api-keys.ts";
import { requireAdmin } from "../auth.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { notFound } from "../errors.ts";
import { ContainerTag, ErrorResponse, errorResponses, notFoundResponse } from "../schemas.ts";
import { SCOPED_KEY_ENDPOINTS } from "../scope.ts";
import { validationHook } from "../validation.ts";

/** Scoped keys live this long unless `expiresInDays` says otherwise. */
export const DEFAULT_SCOPED_KEY_DAYS = 365;

export const ScopedKeyBody = z
  .object({
    containerTag: ContainerTag,
    containerTags: z
      .array(ContainerTag)
      .max(100)
      .optional()
      .openapi({ description: "More container tags for the same key, besides containerTag" }),
    name: z.string().trim().min(1).max(200).optional(),
    expiresInDays: z.number().int().min(1).max(365).default(DEFAULT_SCOPED_KEY_DAYS),
    rateLimitMax: z.number().int().min(1).max(10_000).default(500),
    rateLimitTimeWindow: z
      .number()
      .int()
      .min(1)
      .max(3_600_000)
      .default(60_000)
      .openapi({ description: "Window of the rate limit, in milliseconds" }),
  })
  .strict()
  .openapi("ScopedKeyRequest");

export const ScopedKeyResponse = z
  .object({
    key: z.string().openapi({ description: "The secret: shown once, only its hash is stored" }),
    id: z.string(),
    name: z.string(),
    containerTag: z.string(),
    containerTags: z.array(z.string()),
    expiresAt: z.string(),
    allowedEndpoints: z.array(z.string()),
    rateLimitMax: z.number(),
    rateLimitTimeWindow: z.number(),
  })
  .openapi("ScopedKey");

const forbidden = {
  403: { description: "Not an admin key", content: { "application/json": { schema: ErrorResponse } } },
} as const;
const security = [{ bearer: [] }];
const tags = ["auth"];

const createScopedKey = createRoute({
  method: "post",
  path: "/",
  tags,
  security,
  summary: "Create an API key limited to some container tags (admin only)",
  request: { body: { content: { "application/json": { schema: ScopedKeyBody } }, required: true } },
  responses: {
    200: { description: "The new key", content: { "application/json": { schema: ScopedKeyResponse } } },
    ...errorResponses,
    ...forbidden,
  },
});

const deleteScopedKey = createRoute({
  method: "delete",
  path: "/{id}",
  tags,
  security,
  summary: "Disable a scoped key at once (its documents stay) (admin only)",
  request: { params: z.object({ id: z.string().min(1).max(100) }) },
  responses: {
    200: {
      description: "Disabled",
      content: { "application/json": { schema: z.object({ success: z.literal(true) }) } },
    },
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
  },
});

/** Mounted at /v3/auth/scoped-key. */
export function scopedKeysApp(deps: ApiDeps) {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use("*", requireAdmin());
  return app
    .openapi(createScopedKey, async (c) => {
      const body = c.req.valid("json");
      const containerTags = [...new Set([body.containerTag, ...(body.containerTags ?? [])])];
      const expiresAt = new Date(Date.now() + body.expiresInDays * 86_400_000);
      const { key, secret } = await createKey(deps.db, {
        name: body.name ?? `scoped_${body.containerTag}`,
        kind: "scoped",
        containerTags,
        allowedEndpoints: [...SCOPED_KEY_ENDPOINTS],
        rateLimitMax: body.rateLimitMax,
        rateLimitWindowMs: body.rateLimitTimeWindow,
        expiresAt,
      });
      return c.json(
        {
          key: secret,
          id: key.id,
          name: key.name,
          containerTag: body.containerTag,
          containerTags,
          expiresAt: expiresAt.toISOString(),
          allowedEndpoints: [...SCOPED_KEY_ENDPOINTS],
          rateLimitMax: body.rateLimitMax,
          rateLimitTimeWindow: body.rateLimitTimeWindow,
        },
        200,
      );
    })
    .openapi(deleteScopedKey, async (c) => {
      if (!(await disableScopedKey(deps.db, c.req.valid("param").id))) throw notFound("scoped key");
      return c.json({ success: true as const }, 200);
    });
}
