import { OpenAPIHono } from "@hono/zod-openapi";
import { requireAdmin } from "../auth.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { validationHook } from "../validation.ts";
import { createWebhookHandlers } from "./handlers.ts";
import * as routes from "./routes.ts";

/** Mounted at /v3/webhooks; admin keys only (scoped keys are refused by the endpoint guard too). */
export function webhooksApp(deps: ApiDeps) {
  const h = createWebhookHandlers(deps);
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use("*", requireAdmin());
  return app
    .openapi(routes.createWebhook, h.create)
    .openapi(routes.listWebhooks, h.list)
    .openapi(routes.getWebhook, h.get)
    .openapi(routes.updateWebhook, h.update)
    .openapi(routes.deleteWebhook, h.remove)
    .openapi(routes.testWebhook, h.test)
    .openapi(routes.listWebhookDeliveries, h.deliveries);
}
