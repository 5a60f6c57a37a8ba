// The pages a person's browser reaches without an API key: the OAuth callback (authenticated by the
// one-time state) and the hosted picker (authenticated by its link token).

import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { ConnectorAuthError } from "../../connectors/errors.ts";
import {
  browseForPicker,
  type ConnectionDeps,
  ConnectionSetupError,
  completeAuthorization,
  connectionForPicker,
  savePickerSelection,
} from "../../services/connections.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { errorResponses } from "../schemas.ts";
import { validationHook } from "../validation.ts";
import { connectionDeps } from "./deps.ts";
import { pickerPage, resultPage } from "./picker-page.ts";

const html = (description: string) => ({ description, content: { "text/html": { schema: z.string() } } });

const callback = createRoute({
  method: "get",
  path: "/oauth/callback",
  tags: ["connections"],
  summary: "Where the provider's consent page returns (register this URL as the OAuth redirect URI)",
  request: {
    query: z.object({
      state: z.string().max(200).optional(),
      code: z.string().max(4000).optional(),
      error: z.string().max(500).optional(),
    }),
  },
  responses: {
    200: html("A result page"),
    302: { description: "To the picker or the caller's redirectUrl" },
  },
});

const TokenQuery = z.object({ t: z.string().max(200).optional() });
const IdParam = z.object({ connectionId: z.string().min(1).max(100) });

const picker = createRoute({
  method: "get",
  path: "/{connectionId}/picker",
  tags: ["connections"],
  summary: "The hosted picker: browse the drive, tick folders and files, save (link from the OAuth flow)",
  request: { params: IdParam, query: TokenQuery },
  responses: { 200: html("The picker page"), 404: html("Unknown or expired link") },
});

const PickedItem = z.object({
  id: z.string().min(1).max(500),
  name: z.string().max(1000),
  kind: z.enum(["folder", "file"]),
  mimeType: z.string().max(200).optional(),
});

const pickerItems = createRoute({
  method: "get",
  path: "/{connectionId}/picker/items",
  tags: ["connections"],
  summary: "The folders and files inside a folder, for the picker page",
  request: { params: IdParam, query: TokenQuery.extend({ parent: z.string().max(500).optional() }) },
  responses: {
    200: {
      description: "Items",
      content: { "application/json": { schema: z.object({ items: z.array(PickedItem) }) } },
    },
    ...errorResponses,
  },
});

const pickerSave = createRoute({
  method: "post",
  path: "/{connectionId}/picker/selection",
  tags: ["connections"],
  summary: "Save the picked folders and files; the connection syncs only those",
  request: {
    params: IdParam,
    query: TokenQuery,
    body: {
      content: { "application/json": { schema: z.object({ items: z.array(PickedItem).max(1000) }) } },
      required: true,
    },
  },
  responses: {
    200: {
      description: "Saved",
      content: {
        "application/json": { schema: z.object({ saved: z.number(), redirectTo: z.string().optional() }) },
      },
    },
    ...errorResponses,
  },
});

/** Mounted at /v3/connections before the key-checking API, so browsers reach it without a key. */
export function connectionBrowserApp(deps: ApiDeps) {
  const service = (): ConnectionDeps => connectionDeps(deps);
  const linkedConnection = async (connectionId: string, token: string | undefined) => {
    const connection = await connectionForPicker(service(), connectionId, token);
    if (!connection) throw new ApiError(404, "not_found", "this picker link is unknown or expired");
    return connection;
  };

  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
    .openapi(callback, async (c) => {
      let outcome: Awaited<ReturnType<typeof completeAuthorization>>;
      try {
        outcome = await completeAuthorization(service(), c.req.valid("query"));
      } catch (error) {
        if (!(error instanceof ConnectorAuthError)) throw error;
        outcome = { kind: "refused", message: error.message };
      }
      if (outcome.kind === "picker") return c.redirect(outcome.pickerUrl, 302);
      if (outcome.redirectTo) return c.redirect(outcome.redirectTo, 302);
      if (outcome.kind === "refused") return c.html(resultPage("Not connected", outcome.message), 400);
      return c.html(
        resultPage(
          "Connected",
          `The ${outcome.connection.provider} connection is syncing. You can close this window.`,
        ),
        200,
      );
    })
    .openapi(picker, async (c) => {
      const { connectionId } = c.req.valid("param");
      const { t } = c.req.valid("query");
      const connection = await connectionForPicker(service(), connectionId, t);
      if (!connection)
        return c.html(resultPage("Link expired", "This picker link is unknown or expired."), 404);
      return c.html(pickerPage({ connection, token: t as string }), 200);
    })
    .openapi(pickerItems, async (c) => {
      const { connectionId } = c.req.valid("param");
      const q = c.req.valid("query");
      const connection = await linkedConnection(connectionId, q.t);
      try {
        const items = await browseForPicker(service(), connection, q.parent ?? null);
        return c.json({ items }, 200);
      } catch (error) {
        if (error instanceof ConnectorAuthError)
          throw new ApiError(
            401,
            "unauthorized",
            `the provider refused the connection's access: ${error.message}`,
          );
        if (error instanceof ConnectionSetupError) throw new ApiError(400, "validation_error", error.message);
        throw error;
      }
    })
    .openapi(pickerSave, async (c) => {
      const { connectionId } = c.req.valid("param");
      const connection = await linkedConnection(connectionId, c.req.valid("query").t);
      const { items } = c.req.valid("json");
      const saved = await savePickerSelection(service(), connection, items);
      return c.json(
        { saved: items.length, ...(saved.redirectTo ? { redirectTo: saved.redirectTo } : {}) },
        200,
      );
    });
}
