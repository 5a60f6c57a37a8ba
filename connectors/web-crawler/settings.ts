/**
 * Web crawler connector settings: the schema of a connection's config (and its empty secrets), and their
 * types.
 *
 * Config keys (metadata of the create call):
 * - `startUrls` (string, required unless `startUrl` is given): one or more http(s) URLs separated by
 *   whitespace or commas (a comma separates only when another `http(s)://` follows, so commas inside a
 *   URL survive). `startUrl` is accepted as an alias; both may be given.
 * - `maxDepth` (number, default 3, 0–20): how many links are followed from a start URL or a sitemap
 *   entry (both are depth 0). 0 crawls only the start URLs and sitemap entries.
 * - `maxPages` (number, default 200, 1–5000): most pages listed in one pass.
 * - `sameOrigin` (boolean, default true): follow only links on the start URLs' origins (and on the
 *   origin a start URL redirects to, e.g. http → https).
 * - `respectRobotsTxt` (boolean, default true): skip URLs that /robots.txt disallows for us, and honour
 *   `<meta name="robots" content="noindex|nofollow">`.
 * - `useSitemaps` (boolean, default true): also crawl the URLs listed in /sitemap.xml and in the
 *   `Sitemap:` lines of robots.txt, on the start URLs' origins.
 * - `includePattern` / `excludePattern` (optional JavaScript regular expressions, matched against the
 *   full URL): only URLs matching include and not matching exclude are followed and listed. Start URLs
 *   are always fetched, so their links are found, but are listed only if they match too.
 *
 * Booleans and numbers may also come as strings ("false", "50"). Private, loopback and link-local
 * addresses are refused unless the deployment allows them (NetworkPolicy.allowPrivateNetwork).
 */

import { z } from "zod";
import { normalizeUrl } from "./urls.ts";

export const MAX_PAGES_LIMIT = 5000;
export const MAX_DEPTH_LIMIT = 20;
const MAX_START_URLS = 50;

/** "true"/"false"/"1"/"0"/"yes"/"no" from string metadata; real booleans pass through. */
const flag = (fallback: boolean) =>
  z.preprocess((value) => {
    if (typeof value !== "string") return value;
    const v = value.trim().toLowerCase();
    if (["true", "1", "yes", "on"].includes(v)) return true;
    if (["false", "0", "no", "off"].includes(v)) return false;
    return value;
  }, z.boolean().default(fallback));

const pattern = z
  .string()
  .max(1000)
  .optional()
  .transform((value) => (value?.trim() ? value.trim() : undefined))
  .refine(
    (value) => {
      if (value === undefined) return true;
      try {
        new RegExp(value);
        return true;
      } catch {
        return false;
      }
    },
    { message: "not a valid regular expression" },
  );

/** Splits on whitespace, and on commas only where the next URL starts. */
export function splitStartUrls(raw: string): string[] {
  return raw
    .split(/\s+|,(?=\s*https?:\/\/)/i)
    .map((s) => s.trim().replace(/,$/, ""))
    .filter(Boolean);
}

function startUrlProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `${raw} is not a valid URL`;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `${raw} is not an http(s) URL`;
  if (url.username || url.password) return `${raw} carries credentials, which are not allowed`;
  return null;
}

export const webCrawlerConfigSchema = z
  .object({
    startUrls: z.string().optional(),
    startUrl: z.string().optional(),
    maxDepth: z.coerce.number().int().min(0).max(MAX_DEPTH_LIMIT).default(3),
    maxPages: z.coerce.number().int().min(1).max(MAX_PAGES_LIMIT).default(200),
    sameOrigin: flag(true),
    respectRobotsTxt: flag(true),
    useSitemaps: flag(true),
    includePattern: pattern,
    excludePattern: pattern,
  })
  .transform((value, ctx) => {
    const raw = [...splitStartUrls(value.startUrls ?? ""), ...splitStartUrls(value.startUrl ?? "")];
    if (raw.length === 0) {
      ctx.addIssue({ code: "custom", path: ["startUrls"], message: "at least one start URL is required" });
      return z.NEVER;
    }
    if (raw.length > MAX_START_URLS) {
      ctx.addIssue({ code: "custom", path: ["startUrls"], message: `at most ${MAX_START_URLS} start URLs` });
      return z.NEVER;
    }
    for (const url of raw) {
      const problem = startUrlProblem(url);
      if (problem) {
        ctx.addIssue({ code: "custom", path: ["startUrls"], message: problem });
        return z.NEVER;
      }
    }
    return {
      startUrls: [...new Set(raw.map((u) => normalizeUrl(u)))],
      maxDepth: value.maxDepth,
      maxPages: value.maxPages,
      sameOrigin: value.sameOrigin,
      respectRobotsTxt: value.respectRobotsTxt,
      useSitemaps: value.useSitemaps,
      includePattern: value.includePattern,
      excludePattern: value.excludePattern,
    };
  });

export type WebCrawlerConfig = z.output<typeof webCrawlerConfigSchema>;
export type WebCrawlerSecrets = Record<string, never>;
