// A small web site on 127.0.0.1 whose pages live in memory, so a test can change the site between two
// crawls (add, modify, remove pages) and see what a crawler makes of it. Unknown paths get a real
// HTML 404 page, which a crawler must not mistake for content.

import http from "node:http";
import type { AddressInfo } from "node:net";

export interface LocalPage {
  body: string;
  /** Defaults from the path: .txt text/plain, .xml application/xml, otherwise text/html. */
  contentType?: string;
  status?: number;
  headers?: Record<string, string>;
}

export interface LocalSite {
  /** The site's origin, without a trailing slash: `http://127.0.0.1:PORT`. */
  url: string;
  /** Adds or replaces the page at `path` (`/about`, `/robots.txt`, `/sitemap.xml`). */
  setPage(path: string, page: string | LocalPage): void;
  removePage(path: string): void;
  /** Paths requested so far, in order (query strings included). */
  readonly requests: string[];
  stop(): Promise<void>;
}

export const NOT_FOUND_TEXT = "This page could not be found on the local test site";

export async function startLocalSite(initial: Record<string, string | LocalPage> = {}): Promise<LocalSite> {
  const pages = new Map<string, LocalPage>();
  const requests: string[] = [];
  const setPage = (path: string, page: string | LocalPage) => {
    pages.set(path, typeof page === "string" ? { body: page } : page);
  };
  for (const [path, page] of Object.entries(initial)) setPage(path, page);

  const server = http.createServer((req, res) => {
    const path = req.url ?? "/";
    requests.push(path);
    const page = pages.get(path) ?? pages.get(path.split("?")[0] ?? path);
    if (!page) {
      res.writeHead(404, { "content-type": "text/html; charset=utf-8" });
      res.end(
        `<!doctype html><html><head><title>Not found</title></head><body><main><h1>Not found</h1><p>${NOT_FOUND_TEXT}.</p></main></body></html>`,
      );
      return;
    }
    res.writeHead(page.status ?? 200, {
      "content-type": page.contentType ?? defaultType(path),
      ...page.headers,
    });
    res.end(page.body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    setPage,
    removePage: (path) => {
      pages.delete(path);
    },
    requests,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

function defaultType(path: string): string {
  const pathname = path.split("?")[0] ?? path;
  if (pathname.endsWith(".txt")) return "text/plain; charset=utf-8";
  if (pathname.endsWith(".xml")) return "application/xml; charset=utf-8";
  return "text/html; charset=utf-8";
}

/** A plain HTML page with a title, some paragraphs and links: enough text for readability extraction. */
export function htmlPage(title: string, paragraphs: string[], links: string[] = []): string {
  const body = paragraphs.map((p) => `<p>${p}</p>`).join("\n");
  const nav = links.map((href) => `<li><a href="${href}">${href}</a></li>`).join("");
  return `<!doctype html><html><head><title>${title}</title></head><body><main><article><h1>${title}</h1>
${body}</article></main><footer><ul>${nav}</ul></footer></body></html>`;
}

/** A sitemap.xml listing the given absolute URLs. */
export function sitemapXml(urls: string[]): string {
  const entries = urls.map((u) => `<url><loc>${u}</loc></url>`).join("");
  return `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${entries}</urlset>`;
}
