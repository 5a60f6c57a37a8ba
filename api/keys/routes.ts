import { createRoute, z } from "@hono/zod-openapi";
import { ErrorResponse, errorResponses, jsonBody, jsonResponse, notFoundResponse } from "../schemas.ts";
import {
  CreatedKey,
  CreateKeyBody,
  IdParam,
  KeyInfo,
  KeyNoticeEntry,
  ScopedKeyBody,
  ScopedKeyResponse,
  UpdateKeyBody,
} from "./schemas.ts";

const forbidden = {
  403: { description: "Not an admin key", content: { "application/json": { schema: ErrorResponse } } },
} as const;
const conflict = {
  409: {
    description: "The change would lock the operator out (the MEMORY_ADMIN_KEY key, the last admin key)",
    content: { "application/json": { schema: ErrorResponse } },
  },
} as const;
const security = [{ bearer: [] }];
const tags = ["auth"];
const Success = z.object({ success: z.literal(true) });

/** Mounted at /v3/auth/scoped-key (the SDK's call). */
export const createScopedKey = createRoute({
  method: "post",
  path: "/",
  tags,
  security,
  summary: "Create an API key limited to some container tags (admin only)",
  request: jsonBody(ScopedKeyBody),
  responses: {
    200: jsonResponse(ScopedKeyResponse, "The new key"),
    ...errorResponses,
    ...forbidden,
  },
});

export const deleteScopedKey = createRoute({
  method: "delete",
  path: "/{id}",
  tags,
  security,
  summary: "Disable a scoped key at once (its documents stay) (admin only)",
  request: { params: IdParam },
  responses: {
    200: jsonResponse(Success, "Disabled"),
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
  },
});

/** Mounted at /v3/auth/keys (the console's keys page). */
export const createKey = createRoute({
  method: "post",
  path: "/",
  tags,
  security,
  summary:
    "Create a scoped or admin key with expiry, rate limit and contact email (admin only); the secret is returned once",
  request: jsonBody(CreateKeyBody),
  responses: {
    200: jsonResponse(CreatedKey, "The new key and its secret"),
    ...errorResponses,
    ...forbidden,
  },
});

export const listKeys = createRoute({
  method: "get",
  path: "/",
  tags,
  security,
  summary: "Every key, newest first, with its status and expiry notices; never a secret (admin only)",
  responses: {
    200: jsonResponse(z.object({ keys: z.array(KeyInfo) }), "Keys"),
    ...errorResponses,
    ...forbidden,
  },
});

export const updateKey = createRoute({
  method: "patch",
  path: "/{id}",
  tags,
  security,
  summary: "Rename a key, set its contact email or move its expiry (admin only)",
  request: { params: IdParam, ...jsonBody(UpdateKeyBody) },
  responses: {
    200: jsonResponse(KeyInfo, "The key"),
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
    ...conflict,
  },
});

export const disableKey = createRoute({
  method: "delete",
  path: "/{id}",
  tags,
  security,
  summary: "Disable a key at once; requests with it get 401 from then on (admin only)",
  request: { params: IdParam },
  responses: {
    200: jsonResponse(Success, "Disabled (also when it already was)"),
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
    ...conflict,
  },
});

/** Mounted at /v3/auth/key-notices. */
export const listKeyNotices = createRoute({
  method: "get",
  path: "/",
  tags,
  security,
  summary: "Key-expiry notices sent or logged, newest first (admin only)",
  responses: {
    200: jsonResponse(z.object({ notices: z.array(KeyNoticeEntry) }), "Notices"),
    ...errorResponses,
    ...forbidden,
  },
});
