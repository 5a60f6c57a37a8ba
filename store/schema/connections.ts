import { sql } from "drizzle-orm";
import { index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * pending: waiting for the user to finish the provider's consent page (OAuth); setup: waiting for the
 * folder and file selection in the hosted picker; active: syncing; auth_expired: the source refused its
 * credentials, nothing syncs until it is reconnected.
 */
export type ConnectionStatus = "pending" | "setup" | "active" | "auth_expired" | "paused";

export interface SelectedItem {
  id: string;
  name: string;
  kind: "folder" | "file";
  mimeType?: string;
}

/** A link to an outside source (bucket, site, mailbox, repositories) that keeps documents in sync. */
export const connections = pgTable(
  "connections",
  {
    id: text("id").primaryKey(),
    provider: text("provider").notNull(),
    containerTags: text("container_tags").array().notNull().default(sql`'{}'::text[]`),
    /** The caller's settings without secrets (bucket, start URL, ...), as given at creation or configure. */
    metadata: jsonb("metadata").$type<Record<string, string | number | boolean>>().notNull().default({}),
    /** Secrets (passwords, tokens) as one sealed JSON object (AES-256-GCM); never returned. */
    sealedSecrets: text("sealed_secrets"),
    /** Most documents the connection may hold; further items are left out. */
    documentLimit: integer("document_limit"),
    /** Minutes between scheduled syncs; 0 = only on create and import. */
    syncIntervalMinutes: integer("sync_interval_minutes").notNull().default(60),
    status: text("status").$type<ConnectionStatus>().notNull().default("active"),
    /** Delta connectors resume from here; full-listing ones keep what the connector carries between passes. */
    cursor: jsonb("cursor"),
    redirectUrl: text("redirect_url"),
    /** Drive connections: what the user picked in the hosted picker (null: nothing saved yet). */
    selection: jsonb("selection").$type<SelectedItem[]>(),
    /** The hosted picker's one link: sha256 of its token, and when it stops working. */
    pickerTokenHash: text("picker_token_hash"),
    pickerTokenExpiresAt: timestamp("picker_token_expires_at", { withTimezone: true, mode: "date" }),
    email: text("email"),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [
    index("connections_provider_idx").on(t.provider),
    index("connections_container_tags_gin").using("gin", t.containerTags),
  ],
);

export type ConnectionRow = typeof connections.$inferSelect;
