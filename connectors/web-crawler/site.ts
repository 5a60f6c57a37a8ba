// What a site says about crawling it: robots.txt rules and the pages its sitemaps list. Both are
// fetched through safe-fetch like the pages themselves (crawlee's RobotsTxtFile.find and Sitemap.load
// use their own unguarded client), and crawlee is used only to parse robots.txt.

import { gunzipSync } from "node:zlib";
import { RobotsTxtFile } from "crawlee";
import { XMLParser } from "fast-xml-parser";
import type { Logger } from "../../config/logger.ts";
import { fetchUrl } from "../../pipeline/safe-fetch.ts";
import type { NetworkPolicy } from "../types.ts";
import { fetchOptions, ROBOTS_AGENT } from "./http.ts";
import { resolveLink } from "./urls.ts";

export interface RobotsRules {
  isAllowed(url: string): boolean;
  /** `Sitemap:` lines, absolute http(s) URLs. */
  sitemaps: string[];
}

const ALLOW_ALL: RobotsRules = { isAllowed: () => true, sitemaps: [] };
/** Sitemap files read per origin (indexes included): enough for real sites, bounded for hostile ones. */
const MAX_SITEMAP_FILES = 20;
const MAX_ROBOTS_BYTES = 512 * 1024;

/**
 * A missing robots.txt (any 4xx) allows everything, per RFC 9309. One that cannot be read (5xx,
 * network) also allows everything here: the pages will most likely fail the same way and be retried,
 * and refusing the whole site over a flaky robots.txt would empty the listing.
 */
export async function loadRobots(origin: string, network: NetworkPolicy, log: Logger): Promise<RobotsRules> {
  const url = `${origin}/robots.txt`;
  let content: string;
  try {
    const result = await fetchUrl(url, { ...fetchOptions(network), maxBytes: MAX_ROBOTS_BYTES });
    content = result.body.toString("utf8");
  } catch (error) {
    log.debug({ url, err: String(error) }, "no usable robots.txt; crawling without rules");
    return ALLOW_ALL;
  }
  const robots = RobotsTxtFile.from(url, content);
  const sitemaps = robots
    .getSitemaps({ enqueueStrategy: "all" })
    .map((s) => resolveLink(s, url))
    .filter((s): s is string => s !== null);
  return { isAllowed: (u) => robots.isAllowed(u, ROBOTS_AGENT), sitemaps };
}

const xml = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  isArray: (name) => name === "url" || name === "sitemap",
});

interface ParsedSitemap {
  urlset?: { url?: { loc?: unknown }[] };
  sitemapindex?: { sitemap?: { loc?: unknown }[] };
}

/**
 * Page URLs from `origin`/sitemap.xml and the robots.txt sitemaps, following sitemap indexes; at most
 * `limit` of them. Unreadable sitemaps are skipped: they only add pages the links may also reach.
 */
export async function loadSitemapUrls(
  origin: string,
  robots: RobotsRules,
  network: NetworkPolicy,
  limit: number,
  log: Logger,
  signal: AbortSignal,
): Promise<string[]> {
  const queue = [...new Set([`${origin}/sitemap.xml`, ...robots.sitemaps])];
  const read = new Set<string>();
  const pages: string[] = [];
  while (queue.length > 0 && read.size < MAX_SITEMAP_FILES && pages.length < limit) {
    signal.throwIfAborted();
    const url = queue.shift() as string;
    if (read.has(url)) continue;
    read.add(url);
    let body: Buffer;
    try {
      body = (await fetchUrl(url, fetchOptions(network))).body;
      // .xml.gz files are served as application/gzip, not with a content-encoding fetchUrl undoes.
      if (body[0] === 0x1f && body[1] === 0x8b)
        body = gunzipSync(body, { maxOutputLength: network.maxBytes });
    } catch (error) {
      log.debug({ url, err: String(error) }, "sitemap not read");
      continue;
    }
    const entries = parseSitemap(body.toString("utf8"), url);
    for (const nested of entries.sitemaps) if (!read.has(nested)) queue.push(nested);
    for (const page of entries.pages) {
      if (pages.length >= limit) break;
      pages.push(page);
    }
  }
  return pages;
}

/** XML sitemaps and sitemap indexes, or the plain-text form (one URL per line). */
export function parseSitemap(text: string, base: string): { pages: string[]; sitemaps: string[] } {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith("<")) {
    const pages = trimmed
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => /^https?:\/\//i.test(line))
      .map((line) => resolveLink(line, base))
      .filter((u): u is string => u !== null);
    return { pages, sitemaps: [] };
  }
  let parsed: ParsedSitemap;
  try {
    parsed = xml.parse(trimmed) as ParsedSitemap;
  } catch {
    return { pages: [], sitemaps: [] };
  }
  const locs = (entries: { loc?: unknown }[] | undefined) =>
    (entries ?? [])
      .map((e) => (typeof e.loc === "string" ? resolveLink(e.loc, base) : null))
      .filter((u): u is string => u !== null);
  return { pages: locs(parsed.urlset?.url), sitemaps: locs(parsed.sitemapindex?.sitemap) };
}
