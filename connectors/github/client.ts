// The Octokit client a sync uses, and how GitHub's failures become the connector errors the engine acts on.
// Requests go through a small node:http(s) fetch so that the host's addresses can be checked when the
// socket connects: `baseUrl` is user-given, and native fetch offers no hook to refuse private addresses.
//
// Every request takes a slot from the request budget of the GitHub user on that host (`GET /user`'s id,
// asked once per token), shared by all connections of that user in this worker (../request-budget.ts):
// GitHub's secondary limits count a user's requests whichever token sends them. A secondary limit (403/429
// with retry-after, or "secondary rate limit" without) is waited out for that request in place, so a tree
// or issue listing goes on where it was; a primary limit (x-ratelimit-remaining 0) usually asks for longer
// than an activity may wait and goes to the engine, as does a limit that persists.

import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import zlib from "node:zlib";
import { Octokit } from "@octokit/rest";
import { isPublicAddress } from "../../pipeline/safe-fetch.ts";
import {
  ConnectorAuthError,
  ConnectorConfigError,
  ConnectorRateLimitError,
  isConnectorError,
} from "../errors.ts";
import { accountOf, budgetFor, sendBudgeted } from "../request-budget.ts";
import type { SyncContext } from "../types.ts";
import type { GithubConfig, GithubSecrets } from "./settings.ts";

export type GithubContext = SyncContext<GithubConfig, GithubSecrets>;

/** GitHub's advice when a limit is hit without saying how long to wait: at least a minute. */
const DEFAULT_RETRY_AFTER_MS = 60_000;
/** The blob API serves up to 100 MB, which is ~134 MB of base64 inside JSON. */
const MAX_RESPONSE_BYTES = 160 * 1024 * 1024;
const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = "memory-service-github-connector/0.1";

export class PrivateAddressError extends Error {
  constructor(host: string) {
    super(`GitHub host ${host} is on a private network, which this deployment does not allow`);
    this.name = "PrivateAddressError";
  }
}

/** Checked at connect time, so a DNS answer that changes after a check (rebinding) cannot slip through. */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, "");
    const allowed = addresses.filter((a) => isPublicAddress(a.address));
    const first = allowed[0];
    if (!first) return callback(new PrivateAddressError(hostname), "");
    if (options.all) return callback(null, allowed);
    callback(null, first.address, first.family);
  });
};

const agents = {
  open: { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) },
  publicOnly: {
    http: new http.Agent({ keepAlive: true, lookup: publicOnlyLookup }),
    https: new https.Agent({ keepAlive: true, lookup: publicOnlyLookup }),
  },
};

interface RawResponse {
  status: number;
  statusText: string;
  headers: Headers;
  body: Buffer;
}

function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  signal: AbortSignal | undefined,
  allowPrivateNetwork: boolean,
  timeoutMs: number,
): Promise<RawResponse> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (!allowPrivateNetwork && isIP(host) && !isPublicAddress(host)) {
    return Promise.reject(new PrivateAddressError(host));
  }
  const secure = url.protocol === "https:";
  const pool = allowPrivateNetwork ? agents.open : agents.publicOnly;
  return new Promise((resolve, reject) => {
    const request = (secure ? https : http).request(url, {
      method,
      headers: { ...headers, "accept-encoding": "gzip" },
      agent: secure ? pool.https : pool.http,
      signal,
    });
    request.setTimeout(timeoutMs, () =>
      request.destroy(new Error(`no answer from ${url.host} in ${timeoutMs} ms`)),
    );
    request.on("error", reject);
    request.on("response", (response: IncomingMessage) => {
      const stream =
        response.headers["content-encoding"] === "gzip" ? response.pipe(zlib.createGunzip()) : response;
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          reject(new Error(`response from ${url.host} is larger than ${MAX_RESPONSE_BYTES} bytes`));
          request.destroy();
          return;
        }
        chunks.push(chunk);
      });
      stream.on("error", reject);
      response.on("error", reject);
      stream.on("end", () => {
        const out = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          // The body is handed over decoded, so its original encoding and length no longer apply.
          if (value === undefined || name === "content-encoding" || name === "content-length") continue;
          out.set(name, Array.isArray(value) ? value.join(", ") : value);
        }
        resolve({
          status: response.statusCode ?? 0,
          statusText: response.statusMessage ?? "",
          headers: out,
          body: Buffer.concat(chunks),
        });
      });
    });
    request.end(body);
  });
}

/** A fetch for Octokit: follows redirects (renamed repositories answer 301), drops credentials across origins. */
function guardedFetch(allowPrivateNetwork: boolean, timeoutMs: number) {
  return async (input: string | URL, init: RequestInit = {}): Promise<Response> => {
    let url = new URL(String(input));
    let method = (init.method ?? "GET").toUpperCase();
    let body = typeof init.body === "string" ? init.body : undefined;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries((init.headers ?? {}) as Record<string, string>)) {
      headers[name.toLowerCase()] = String(value);
    }
    for (let hop = 0; ; hop++) {
      const raw = await send(
        url,
        method,
        headers,
        body,
        init.signal ?? undefined,
        allowPrivateNetwork,
        timeoutMs,
      );
      const location = raw.headers.get("location");
      if (REDIRECTS.has(raw.status) && location) {
        if (hop >= MAX_REDIRECTS)
          throw new Error(`more than ${MAX_REDIRECTS} redirects from ${String(input)}`);
        const next = new URL(location, url);
        if (next.origin !== url.origin) delete headers.authorization;
        if (raw.status === 303 || ((raw.status === 301 || raw.status === 302) && method !== "HEAD")) {
          if (method !== "GET" && method !== "HEAD") body = undefined;
          method = method === "HEAD" ? "HEAD" : "GET";
        }
        url = next;
        continue;
      }
      const noBody = raw.status === 204 || raw.status === 205 || raw.status === 304 || method === "HEAD";
      const response = new Response(noBody ? null : new Uint8Array(raw.body), {
        status: raw.status,
        statusText: raw.statusText,
        headers: raw.headers,
      });
      Object.defineProperty(response, "url", { value: url.href });
      return response;
    }
  };
}

const noop = () => {};

type Fetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

function authorizationOf(init: RequestInit | undefined): string | undefined {
  for (const [name, value] of Object.entries((init?.headers ?? {}) as Record<string, string>)) {
    if (name.toLowerCase() === "authorization") return String(value);
  }
  return undefined;
}

/** Octokit's requests, each under the budget of the user its token belongs to. */
function budgetedFetch(ctx: GithubContext, inner: Fetch): Fetch {
  const root = ctx.config.baseUrl.replace(/\/+$/, "");
  return async (input, init = {}) => {
    const authorization = authorizationOf(init) ?? "";
    const account = await accountOf("github", `${root} ${authorization}`, async () => {
      const response = await inner(`${root}/user`, {
        headers: { accept: "application/vnd.github+json", "user-agent": USER_AGENT, authorization },
        signal: ctx.signal,
      });
      if (!response.ok) return undefined;
      const id = ((await response.json()) as { id?: unknown }).id;
      return id === undefined ? undefined : String(id);
    });
    return sendBudgeted({
      // Enterprise servers are other services with limits of their own: the host is part of the account.
      budget: budgetFor("github", `${root} ${account}`),
      ctx,
      provider: "github",
      send: () => inner(input, init),
      throttled: async (outcome) => {
        if (!outcome.ok) return undefined;
        const response = outcome.value;
        if (response.status !== 403 && response.status !== 429) return undefined;
        const text = await response.clone().text();
        let message = text;
        try {
          message = String((JSON.parse(text) as { message?: unknown }).message ?? text);
        } catch {
          // Not JSON: GitHub's HTML error page; the headers decide.
        }
        const headers: Record<string, string> = {};
        response.headers.forEach((value, name) => {
          headers[name] = value;
        });
        return rateLimitWaitMs({ status: response.status, message, response: { headers } });
      },
      discard: async (response) => {
        await response.body?.cancel();
      },
    });
  };
}

export function githubClient(ctx: GithubContext): Octokit {
  const oauth = ctx.oauth;
  if (!ctx.secrets.token && !oauth) throw new ConnectorAuthError("the GitHub connection has no token");
  const octokit = new Octokit({
    ...(ctx.secrets.token ? { auth: ctx.secrets.token } : {}),
    baseUrl: ctx.config.baseUrl,
    userAgent: USER_AGENT,
    request: {
      fetch: budgetedFetch(ctx, guardedFetch(ctx.network.allowPrivateNetwork, ctx.network.timeoutMs)),
      signal: ctx.signal,
    },
    // Failed requests are reported by the connector as typed errors; Octokit's own error lines would
    // duplicate them on stderr.
    log: {
      debug: noop,
      info: noop,
      warn: (message: string) => ctx.log.warn({ provider: "github" }, message),
      error: noop,
    },
  });
  octokit.hook.after("request", () => ctx.heartbeat());
  if (!ctx.secrets.token && oauth) {
    // A connection made through the OAuth consent: the engine holds the token. A GitHub App's user token
    // expires after eight hours and comes with a refresh token; a 401 is answered by one refresh and one
    // retry, so only a token that a refresh cannot renew reaches the engine as refused (the refresh then
    // throws ConnectorAuthError itself). https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/refreshing-user-access-tokens
    octokit.hook.wrap("request", async (request, options) => {
      options.headers.authorization = `token ${await oauth.accessToken()}`;
      try {
        return await request(options);
      } catch (error) {
        if (httpStatus(error) !== 401) throw error;
        options.headers.authorization = `token ${await oauth.refresh()}`;
        return request(options);
      }
    });
  }
  return octokit;
}

/** What Octokit throws for an HTTP status (RequestError, named HttpError); duck-typed to avoid a transitive import. */
export interface HttpError {
  status: number;
  message: string;
  response?: { headers: Record<string, string | number | undefined>; data?: unknown };
}

export function httpError(error: unknown): HttpError | undefined {
  if (
    error instanceof Error &&
    error.name === "HttpError" &&
    typeof (error as { status?: unknown }).status === "number"
  ) {
    return error as unknown as HttpError;
  }
  return undefined;
}

export function httpStatus(error: unknown): number | undefined {
  return httpError(error)?.status;
}

function findCause<T extends Error>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof type) return e;
  }
  return undefined;
}

/**
 * GitHub's documented order: wait `retry-after` seconds if given; else, with no requests remaining, until
 * `x-ratelimit-reset`; else (secondary limits) at least a minute. The reset time is measured against the
 * response's own Date so a skewed local clock does not shorten the wait. Undefined: not a rate limit.
 */
export function rateLimitWaitMs(error: HttpError, now = Date.now()): number | undefined {
  const headers = error.response?.headers ?? {};
  const header = (name: string) => {
    const value = headers[name];
    return value === undefined ? undefined : String(value);
  };
  const retryAfter = header("retry-after");
  if (retryAfter !== undefined) {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds)) return Math.max(1000, Math.ceil(seconds * 1000));
    const at = Date.parse(retryAfter);
    if (Number.isFinite(at)) return Math.max(1000, at - now);
  }
  const reset = Number(header("x-ratelimit-reset"));
  if (header("x-ratelimit-remaining") === "0" && Number.isFinite(reset) && reset > 0) {
    const serverNow = Date.parse(header("date") ?? "");
    return Math.max(1000, reset * 1000 - (Number.isFinite(serverNow) ? serverNow : now));
  }
  if (error.status === 429 || /rate limit/i.test(error.message)) return DEFAULT_RETRY_AFTER_MS;
  return undefined;
}

/** The connector error for a failure, or the failure itself when the engine should simply retry. */
export function toConnectorError(error: unknown, ctx: GithubContext): unknown {
  if (ctx.signal.aborted) return error;
  if (isConnectorError(error)) return error;
  // The request budget gave up before sending (a pause longer than an activity waits): Octokit wraps what
  // its fetch threw.
  const spent = findCause(error, ConnectorRateLimitError);
  if (spent) return spent;
  const refused = findCause(error, PrivateAddressError);
  if (refused) return new ConnectorConfigError(refused.message);
  const http = httpError(error);
  if (!http) return error;
  if (http.status === 401) return new ConnectorAuthError(`GitHub refused the token: ${http.message}`);
  if (http.status === 403 || http.status === 429) {
    const wait = rateLimitWaitMs(http);
    if (wait !== undefined) return new ConnectorRateLimitError(`GitHub rate limit: ${http.message}`, wait);
    // A 403 that is not a rate limit concerns what was asked for, not the token as a whole (SAML SSO not
    // authorized for one organization, a fine-grained token without one permission, an organization's IP
    // allow list). Syncs handle it per repository or item before this; elsewhere (verify, resources) it is
    // a setting to fix, never a reason to mark the connection expired.
    if (http.status === 403) return new ConnectorConfigError(`GitHub denied access: ${http.message}`);
  }
  return error;
}

export type AccessReason = "no_permission" | "not_found";

/**
 * Why GitHub will not give one repository or item, or undefined when the failure is something else (a
 * rate limit, a refused token, a server error). 403 without rate-limit headers: SAML enforcement, a
 * fine-grained token's permissions or an IP allow list; 404: gone, or hidden from this token (GitHub
 * answers 404 rather than 403 for private resources a token cannot see); 451: blocked for legal reasons.
 */
export function accessProblem(error: unknown): { reason: AccessReason; detail: string } | undefined {
  const http = httpError(error);
  if (!http) return undefined;
  if (http.status === 404 || http.status === 410)
    return { reason: "not_found", detail: `${http.status}: ${http.message}` };
  if (http.status === 451) return { reason: "no_permission", detail: `451: ${http.message}` };
  if (http.status === 403 && rateLimitWaitMs(http) === undefined)
    return { reason: "no_permission", detail: `403: ${http.message}` };
  return undefined;
}

/** rel → URL from a Link header. */
export function parseLink(header: unknown): Record<string, string> {
  const links: Record<string, string> = {};
  if (typeof header !== "string") return links;
  for (const part of header.split(",")) {
    const match = part.match(/<([^>]*)>\s*;\s*rel="([^"]+)"/);
    if (!match?.[1] || !match[2]) continue;
    for (const rel of match[2].split(/\s+/)) links[rel] = match[1];
  }
  return links;
}
