import { sql } from "drizzle-orm";
import { boolean, index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

import type { WebhookEventType } from "../vocabulary.ts";

export { type WebhookEventType, webhookEvents } from "../vocabulary.ts";

/** Where events are POSTed, signed, so clients need not poll. */
export const webhooks = pgTable(
  "webhooks",
  {
    id: text("id").primaryKey(),
    url: text("url").notNull(),
    /**
     * The signing secret, sealed with the SecretBox (AES-256-GCM). Not hashed: every delivery needs the
     * secret itself to compute its HMAC.
     */
    sealedSecret: text("sealed_secret").notNull(),
    /** Events of documents (or connections) carrying any of these tags; empty = every tag (global). */
    containerTags: text("container_tags").array().notNull().default(sql`'{}'::text[]`),
    events: text("events").array().$type<WebhookEventType[]>().notNull(),
    enabled: boolean("enabled").notNull().default(true),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [index("webhooks_container_tags_gin").using("gin", t.containerTags)],
);

export type WebhookRow = typeof webhooks.$inferSelect;
