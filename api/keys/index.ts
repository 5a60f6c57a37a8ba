import { OpenAPIHono } from "@hono/zod-openapi";
import { requireAdmin } from "../auth.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { validationHook } from "../validation.ts";
import { createKeyHandlers } from "./handlers.ts";
import * as routes from "./routes.ts";

// Admin keys only; scoped keys are refused before these by the endpoint guard too (not in their prefixes).

/** Mounted at /v3/auth/scoped-key: the SDK's way to make a key limited to container tags. */
export function scopedKeysApp(deps: ApiDeps) {
  const h = createKeyHandlers(deps);
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use("*", requireAdmin());
  return app.openapi(routes.createScopedKey, h.createScoped).openapi(routes.deleteScopedKey, h.deleteScoped);
}

/** Mounted at /v3/auth/keys: every key, for the console's keys page. */
export function keysApp(deps: ApiDeps) {
  const h = createKeyHandlers(deps);
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use("*", requireAdmin());
  return app
    .openapi(routes.createKey, h.create)
    .openapi(routes.listKeys, h.list)
    .openapi(routes.updateKey, h.update)
    .openapi(routes.disableKey, h.disable);
}

/** Mounted at /v3/auth/key-notices: key-expiry notices sent or logged. */
export function keyNoticesApp(deps: ApiDeps) {
  const h = createKeyHandlers(deps);
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use("*", requireAdmin());
  return app.openapi(routes.listKeyNotices, h.notices);
}
