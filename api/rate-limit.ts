import { createMiddleware } from "hono/factory";
import { type Config, storeHasOneProcess } from "../config/env.ts";
import type { Database } from "../store/db.ts";
import { hitRateLimit, ProcessRateLimits } from "../store/rate-limits.ts";
import type { AuthEnv } from "./auth.ts";
import { ApiError } from "./errors.ts";

/**
 * Per-key fixed-window limit, counted in the database so several API processes share it; on the embedded store,
 * which only this process opens, counted in this process instead (ProcessRateLimits: no statement per request,
 * and a restart starts the current window again). Scoped keys use their own `rateLimitMax` per
 * `rateLimitWindowMs`; admin keys theirs when created with one, else `ADMIN_RATE_LIMIT_MAX` per
 * `ADMIN_RATE_LIMIT_WINDOW_MS` (0 = unlimited, the default: no counting, no headers). Every response to a
 * limited key carries `X-RateLimit-Limit`, `-Remaining` and `-Reset` (Unix seconds); a refused one is 429
 * `rate_limited` with `Retry-After` (seconds).
 */
export function rateLimit(db: Database, config: Config) {
  const local = storeHasOneProcess(config) ? new ProcessRateLimits() : undefined;
  const hit = (keyId: string, max: number, windowMs: number) =>
    local ? local.hit(keyId, max, windowMs) : hitRateLimit(db, keyId, max, windowMs);
  return createMiddleware<AuthEnv>(async (c, next) => {
    const key = c.get("apiKey");
    const ownLimit = key.kind === "admin" && key.rateLimitMax != null;
    const max = key.kind === "admin" && !ownLimit ? config.ADMIN_RATE_LIMIT_MAX : (key.rateLimitMax ?? 500);
    const windowMs =
      key.kind === "admin" && !ownLimit
        ? config.ADMIN_RATE_LIMIT_WINDOW_MS
        : (key.rateLimitWindowMs ?? 60_000);
    if (!max) return next();
    const state = await hit(key.id, max, windowMs);
    const headers = {
      "X-RateLimit-Limit": String(state.limit),
      "X-RateLimit-Remaining": String(state.remaining),
      "X-RateLimit-Reset": String(Math.ceil(state.resetAt / 1000)),
    };
    if (!state.allowed) {
      const retryAfter = Math.max(1, Math.ceil((state.resetAt - Date.now()) / 1000));
      throw new ApiError(
        429,
        "rate_limited",
        `rate limit of ${max} requests per ${windowMs} ms reached`,
        undefined,
        {
          ...headers,
          "Retry-After": String(retryAfter),
        },
      );
    }
    await next();
    try {
      for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
    } catch {
      // Immutable headers (a response built elsewhere): copy it once.
      c.res = new Response(c.res.body, c.res);
      for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
    }
  });
}
