import type { Hook } from "@hono/zod-openapi";
import { validationErrorBody } from "./errors.ts";

/** Every validation failure becomes a 400 in the one error shape, naming the field that failed. */
// biome-ignore lint/suspicious/noExplicitAny: the hook is shared by routes of every shape
export const validationHook: Hook<any, any, any, any> = (result, c) => {
  if (!result.success) {
    return c.json(validationErrorBody(result.error, result.target), 400);
  }
};
