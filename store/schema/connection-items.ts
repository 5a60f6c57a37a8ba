import { index, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";
import { connections } from "./connections.ts";
import { documents } from "./documents.ts";

/**
 * What a connection last saw of each source item: its version (so unchanged items are not fetched
 * again) and its document. `seenRun` is the sync run that last listed it; after a complete full pass,
 * items with an older `seenRun` were missed by that listing. `missedAt` is when a listing first missed an
 * item the source could not be asked about: a listing can be incomplete (Notion's search), so such an item
 * goes only when another listing, a sync interval later, misses it too (activities/sync.ts sweepUnseen).
 */
export const connectionItems = pgTable(
  "connection_items",
  {
    connectionId: text("connection_id")
      .notNull()
      .references(() => connections.id, { onDelete: "cascade" }),
    itemId: text("item_id").notNull(),
    /** Set for items inside another (mail attachments): they live and die with it. */
    parentItemId: text("parent_item_id"),
    version: text("version").notNull(),
    documentId: text("document_id").references(() => documents.id, { onDelete: "set null" }),
    seenRun: text("seen_run").notNull(),
    missedAt: timestamp("missed_at", { withTimezone: true, mode: "date" }),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.connectionId, t.itemId] }),
    index("connection_items_parent_idx").on(t.connectionId, t.parentItemId),
    index("connection_items_seen_idx").on(t.connectionId, t.seenRun),
  ],
);

export type ConnectionItemRow = typeof connectionItems.$inferSelect;
