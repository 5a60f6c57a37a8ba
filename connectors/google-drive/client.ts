// The Drive v3 client a sync uses (@googleapis/drive, pointed at ctx.apiBaseUrl), with the connection's
// OAuth token: a 401 gets one refresh through the engine and one retry. Google's failures become the
// connector errors the engine acts on: refused credentials stop the connection, rate limits wait.
//
// Every request takes a slot from the request budget of the Google user (about.user.permissionId, asked
// once per token), shared by all connections of that user in this worker (../request-budget.ts). Drive
// enforces its quota per user and answers 403 userRateLimitExceeded or 429 rateLimitExceeded, asking for
// exponential backoff (https://developers.google.com/drive/api/guides/limits#exponential): such a request is
// retried in place (Retry-After if sent, else 1, 2, 4 s plus up to a second of jitter), so a folder walk or
// a changes page goes on where it was; only then does the engine wait (ConnectorRateLimitError).

import { drive, type drive_v3, auth as googleAuth, type MethodOptions } from "@googleapis/drive";
import {
  ConnectorAuthError,
  ConnectorConfigError,
  ConnectorRateLimitError,
  isConnectorError,
  retryAfterHeaderMs,
} from "../errors.ts";
import { accountOf, budgetFor, type RequestBudget, sendBudgeted } from "../request-budget.ts";
import type { SyncContext } from "../types.ts";

// biome-ignore lint/suspicious/noExplicitAny: the client works for any config shape of this connector
export type DriveContext = SyncContext<any, unknown>;

export const DEFAULT_DRIVE_API = "https://www.googleapis.com";

/** How long to wait when Google asks to slow down without saying how long. */
const DEFAULT_RETRY_AFTER_MS = 30_000;

/** 403 reasons that mean "slow down", not "no access". */
const RATE_LIMIT_REASONS = new Set(["rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED"]);
/** 403 reasons that mean the token itself lacks the grant (scope removed, wrong kind of token). */
const AUTH_REASONS = new Set([
  "authError",
  "insufficientPermissions",
  "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
  "insufficientScopes",
]);
/** 403 reasons that mean the deployment's OAuth app cannot use Drive at all. */
const CONFIG_REASONS = new Set(["accessNotConfigured", "SERVICE_DISABLED"]);

type Api = drive_v3.Drive;

export class DriveClient {
  private readonly api: Api;
  private readonly credentials = new googleAuth.OAuth2();
  private readonly root: string;
  private token: string | null = null;

  constructor(private readonly ctx: DriveContext) {
    if (!ctx.oauth) throw new ConnectorAuthError("Google Drive is not connected yet: no OAuth tokens");
    this.root = `${(ctx.apiBaseUrl ?? DEFAULT_DRIVE_API).replace(/\/+$/, "")}/`;
    this.api = drive({ version: "v3", auth: this.credentials, rootUrl: this.root });
  }

  /**
   * One request: `run` gets the API and the per-request options (signal, timeout, no library retries:
   * the engine retries pages and honours rate limits itself). A 401 refreshes the token once.
   */
  async call<T>(run: (api: Api, options: MethodOptions) => Promise<{ data: T }>): Promise<T> {
    const oauth = this.ctx.oauth;
    if (!oauth) throw new ConnectorAuthError("Google Drive is not connected yet: no OAuth tokens");
    const options: MethodOptions = {
      signal: this.ctx.signal,
      timeout: this.ctx.network.timeoutMs,
      retry: false,
    };
    try {
      this.use(this.token ?? (await oauth.accessToken()));
      try {
        return (await this.attempt(run, options)).data;
      } catch (error) {
        if (httpStatus(error) !== 401 || this.ctx.signal.aborted) throw error;
        // The engine thought the token valid; Google disagrees (revoked, rotated, clock skew): refresh once.
        this.use(await oauth.refresh());
        return (await this.attempt(run, options)).data;
      }
    } catch (error) {
      throw toConnectorError(error, this.ctx);
    }
  }

  private async attempt<T>(
    run: (api: Api, options: MethodOptions) => Promise<{ data: T }>,
    options: MethodOptions,
  ): Promise<{ data: T }> {
    try {
      return await sendBudgeted({
        budget: await this.budget(options),
        ctx: this.ctx,
        provider: "google-drive",
        send: () => run(this.api, options),
        throttled: (outcome, attempt) => (outcome.ok ? undefined : throttleWaitMs(outcome.error, attempt)),
      });
    } finally {
      this.ctx.heartbeat();
    }
  }

  /** The budget of the Google user the current token belongs to. */
  private async budget(options: MethodOptions): Promise<RequestBudget> {
    const token = this.token ?? "";
    const account = await accountOf("google-drive", token, async () => {
      const { data } = await this.api.about.get({ fields: "user(permissionId)" }, options);
      return data.user?.permissionId ?? undefined;
    });
    // Another API root (a test server) is another service with limits of its own.
    return budgetFor("google-drive", `${this.root} ${account}`);
  }

  private use(token: string) {
    this.token = token;
    this.credentials.setCredentials({ access_token: token, token_type: "Bearer" });
  }
}

interface GoogleErrorBody {
  error?: {
    code?: number;
    message?: string;
    status?: string;
    errors?: { reason?: string; message?: string }[];
    details?: { reason?: string }[];
  };
}

interface HttpFailure {
  status: number;
  message: string;
  headers: unknown;
  body: GoogleErrorBody | undefined;
}

/** What gaxios throws for an HTTP status (GaxiosError), duck-typed. */
export function httpFailure(error: unknown): HttpFailure | undefined {
  const e = error as {
    status?: unknown;
    message?: unknown;
    response?: { status?: unknown; headers?: unknown; data?: unknown };
  } | null;
  const status = typeof e?.status === "number" ? e.status : e?.response?.status;
  if (typeof status !== "number") return undefined;
  let body = e?.response?.data;
  if (body instanceof ArrayBuffer) body = Buffer.from(body).toString("utf8");
  if (typeof body === "string") {
    try {
      body = JSON.parse(body);
    } catch {
      body = undefined;
    }
  }
  const parsed = body && typeof body === "object" ? (body as GoogleErrorBody) : undefined;
  return {
    status,
    message: parsed?.error?.message ?? (typeof e?.message === "string" ? e.message : `HTTP ${status}`),
    headers: e?.response?.headers,
    body: parsed,
  };
}

export function httpStatus(error: unknown): number | undefined {
  return httpFailure(error)?.status;
}

/** The `reason`s of a Google JSON error (`errors[].reason` and `details[].reason`). */
export function errorReasons(error: unknown): string[] {
  const body = httpFailure(error)?.body?.error;
  return [...(body?.errors ?? []).map((e) => e.reason), ...(body?.details ?? []).map((d) => d.reason)].filter(
    (r): r is string => typeof r === "string",
  );
}

function header(headers: unknown, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  const value = (headers as Record<string, unknown>)[name];
  return value === undefined ? undefined : String(value);
}

/**
 * How long to wait before sending a throttled request again (429, 403 rateLimitExceeded or
 * userRateLimitExceeded), undefined when the failure is not throttling: Retry-After when Google sends it,
 * else Google's exponential backoff, 2^n s plus a random part of up to a second.
 */
export function throttleWaitMs(error: unknown, attempt: number, now = Date.now()): number | undefined {
  const failure = httpFailure(error);
  if (!failure) return undefined;
  const limited =
    failure.status === 429 ||
    (failure.status === 403 && errorReasons(error).some((r) => RATE_LIMIT_REASONS.has(r)));
  if (!limited) return undefined;
  return (
    retryAfterHeaderMs(header(failure.headers, "retry-after"), now) ??
    1000 * 2 ** attempt + Math.floor(Math.random() * 1000)
  );
}

/** Retry-After in seconds or as an HTTP date; the default when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number {
  return retryAfterHeaderMs(value, now) ?? DEFAULT_RETRY_AFTER_MS;
}

/** The connector error for a failure, or the failure itself when the engine should simply retry. */
export function toConnectorError(error: unknown, ctx: DriveContext): unknown {
  if (ctx.signal.aborted) return error;
  if (isConnectorError(error)) return error;
  const failure = httpFailure(error);
  if (!failure) return error;
  const reasons = errorReasons(error);
  if (failure.status === 401) return new ConnectorAuthError(`Google refused the token: ${failure.message}`);
  if (failure.status === 429 || (failure.status === 403 && reasons.some((r) => RATE_LIMIT_REASONS.has(r)))) {
    return new ConnectorRateLimitError(
      `Google Drive rate limit: ${failure.message}`,
      retryAfterMs(header(failure.headers, "retry-after")),
    );
  }
  if (failure.status === 403 && reasons.some((r) => AUTH_REASONS.has(r)))
    return new ConnectorAuthError(`Google denied access: ${failure.message}`);
  if (failure.status === 403 && reasons.some((r) => CONFIG_REASONS.has(r)))
    return new ConnectorConfigError(`Google Drive API unavailable to this OAuth app: ${failure.message}`);
  return error;
}

/** Drive query strings quote values in single quotes, with `\` escapes. */
export function quote(value: string): string {
  return `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}
