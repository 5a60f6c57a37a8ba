import { index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Console sessions held by the server: the signed cookie names one by its random id, and a session is good only
 * while its row is here, so signing out, or disabling the user or admin key it belongs to, ends it at once
 * (a copied cookie included).
 */
export const consoleSessions = pgTable(
  "console_sessions",
  {
    /** The cookie's random session id (`sid`). */
    id: text("id").primaryKey(),
    /** "key": signed in with an admin API key; "user": a console user. */
    kind: text("kind").notNull(),
    /** The admin key's or the console user's id. */
    subject: text("subject").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [
    index("console_sessions_subject_idx").on(t.kind, t.subject),
    index("console_sessions_expires_idx").on(t.expiresAt),
  ],
);

export type ConsoleSessionRow = typeof consoleSessions.$inferSelect;
