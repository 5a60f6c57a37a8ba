import { bigint, integer, pgTable, text } from "drizzle-orm/pg-core";

/**
 * One fixed-window counter per API key (or per client address, for the authentication throttles), shared by every
 * API process: a request is one atomic `INSERT ... ON CONFLICT DO UPDATE ... RETURNING` that starts a new window or
 * counts in the current one.
 */
export const rateLimits = pgTable("rate_limits", {
  keyId: text("key_id").primaryKey(),
  /** Start of the current window, in milliseconds since the epoch. */
  windowStart: bigint("window_start", { mode: "number" }).notNull(),
  count: integer("count").notNull(),
  /**
   * When the current window ends (ms since the epoch): past it the row counts nothing and maintenance deletes it
   * (store/rate-limits.ts pruneRateLimits). Windows differ per key, so the end is kept, not derived.
   */
  windowEnd: bigint("window_end", { mode: "number" }).notNull().default(0),
});
