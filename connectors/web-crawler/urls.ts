// The one way URLs are compared in the crawler: ids, the visited set and the frontier all use it, so a
// page reached by two spellings of its URL is fetched and listed once.

import { createHash } from "node:crypto";

/** Parsed by WHATWG URL (lower-case host, default port dropped, `..` resolved), without the fragment. */
export function normalizeUrl(raw: string): string {
  const url = new URL(raw);
  url.hash = "";
  return url.href;
}

/** `href` resolved against `base`, normalised; null for anything that is not an http(s) URL. */
export function resolveLink(href: string, base: string): string | null {
  let url: URL;
  try {
    url = new URL(href.trim(), base);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  if (url.username || url.password) return null;
  url.hash = "";
  return url.href;
}

/**
 * A short fixed-size key for the visited set: the cursor holds thousands of them and travels through
 * the workflow history, where whole URLs would make it several times larger. 64 bits keep collisions
 * negligible at the 5,000-page limit.
 */
export function urlKey(url: string): string {
  return createHash("sha256").update(url).digest("base64url").slice(0, 11);
}

/** Links that are almost never HTML: not worth a request. */
const BINARY_EXTENSION =
  /\.(?:png|jpe?g|gif|webp|avif|svg|ico|bmp|tiff?|pdf|zip|gz|tgz|bz2|xz|7z|rar|tar|exe|dmg|msi|iso|apk|mp[34]|m4[av]|mov|avi|mkv|webm|wav|ogg|flac|woff2?|ttf|otf|eot|css|js|mjs|json|xml|rss|atom|docx?|xlsx?|pptx?|odt|ods|csv)$/i;

export function looksBinary(url: string): boolean {
  return BINARY_EXTENSION.test(new URL(url).pathname);
}
