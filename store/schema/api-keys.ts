import { sql } from "drizzle-orm";
import { integer, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

export type ApiKeyKind = "admin" | "scoped";

export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    kind: text("kind").$type<ApiKeyKind>().notNull(),
    /** sha256 of the secret: keys are 256-bit random, so a fast hash is enough and lookups stay O(1). */
    keyHash: text("key_hash").notNull(),
    /** First characters of the secret, to recognise a key in listings without revealing it. */
    keyPrefix: text("key_prefix").notNull(),
    containerTags: text("container_tags").array().notNull().default(sql`'{}'::text[]`),
    allowedEndpoints: text("allowed_endpoints").array(),
    rateLimitMax: integer("rate_limit_max"),
    rateLimitWindowMs: integer("rate_limit_window_ms"),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }),
    disabledAt: timestamp("disabled_at", { withTimezone: true, mode: "date" }),
    /** Who is told before the key expires (key-expiry notices); null = nobody. */
    contactEmail: text("contact_email"),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("api_keys_key_hash_key").on(t.keyHash)],
);

export type ApiKeyRow = typeof apiKeys.$inferSelect;
