import { jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Service-wide settings (the SDK's `settings` resource): one row, id `default`. Plain options are
 * kept as JSON; connector client secrets only as AES-256-GCM ciphertext (`store/secrets.ts`).
 */
export const settings = pgTable("settings", {
  id: text("id").primaryKey(),
  values: jsonb("values").$type<Record<string, unknown>>().notNull().default({}),
  /** Field name → `v1:<iv>:<tag>:<ciphertext>` (base64url), never the clear value. */
  secrets: jsonb("secrets").$type<Record<string, string>>().notNull().default({}),
  updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
});

export type SettingsRow = typeof settings.$inferSelect;
