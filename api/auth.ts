import { createMiddleware } from "hono/factory";
import { type ApiKeyRow, findActiveKey } from "../store/api-keys.ts";
import type { Database } from "../store/db.ts";
import { ApiError } from "./errors.ts";
import { endpointAllowed, SCOPED_KEY_ENDPOINTS, Scope } from "./scope.ts";

export type AuthEnv = { Variables: { apiKey: ApiKeyRow; scope: Scope } };

/**
 * Every request carries `Authorization: Bearer <key>`; unknown, disabled or expired keys get 401.
 * A scoped key may only call its allowed endpoints (403 otherwise) and only inside its container
 * tags: the `scope` set here is what every handler applies to its store queries.
 */
export function bearerAuth(db: Database) {
  return createMiddleware<AuthEnv>(async (c, next) => {
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match?.[1]) {
      throw new ApiError(401, "unauthorized", "missing bearer token: send 'Authorization: Bearer <API key>'");
    }
    const key = await findActiveKey(db, match[1]);
    if (!key) throw new ApiError(401, "unauthorized", "invalid, expired or disabled API key");
    c.set("apiKey", key);
    c.set("scope", key.kind === "admin" ? Scope.all : new Scope(key.containerTags));
    await next();
  });
}

/** After rate limiting: a scoped key outside its endpoints is refused before any handler runs. */
export function endpointGuard() {
  return createMiddleware<AuthEnv>(async (c, next) => {
    const key = c.get("apiKey");
    if (key.kind !== "admin") {
      const allowed = key.allowedEndpoints?.length ? key.allowedEndpoints : SCOPED_KEY_ENDPOINTS;
      if (!endpointAllowed(c.req.path, allowed)) {
        throw new ApiError(403, "forbidden", `this key may not call ${c.req.path}`);
      }
    }
    await next();
  });
}

/** Only admin keys may manage keys and settings. */
export function requireAdmin() {
  return createMiddleware<AuthEnv>(async (c, next) => {
    if (c.get("apiKey").kind !== "admin") throw new ApiError(403, "forbidden", "this needs an admin key");
    await next();
  });
}
