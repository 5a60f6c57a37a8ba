// Failures a connector reports so the engine can act on them: credentials that no longer work stop the
// connection (`auth_expired`) instead of retrying forever; rate limits wait as long as the source asks.

/** The source refused the credentials (401/403 on auth, IMAP AUTHENTICATIONFAILED, revoked token). */
export class ConnectorAuthError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConnectorAuthError";
  }
}

/** The source asked to slow down (429, 503 with Retry-After, GitHub secondary limits). */
export class ConnectorRateLimitError extends Error {
  constructor(
    message: string,
    /** How long the source asked to wait; the engine backs off at least this long. */
    readonly retryAfterMs: number,
  ) {
    super(message);
    this.name = "ConnectorRateLimitError";
  }
}

/** Settings that can never work (no such bucket, malformed start URL): fail the sync without retrying. */
export class ConnectorConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConnectorConfigError";
  }
}

/**
 * Why an item was left out of a sync, as a run reports it: too large to fetch or export, over a provider's export
 * limit (a Google file past 10 MB), of a type nothing can read, archived (S3 Glacier, until restored), not readable with the connection's permissions,
 * or gone between the listing and the fetch.
 */
export type SkipReason =
  | "too_large"
  | "export_limit"
  | "unsupported_type"
  | "archived"
  | "no_permission"
  | "not_found";

/**
 * One item the source will not give: the engine skips it, counts it under its reason on the run, keeps the
 * document an earlier sync made of it, and goes on with the others. The connection stays active; only a
 * ConnectorAuthError (the credentials as a whole refused) marks it expired.
 */
export class ItemSkippedError extends Error {
  constructor(
    readonly reason: SkipReason,
    message: string,
  ) {
    super(message);
    this.name = "ItemSkippedError";
  }
}

/** Already one of the errors above: connectors pass these on unchanged. */
export function isConnectorError(
  error: unknown,
): error is ConnectorAuthError | ConnectorRateLimitError | ConnectorConfigError {
  return (
    error instanceof ConnectorAuthError ||
    error instanceof ConnectorRateLimitError ||
    error instanceof ConnectorConfigError
  );
}

/** A Retry-After header in milliseconds (delta-seconds or an HTTP date, at least 1 s); undefined when absent or unreadable. */
export function retryAfterHeaderMs(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.max(1000, Math.ceil(seconds * 1000));
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(1000, at - now) : undefined;
}

/** Network failures that say the source could not be reached, not that the request was wrong. */
const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "UND_ERR_SOCKET",
]);

/** The HTTP status an SDK's error carries, wherever the SDK keeps it (octokit, gaxios, Notion, AWS). */
function statusOf(error: Record<string, unknown>): number | undefined {
  const response = error.response as { status?: unknown } | undefined;
  const metadata = error.$metadata as { httpStatusCode?: unknown } | undefined;
  for (const value of [error.status, error.statusCode, response?.status, metadata?.httpStatusCode])
    if (typeof value === "number") return value;
  if (typeof error.code === "number") return error.code;
  return undefined;
}

/**
 * Why an attempt at a sync failed, in the words of Supermemory's `lastSyncRun.errorCode`: the source asked to
 * slow down (`rate_limited`), or could not be reached or answered 5xx (`provider_unavailable`); null for
 * anything else. Looks through `cause` chains, since fetch wraps the network error it met.
 */
export function syncWaitReason(error: unknown): "rate_limited" | "provider_unavailable" | null {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    if (current instanceof ConnectorRateLimitError) return "rate_limited";
    const e = current as Record<string, unknown>;
    const status = statusOf(e);
    if (status === 429) return "rate_limited";
    if (status !== undefined && status >= 500 && status < 600) return "provider_unavailable";
    if (typeof e.code === "string" && UNREACHABLE_CODES.has(e.code)) return "provider_unavailable";
    if (e.name === "TimeoutError") return "provider_unavailable";
    current = e.cause;
  }
  return null;
}
