import { DrizzleQueryError } from "drizzle-orm";

/** Driver and server codes of a store that cannot be reached (refused, reset, shutting down, starting). */
const UNAVAILABLE_CODES = [
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "57P01",
  "57P02",
  "57P03",
  "08000",
  "08001",
  "08003",
  "08006",
];

/** The store is unreachable (refused, reset, shutting down), as opposed to a query that is wrong. */
export function isStoreUnavailable(error: unknown): boolean {
  const cause = error instanceof DrizzleQueryError ? error.cause : error;
  const e = cause as { code?: string; message?: string } | undefined;
  if (!e) return false;
  return (
    (typeof e.code === "string" && UNAVAILABLE_CODES.includes(e.code)) ||
    /Connection terminated|connection is closed|Client has encountered a connection error/i.test(
      e.message ?? "",
    )
  );
}

/**
 * For an error of the store (a failed query, or the store unreachable), the message to report:
 * "database error: " and the driver's cause only, because the driver's own message carries the whole
 * query and its parameters (a document's text). Undefined for any other error.
 */
export function storeErrorMessage(error: unknown): string | undefined {
  const isQueryError = error instanceof DrizzleQueryError;
  if (!isQueryError && !isStoreUnavailable(error)) return undefined;
  const cause = isQueryError ? (error.cause as Error | undefined)?.message : (error as Error).message;
  return `database error: ${cause ?? "query failed"}`;
}
