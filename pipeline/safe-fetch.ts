// Fetches a user-supplied URL without letting it reach the service's own network (SSRF).
// Every hop is resolved once, the addresses are checked, and the socket is pinned to the checked
// address, so a DNS answer that changes between check and connect (rebinding) cannot slip through.

import { lookup as dnsLookup } from "node:dns/promises";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import type { Readable } from "node:stream";
import zlib from "node:zlib";
import ipaddr from "ipaddr.js";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Host name to addresses; injectable so tests (and deployments with their own DNS) control resolution. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface FetchUrlOptions {
  /** Allow loopback, private, link-local, etc. addresses (self-hosted setups fetching their own LAN). */
  allowPrivateNetwork?: boolean;
  /** Budget for the whole fetch, redirects included. */
  timeoutMs?: number;
  /** Largest accepted body, measured after decompression (a small gzip can expand enormously). */
  maxBytes?: number;
  userAgent?: string;
  resolve?: Resolver;
  /**
   * Decides which resolved addresses may be contacted. Defaults to public unicast only (any address
   * with allowPrivateNetwork). Lets a deployment open one specific internal host without opening all.
   */
  isAllowedAddress?: (address: string) => boolean;
}

export interface FetchUrlResult {
  finalUrl: string;
  status: number;
  contentType: string | null;
  body: Buffer;
}

/** The URL was not fetched because policy forbids it (scheme, address, too many redirects). */
export class FetchRefusedError extends Error {
  override readonly name = "FetchRefusedError";
  constructor(
    readonly url: string,
    readonly reason: string,
    /**
     * What the reason leaves out for the server log only: the address a host name resolved to and its range. The
     * reason reaches whoever added the URL (a document's errorReason), and the address an internal name resolves
     * to is a map of the network the check exists to hide.
     */
    readonly detail?: string,
  ) {
    super(`refused to fetch ${url}: ${reason}`);
  }
}

/** The fetch was attempted and did not produce an acceptable response. */
export class FetchFailedError extends Error {
  override readonly name = "FetchFailedError";
  constructor(
    readonly url: string,
    readonly reason: string,
    readonly status?: number,
  ) {
    super(`failed to fetch ${url}: ${reason}`);
  }
}

export const DEFAULT_TIMEOUT_MS = 15_000;
export const DEFAULT_MAX_BYTES = 20 * 1024 * 1024;
export const MAX_REDIRECTS = 5;
const DEFAULT_USER_AGENT = "memory-service/0.1 (+self-hosted document memory)";
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const systemResolver: Resolver = async (hostname) => {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/**
 * The ipaddr.js range of an address, after unwrapping IPv4-mapped IPv6 (::ffff:127.0.0.1 is loopback).
 * Only "unicast" is public; everything else (loopback, private, linkLocal, uniqueLocal, carrierGradeNat,
 * multicast, unspecified, reserved, 6to4, teredo, rfc6052 NAT64, ...) is internal or ambiguous.
 */
export function addressRange(address: string): string {
  return ipaddr.process(address).range();
}

export function isPublicAddress(address: string): boolean {
  return ipaddr.isValid(address) && addressRange(address) === "unicast";
}

export async function fetchUrl(url: string, options: FetchUrlOptions = {}): Promise<FetchUrlResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let current = url;
  try {
    for (let hop = 0; ; hop++) {
      const target = parseTarget(current);
      const pinned = await abortable(resolveChecked(target, options), controller.signal);
      const response = await request(target, pinned, options, controller.signal);
      const location = response.headers.location;
      if (REDIRECT_STATUSES.has(response.statusCode ?? 0) && location) {
        response.destroy(); // the redirect body is not needed and the socket is not reused (agent: false)
        if (hop >= MAX_REDIRECTS) throw new FetchRefusedError(url, `more than ${MAX_REDIRECTS} redirects`);
        current = resolveLocation(location, current);
        continue;
      }
      const status = response.statusCode ?? 0;
      if (status < 200 || status > 299) {
        response.destroy(); // an error page is not worth downloading
        const text = response.statusMessage ? ` ${response.statusMessage}` : "";
        throw new FetchFailedError(current, `HTTP ${status}${text}`, status);
      }
      const body = await readBody(response, current, options.maxBytes ?? DEFAULT_MAX_BYTES);
      const contentType = response.headers["content-type"] ?? null;
      return { finalUrl: current, status, contentType, body };
    }
  } catch (error) {
    // Checked first: an abort surfaces as whatever the interrupted step threw.
    if (controller.signal.aborted) throw new FetchFailedError(current, `timed out after ${timeoutMs} ms`);
    if (error instanceof FetchRefusedError || error instanceof FetchFailedError) throw error;
    throw new FetchFailedError(current, describeNetworkError(error));
  } finally {
    clearTimeout(timer);
  }
}

/** DNS lookups cannot be cancelled; stop waiting for them when the deadline passes. */
function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

interface Target {
  url: URL;
  /** Host without IPv6 brackets. */
  hostname: string;
}

function parseTarget(raw: string): Target {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new FetchRefusedError(raw, "not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new FetchRefusedError(
      raw,
      `scheme ${url.protocol.replace(/:$/, "")} is not allowed (only http and https)`,
    );
  }
  if (url.username || url.password) throw new FetchRefusedError(raw, "URLs with credentials are not allowed");
  // URL already normalises odd IPv4 spellings (0x7f.1, 2130706433) to dotted quads.
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
  if (!hostname) throw new FetchRefusedError(raw, "URL has no host");
  return { url, hostname };
}

function resolveLocation(location: string, base: string): string {
  try {
    return new URL(location, base).href;
  } catch {
    throw new FetchFailedError(base, `redirect to an invalid location: ${location}`);
  }
}

async function resolveChecked(target: Target, options: FetchUrlOptions): Promise<ResolvedAddress> {
  const raw = target.url.href;
  let addresses: ResolvedAddress[];
  const literal = isIP(target.hostname);
  if (literal) {
    addresses = [{ address: target.hostname, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await (options.resolve ?? systemResolver)(target.hostname);
    } catch (error) {
      throw new FetchFailedError(raw, `could not resolve ${target.hostname}: ${describeNetworkError(error)}`);
    }
  }
  if (addresses.length === 0) throw new FetchFailedError(raw, `${target.hostname} has no addresses`);
  const allowed =
    options.isAllowedAddress ??
    (options.allowPrivateNetwork ? (a: string) => ipaddr.isValid(a) : isPublicAddress);
  // Refuse if any answer is forbidden: a name that also points inside is not trustworthy.
  for (const { address } of addresses) {
    if (!allowed(address)) {
      const range = ipaddr.isValid(address) ? addressRange(address) : "invalid";
      const via = literal ? "" : ` (${target.hostname} resolves to it)`;
      // The caller learns that the host is refused, not where it points (see FetchRefusedError.detail).
      throw new FetchRefusedError(
        raw,
        `the host ${target.url.hostname} is not allowed (refused: private or internal network)`,
        `${address} is a ${describeRange(range)} address${via}`,
      );
    }
  }
  return addresses[0] as ResolvedAddress;
}

function describeRange(range: string): string {
  const names: Record<string, string> = {
    unicast: "public but not permitted",
    loopback: "loopback",
    private: "private-network",
    linkLocal: "link-local",
    uniqueLocal: "unique-local",
    carrierGradeNat: "carrier-grade NAT",
    unspecified: "unspecified",
    multicast: "multicast",
    broadcast: "broadcast",
    reserved: "reserved",
  };
  return names[range] ?? `non-public (${range})`;
}

/** Answers the socket's own lookup with the address we already checked, never asking DNS again. */
function pinnedLookup(pinned: ResolvedAddress): LookupFunction {
  return (_hostname, opts, callback) => {
    // Node's happy-eyeballs connect asks for `all`; plain connects expect a single address.
    if ((opts as { all?: boolean }).all) {
      (callback as (e: null, a: ResolvedAddress[]) => void)(null, [pinned]);
    } else {
      callback(null, pinned.address, pinned.family);
    }
  };
}

function request(
  target: Target,
  pinned: ResolvedAddress,
  options: FetchUrlOptions,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const transport = target.url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(
      target.url,
      {
        method: "GET",
        agent: false, // no pooled sockets: each hop connects to its own checked address
        lookup: pinnedLookup(pinned),
        signal,
        headers: {
          "user-agent": options.userAgent ?? DEFAULT_USER_AGENT,
          accept: "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8",
          "accept-encoding": "gzip, deflate, br",
        },
      },
      resolve,
    );
    req.on("error", reject);
    req.end();
  });
}

function decoded(response: IncomingMessage, url: string): Readable {
  const encoding = (response.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  switch (encoding) {
    case "identity":
    case "":
      return response;
    case "gzip":
    case "x-gzip":
      return response.pipe(zlib.createGunzip());
    case "deflate":
      return response.pipe(zlib.createInflate());
    case "br":
      return response.pipe(zlib.createBrotliDecompress());
    default:
      response.resume();
      throw new FetchFailedError(url, `unsupported content-encoding ${encoding}`);
  }
}

async function readBody(response: IncomingMessage, url: string, maxBytes: number): Promise<Buffer> {
  const declared = Number(response.headers["content-length"]);
  // The declared length is of the encoded body; when identity it lets us refuse before reading.
  if (!response.headers["content-encoding"] && Number.isFinite(declared) && declared > maxBytes) {
    response.destroy();
    throw new FetchFailedError(url, `body is ${declared} bytes, over the ${maxBytes}-byte limit`);
  }
  const stream = decoded(response, url);
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of stream) {
      total += (chunk as Buffer).length;
      if (total > maxBytes) throw new FetchFailedError(url, `body exceeds the ${maxBytes}-byte limit`);
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    response.destroy();
    stream.destroy();
    if (error instanceof FetchFailedError) throw error;
    throw new FetchFailedError(url, `reading the body failed: ${describeNetworkError(error)}`);
  }
  return Buffer.concat(chunks);
}

function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  const known: Record<string, string> = {
    ENOTFOUND: "host not found",
    ECONNREFUSED: "connection refused",
    ECONNRESET: "connection reset",
    ETIMEDOUT: "connection timed out",
    EHOSTUNREACH: "host unreachable",
    ENETUNREACH: "network unreachable",
    CERT_HAS_EXPIRED: "TLS certificate has expired",
    DEPTH_ZERO_SELF_SIGNED_CERT: "self-signed TLS certificate",
    ERR_TLS_CERT_ALTNAME_INVALID: "TLS certificate does not match the host",
  };
  return (code && known[code]) ?? error.message;
}
