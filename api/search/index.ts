import { OpenAPIHono } from "@hono/zod-openapi";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { validationHook } from "../validation.ts";
import { createSearchHandlers } from "./handlers.ts";
import * as routes from "./routes.ts";

/** Mounted at /v3/search: documents with their matching chunks. */
export function searchApp(deps: ApiDeps) {
  const h = createSearchHandlers(deps);
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(
    routes.searchDocuments,
    h.searchDocuments,
  );
}

/** Mounted at /v4/search: memories and/or chunks. */
export function searchV4App(deps: ApiDeps) {
  const h = createSearchHandlers(deps);
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(
    routes.searchMemories,
    h.searchMemories,
  );
}
