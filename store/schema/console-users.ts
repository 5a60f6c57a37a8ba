import { pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

/** People who sign in to the web console with a password; created by an admin. */
export const consoleUsers = pgTable(
  "console_users",
  {
    id: text("id").primaryKey(),
    email: text("email").notNull(),
    /** scrypt (memory-hard) hash in PHC-like form: `scrypt$N$r$p$salt$hash`, base64. */
    passwordHash: text("password_hash").notNull(),
    disabledAt: timestamp("disabled_at", { withTimezone: true, mode: "date" }),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("console_users_email_key").on(t.email)],
);

export type ConsoleUserRow = typeof consoleUsers.$inferSelect;
