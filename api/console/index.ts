import { OpenAPIHono } from "@hono/zod-openapi";
import { requireAdmin } from "../auth.ts";
import type { AuthFailures } from "../auth-throttle.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { validationHook } from "../validation.ts";
import { createConsoleHandlers } from "./handlers.ts";
import * as routes from "./routes.ts";
import { ConsoleSessions } from "./session.ts";

export { ConsoleSessions } from "./session.ts";
export { consoleStaticApp } from "./static.ts";

export function createConsoleSessions(deps: ApiDeps): ConsoleSessions {
  return new ConsoleSessions(deps.db, deps.secrets, {
    sessionSecret: deps.config.SESSION_SECRET,
    // PUBLIC_URL may only be known once the server listens (PORT=0), so it is read per request.
    secureCookie: (c) => c.get("client")?.https || (deps.config.PUBLIC_URL?.startsWith("https:") ?? false),
  });
}

/** Mounted at /v3/console before authentication: signing in and out needs no key. */
export function consoleSessionApp(deps: ApiDeps, sessions: ConsoleSessions, failures: AuthFailures) {
  const h = createConsoleHandlers(deps, sessions, failures);
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
    .openapi(routes.signIn, h.signIn)
    .openapi(routes.getSession, h.getSession)
    .openapi(routes.signOut, h.signOut);
}

/** Mounted at /v3/console behind authentication: console users and the console's settings (admin only). */
export function consoleAdminApp(deps: ApiDeps, sessions: ConsoleSessions, failures: AuthFailures) {
  const h = createConsoleHandlers(deps, sessions, failures);
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use("*", requireAdmin());
  return app
    .openapi(routes.createUser, h.createUser)
    .openapi(routes.listUsers, h.listUsers)
    .openapi(routes.disableUser, h.disableUser)
    .openapi(routes.getConfig, h.getConfig);
}
