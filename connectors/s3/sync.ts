// Lists a bucket page by page with ListObjectsV2 and fetches objects with GetObject. The cursor is
// S3's own continuation token, so a pass can resume after a worker restart without listing again.

import { createHash } from "node:crypto";
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { type _Object, GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { z } from "zod";
import { isPublicAddress } from "../../pipeline/safe-fetch.ts";
import {
  ConnectorAuthError,
  ConnectorConfigError,
  ConnectorRateLimitError,
  ItemSkippedError,
} from "../errors.ts";
import type { FetchedItem, ListPage, SourceItem, SyncContext } from "../types.ts";
import type { S3Config, S3Secrets } from "./settings.ts";

export const s3CursorSchema = z.object({
  /** NextContinuationToken of the previous page; null at the start of a pass. */
  continuationToken: z.string().nullable(),
});
export type S3Cursor = z.infer<typeof s3CursorSchema>;

type S3Context = SyncContext<S3Config, S3Secrets>;

/** Storage classes whose objects GetObject refuses (InvalidObjectState) until someone restores them. */
const ARCHIVED_CLASSES = new Set(["GLACIER", "DEEP_ARCHIVE"]);
/** Content types that say nothing about the bytes: the pipeline sniffs those itself. */
const GENERIC_TYPES = new Set(["", "application/octet-stream", "binary/octet-stream", "application/unknown"]);
/** Refusals of the credentials themselves, whatever the request: never about one object. */
const CREDENTIAL_ERRORS = new Set([
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "ExpiredToken",
  "InvalidToken",
  "TokenRefreshRequired",
  "AllAccessDisabled",
  "AccountProblem",
  "InvalidSecurity",
]);
/** Refusals that mean the connection cannot go on when the listing meets them (a denial on one object does not). */
const AUTH_ERRORS = new Set([...CREDENTIAL_ERRORS, "AccessDenied", "Forbidden"]);
const CONFIG_ERRORS = new Set([
  "NoSuchBucket",
  "InvalidBucketName",
  "PermanentRedirect",
  "AuthorizationHeaderMalformed",
  "IllegalLocationConstraintException",
]);
const RATE_LIMIT_ERRORS = new Set([
  "SlowDown",
  "Throttling",
  "ThrottlingException",
  "RequestLimitExceeded",
  "TooManyRequestsException",
  "ServiceUnavailable",
]);
/** S3 sends no Retry-After with SlowDown; its guidance is to back off for seconds, not milliseconds. */
const DEFAULT_RETRY_AFTER_MS = 5_000;

export async function listS3Page(ctx: S3Context, cursor: S3Cursor): Promise<ListPage<S3Cursor>> {
  const { bucket, prefix, pageSize, maxObjectBytes } = ctx.config;
  const out = await send(ctx, (client) =>
    client.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: prefix || undefined,
        MaxKeys: pageSize,
        ContinuationToken: cursor.continuationToken ?? undefined,
      }),
      { abortSignal: ctx.signal },
    ),
  );
  ctx.heartbeat();

  // Objects too large or archived are listed too, marked skipped: the run counts them with their reason, and
  // a document an earlier sync made of one stays (an object that grew, or moved to Glacier, is not gone).
  const items: SourceItem[] = [];
  for (const object of out.Contents ?? []) {
    const key = object.Key;
    if (!key || key.endsWith("/")) continue;
    const item: SourceItem = { id: key, version: versionOf(object) };
    if (object.StorageClass && ARCHIVED_CLASSES.has(object.StorageClass))
      item.skipped = {
        reason: "archived",
        message: `s3: ${key} is archived (${object.StorageClass}); restore it to sync it`,
      };
    else if ((object.Size ?? 0) > maxObjectBytes)
      item.skipped = {
        reason: "too_large",
        message: `s3: ${key} is larger than maxObjectBytes (${maxObjectBytes} bytes)`,
      };
    items.push(item);
  }

  if (!out.IsTruncated) return { items, next: null };
  // Ending the pass here would make the engine delete every document after this page.
  if (!out.NextContinuationToken)
    throw new Error(`s3: bucket ${bucket} listed a truncated page without a token`);
  return { items, next: { continuationToken: out.NextContinuationToken } };
}

export async function fetchS3Item(ctx: S3Context, item: SourceItem): Promise<FetchedItem | null> {
  const { bucket, maxObjectBytes } = ctx.config;
  const key = item.id;
  const out = await send(
    ctx,
    (client) => client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: ctx.signal }),
    (name, status) => {
      // Deleted between listing and fetch: absent, which is what the next pass would conclude anyway.
      // A bare 404 (no error body) counts too, but never a missing bucket: that is a config error.
      if (name === "NoSuchKey" || (status === 404 && !CONFIG_ERRORS.has(name))) return "absent";
      // A 403 on one object while its bucket lists: a bucket policy or ACL on that key, or a KMS key the
      // credentials may not use (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html,
      // https://docs.aws.amazon.com/AmazonS3/latest/userguide/troubleshoot-403-errors.html). That object only; the others sync.
      if ((name === "AccessDenied" || status === 403) && !CREDENTIAL_ERRORS.has(name))
        throw new ItemSkippedError(
          "no_permission",
          `s3: bucket ${bucket}: GetObject ${key} refused (${name || 403})`,
        );
      // GLACIER, DEEP_ARCHIVE or an Intelligent-Tiering archive tier: readable only after a restore
      // (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html, InvalidObjectState).
      if (name === "InvalidObjectState")
        throw new ItemSkippedError(
          "archived",
          `s3: bucket ${bucket}: ${key} is archived; restore it to sync it`,
        );
      return undefined;
    },
  );
  if (out === "absent") return null;

  const body = out.Body as (AsyncIterable<Uint8Array> & { destroy?: () => void }) | undefined;
  const tooLarge = (): never => {
    body?.destroy?.();
    throw new ItemSkippedError(
      "too_large",
      `s3: bucket ${bucket}: ${key} is larger than maxObjectBytes (${maxObjectBytes} bytes)`,
    );
  };
  // The object may have grown since it was listed.
  if ((out.ContentLength ?? 0) > maxObjectBytes) return tooLarge();
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (body) {
    for await (const chunk of body) {
      size += chunk.byteLength;
      // Some stores omit Content-Length (chunked responses): count what actually arrives.
      if (size > maxObjectBytes) return tooLarge();
      chunks.push(chunk);
      ctx.heartbeat();
    }
  }
  const bytes = Buffer.concat(chunks);

  const name = key.slice(key.lastIndexOf("/") + 1);
  const etag = unquote(out.ETag) ?? item.version;
  const contentType = out.ContentType?.trim();
  const essence = contentType?.split(";")[0]?.trim().toLowerCase() ?? "";
  return {
    title: name,
    file: { bytes, name, ...(contentType && !GENERIC_TYPES.has(essence) ? { mimeType: contentType } : {}) },
    filepath: `/${bucket}/${key.slice(0, key.lastIndexOf("/") + 1)}`,
    ...(ctx.config.endpoint ? {} : { url: consoleUrl(ctx.config.region, bucket, key) }),
    metadata: {
      bucket,
      key,
      etag,
      ...(out.LastModified ? { lastModified: out.LastModified.toISOString() } : {}),
      size: bytes.length,
    },
  };
}

/** A one-key listing: proves the bucket exists and the credentials may list it, which a sync needs. */
export async function verifyS3(ctx: S3Context): Promise<void> {
  await send(ctx, (client) =>
    client.send(
      new ListObjectsV2Command({
        Bucket: ctx.config.bucket,
        Prefix: ctx.config.prefix || undefined,
        MaxKeys: 1,
      }),
      { abortSignal: ctx.signal },
    ),
  );
}

/** The ETag changes whenever the content does (also for multipart and encrypted objects, where it is no MD5). */
function versionOf(object: _Object): string {
  return (
    unquote(object.ETag) ?? `${object.LastModified?.toISOString() ?? "unknown"}/${object.Size ?? "unknown"}`
  );
}

function unquote(etag: string | undefined): string | undefined {
  return etag ? etag.replace(/^(W\/)?"|"$/g, "") : undefined;
}

function consoleUrl(region: string, bucket: string, key: string): string {
  const query = new URLSearchParams({ region, prefix: key });
  return `https://s3.console.aws.amazon.com/s3/object/${encodeURIComponent(bucket)}?${query}`;
}

/**
 * Runs one request and turns S3's refusals into the errors the engine acts on. `special` may claim an
 * error first (a missing key is no failure when fetching).
 */
async function send<T, S extends string = never>(
  ctx: S3Context,
  request: (client: S3Client) => Promise<T>,
  special?: (name: string, status: number | undefined) => S | undefined,
): Promise<T | S> {
  try {
    return await request(clientFor(ctx));
  } catch (error) {
    if (ctx.signal.aborted) throw error;
    const { name, status } = describe(error);
    const claimed = special?.(name, status);
    if (claimed !== undefined) return claimed;
    throw toConnectorError(error, name, status, ctx.config.bucket);
  }
}

function describe(error: unknown): { name: string; status: number | undefined } {
  const e = error as { name?: string; Code?: string; $metadata?: { httpStatusCode?: number } };
  return { name: e?.Code ?? e?.name ?? "", status: e?.$metadata?.httpStatusCode };
}

function toConnectorError(error: unknown, name: string, status: number | undefined, bucket: string): unknown {
  if (
    error instanceof ConnectorAuthError ||
    error instanceof ConnectorConfigError ||
    error instanceof ConnectorRateLimitError
  ) {
    return error;
  }
  const detail = error instanceof Error && error.message ? `${name}: ${error.message}` : name;
  const refused = findCause(error, (e) => e instanceof PrivateEndpointError);
  if (refused) return new ConnectorConfigError(`s3: ${(refused as Error).message}`);
  if (CONFIG_ERRORS.has(name)) return new ConnectorConfigError(`s3: bucket ${bucket}: ${detail}`);
  if (RATE_LIMIT_ERRORS.has(name) || status === 429 || status === 503) {
    return new ConnectorRateLimitError(`s3: bucket ${bucket}: ${detail}`, retryAfterMs(error));
  }
  if (AUTH_ERRORS.has(name) || status === 401 || status === 403) {
    return new ConnectorAuthError(`s3: bucket ${bucket}: ${detail}`);
  }
  return error;
}

function retryAfterMs(error: unknown): number {
  const headers = (error as { $response?: { headers?: Record<string, string | undefined> } }).$response
    ?.headers;
  const value = headers?.["retry-after"] ?? headers?.["Retry-After"];
  if (!value) return DEFAULT_RETRY_AFTER_MS;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? DEFAULT_RETRY_AFTER_MS : Math.max(0, date - Date.now());
}

function findCause(error: unknown, match: (e: unknown) => boolean): unknown {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (match(e)) return e;
  }
  return undefined;
}

/** The endpoint resolved (or is) an address the network policy keeps connectors away from. */
class PrivateEndpointError extends Error {
  readonly code = "ERR_S3_PRIVATE_ENDPOINT";
  constructor(host: string) {
    super(`endpoint ${host} is on a private network, which this deployment does not allow`);
    this.name = "PrivateEndpointError";
  }
}

/**
 * Checks every address the endpoint resolves to at connect time, so a DNS answer that changes after a
 * check (rebinding) cannot reach the service's own network. Literal IPs never reach a lookup, so
 * clientFor checks those.
 */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, "");
    const allowed = addresses.filter((a) => isPublicAddress(a.address));
    const first = allowed[0];
    if (!first) return callback(new PrivateEndpointError(hostname), "");
    if (options.all) return callback(null, allowed);
    callback(null, first.address, first.family);
  });
};

/**
 * One client per distinct connection settings, so a sync's requests reuse keep-alive connections.
 * Evicted clients are only dropped: their idle sockets close on the agent's timeout, and a request still
 * running on one is not cut off.
 */
const clients = new Map<string, S3Client>();
const MAX_CLIENTS = 32;
const IDLE_SOCKET_MS = 60_000;

function clientFor(ctx: S3Context): S3Client {
  const { config, secrets, network } = ctx;
  const fingerprint = createHash("sha256")
    .update(JSON.stringify([config, secrets, network.allowPrivateNetwork, network.timeoutMs]))
    .digest("hex");
  const cached = clients.get(fingerprint);
  if (cached) {
    clients.delete(fingerprint);
    clients.set(fingerprint, cached);
    return cached;
  }

  let lookup: LookupFunction | undefined;
  if (config.endpoint && !network.allowPrivateNetwork) {
    const host = new URL(config.endpoint).hostname.replace(/^\[|\]$/g, "");
    if (isIP(host) && !isPublicAddress(host)) throw new PrivateEndpointError(host);
    lookup = publicOnlyLookup;
  }
  const agent = { keepAlive: true, timeout: IDLE_SOCKET_MS, ...(lookup ? { lookup } : {}) };
  const client = new S3Client({
    region: config.region,
    credentials: {
      accessKeyId: secrets.accessKeyId,
      secretAccessKey: secrets.secretAccessKey,
      sessionToken: secrets.sessionToken,
    },
    ...(config.endpoint
      ? { endpoint: config.endpoint, forcePathStyle: config.forcePathStyle ?? true }
      : { forcePathStyle: config.forcePathStyle ?? false, followRegionRedirects: true }),
    // Checksums only where the protocol demands them: S3-compatible stores differ in what they accept
    // (s3rver stores aws-chunked uploads verbatim and sends no checksums to validate).
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    requestHandler: {
      connectionTimeout: network.timeoutMs,
      socketTimeout: IDLE_SOCKET_MS,
      httpAgent: agent,
      httpsAgent: agent,
    },
  });
  clients.set(fingerprint, client);
  for (const oldest of clients.keys()) {
    if (clients.size <= MAX_CLIENTS) break;
    clients.delete(oldest);
  }
  return client;
}
