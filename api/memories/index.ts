import { OpenAPIHono } from "@hono/zod-openapi";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { validationHook } from "../validation.ts";
import { createMemoryHandlers } from "./handlers.ts";
import * as routes from "./routes.ts";

/** Mounted at /v4/memories. */
export function memoriesApp(deps: ApiDeps) {
  const h = createMemoryHandlers(deps);
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
    .openapi(routes.createMemories, h.create)
    .openapi(routes.listMemories, h.list)
    .openapi(routes.forgetMatching, h.forgetMatching)
    .openapi(routes.getMemory, h.get)
    .openapi(routes.forgetMemory, h.forget)
    .openapi(routes.updateMemory, h.update);
}
