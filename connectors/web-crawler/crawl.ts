// One batch of URLs through a CheerioCrawler. Each call builds its own crawler with in-memory storage,
// so batches share nothing (no request queue that remembers URLs across calls, no files on disk): what
// a pass has seen lives only in the connector's cursor. The crawler brings retries, concurrency and
// HTML parsing; requests go through GuardedHttpClient, never crawlee's own client.

import { CheerioCrawler, Configuration, Log, Logger, LogLevel } from "crawlee";
import type { Logger as PinoLogger } from "../../config/logger.ts";
import { htmlToText } from "../../pipeline/html.ts";
import { FetchRefusedError } from "../../pipeline/safe-fetch.ts";
import type { NetworkPolicy } from "../types.ts";
import { GuardedHttpClient, isHtmlType } from "./http.ts";
import { resolveLink } from "./urls.ts";

export type Outcome =
  | {
      kind: "page";
      /** Where the page was found after redirects, normalised. */
      finalUrl: string;
      title: string | null;
      text: string;
      /** Absolute, normalised http(s) links in document order; empty under nofollow. */
      links: string[];
      /** `<meta name="robots" content="noindex">`: read for links, not listed. */
      noindex: boolean;
    }
  /** Answered, but not content: 404 and other non-2xx, non-HTML. */
  | { kind: "notContent"; reason: string }
  /** The network policy forbids the URL or a redirect of it. */
  | { kind: "refused"; reason: string }
  | { kind: "rateLimited" }
  /** Network errors and 5xx that outlasted the retries. */
  | { kind: "failed"; reason: string };

export interface BatchOptions {
  network: NetworkPolicy;
  signal: AbortSignal;
  heartbeat(): void;
  log: PinoLogger;
  respectMetaRobots: boolean;
}

const MAX_CONCURRENCY = 4;

/** Crawls each URL once (plus retries); the outcome of every URL is in the returned map, keyed by URL. */
export async function crawlBatch(urls: string[], options: BatchOptions): Promise<Map<string, Outcome>> {
  const outcomes = new Map<string, Outcome>();
  if (urls.length === 0) return outcomes;
  options.signal.throwIfAborted();
  const config = new Configuration({ persistStorage: false, purgeOnStart: true });
  const crawler = new CheerioCrawler(
    {
      httpClient: new GuardedHttpClient(options.network),
      // Sessions would retire "blocked" (401/403/429) answers and retry them; we judge statuses ourselves.
      useSessionPool: false,
      persistCookiesPerSession: false,
      maxRequestRetries: 1,
      // Full concurrency from the start: a batch is too short for crawlee's ramp-up to pay off.
      minConcurrency: Math.min(MAX_CONCURRENCY, urls.length),
      maxConcurrency: Math.min(MAX_CONCURRENCY, urls.length),
      navigationTimeoutSecs: Math.ceil(options.network.timeoutMs / 1000) + 5,
      requestHandlerTimeoutSecs: 60,
      log: new Log({ level: LogLevel.INFO, prefix: "web-crawler", logger: new PinoAdapter(options.log) }),
      requestHandler: async ({ request, response, body, $ }) => {
        options.heartbeat();
        const key = request.uniqueKey;
        const status = response.statusCode ?? 0;
        if (status === 429) {
          outcomes.set(key, { kind: "rateLimited" });
          return;
        }
        if (status < 200 || status > 299) {
          outcomes.set(key, { kind: "notContent", reason: `HTTP ${status}` });
          return;
        }
        const mimeType = String(response.headers["x-original-content-type"] ?? "") || null;
        if (!isHtmlType(mimeType)) {
          outcomes.set(key, { kind: "notContent", reason: `content type ${mimeType ?? "unknown"}` });
          return;
        }
        const finalUrl = resolveLink(request.loadedUrl ?? request.url, request.url) ?? request.url;
        const robots = options.respectMetaRobots
          ? $('meta[name="robots" i]')
              .map((_, el) => $(el).attr("content") ?? "")
              .get()
              .join(",")
              .toLowerCase()
          : "";
        const nofollow = /\b(?:nofollow|none)\b/.test(robots);
        const noindex = /\b(?:noindex|none)\b/.test(robots);
        const baseHref = $("base[href]").first().attr("href");
        const base = (baseHref && resolveLink(baseHref, finalUrl)) || finalUrl;
        const links: string[] = [];
        if (!nofollow) {
          $("a[href], area[href]").each((_, el) => {
            const link = resolveLink($(el).attr("href") ?? "", base);
            if (link) links.push(link);
          });
        }
        const { title, text } = noindex ? { title: null, text: "" } : htmlToText(String(body), finalUrl);
        outcomes.set(key, { kind: "page", finalUrl, title, text, links: [...new Set(links)], noindex });
      },
      errorHandler: ({ request }, error) => {
        options.heartbeat();
        if (error instanceof FetchRefusedError) request.noRetry = true;
      },
      failedRequestHandler: ({ request }, error) => {
        const reason = error instanceof Error ? error.message : String(error);
        outcomes.set(
          request.uniqueKey,
          error instanceof FetchRefusedError ? { kind: "refused", reason } : { kind: "failed", reason },
        );
      },
    },
    config,
  );
  const onAbort = () => crawler.stop("sync cancelled");
  options.signal.addEventListener("abort", onAbort, { once: true });
  try {
    // uniqueKey is our normalised URL: crawlee's own normalisation (sorted query, no trailing slash)
    // would merge URLs we keep apart.
    await crawler.run(urls.map((url) => ({ url, uniqueKey: url })));
  } finally {
    options.signal.removeEventListener("abort", onAbort);
  }
  options.signal.throwIfAborted();
  return outcomes;
}

/**
 * crawlee's messages into the service's logger, one level quieter: a retried request or a final
 * statistics line is routine here, and the connector reports what matters itself.
 */
class PinoAdapter extends Logger {
  constructor(private readonly target: PinoLogger) {
    super({});
  }

  override _log(level: LogLevel, message: string, data?: unknown, exception?: unknown): void {
    const fields = {
      component: "crawlee",
      ...(data && typeof data === "object" ? { data } : {}),
      ...(exception ? { err: String(exception) } : {}),
    };
    if (level <= LogLevel.ERROR) this.target.warn(fields, message);
    else if (level <= LogLevel.WARNING) this.target.info(fields, message);
    else if (level <= LogLevel.INFO) this.target.debug(fields, message);
    else this.target.trace(fields, message);
  }
}
