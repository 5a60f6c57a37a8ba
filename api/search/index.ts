import { OpenAPIHono } from "@hono/zod-openapi";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { validationHook } from "../validation.ts";
import { createSearchHandlers } from "./handlers.ts";
import * as routes from "./routes.ts";

export function searchApp(deps: ApiDeps) {
  const h = createSearchHandlers(deps);
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(
    routes.searchDocuments,
    h.searchDocuments,
  );
}
