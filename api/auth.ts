import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { ApiKeyRow } from "../store/api-keys.ts";
import type { AuthFailures, ClientEnv } from "./auth-throttle.ts";
import { ApiError } from "./errors.ts";
import { endpointAllowed, KeyScope, SCOPED_KEY_ENDPOINTS } from "./key-scope.ts";

export type AuthEnv = { Variables: { apiKey: ApiKeyRow; scope: KeyScope } & ClientEnv["Variables"] };

/**
 * Authenticates a request by its console session cookie (api/console/session.ts): the admin identity,
 * undefined without a cookie, or a thrown 401 (bad or expired session) / 403 (missing CSRF token).
 */
export type SessionAuth = (c: Context) => Promise<ApiKeyRow | undefined>;

/**
 * Every request carries `Authorization: Bearer <key>`; unknown, disabled or expired keys get 401, and an
 * address that sent too many of them gets 429 for a while (api/auth-throttle.ts).
 * A scoped key may only call its allowed endpoints (403 otherwise) and only inside its container
 * tags: the `scope` set here is what every handler applies to its store queries.
 */
const unknownKey = () => new ApiError(401, "unauthorized", "invalid, expired or disabled API key");

export function bearerAuth(failures: AuthFailures, session?: SessionAuth) {
  return createMiddleware<AuthEnv>(async (c, next) => {
    // The web console: no Authorization header, a session cookie instead (an admin identity).
    const fromSession = !c.req.header("authorization") && session ? await session(c) : undefined;
    if (fromSession) {
      c.set("apiKey", fromSession);
      c.set("scope", KeyScope.all);
      return next();
    }
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match?.[1]) {
      throw new ApiError(401, "unauthorized", "missing bearer token: send 'Authorization: Bearer <API key>'");
    }
    // The error is made only when it is thrown: an Error captures a stack, which every request would pay for.
    const key = await failures.authenticate(c, match[1], unknownKey);
    c.set("apiKey", key);
    c.set("scope", key.kind === "admin" ? KeyScope.all : new KeyScope(key.containerTags));
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
