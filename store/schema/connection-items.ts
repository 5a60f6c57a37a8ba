import { index, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";
import { connections } from "./connections.ts";
import { documents } from "./documents.ts";

/**
 * What a connection last saw of each source item: its version (so unchanged items are not fetched
 * again) and its document. `seenRun` is the sync run that last listed it; after a complete full pass,
 * items with an older `seenRun` are gone at the source and their documents are deleted.
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
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.connectionId, t.itemId] }),
    index("connection_items_parent_idx").on(t.connectionId, t.parentItemId),
    index("connection_items_seen_idx").on(t.connectionId, t.seenRun),
  ],
);

export type ConnectionItemRow = typeof connectionItems.$inferSelect;
