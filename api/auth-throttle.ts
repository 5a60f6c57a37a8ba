import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { Config } from "../config/env.ts";
import { type ApiKeyRow, findActiveKey, findActiveKeyWith } from "../store/api-keys.ts";
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

function refused(state: RateLimitState, message: string): ApiError {
  const retryAfter = Math.max(1, Math.ceil((state.resetAt - Date.now()) / 1000));
  return new ApiError(429, "rate_limited", message, undefined, { "Retry-After": String(retryAfter) });
}

/**
 * Failed authentications per client address (an unknown, disabled or expired bearer key, a wrong console
 * sign-in), counted in the database so every API process shares them. Past AUTH_FAILURE_LIMIT in a window of
 * AUTH_FAILURE_WINDOW_MS, every authentication from that address is refused with 429 until the window ends,
 * a right key included: otherwise a guesser would still learn which guess was right.
 */
export class AuthFailures {
  constructor(
    private readonly db: Database,
    private readonly limit: { max: number; windowMs: number },
  ) {}

  private counter = (c: Context) => `auth-failures:${clientAddress(c)}`;

  /**
   * The active key a bearer secret names, and its address's failures read in the same statement (one turn of the
   * store, not two, on every authenticated request). Throws 429 while the address is over its limit, a right key
   * included, and 401 for a secret that names no active key (counted as a failure: past the limit that is 429 too).
   */
  async authenticate(c: Context, secret: string, unknownKey: ApiError): Promise<ApiKeyRow> {
    if (!this.limit.max) {
      const key = await findActiveKey(this.db, secret);
      if (!key) throw unknownKey;
      return key;
    }
    const failures = rateLimitCount(this.counter(c), this.limit.windowMs);
    const found = await findActiveKeyWith(this.db, secret, failures.count);
    if (!found) throw await this.record(c, unknownKey);
    if (found.alongside >= this.limit.max)
      throw refused(
        { limit: this.limit.max, remaining: 0, resetAt: failures.resetAt, allowed: false },
        "too many failed authentications from this address; try again later",
      );
    return found.key;
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
    const state = await hitRateLimit(this.db, this.counter(c), this.limit.max, this.limit.windowMs);
    return state.allowed
      ? error
      : refused(state, "too many failed authentications from this address; try again later");
  }
}

export function createAuthFailures(db: Database, config: Config): AuthFailures {
  return new AuthFailures(db, { max: config.AUTH_FAILURE_LIMIT, windowMs: config.AUTH_FAILURE_WINDOW_MS });
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
