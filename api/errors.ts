import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ZodError } from "zod";

/**
 * The one error body of the API, for every 4xx and 5xx:
 * `{ "error": { "code": "...", "message": "...", "field"?: "...", "issues"?: [...] } }`.
 */
export interface ErrorBody {
  error: {
    code: string;
    message: string;
    field?: string;
    issues?: { field: string; message: string }[];
  };
}

export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new ApiError(404, "not_found", `${what} not found`);
export const badRequest = (message: string, field?: string) =>
  new ApiError(400, "invalid_request", message, field);

export function errorBody(code: string, message: string, extra: Partial<ErrorBody["error"]> = {}): ErrorBody {
  return { error: { code, message, ...extra } };
}

export function validationErrorBody(error: ZodError, where: string): ErrorBody {
  const issues = error.issues.map((i) => ({
    field: i.path.length ? i.path.join(".") : where,
    message: i.message,
  }));
  const first = issues[0] ?? { field: where, message: "invalid" };
  return errorBody("validation_error", `${first.field}: ${first.message}`, { field: first.field, issues });
}

export function renderError(err: unknown, c: Context, log?: { error: (o: object, m: string) => void }) {
  if (err instanceof ApiError) {
    return c.json(errorBody(err.code, err.message, err.field ? { field: err.field } : {}), err.status);
  }
  if (err instanceof HTTPException) {
    const status = err.status as ContentfulStatusCode;
    const code = status === 413 ? "payload_too_large" : status === 401 ? "unauthorized" : "http_error";
    return c.json(errorBody(code, err.message || "request failed"), status);
  }
  if (err instanceof SyntaxError) {
    return c.json(errorBody("invalid_json", `request body is not valid JSON: ${err.message}`), 400);
  }
  log?.error({ err }, "unhandled error");
  return c.json(errorBody("internal_error", "internal server error"), 500);
}
