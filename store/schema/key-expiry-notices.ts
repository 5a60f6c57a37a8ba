import { pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";
import { apiKeys } from "./api-keys.ts";

export type KeyNoticeChannel = "smtp" | "log";

/**
 * One row per (key, lead time) once its notice went out: the primary key is what makes a restart or a
 * second scheduler run never send the same notice twice.
 */
export const keyExpiryNotices = pgTable(
  "key_expiry_notices",
  {
    keyId: text("key_id")
      .notNull()
      .references(() => apiKeys.id, { onDelete: "cascade" }),
    /** The lead time this notice was for, e.g. "7d" or "1d". */
    leadTime: text("lead_time").notNull(),
    /** The key's expiry the notice announced: a key whose expiry moves gets notices for the new date. */
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    channel: text("channel").$type<KeyNoticeChannel>().notNull(),
    recipient: text("recipient"),
    sentAt: timestamp("sent_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.leadTime, t.expiresAt] })],
);

export type KeyExpiryNoticeRow = typeof keyExpiryNotices.$inferSelect;
