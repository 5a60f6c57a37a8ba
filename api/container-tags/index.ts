import { OpenAPIHono } from "@hono/zod-openapi";
import { requireAdmin } from "../auth.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { validationHook } from "../validation.ts";
import { createContainerTagHandlers } from "./handlers.ts";
import * as routes from "./routes.ts";

/** Mounted at /v3/container-tags; admin keys only (scoped keys are refused by the endpoint guard too). */
export function containerTagsApp(deps: ApiDeps) {
  const h = createContainerTagHandlers(deps);
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use("*", requireAdmin());
  // The list before /{containerTag}, which would take "list" for a tag.
  return app
    .openapi(routes.listContainerTags, h.list)
    .openapi(routes.getContainerTag, h.get)
    .openapi(routes.updateContainerTag, h.update)
    .openapi(routes.exportContainerTag, h.exportTag)
    .openapi(routes.importContainerTag, h.importTag)
    .openapi(routes.deleteContainerTag, h.remove);
}
