// The @notionhq/client a sync uses, and how Notion's failures become the connector errors the engine acts
// on. Every request carries the connection's access token; a 401 gets one refresh through the engine's
// OAuth session and one retry, after which the token counts as refused (ConnectorAuthError).
//
// Requests keep to Notion's budget of about three a second per integration token (../request-budget.ts).
// A 429 (or a 502/503) is retried there, for the one request that got it, after the Retry-After Notion sent:
// a page's block walk then goes on where it was instead of starting over in a new activity attempt. Only a
// wait longer than Notion's per-connection window (or a 429 that persists) goes back to the engine as
// ConnectorRateLimitError, whose next attempt waits as long as Notion asked. The SDK's own retries stay
// off so that a request is never retried twice over.

import { APIErrorCode, Client, isNotionClientError, type Logger, LogLevel } from "@notionhq/client";
import { ConnectorAuthError, ConnectorRateLimitError, retryAfterHeaderMs } from "../errors.ts";
import { budgetFor, MAX_INLINE_RETRIES, MAX_INLINE_WAIT_MS, sendBudgeted } from "../request-budget.ts";
import type { SyncContext } from "../types.ts";
import type { NotionConfig, NotionSecrets } from "./settings.ts";

export type NotionContext = SyncContext<NotionConfig, NotionSecrets>;

/** How long to wait when Notion rate-limits without a usable Retry-After. */
export const DEFAULT_RETRY_AFTER_MS = 30_000;

/**
 * 429s, and Notion's 502 bad_gateway and 503 service_unavailable ("Notion is unavailable... try again
 * later", https://developers.notion.com/reference/status-codes), are retried in place after Retry-After or
 * a backoff: a page's block walk then goes on where it was. Notion's per-connection limit asks for at most
 * 60 s ("the time until the window resets"); a longer wait (the workspace-wide limit) is the engine's.
 * https://developers.notion.com/reference/request-limits
 */
const RETRIED_STATUSES = new Set([429, 502, 503]);

export { MAX_INLINE_RETRIES, MAX_INLINE_WAIT_MS };

/** The status and headers of a failed call, whatever the SDK made of it. */
function failure(
  error: unknown,
): { status: number; code?: string; headers?: unknown; message: string } | undefined {
  if (!isNotionClientError(error)) return undefined;
  const e = error as { status?: unknown; code?: unknown; headers?: unknown; message: string };
  if (typeof e.status !== "number") return undefined;
  return {
    status: e.status,
    code: typeof e.code === "string" ? e.code : undefined,
    headers: e.headers,
    message: e.message,
  };
}

export function notionStatus(error: unknown): number | undefined {
  return failure(error)?.status;
}

function header(headers: unknown, name: string): string | undefined {
  if (headers && typeof (headers as Headers).get === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  if (headers && typeof headers === "object") {
    for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
      if (key.toLowerCase() === name && typeof value === "string") return value;
    }
  }
  return undefined;
}

/** Retry-After in seconds or as an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  return retryAfterHeaderMs(value, now);
}

/** The connector error for a failure, or the failure itself when the engine should simply retry. */
export function toConnectorError(error: unknown, ctx: NotionContext): unknown {
  if (ctx.signal.aborted) return error;
  if (error instanceof ConnectorAuthError || error instanceof ConnectorRateLimitError) return error;
  const f = failure(error);
  if (!f) return error;
  if (f.status === 429 || f.code === APIErrorCode.RateLimited) {
    const wait = retryAfterMs(header(f.headers, "retry-after")) ?? DEFAULT_RETRY_AFTER_MS;
    return new ConnectorRateLimitError(`Notion rate limit: ${f.message}`, wait);
  }
  // Still unavailable after the retries in place: the engine tries again later, as after a rate limit.
  if (f.status === 502 || f.status === 503) {
    const wait = retryAfterMs(header(f.headers, "retry-after")) ?? DEFAULT_RETRY_AFTER_MS;
    return new ConnectorRateLimitError(`Notion is unavailable (${f.status}): ${f.message}`, wait);
  }
  if (f.status === 401) return new ConnectorAuthError(`Notion refused the token: ${f.message}`);
  // restricted_resource: the integration lacks a capability (read content) for every page alike.
  if (f.status === 403) return new ConnectorAuthError(`Notion denied access: ${f.message}`);
  return error;
}

/**
 * One sync call's view of the API: a client per access token, refreshed once on a 401. `serverTime` is
 * the Date of Notion's latest answer (last_edited_time is compared with Notion's clock, not ours).
 */
export class NotionApi {
  private client: Client | undefined;
  private refreshed = false;
  serverTime: number | undefined;

  constructor(
    private readonly ctx: NotionContext,
    private readonly baseUrl: string,
  ) {}

  /** Runs one API call; maps failures to connector errors. */
  async call<T>(run: (client: Client) => Promise<T>): Promise<T> {
    try {
      const client = this.client ?? (await this.connect(false));
      try {
        return await run(client);
      } catch (error) {
        if (notionStatus(error) !== 401 || this.refreshed) throw error;
        // The token looked valid to the engine; Notion refused it. One refresh, one retry.
        return await run(await this.connect(true));
      }
    } catch (error) {
      throw toConnectorError(error, this.ctx);
    }
  }

  private async connect(refresh: boolean): Promise<Client> {
    const oauth = this.ctx.oauth;
    if (!oauth) throw new ConnectorAuthError("the Notion connection has no OAuth tokens: connect it first");
    if (refresh) this.refreshed = true;
    const token = refresh ? await oauth.refresh() : await oauth.accessToken();
    this.client = new Client({
      auth: token,
      baseUrl: this.baseUrl,
      fetch: this.fetch,
      // 429s are retried by this.fetch, under the token's budget; other failures go to the engine.
      retry: false,
      // this.fetch applies the network timeout to each attempt; the SDK's would also cut the waits for
      // the budget and for Retry-After short (setTimeout's largest delay: no timeout of its own).
      timeoutMs: 2 ** 31 - 1,
      logLevel: LogLevel.WARN,
      logger: this.logger,
    });
    return this.client;
  }

  private readonly logger: Logger = (level, message, extra) => {
    // Failed requests are reported as typed errors; only the SDK's warnings about our own calls matter.
    if (level === LogLevel.WARN && message !== "request fail") {
      this.ctx.log.warn({ provider: "notion", ...extra }, `notion client: ${message}`);
    }
  };

  private readonly fetch = async (
    url: string,
    init: { body?: string | FormData; headers?: Record<string, string>; method?: string } = {},
  ): Promise<Response> => {
    // Notion's limit is per integration token, so the token is the account here.
    const token = bearer(init.headers) ?? "";
    return sendBudgeted({
      budget: budgetFor("notion", token),
      ctx: this.ctx,
      provider: "notion",
      send: async () => {
        const signal = AbortSignal.any([this.ctx.signal, AbortSignal.timeout(this.ctx.network.timeoutMs)]);
        const response = await fetch(url, {
          method: init.method,
          headers: init.headers,
          body: init.body,
          signal,
        });
        const date = Date.parse(response.headers.get("date") ?? "");
        if (Number.isFinite(date)) this.serverTime = date;
        return response;
      },
      throttled: (outcome, attempt) => {
        if (!outcome.ok || !RETRIED_STATUSES.has(outcome.value.status)) return undefined;
        // Notion always sends Retry-After with a 429; without one (and for 502/503), back off 1 s, 2 s, 4 s.
        return retryAfterMs(outcome.value.headers.get("retry-after") ?? undefined) ?? 1000 * 2 ** attempt;
      },
      discard: async (response) => {
        await response.body?.cancel();
      },
    });
  };
}

function bearer(headers: Record<string, string> | undefined): string | undefined {
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (key.toLowerCase() === "authorization" && value.startsWith("Bearer ")) return value.slice(7);
  }
  return undefined;
}
