import { index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { webhooks } from "./webhooks.ts";

export type WebhookDeliveryStatus = "pending" | "delivered" | "failed";

/** One event for one webhook; its id is derived from both, so emitting an event twice stores it once. */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: text("id").primaryKey(),
    webhookId: text("webhook_id")
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    /** document.done | document.failed | connection.sync | ping */
    event: text("event").notNull(),
    /** The JSON body sent, fixed when the event happened so every attempt sends the same bytes. */
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull(),
    status: text("status").$type<WebhookDeliveryStatus>().notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    /** HTTP status of the last attempt that got an answer. */
    responseStatus: integer("response_status"),
    lastError: text("last_error"),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    deliveredAt: timestamp("delivered_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("webhook_deliveries_webhook_idx").on(t.webhookId, t.createdAt)],
);

export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;
