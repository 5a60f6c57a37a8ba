import { OpenAPIHono } from "@hono/zod-openapi";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { validationHook } from "../validation.ts";
import { connectionHandlers } from "./handlers.ts";
import * as routes from "./routes.ts";

/** Mounted at /v3/connections (admin keys). Literal paths (/list) are registered before /{provider}. */
export function connectionsApp(deps: ApiDeps) {
  const h = connectionHandlers(deps);
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
    .openapi(routes.list, h.list)
    .openapi(routes.getByTag, h.getByTag)
    .openapi(routes.importNow, h.importNow)
    .openapi(routes.listDocuments, h.listDocuments)
    .openapi(routes.resources, h.resources)
    .openapi(routes.configure, h.configure)
    .openapi(routes.pickerLink, h.pickerLink)
    .openapi(routes.create, h.create)
    .openapi(routes.getById, h.getById)
    .openapi(routes.runs, h.runs)
    .openapi(routes.syncOne, h.syncOne)
    .openapi(routes.remove, h.remove);
}
