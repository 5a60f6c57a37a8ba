import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { type Config, storeHasOneProcess } from "../config/env.ts";
import {
  type ApiKeyRow,
  findActiveKey,
  findActiveKeyWith,
  hashKey,
  keyWriteCount,
} from "../store/api-keys.ts";
import type { Database } from "../store/db.ts";
import { hitRateLimit, type RateLimitState, rateLimitCount, readRateLimit } from "../store/rate-limits.ts";
import { type ClientOrigin, clientOrigin, parseTrustedProxies } from "./client-address.ts";
import { ApiError } from "./errors.ts";

export type ClientEnv = { Variables: { client: ClientOrigin } };

/** First on every request: who sent it (TRUST_PROXY decides whether forwarded headers count). */
export function clientOriginMiddleware(config: Config) {
  const trusted = parseTrustedProxies(config.TRUST_PROXY);
  return createMiddleware<ClientEnv>(async (c, next) => {
    c.set("client", clientOrigin(c, trusted));
    await next();
  });
}

const clientAddress = (c: Context) => (c.get("client") as ClientOrigin | undefined)?.address ?? "unknown";

function refused(state: Pick<RateLimitState, "resetAt">, message: string): ApiError {
  const retryAfter = Math.max(1, Math.ceil((state.resetAt - Date.now()) / 1000));
  return new ApiError(429, "rate_limited", message, undefined, { "Retry-After": String(retryAfter) });
}

/**
 * Failed authentications per client address (an unknown, disabled or expired bearer key, a wrong console
 * sign-in), counted in the database so every API process shares them. Past AUTH_FAILURE_LIMIT in a window of
 * AUTH_FAILURE_WINDOW_MS, every authentication from that address is refused with 429 until the window ends,
 * a right key included: otherwise a guesser would still learn which guess was right.
 *
 * On a store only this process writes (the embedded one), the active keys it found and each address's failures
 * are also remembered here (ProcessAuthMemory), so most requests authenticate without a statement: on PGlite
 * every statement is a turn on the store's one thread, and this one was about a third of an empty-tag search's
 * main-thread time (docs/operations.md, "Authentication without a statement").
 */
export class AuthFailures {
  private readonly memory: ProcessAuthMemory | undefined;

  constructor(
    private readonly db: Database,
    private readonly limit: { max: number; windowMs: number },
    opts: { onlyWriter?: boolean } = {},
  ) {
    this.memory = opts.onlyWriter ? new ProcessAuthMemory() : undefined;
  }

  private counter = (c: Context) => `auth-failures:${clientAddress(c)}`;

  /**
   * The active key a bearer secret names, and its address's failures read in the same statement (one turn of the
   * store, not two, on every authenticated request). Throws 429 while the address is over its limit, a right key
   * included, and 401 for a secret that names no active key (counted as a failure: past the limit that is 429 too).
   */
  async authenticate(c: Context, secret: string, unknownKey: () => ApiError): Promise<ApiKeyRow> {
    const hash = hashKey(secret);
    // Read before any statement: a key written meanwhile is then not remembered as it was before.
    const writes = keyWriteCount();
    if (!this.limit.max) {
      const known = this.memory?.recall(hash, undefined);
      if (known) return known.key;
      const key = await findActiveKey(this.db, secret);
      if (!key) throw unknownKey();
      this.memory?.rememberKey(hash, key, writes);
      return key;
    }
    const counter = this.counter(c);
    const failures = rateLimitCount(counter, this.limit.windowMs);
    const windowStart = failures.resetAt - this.limit.windowMs;
    const known = this.memory?.recall(hash, { counter, windowStart });
    if (known) {
      if (known.failures >= this.limit.max) throw this.overLimit(failures.resetAt);
      return known.key;
    }
    const found = await findActiveKeyWith(this.db, secret, failures.count);
    if (!found) throw await this.record(c, unknownKey());
    this.memory?.rememberKey(hash, found.key, writes);
    this.memory?.rememberFailures(counter, windowStart, found.alongside);
    if (found.alongside >= this.limit.max) throw this.overLimit(failures.resetAt);
    return found.key;
  }

  private overLimit(resetAt: number): ApiError {
    return refused({ resetAt }, "too many failed authentications from this address; try again later");
  }

  /** Throws 429 while the request's address is over its limit. */
  async refuseIfBlocked(c: Context): Promise<void> {
    if (!this.limit.max) return;
    const state = await readRateLimit(this.db, this.counter(c), this.limit.max, this.limit.windowMs);
    if (!state.allowed)
      throw refused(state, "too many failed authentications from this address; try again later");
  }

  /** Counts one failure; the error to throw is the caller's, unless this failure used up the limit. */
  async record(c: Context, error: ApiError): Promise<ApiError> {
    if (!this.limit.max) return error;
    const counter = this.counter(c);
    const state = await hitRateLimit(this.db, counter, this.limit.max, this.limit.windowMs);
    this.memory?.rememberFailures(counter, state.resetAt - this.limit.windowMs, state.count);
    return state.allowed
      ? error
      : refused(state, "too many failed authentications from this address; try again later");
  }
}

/** How many keys and addresses ProcessAuthMemory holds at most; past that the oldest are forgotten (and read again). */
const REMEMBERED_ENTRIES = 10_000;

/**
 * What AuthFailures may answer from, when this process is the store's only writer: the keys a statement found
 * active (forgotten as soon as this process writes api_keys again: store/api-keys.ts keyWriteCount), and each
 * address's failures in its current window (kept current by every failure this process counts, and read from the
 * store again in a new window). A key past its expiry is not answered from here.
 */
class ProcessAuthMemory {
  private readonly keys = new Map<string, { key: ApiKeyRow; writes: number }>();
  private readonly failures = new Map<string, { windowStart: number; count: number }>();

  /** The key a secret's hash names and the address's failures, when both are known; undefined otherwise. */
  recall(
    hash: string,
    address: { counter: string; windowStart: number } | undefined,
  ): { key: ApiKeyRow; failures: number } | undefined {
    const known = this.keys.get(hash);
    if (!known) return undefined;
    const { key } = known;
    if (known.writes !== keyWriteCount() || (key.expiresAt && key.expiresAt.getTime() <= Date.now())) {
      this.keys.delete(hash);
      return undefined;
    }
    if (!address) return { key, failures: 0 };
    const failed = this.failures.get(address.counter);
    if (!failed || failed.windowStart !== address.windowStart) return undefined;
    return { key, failures: failed.count };
  }

  rememberKey(hash: string, key: ApiKeyRow, writes: number): void {
    remember(this.keys, hash, { key, writes });
  }

  rememberFailures(counter: string, windowStart: number, count: number): void {
    const known = this.failures.get(counter);
    // Two statements of one window can come back in either order: the larger count is the later one.
    if (known?.windowStart === windowStart && known.count >= count) return;
    remember(this.failures, counter, { windowStart, count });
  }
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > REMEMBERED_ENTRIES) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
}

export function createAuthFailures(db: Database, config: Config): AuthFailures {
  return new AuthFailures(
    db,
    { max: config.AUTH_FAILURE_LIMIT, windowMs: config.AUTH_FAILURE_WINDOW_MS },
    { onlyWriter: storeHasOneProcess(config) },
  );
}

/**
 * Console sign-in attempts per client address, whatever their outcome: each one costs a password hash, so an
 * address that sends SIGN_IN_ADDRESS_LIMIT of them in AUTH_FAILURE_WINDOW_MS waits for the next window.
 */
export async function throttleSignInAddress(c: Context, db: Database, config: Config): Promise<void> {
  if (!config.SIGN_IN_ADDRESS_LIMIT) return;
  const state = await hitRateLimit(
    db,
    `console-sign-in-address:${clientAddress(c)}`,
    config.SIGN_IN_ADDRESS_LIMIT,
    config.AUTH_FAILURE_WINDOW_MS,
  );
  if (!state.allowed) throw refused(state, "too many sign-in attempts from this address; try again later");
}
