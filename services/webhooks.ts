// Webhooks: signed POSTs telling a client that a document finished or a connection synced, so it
// need not poll. Events become delivery rows (one per webhook and event, with a derived id) and each
// delivery is a Temporal workflow that retries with backoff; the API's ping is one attempt, at once.

import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { lookup as dnsLookup } from "node:dns/promises";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import type { Client } from "@temporalio/client";
import ipaddr from "ipaddr.js";
import type { Logger } from "../config/logger.ts";
import { addressRange, isPublicAddress } from "../pipeline/safe-fetch.ts";
import type { Database } from "../store/db.ts";
import { newId } from "../store/ids.ts";
import type { SecretBox } from "../store/secrets.ts";
import { tagsWithin } from "../store/tag-scope.ts";
import {
  documentForEvent,
  findDelivery,
  findWebhook,
  insertDelivery,
  recordAttempt,
  syncRunWithConnection,
  type WebhookEventType,
  type WebhookRow,
  webhookCoversTags,
  webhooksFor,
} from "../store/webhooks.ts";
import { startWebhookDelivery } from "../temporal/webhook-deliveries.ts";

export const SIGNATURE_HEADER = "x-memory-signature";
export const EVENT_HEADER = "x-memory-event";
export const DELIVERY_HEADER = "x-memory-delivery";
/** How old a signature's timestamp may be before `verifyWebhookSignature` refuses it (replays). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;
const USER_AGENT = "memory-service-webhooks/0.1";
/** A receiver's answer is not used; reading a little of it lets the socket close cleanly. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface NetworkPolicy {
  allowPrivateNetwork: boolean;
  timeoutMs: number;
}

/** 256 random bits; the whole string (prefix included) is the HMAC key. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64url")}`;
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex");
  return `t=${unixSeconds},v1=${mac}`;
}

/**
 * What a receiver does with a delivery: true when `header` signs exactly `body` with `secret` and its
 * timestamp is within the tolerance of `nowSeconds`. Several `v1=` values are accepted (any may match).
 */
export function verifyWebhookSignature(
  secret: string,
  header: string | null | undefined,
  body: string,
  opts: { nowSeconds?: number; toleranceSeconds?: number } = {},
): boolean {
  if (!header) return false;
  let t: number | undefined;
  const macs: string[] = [];
  for (const part of header.split(",")) {
    const [key, value] = part.trim().split("=", 2);
    if (key === "t" && value && /^\d+$/.test(value)) t = Number(value);
    else if (key === "v1" && value) macs.push(value);
  }
  if (t === undefined || !macs.length) return false;
  const now = opts.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (opts.toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS)) return false;
  const expected = Buffer.from(createHmac("sha256", secret).update(`${t}.${body}`).digest("hex"));
  return macs.some((mac) => {
    const given = Buffer.from(mac);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/** The URL may never be called: wrong scheme, credentials in it, or an address the policy forbids. */
export class WebhookUrlError extends Error {
  override readonly name = "WebhookUrlError";
}

interface CheckedTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

/**
 * Parses the URL and resolves its host once; every address must be allowed (public unicast, or any
 * with allowPrivateNetwork), the same rule as URL fetching. The caller connects to the returned address.
 */
export async function checkWebhookUrl(
  raw: string,
  policy: Pick<NetworkPolicy, "allowPrivateNetwork">,
): Promise<CheckedTarget> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookUrlError("not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new WebhookUrlError(
      `scheme ${url.protocol.replace(/:$/, "")} is not allowed (only http and https)`,
    );
  if (url.username || url.password) throw new WebhookUrlError("URLs with credentials are not allowed");
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
  if (!hostname) throw new WebhookUrlError("the URL has no host");
  const literal = isIP(hostname);
  let addresses: { address: string; family: number }[];
  if (literal) addresses = [{ address: hostname, family: literal }];
  else {
    try {
      addresses = await dnsLookup(hostname, { all: true, verbatim: true });
    } catch (error) {
      // Not a policy refusal: a name that does not resolve now may resolve on a later attempt.
      throw new Error(`could not resolve ${hostname}: ${(error as Error).message}`);
    }
  }
  const allowed = policy.allowPrivateNetwork ? (a: string) => ipaddr.isValid(a) : isPublicAddress;
  for (const { address } of addresses) {
    if (!allowed(address)) {
      const range = ipaddr.isValid(address) ? addressRange(address) : "invalid";
      throw new WebhookUrlError(
        `${address} is a ${range} address${literal ? "" : ` (${hostname} resolves to it)`}; ` +
          "private and loopback addresses need ALLOW_PRIVATE_NETWORK",
      );
    }
  }
  const first = addresses[0];
  if (!first) throw new Error(`${hostname} has no addresses`);
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}

/** Answers the socket's lookup with the checked address, so DNS cannot change between check and connect. */
function pinnedLookup(target: CheckedTarget): LookupFunction {
  return (_hostname, opts, callback) => {
    if ((opts as { all?: boolean }).all) {
      (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [
        { address: target.address, family: target.family },
      ]);
    } else callback(null, target.address, target.family);
  };
}

export interface SignedMessage {
  event: string;
  deliveryId: string;
  body: string;
}

/** One signed POST; resolves with the HTTP status (redirects are not followed), rejects on network errors. */
export async function postSigned(
  url: string,
  secret: string,
  message: SignedMessage,
  network: NetworkPolicy,
): Promise<number> {
  const target = await checkWebhookUrl(url, network);
  const signature = signatureHeader(secret, message.body, Math.floor(Date.now() / 1000));
  const transport = target.url.protocol === "https:" ? https : http;
  return new Promise<number>((resolve, reject) => {
    const request = transport.request(target.url, {
      method: "POST",
      agent: false,
      lookup: pinnedLookup(target),
      headers: {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(message.body),
        "user-agent": USER_AGENT,
        [SIGNATURE_HEADER]: signature,
        [EVENT_HEADER]: message.event,
        [DELIVERY_HEADER]: message.deliveryId,
      },
    });
    request.setTimeout(network.timeoutMs, () =>
      request.destroy(new Error(`no answer from ${target.url.host} in ${network.timeoutMs} ms`)),
    );
    request.on("error", reject);
    request.on("response", (response: IncomingMessage) => {
      let read = 0;
      response.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_RESPONSE_BYTES) response.destroy();
      });
      response.on("close", () => resolve(response.statusCode ?? 0));
      response.on("error", () => resolve(response.statusCode ?? 0));
    });
    request.end(message.body);
  });
}

export interface DeliveryDeps {
  db: Database;
  secrets: SecretBox;
  network: NetworkPolicy;
}

export type AttemptOutcome =
  | { kind: "delivered"; status?: number }
  /** Retrying cannot help: the webhook is gone or disabled, or its URL is refused. */
  | { kind: "abandoned"; reason: string }
  | { kind: "error"; reason: string; status?: number };

/** One attempt of a stored delivery; a delivered one is never sent again. */
export async function attemptDelivery(deps: DeliveryDeps, deliveryId: string): Promise<AttemptOutcome> {
  const delivery = await findDelivery(deps.db, deliveryId);
  if (!delivery) return { kind: "abandoned", reason: "the delivery no longer exists (webhook deleted)" };
  if (delivery.status === "delivered") return { kind: "delivered" };
  const webhook = await findWebhook(deps.db, delivery.webhookId);
  if (!webhook) return { kind: "abandoned", reason: "the webhook was deleted" };
  if (!webhook.enabled) {
    await recordAttempt(deps.db, deliveryId, { delivered: false, error: "the webhook is disabled" });
    return { kind: "abandoned", reason: "the webhook is disabled" };
  }
  const body = JSON.stringify(delivery.payload);
  try {
    const status = await postSigned(
      webhook.url,
      deps.secrets.decrypt(webhook.sealedSecret),
      { event: delivery.event, deliveryId, body },
      deps.network,
    );
    const delivered = status >= 200 && status <= 299;
    const reason = `HTTP ${status}`;
    await recordAttempt(deps.db, deliveryId, {
      delivered,
      responseStatus: status,
      ...(delivered ? {} : { error: reason }),
    });
    return delivered ? { kind: "delivered", status } : { kind: "error", reason, status };
  } catch (error) {
    const reason = (error as Error).message;
    await recordAttempt(deps.db, deliveryId, { delivered: false, error: reason });
    return error instanceof WebhookUrlError ? { kind: "abandoned", reason } : { kind: "error", reason };
  }
}

function envelope(id: string, event: string, data: Record<string, unknown>): Record<string, unknown> {
  return { id, event, createdAt: new Date().toISOString(), data };
}

/** `POST /v3/webhooks/:id/test`: a `ping` delivery, attempted once, now. */
export async function sendPing(
  deps: DeliveryDeps,
  webhook: WebhookRow,
): Promise<{ deliveryId: string; outcome: AttemptOutcome }> {
  const id = newId();
  await insertDelivery(deps.db, {
    id,
    webhookId: webhook.id,
    event: "ping",
    payload: envelope(id, "ping", {
      webhook: {
        id: webhook.id,
        url: webhook.url,
        containerTags: webhook.containerTags,
        events: webhook.events,
      },
    }),
  });
  return { deliveryId: id, outcome: await attemptDelivery(deps, id) };
}

export type WebhookEmission =
  | { event: "document.done" | "document.failed"; documentId: string; run: number }
  | { event: "connection.sync"; connectionId: string; runId: string };

export interface EmitDeps {
  db: Database;
  log: Logger;
  /** Starts a stored delivery's workflow (temporal/webhook-deliveries.ts); idempotent. */
  startDelivery(deliveryId: string): Promise<void>;
}

/** Derived from what happened, so an activity that emits again after a retry finds its delivery stored. */
/**
 * How deliveries start when an activity emits an event: with that worker's Temporal client, on its task queue
 * (one whose worker runs workflows).
 */
export function deliveryStarter(client: Client, taskQueue: string): EmitDeps["startDelivery"] {
  return (deliveryId) => startWebhookDelivery(client, taskQueue, deliveryId);
}

export function deliveryId(webhookId: string, event: WebhookEventType, subject: string): string {
  return createHash("sha256").update(`${webhookId}\n${event}\n${subject}`).digest("hex").slice(0, 32);
}

/**
 * Stores a delivery for every matching webhook and starts its workflow. Best-effort: an error is logged,
 * never thrown, so a webhook problem cannot fail the document or the sync that caused the event.
 */
export async function emitEvent(deps: EmitDeps, emission: WebhookEmission): Promise<void> {
  try {
    // Webhooks first: most services have none, and then the subject need not be read (once per document).
    const subscribed = await webhooksFor(deps.db, emission.event);
    if (!subscribed.length) return;
    const subject = await describeSubject(deps.db, emission);
    if (!subject) return;
    for (const hook of subscribed.filter((h) => webhookCoversTags(h, subject.containerTags))) {
      const id = deliveryId(hook.id, emission.event, subject.key);
      // A webhook of some tags is one tenant's feed: a shared document's other tags are not its to see (as for a
      // scoped key, store/tag-scope.ts tagsWithin); a webhook of no tags sees them all.
      const scope = hook.containerTags.length ? hook.containerTags : null;
      await insertDelivery(deps.db, {
        id,
        webhookId: hook.id,
        event: emission.event,
        payload: envelope(
          id,
          emission.event,
          subject.data((tags) => tagsWithin(tags, scope)),
        ),
      });
      await deps.startDelivery(id);
    }
  } catch (error) {
    deps.log.warn({ err: error, event: emission.event }, "could not emit a webhook event");
  }
}

interface Subject {
  /** What makes the event unique: a document's processing run, or a sync run. */
  key: string;
  containerTags: string[];
  /** The event's data, with container tags as `shown` lets the receiving webhook see them. */
  data: (shown: (tags: string[]) => string[]) => Record<string, unknown>;
}

async function describeSubject(db: Database, emission: WebhookEmission): Promise<Subject | undefined> {
  if (emission.event === "connection.sync") {
    const row = await syncRunWithConnection(db, emission.runId);
    if (!row) return undefined;
    const { run, connection } = row;
    return {
      key: run.id,
      containerTags: connection.containerTags,
      data: (shown) => ({
        connection: {
          id: connection.id,
          provider: connection.provider,
          containerTags: shown(connection.containerTags),
        },
        sync: {
          id: run.id,
          status: run.status,
          trigger: run.trigger,
          counts: run.counts,
          errorCode: run.errorCode,
          error: run.error,
          startedAt: run.startedAt.toISOString(),
          finishedAt: run.finishedAt?.toISOString() ?? null,
        },
      }),
    };
  }
  const doc = await documentForEvent(db, emission.documentId);
  // A newer run replaced this one (or the document is gone): its outcome is not news any more.
  if (!doc || doc.processingRun !== emission.run) return undefined;
  const { processingRun, updatedAt, ...rest } = doc;
  return {
    key: `${doc.id}/${emission.run}`,
    containerTags: doc.containerTags,
    data: (shown) => ({
      document: {
        ...rest,
        containerTags: shown(doc.containerTags),
        run: processingRun,
        updatedAt: updatedAt.toISOString(),
      },
    }),
  };
}
