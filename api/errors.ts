import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ZodError } from "zod";
import { CustomIdTakenError, pgErrorCode, SharedDocumentError } from "../store/documents.ts";

/**
 * The one error body of the API, for every 4xx and 5xx:
 * `{ "error": "<message>", "code": "...", "field"?: "...", "issues"?: [...] }`. `error` is the message, a string,
 * as in Supermemory's OpenAPI document (its ErrorResponse, which SDK 5 checks every error against); `code`,
 * `field` and `issues` are ours, beside it, for clients that act on the kind of error.
 * Codes: 400 validation_error | invalid_request | invalid_json, 401 unauthorized, 403 forbidden,
 * 404 not_found (also an unknown route or method), 409 conflict, 413 payload_too_large, 429 rate_limited,
 * 500 internal_error (never with a stack trace or SQL).
 */
export interface ErrorBody {
  error: string;
  code: string;
  field?: string;
  issues?: { field: string; message: string }[];
}

export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly field?: string,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new ApiError(404, "not_found", `${what} not found`);
export const badRequest = (message: string, field?: string) =>
  new ApiError(400, "invalid_request", message, field);

export function errorBody(
  code: string,
  message: string,
  extra: Pick<ErrorBody, "field" | "issues"> = {},
): ErrorBody {
  return { error: message, code, ...extra };
}

export function validationErrorBody(error: ZodError, where: string): ErrorBody {
  const issues = error.issues.map((i) => ({
    field: i.path.length ? i.path.join(".") : where,
    message: i.message,
  }));
  const first = issues[0] ?? { field: where, message: "invalid" };
  return errorBody("validation_error", `${first.field}: ${first.message}`, { field: first.field, issues });
}

export function renderError(
  err: unknown,
  c: Context,
  log?: { error: (o: object, m: string) => void; warn: (o: object, m: string) => void },
) {
  if (err instanceof ApiError) {
    return c.json(
      errorBody(err.code, err.message, err.field ? { field: err.field } : {}),
      err.status,
      err.headers,
    );
  }
  if (err instanceof CustomIdTakenError) {
    return c.json(errorBody("conflict", err.message, { field: "customId" }), 409);
  }
  if (err instanceof SharedDocumentError) return c.json(errorBody("forbidden", err.message), 403);
  if (err instanceof HTTPException) {
    const status = err.status as ContentfulStatusCode;
    const code =
      status === 413
        ? "payload_too_large"
        : status === 401
          ? "unauthorized"
          : status === 415
            ? "unsupported_media_type"
            : "http_error";
    return c.json(errorBody(code, err.message || "request failed"), status);
  }
  if (err instanceof SyntaxError) {
    return c.json(errorBody("invalid_json", `request body is not valid JSON: ${err.message}`), 400);
  }
  // Values the database cannot take (a NUL character in text, a number out of range): the request's fault.
  const sqlState = pgErrorCode(err);
  if (sqlState?.startsWith("22") || sqlState === "54001") {
    log?.warn({ sqlState }, "request value refused by the database");
    return c.json(
      errorBody("invalid_request", "a value in the request cannot be stored (for example a NUL character)"),
      400,
    );
  }
  if (sqlState === "23505") {
    return c.json(
      errorBody("conflict", "the request conflicts with an existing record (a unique value is taken)"),
      409,
    );
  }
  if (err instanceof RangeError && /call stack/i.test(err.message)) {
    return c.json(errorBody("invalid_request", "the request is nested too deeply"), 400);
  }
  log?.error({ err }, "unhandled error");
  return c.json(errorBody("internal_error", "internal server error"), 500);
}
