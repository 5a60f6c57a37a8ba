import { sql } from "drizzle-orm";
import { type Database, queryRows } from "./db.ts";

export interface RateLimitState {
  limit: number;
  /** Hits counted in the current window. */
  count: number;
  remaining: number;
  /** When the current window ends (ms since the epoch). */
  resetAt: number;
  allowed: boolean;
}

/**
 * Counts one request of `keyId` in a fixed window of `windowMs`. One atomic statement, so every
 * API process sharing the database shares the counter: a new window restarts at 1, otherwise +1.
 */
export async function hitRateLimit(
  db: Database,
  keyId: string,
  max: number,
  windowMs: number,
  now = Date.now(),
): Promise<RateLimitState> {
  const windowStart = now - (now % windowMs);
  const [row] = await queryRows(
    db,
    sql`
    INSERT INTO rate_limits (key_id, window_start, window_end, count)
    VALUES (${keyId}, ${windowStart}, ${windowStart + windowMs}, 1)
    ON CONFLICT (key_id) DO UPDATE SET
      count = CASE WHEN rate_limits.window_start = EXCLUDED.window_start THEN rate_limits.count + 1 ELSE 1 END,
      window_start = EXCLUDED.window_start,
      window_end = EXCLUDED.window_end
    RETURNING count, window_start`,
  );
  return afterHit(max, Number(row?.count ?? 1), Number(row?.window_start ?? windowStart), windowMs);
}

/** A window that started at `start` with `count` hits counted in it, the one just made included. */
function afterHit(max: number, count: number, start: number, windowMs: number): RateLimitState {
  return {
    limit: max,
    count,
    remaining: Math.max(0, max - count),
    resetAt: start + windowMs,
    allowed: count <= max,
  };
}

/**
 * hitRateLimit's fixed windows counted in this process's memory, for a store only this process opens (the
 * embedded one): no statement per request, and a restart starts the current window again. One entry per key
 * that made a request; past 10,000 of them (and each doubling after) the windows that have ended are dropped.
 */
export class ProcessRateLimits {
  private readonly windows = new Map<string, { start: number; end: number; count: number }>();
  private sweepAbove = 10_000;

  hit(keyId: string, max: number, windowMs: number, now = Date.now()): RateLimitState {
    const start = now - (now % windowMs);
    const known = this.windows.get(keyId);
    const count = known?.start === start ? known.count + 1 : 1;
    this.windows.set(keyId, { start, end: start + windowMs, count });
    if (this.windows.size > this.sweepAbove) {
      for (const [id, w] of this.windows) if (w.end <= now) this.windows.delete(id);
      // Many keys all in their windows: the next sweep waits until there are twice as many, not the next request.
      this.sweepAbove = Math.max(10_000, this.windows.size * 2);
    }
    return afterHit(max, count, start, windowMs);
  }

  /** How many hits `keyId` has in the window `now` falls in, without counting one. */
  count(keyId: string, windowMs: number, now = Date.now()): number {
    const known = this.windows.get(keyId);
    return known?.start === now - (now % windowMs) ? known.count : 0;
  }

  clear(keyId: string): void {
    this.windows.delete(keyId);
  }
}

/** Forgets `keyId`'s counter (a window starts again at its next hit). */
export async function clearRateLimit(db: Database, keyId: string): Promise<void> {
  await queryRows(db, sql`DELETE FROM rate_limits WHERE key_id = ${keyId}`);
}

/**
 * How many hits `keyId` has in the window `now` falls in, without counting one: for limits that only failures
 * count against but every attempt must check first.
 */
export async function readRateLimit(
  db: Database,
  keyId: string,
  max: number,
  windowMs: number,
  now = Date.now(),
): Promise<RateLimitState> {
  const windowStart = now - (now % windowMs);
  const [row] = await queryRows(
    db,
    sql`SELECT count FROM rate_limits WHERE key_id = ${keyId} AND window_start = ${windowStart}`,
  );
  const count = Number(row?.count ?? 0);
  return {
    limit: max,
    count,
    remaining: Math.max(0, max - count),
    resetAt: windowStart + windowMs,
    allowed: count < max,
  };
}

/** Rows one prune statement deletes at most: each statement stays short on PGlite's single connection. */
export const PRUNE_BATCH = 5_000;

/**
 * Deletes the counters whose window has ended (they count nothing: the next hit starts a new window at 1), in
 * statements of at most `batch` rows. Without it the table keeps a row for every key and every client address
 * that ever made a request. Answers how many rows went. Run by table maintenance (activities/maintenance.ts).
 */
export async function pruneRateLimits(db: Database, now = Date.now(), batch = PRUNE_BATCH): Promise<number> {
  let pruned = 0;
  for (;;) {
    const [row] = await queryRows<{ deleted: string | number }>(
      db,
      sql`WITH gone AS (
            DELETE FROM rate_limits WHERE key_id IN (
              SELECT key_id FROM rate_limits WHERE window_end <= ${now} LIMIT ${batch})
            RETURNING 1)
          SELECT count(*) AS deleted FROM gone`,
    );
    const deleted = Number(row?.deleted ?? 0);
    pruned += deleted;
    if (deleted < batch) return pruned;
  }
}
