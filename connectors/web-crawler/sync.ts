// A crawl split into pages of work so the engine can checkpoint between them: the cursor carries the
// frontier (URLs still to fetch, with their link depth) and the set of URLs this pass has already
// queued or fetched, and each listPage crawls the next batch. The listing is "full": a page that is
// gone is simply not listed, and the engine deletes its document at the end of the pass.

import { createHash } from "node:crypto";
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { z } from "zod";
import { htmlToText } from "../../pipeline/html.ts";
import { FetchRefusedError, isPublicAddress } from "../../pipeline/safe-fetch.ts";
import { ConnectorConfigError, ConnectorRateLimitError, ItemSkippedError } from "../errors.ts";
import type { FetchedItem, ListPage, NetworkPolicy, SourceItem, SyncContext } from "../types.ts";
import type { Outcome } from "./crawl.ts";
import { fetchPage, isHtmlType } from "./http.ts";
import type { WebCrawlerConfig, WebCrawlerSecrets } from "./settings.ts";
import type { RobotsRules } from "./site.ts";
import { looksBinary, resolveLink, urlKey } from "./urls.ts";

type Ctx = SyncContext<WebCrawlerConfig, WebCrawlerSecrets>;

const frontierEntrySchema = z.object({
  url: z.string(),
  /** Links followed from a start URL or sitemap entry (both 0). */
  depth: z.number().int().min(0),
});
export type FrontierEntry = z.infer<typeof frontierEntrySchema>;

export const cursorSchema = z.object({
  version: z.literal(1),
  /** The first page has checked the start URLs and queued the sitemaps' URLs. */
  seeded: z.boolean(),
  /** Origins links may stay on (sameOrigin): the start URLs' and those they redirect to. */
  origins: z.array(z.string()),
  /** Breadth-first: fetched from the front, discoveries appended in the order they were found. */
  frontier: z.array(frontierEntrySchema),
  /** urlKey of every URL queued, fetched or reached by a redirect in this pass: none is taken twice. */
  seen: z.array(z.string()),
  /** Items listed so far in this pass, against maxPages. */
  listed: z.number().int().min(0),
});
export type Cursor = z.infer<typeof cursorSchema>;

/** URLs fetched per listPage: a page of work stays short, so a checkpoint is never far behind. */
export const BATCH_SIZE = 20;
/**
 * The frontier holds at most the pages still allowed plus this many: links beyond it would never be
 * fetched in this pass, and the cursor travels through the workflow history. The slack covers queued
 * URLs that turn out to be 404s or not HTML.
 */
const FRONTIER_SLACK = 100;
/** fetchUrl drops the response headers of a 429, so its Retry-After is unknown. */
const RATE_LIMIT_WAIT_MS = 60_000;
/** A batch this large that failed entirely means the site is down, not that these pages are broken. */
const OUTAGE_BATCH = 5;

export function initialCursor(ctx: Ctx): Cursor {
  const { startUrls } = ctx.config;
  return {
    version: 1,
    seeded: false,
    origins: [...new Set(startUrls.map(originOf))],
    frontier: startUrls.map((url) => ({ url, depth: 0 })),
    seen: startUrls.map(urlKey),
    listed: 0,
  };
}

// crawlee is loaded on first use: it takes about a second to import and only sync workers need it,
// while the API process loads every connector declaration.
const crawlerModules = () => Promise.all([import("./crawl.ts"), import("./site.ts")]);

export function listPage(ctx: Ctx, cursor: Cursor): Promise<ListPage<Cursor>> {
  return crawlPage(ctx, cursor, BATCH_SIZE);
}

/**
 * listPage with the number of URLs to fetch in this page of work as a parameter (tests compare one
 * unbounded page with many small ones). Fetches breadth-first in rounds: the links a round finds are
 * fetched in the next round of the same call while the budget lasts.
 */
export async function crawlPage(ctx: Ctx, cursor: Cursor, budget: number): Promise<ListPage<Cursor>> {
  const { config, network, log, signal } = ctx;
  signal.throwIfAborted();
  const [{ crawlBatch }, site] = await crawlerModules();
  const pass = new Pass(config, cursor);

  const robotsByOrigin = new Map<string, Promise<RobotsRules>>();
  const robotsOf = (url: string): Promise<RobotsRules> => {
    const origin = originOf(url);
    let rules = robotsByOrigin.get(origin);
    if (!rules) {
      rules = site.loadRobots(origin, network, log);
      robotsByOrigin.set(origin, rules);
    }
    return rules;
  };
  const allowedByRobots = async (url: string) =>
    !config.respectRobotsTxt || (await robotsOf(url)).isAllowed(url);

  if (!cursor.seeded) await assertStartUrlsAllowed(config.startUrls, network, false);

  const items: SourceItem[] = [];
  let fetched = 0;
  while (fetched < budget && pass.frontier.length > 0 && pass.listed < config.maxPages) {
    const batch: FrontierEntry[] = [];
    const room = Math.min(budget - fetched, config.maxPages - pass.listed);
    while (batch.length < room && pass.frontier.length > 0) {
      const entry = pass.frontier.shift() as FrontierEntry;
      if (await allowedByRobots(entry.url)) batch.push(entry);
      else log.debug({ url: entry.url }, "disallowed by robots.txt");
    }
    fetched += batch.length;

    const outcomes = await crawlBatch(
      batch.map((e) => e.url),
      { network, signal, heartbeat: ctx.heartbeat, log, respectMetaRobots: config.respectRobotsTxt },
    );
    const failures: string[] = [];
    for (const entry of batch) {
      const outcome: Outcome = outcomes.get(entry.url) ?? { kind: "failed", reason: "no outcome recorded" };
      const isStart = config.startUrls.includes(entry.url);
      switch (outcome.kind) {
        case "rateLimited":
          // Nothing of this page of work is kept: the engine retries the same cursor after waiting.
          throw new ConnectorRateLimitError(
            `${entry.url} answered 429 Too Many Requests`,
            RATE_LIMIT_WAIT_MS,
          );
        case "refused":
          if (isStart) throw new ConnectorConfigError(`start URL ${entry.url}: ${outcome.reason}`);
          log.debug({ url: entry.url, reason: outcome.reason }, "refused by network policy");
          break;
        case "failed":
          // A start URL that cannot be fetched would hide every page only it links to: retry the page.
          if (isStart) throw new Error(`start URL ${entry.url} could not be fetched: ${outcome.reason}`);
          failures.push(`${entry.url}: ${outcome.reason}`);
          break;
        case "notContent":
          log.debug({ url: entry.url, reason: outcome.reason }, "not content");
          break;
        case "page": {
          const item = await pass.accept(entry, outcome, isStart, allowedByRobots);
          if (item) items.push(item);
          break;
        }
      }
    }
    // Skipping failed pages deletes their documents: fine for one broken page, not for an outage.
    if (batch.length >= OUTAGE_BATCH && failures.length === batch.length) {
      throw new Error(`no page of the batch could be fetched, the site looks down (${failures[0]})`);
    }
    for (const failure of failures) log.warn({ failure }, "page skipped after retries");

    // After the first round, so that origins the start URLs redirect to are known.
    if (!pass.seeded) {
      if (config.useSitemaps && pass.listed < config.maxPages) {
        for (const origin of pass.origins) {
          const robots = await robotsOf(origin);
          const urls = await site.loadSitemapUrls(origin, robots, network, pass.room(), log, signal);
          for (const url of urls) pass.enqueue(url, 0);
          ctx.heartbeat();
        }
      }
      pass.seeded = true;
    }
  }

  const finished = pass.frontier.length === 0 || pass.listed >= config.maxPages;
  return { items, next: finished ? null : pass.toCursor() };
}

/** One listPage's working copy of the cursor: the one passed in stays intact for a retry. */
class Pass {
  seeded: boolean;
  origins: Set<string>;
  frontier: FrontierEntry[];
  seen: Set<string>;
  listed: number;
  private readonly include: RegExp | null;
  private readonly exclude: RegExp | null;

  constructor(
    private readonly config: WebCrawlerConfig,
    cursor: Cursor,
  ) {
    this.seeded = cursor.seeded;
    this.origins = new Set(cursor.origins);
    this.frontier = cursor.frontier.map((e) => ({ ...e }));
    this.seen = new Set(cursor.seen);
    this.listed = cursor.listed;
    this.include = config.includePattern ? new RegExp(config.includePattern) : null;
    this.exclude = config.excludePattern ? new RegExp(config.excludePattern) : null;
  }

  /** How many more URLs the frontier takes. */
  room(): number {
    return Math.max(0, this.config.maxPages - this.listed + FRONTIER_SLACK - this.frontier.length);
  }

  matchesPatterns(url: string): boolean {
    return (!this.include || this.include.test(url)) && !this.exclude?.test(url);
  }

  inScope(url: string): boolean {
    return (!this.config.sameOrigin || this.origins.has(originOf(url))) && this.matchesPatterns(url);
  }

  enqueue(url: string, depth: number): void {
    if (looksBinary(url) || !this.inScope(url)) return;
    const key = urlKey(url);
    if (this.seen.has(key) || this.room() === 0) return;
    this.seen.add(key);
    this.frontier.push({ url, depth });
  }

  /** The item for a fetched page, if it is one to list; queues its links either way. */
  async accept(
    entry: FrontierEntry,
    page: Extract<Outcome, { kind: "page" }>,
    isStart: boolean,
    allowedByRobots: (url: string) => Promise<boolean>,
  ): Promise<SourceItem | null> {
    const { finalUrl } = page;
    if (finalUrl !== entry.url) {
      // http → https or a moved host: the site now lives there, so its links are in scope.
      if (isStart) this.origins.add(originOf(finalUrl));
      const key = urlKey(finalUrl);
      if (this.seen.has(key)) {
        const queued = this.frontier.findIndex((e) => e.url === finalUrl);
        // Already fetched under its own URL (or via another redirect): listed there, not twice.
        if (queued < 0) return null;
        this.frontier.splice(queued, 1);
      }
      this.seen.add(key);
      if (this.config.sameOrigin && !this.origins.has(originOf(finalUrl))) return null;
      if (!(await allowedByRobots(finalUrl))) return null;
    }
    if (entry.depth < this.config.maxDepth) {
      for (const link of page.links) this.enqueue(link, entry.depth + 1);
    }
    if (page.noindex || !page.text || !this.matchesPatterns(finalUrl)) return null;
    if (this.listed >= this.config.maxPages) return null;
    this.listed++;
    return { id: finalUrl, version: pageVersion(page.title, page.text), content: toContent(finalUrl, page) };
  }

  toCursor(): Cursor {
    return {
      version: 1,
      seeded: this.seeded,
      origins: [...this.origins],
      frontier: this.frontier,
      seen: [...this.seen],
      listed: this.listed,
    };
  }
}

export function pageVersion(title: string | null, text: string): string {
  return createHash("sha256")
    .update(title ?? "")
    .update("\0")
    .update(text)
    .digest("hex");
}

function toContent(url: string, page: { title: string | null; text: string }): FetchedItem {
  const parsed = new URL(url);
  return {
    ...(page.title ? { title: page.title } : {}),
    text: page.text,
    url,
    filepath: parsed.pathname,
    metadata: { host: parsed.host },
  };
}

function originOf(url: string): string {
  return new URL(url).origin;
}

/**
 * Refuses start URLs on addresses the network policy forbids before anything is fetched, so such a
 * connection fails as misconfigured instead of listing nothing. Every request is checked again by
 * safe-fetch (redirects included). A name that does not resolve is left to the fetch during a sync
 * (DNS may be down for a moment) but refused when `strict` (creating the connection).
 */
export async function assertStartUrlsAllowed(
  startUrls: string[],
  network: NetworkPolicy,
  strict: boolean,
): Promise<void> {
  if (network.allowPrivateNetwork) return;
  for (const url of startUrls) {
    const host = new URL(url).hostname.replace(/^\[(.*)\]$/, "$1");
    let addresses: string[];
    if (isIP(host)) addresses = [host];
    else {
      try {
        addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
      } catch (error) {
        if (strict)
          throw new ConnectorConfigError(`start URL ${url}: cannot resolve ${host} (${String(error)})`);
        continue;
      }
    }
    const internal = addresses.find((a) => !isPublicAddress(a));
    if (internal) {
      throw new ConnectorConfigError(
        `start URL ${url} points to ${internal}, a private, loopback or otherwise internal address, ` +
          "which this deployment does not allow crawling",
      );
    }
  }
}

/** Creation-time check: every start URL must be allowed and answer with an HTML page. */
export async function verify(ctx: Ctx): Promise<void> {
  await assertStartUrlsAllowed(ctx.config.startUrls, ctx.network, true);
  for (const url of ctx.config.startUrls) {
    let page: Awaited<ReturnType<typeof fetchPage>>;
    try {
      page = await fetchPage(url, ctx.network);
    } catch (error) {
      throw new ConnectorConfigError(`start URL ${url} could not be fetched: ${(error as Error).message}`);
    }
    if (page.status < 200 || page.status > 299) {
      throw new ConnectorConfigError(`start URL ${url} answered HTTP ${page.status}`);
    }
    if (!isHtmlType(page.mimeType)) {
      throw new ConnectorConfigError(
        `start URL ${url} is not an HTML page (${page.mimeType ?? "no content type"})`,
      );
    }
  }
}

/**
 * Items always carry their content, so the engine should not need this; it re-fetches the page for
 * callers that do. Null when the page is gone, not HTML, empty or refused by the network policy; a page
 * the site refuses (401, 403) is skipped as no_permission.
 */
export async function fetchItem(ctx: Ctx, item: SourceItem): Promise<FetchedItem | null> {
  let page: Awaited<ReturnType<typeof fetchPage>>;
  try {
    page = await fetchPage(item.id, ctx.network);
  } catch (error) {
    if (error instanceof FetchRefusedError) return null;
    throw error;
  }
  if (page.status === 429) throw new ConnectorRateLimitError(`${item.id} answered 429`, RATE_LIMIT_WAIT_MS);
  if (page.status >= 500) throw new Error(`${item.id} answered HTTP ${page.status}`);
  // A login wall or a firewall rule refuses the page now, which says nothing of whether it still exists
  // (RFC 9110 §15.5.4: 403 "refuses to fulfill it"; a 404 or 410 says it is gone): the engine keeps its
  // document until a crawl a sync interval later misses it again.
  if (page.status === 401 || page.status === 403)
    throw new ItemSkippedError("no_permission", `${item.id} answered HTTP ${page.status}`);
  if (page.status < 200 || page.status > 299 || page.html === null) return null;
  const finalUrl = resolveLink(page.finalUrl, item.id) ?? item.id;
  const { title, text } = htmlToText(page.html, finalUrl);
  return text ? toContent(finalUrl, { title, text }) : null;
}
