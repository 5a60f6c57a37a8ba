// Every request of the crawler goes through pipeline/safe-fetch.ts: crawlee's own HTTP client (got-scraping)
// would connect wherever DNS or a redirect points, including the service's own network. This client
// gives crawlee safe-fetch's answers instead: each hop resolved, checked against the network policy and
// pinned, bodies capped, and the page handed over as UTF-8.

import { Readable } from "node:stream";
import type {
  BaseHttpClient,
  HttpRequest,
  HttpResponse,
  ResponseTypes,
  StreamingHttpResponse,
} from "crawlee";
import iconv from "iconv-lite";
import {
  FetchFailedError,
  type FetchUrlOptions,
  type FetchUrlResult,
  fetchUrl,
} from "../../pipeline/safe-fetch.ts";
import type { NetworkPolicy } from "../types.ts";

export const USER_AGENT = "memory-service/0.1 (+self-hosted document memory; web-crawler)";
/** The token robots.txt groups are matched against. */
export const ROBOTS_AGENT = "memory-service";

export function fetchOptions(network: NetworkPolicy): FetchUrlOptions {
  return {
    allowPrivateNetwork: network.allowPrivateNetwork,
    timeoutMs: network.timeoutMs,
    maxBytes: network.maxBytes,
    userAgent: USER_AGENT,
  };
}

export interface FetchedPage {
  finalUrl: string;
  status: number;
  /** Lower-case MIME type without parameters; null when the server sent none. */
  mimeType: string | null;
  /** For HTML, already decoded from the page's charset. */
  html: string | null;
}

const HTML_TYPES = new Set(["text/html", "application/xhtml+xml"]);

export function isHtmlType(mimeType: string | null): boolean {
  return mimeType !== null && HTML_TYPES.has(mimeType);
}

export function mimeTypeOf(contentType: string | null): string | null {
  const type = contentType?.split(";")[0]?.trim().toLowerCase();
  return type || null;
}

/**
 * Charset from the Content-Type header, else a byte-order mark, else a `<meta>` declaration in the
 * first bytes (as browsers do), else UTF-8.
 */
export function decodeHtml(body: Buffer, contentType: string | null): string {
  const declared = /charset\s*=\s*["']?([\w.:-]+)/i.exec(contentType ?? "")?.[1];
  let charset = declared;
  if (!charset) {
    if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) charset = "utf-8";
    else if (body[0] === 0xff && body[1] === 0xfe) charset = "utf-16le";
    else if (body[0] === 0xfe && body[1] === 0xff) charset = "utf-16be";
    else {
      const head = body.subarray(0, 2048).toString("latin1");
      charset = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1];
    }
  }
  if (!charset || !iconv.encodingExists(charset)) charset = "utf-8";
  return iconv.decode(body, charset);
}

/**
 * fetchUrl, with non-2xx answers returned as a status instead of thrown: for the crawler a 404 is an
 * outcome, not a failure to retry.
 */
export async function fetchPage(url: string, network: NetworkPolicy): Promise<FetchedPage> {
  let result: FetchUrlResult;
  try {
    result = await fetchUrl(url, fetchOptions(network));
  } catch (error) {
    if (error instanceof FetchFailedError && error.status !== undefined) {
      return { finalUrl: error.url, status: error.status, mimeType: null, html: null };
    }
    throw error;
  }
  const mimeType = mimeTypeOf(result.contentType);
  return {
    finalUrl: result.finalUrl,
    status: result.status,
    mimeType,
    html: isHtmlType(mimeType) ? decodeHtml(result.body, result.contentType) : null,
  };
}

/** crawlee's HttpClient interface on top of fetchPage. */
export class GuardedHttpClient implements BaseHttpClient {
  constructor(private readonly network: NetworkPolicy) {}

  async sendRequest<T extends keyof ResponseTypes = "text">(
    request: HttpRequest<T>,
  ): Promise<HttpResponse<T>> {
    const { page, body } = await this.load(request);
    const text = body.toString("utf8");
    const responseType = request.responseType ?? "text";
    const parsed = responseType === "buffer" ? body : responseType === "json" ? JSON.parse(text) : text;
    return { ...this.head(request, page), body: parsed as ResponseTypes[T] };
  }

  async stream(request: HttpRequest): Promise<StreamingHttpResponse> {
    const { page, body } = await this.load(request);
    const progress = { percent: 100, transferred: body.length, total: body.length };
    return {
      ...this.head(request, page),
      stream: Readable.from([body]),
      downloadProgress: progress,
      uploadProgress: { percent: 100, transferred: 0, total: 0 },
    };
  }

  private async load(
    request: HttpRequest<keyof ResponseTypes>,
  ): Promise<{ page: FetchedPage; body: Buffer }> {
    const method = (request.method ?? "GET").toUpperCase();
    // The crawler only reads pages; anything else would be a bug, not a crawl.
    if (method !== "GET") throw new Error(`web-crawler sends only GET requests, not ${method}`);
    const page = await fetchPage(String(request.url), this.network);
    return { page, body: Buffer.from(page.html ?? "", "utf8") };
  }

  private head<T extends keyof ResponseTypes>(request: HttpRequest<T>, page: FetchedPage) {
    // Everything is labelled HTML (error pages and non-HTML with an empty body) so that it reaches the
    // request handler, which decides by status and by the real type in x-original-content-type,
    // rather than failing inside crawlee with an error only its message describes.
    return {
      request,
      url: page.finalUrl,
      redirectUrls: [],
      statusCode: page.status,
      headers: {
        "content-type": "text/html; charset=utf-8",
        "x-original-content-type": page.mimeType ?? "",
      },
      trailers: {},
      complete: true,
    };
  }
}
