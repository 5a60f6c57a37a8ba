// Microsoft Graph over fetch: the connection's OAuth token on every request to the API root (refreshed once
// after a 401), typed connector errors for refused tokens and throttling, and the driveItem shapes the
// connector reads. Pre-authenticated download URLs are fetched without the token.
//
// A 403 is not a refused token: Graph answers it for one item the user may not read (a share that was
// revoked) as well as for a whole drive (no licence), so callers decide what it means where they are
// (https://learn.microsoft.com/en-us/graph/errors: "The user might not have enough permission or might
// not have a required license").

import {
  ConnectorAuthError,
  ConnectorRateLimitError,
  ItemSkippedError,
  retryAfterHeaderMs,
} from "../errors.ts";
import { accountOf, budgetFor, type RequestBudget, sendBudgeted } from "../request-budget.ts";
import type { SyncContext } from "../types.ts";
import type { OnedriveConfig, OnedriveSecrets } from "./settings.ts";

export type OnedriveContext = SyncContext<OnedriveConfig, OnedriveSecrets>;

export const DEFAULT_GRAPH_API = "https://graph.microsoft.com/v1.0";

/** Graph's throttling guidance when a 429 comes without Retry-After. */
const DEFAULT_RETRY_AFTER_MS = 30_000;
/** A download may take longer than one API call: its body is read under this limit (and ctx.signal). */
const DOWNLOAD_TIMEOUT_MS = 10 * 60_000;

/** The driveItem fields the connector reads (Graph sends more). */
export interface DriveItem {
  id: string;
  name?: string;
  eTag?: string;
  cTag?: string;
  size?: number;
  webUrl?: string;
  createdDateTime?: string;
  lastModifiedDateTime?: string;
  parentReference?: { id?: string; driveId?: string; driveType?: string; path?: string; name?: string };
  file?: { mimeType?: string; hashes?: { quickXorHash?: string; sha1Hash?: string; sha256Hash?: string } };
  folder?: { childCount?: number };
  package?: { type?: string };
  root?: Record<string, never>;
  remoteItem?: Record<string, unknown>;
  deleted?: { state?: string };
  malware?: Record<string, unknown>;
  // identitySet.user is an identity: displayName and id only in Graph's model.
  createdBy?: { user?: { displayName?: string } };
  lastModifiedBy?: { user?: { displayName?: string } };
  "@microsoft.graph.downloadUrl"?: string;
}

export interface ItemPage {
  value: DriveItem[];
  "@odata.nextLink"?: string;
  "@odata.deltaLink"?: string;
}

/** A Graph answer the connector handles itself (403, 404, 410, 501) or passes on for the engine to retry. */
export class GraphError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** 410 resyncRequired: where a fresh enumeration starts. */
    readonly location?: string,
  ) {
    super(message);
    this.name = "GraphError";
  }
}

export function apiRoot(ctx: OnedriveContext): string {
  return (ctx.apiBaseUrl ?? DEFAULT_GRAPH_API).replace(/\/+$/, "");
}

/** `/me/drive/items/{id}` or, for the whole drive, `/me/drive/root`. */
export function itemPath(id: string): string {
  return id === "root" ? "/me/drive/root" : `/me/drive/items/${encodeURIComponent(id)}`;
}

/** Waits at least this long: Retry-After in seconds or as an HTTP date; 30 s when absent. */
export function retryAfterMs(header: string | null, now = Date.now()): number {
  return retryAfterHeaderMs(header, now) ?? DEFAULT_RETRY_AFTER_MS;
}

async function errorOf(response: Response): Promise<{ code: string; message: string }> {
  const text = await response.text().catch(() => "");
  try {
    const parsed = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (parsed.error)
      return { code: parsed.error.code ?? "", message: parsed.error.message ?? `HTTP ${response.status}` };
  } catch {
    // Not JSON: a proxy's or the download host's page.
  }
  return { code: "", message: text.slice(0, 200) || `HTTP ${response.status}` };
}

interface SendOptions {
  /** Follow redirects (default) or hand 3xx back (downloads: the token must not follow to another host). */
  redirect?: RequestRedirect;
  headers?: Record<string, string>;
}

/**
 * One request to the Graph API with the connection's token, under the user's request budget
 * (../request-budget.ts): a 429 or 503-with-Retry-After is retried in place after the wait Graph asked
 * for, a few times, so a delta walk goes on where it was; then it is a ConnectorRateLimitError. A 401
 * refreshes the token once and retries; a second 401 or a refused refresh is a ConnectorAuthError. Other
 * statuses (403 included: see the top of this file) are returned.
 */
export async function graphFetch(
  ctx: OnedriveContext,
  url: string,
  options: SendOptions = {},
): Promise<Response> {
  const oauth = ctx.oauth;
  if (!oauth)
    throw new ConnectorAuthError(
      "the OneDrive connection has no OAuth tokens: finish its authorization first",
    );
  const target = new URL(url);
  // Links (nextLink, deltaLink) come from the API; the token is never sent anywhere else.
  if (target.origin !== new URL(apiRoot(ctx)).origin)
    throw new Error(`Microsoft Graph returned a link to another host: ${target.origin}`);
  let token = await oauth.accessToken();
  for (let attempt = 0; ; attempt++) {
    const bearer = token;
    const response = await sendBudgeted({
      budget: await graphBudget(ctx, bearer),
      ctx,
      provider: "onedrive",
      send: () =>
        fetchWithTimeout(ctx, target, {
          headers: { accept: "application/json", ...options.headers, authorization: `Bearer ${bearer}` },
          redirect: options.redirect ?? "follow",
        }),
      throttled: (outcome, retry) => (outcome.ok ? throttleWaitMs(outcome.value, retry) : undefined),
      discard: async (answer) => {
        await answer.body?.cancel();
      },
    });
    if (response.status === 401) {
      const problem = await errorOf(response);
      // The engine refreshes (it throws ConnectorAuthError when the provider refuses); one retry only.
      if (attempt === 0) {
        token = await oauth.refresh();
        continue;
      }
      throw new ConnectorAuthError(`Microsoft Graph refused the access token: ${problem.message}`);
    }
    await throwIfThrottled(response);
    return response;
  }
}

/**
 * The budget of the signed-in user (Graph's `/me` id, asked once per token), shared by every connection of
 * that user in this process: SharePoint and OneDrive throttle per user, whichever app or token asks.
 */
async function graphBudget(ctx: OnedriveContext, token: string): Promise<RequestBudget> {
  const account = await accountOf("microsoft-graph", token, async () => {
    const response = await fetchWithTimeout(ctx, new URL(`${apiRoot(ctx)}/me?$select=id`), {
      headers: { accept: "application/json", authorization: `Bearer ${token}` },
      redirect: "follow",
    });
    if (!response.ok) {
      await response.body?.cancel();
      return undefined;
    }
    return ((await response.json()) as { id?: string }).id;
  });
  // Another API root (a national cloud, a test server) is another service with limits of its own.
  return budgetFor("microsoft-graph", `${apiRoot(ctx)} ${account}`);
}

/**
 * How long Graph asked to wait (429, or 503 with Retry-After), undefined when not throttled. A 429 without
 * Retry-After backs off 1 s, 2 s, 4 s: "use an exponential backoff retry policy"
 * (https://learn.microsoft.com/en-us/graph/throttling#best-practices-to-handle-throttling).
 */
function throttleWaitMs(response: Response, attempt: number): number | undefined {
  const retryAfter = response.headers.get("retry-after");
  if (response.status === 429) return retryAfterHeaderMs(retryAfter) ?? 1000 * 2 ** attempt;
  if (response.status === 503 && retryAfter !== null) return retryAfterHeaderMs(retryAfter);
  return undefined;
}

async function throwIfThrottled(response: Response): Promise<void> {
  const retryAfter = response.headers.get("retry-after");
  if (response.status === 429 || (response.status === 503 && retryAfter !== null)) {
    const problem = await errorOf(response);
    throw new ConnectorRateLimitError(
      `Microsoft Graph throttled the connector (${response.status} ${problem.code || ""}): ${problem.message}`,
      retryAfterMs(retryAfter),
    );
  }
}

/** A timeout for the answer's headers (the network policy's), then only ctx.signal and the download limit. */
async function fetchWithTimeout(
  ctx: OnedriveContext,
  url: URL,
  init: { headers: Record<string, string>; redirect: RequestRedirect },
): Promise<Response> {
  const headersDeadline = new AbortController();
  const timer = setTimeout(
    () => headersDeadline.abort(new Error(`no answer from ${url.host} in ${ctx.network.timeoutMs} ms`)),
    ctx.network.timeoutMs,
  );
  try {
    return await fetch(url, {
      ...init,
      signal: AbortSignal.any([ctx.signal, headersDeadline.signal, AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS)]),
    });
  } finally {
    clearTimeout(timer);
  }
}

/** GET a JSON resource (a path under the API root, or a link it gave); non-2xx answers throw GraphError. */
export async function graphJson<T>(
  ctx: OnedriveContext,
  pathOrUrl: string,
  headers?: Record<string, string>,
): Promise<T> {
  const url = /^https?:\/\//i.test(pathOrUrl) ? pathOrUrl : `${apiRoot(ctx)}${pathOrUrl}`;
  const response = await graphFetch(ctx, url, { headers });
  if (!response.ok) {
    const problem = await errorOf(response);
    throw new GraphError(
      response.status,
      problem.code,
      `Microsoft Graph answered ${response.status} ${problem.code}: ${problem.message}`,
      response.headers.get("location") ?? undefined,
    );
  }
  return (await response.json()) as T;
}

/** A 403 on the drive itself (its root, its delta): the account may not read its own drive any more. */
export function driveDenied(error: GraphError): ConnectorAuthError {
  return new ConnectorAuthError(
    `Microsoft Graph denied access to the drive (${error.code || 403}): ${error.message}`,
  );
}

/** The item, or null when it is gone (404: deleted, or in the recycle bin); a 403 throws GraphError. */
export async function getItem(ctx: OnedriveContext, id: string): Promise<DriveItem | null> {
  try {
    const item = await graphJson<DriveItem>(ctx, itemPath(id));
    return item.deleted ? null : item;
  } catch (error) {
    if (error instanceof GraphError && error.status === 404) return null;
    throw error;
  }
}

/** The item, or null when it is gone or the user may not read it (scope checks: neither can be in the scope). */
export async function readableItem(ctx: OnedriveContext, id: string): Promise<DriveItem | null> {
  try {
    return await getItem(ctx, id);
  } catch (error) {
    if (error instanceof GraphError && error.status === 403) return null;
    throw error;
  }
}

/**
 * The file's bytes, at most maxBytes (null when larger): from the pre-authenticated download URL when the
 * item has one that still works, else through /content, whose redirect is followed without the token.
 * Gone (404) or not readable (403) by then: ItemSkippedError, for this one file.
 */
export async function downloadItem(
  ctx: OnedriveContext,
  item: DriveItem,
  maxBytes: number,
): Promise<Buffer | null> {
  const direct = item["@microsoft.graph.downloadUrl"];
  if (direct) {
    const response = await plainGet(ctx, direct);
    if (response.ok) return readCapped(ctx, response, maxBytes);
    await response.body?.cancel();
    // Pre-authenticated URLs expire after about an hour: ask Graph for a new one.
    if (![401, 403, 404, 410].includes(response.status))
      throw new Error(`OneDrive download of ${item.id} failed: HTTP ${response.status}`);
  }
  let response = await graphFetch(ctx, `${apiRoot(ctx)}${itemPath(item.id)}/content`, { redirect: "manual" });
  const location = response.headers.get("location");
  if (response.status >= 300 && response.status < 400 && location) {
    await response.body?.cancel();
    response = await plainGet(ctx, new URL(location, response.url || apiRoot(ctx)).toString());
  }
  if (response.status === 404 || response.status === 403) {
    await response.body?.cancel();
    throw response.status === 404
      ? new ItemSkippedError("not_found", `OneDrive file ${item.id} was deleted before its bytes were read`)
      : new ItemSkippedError("no_permission", `OneDrive refused the bytes of file ${item.id} (403)`);
  }
  if (!response.ok) throw new Error(`OneDrive download of ${item.id} failed: HTTP ${response.status}`);
  return readCapped(ctx, response, maxBytes);
}

/** A request without the token (download URLs carry their own authorization). */
async function plainGet(ctx: OnedriveContext, url: string): Promise<Response> {
  ctx.heartbeat();
  const response = await fetchWithTimeout(ctx, new URL(url), { headers: {}, redirect: "follow" });
  await throwIfThrottled(response);
  return response;
}

async function readCapped(
  ctx: OnedriveContext,
  response: Response,
  maxBytes: number,
): Promise<Buffer | null> {
  const declared = Number(response.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel();
    return null;
  }
  if (!response.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return null;
    }
    chunks.push(Buffer.from(value));
    ctx.heartbeat();
  }
  return Buffer.concat(chunks);
}
