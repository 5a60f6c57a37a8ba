import { jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** One bucket of a profile: a stable key stored on memories, and what belongs in it (guides a classifier). */
export interface ProfileBucket {
  key: string;
  description: string;
}

/**
 * What a caller set on one container tag (GET/PATCH /v3/container-tags/{containerTag}). A tag itself is
 * only a name on documents and memories: a row exists once its settings were changed, and goes with the tag.
 */
export const containerTagSettings = pgTable("container_tag_settings", {
  containerTag: text("container_tag").primaryKey(),
  /** Display name; the tag itself never changes. */
  name: text("name"),
  /** Context for processing the tag's documents, as a document's own entityContext. */
  entityContext: text("entity_context"),
  /** Accepted and returned as set; no mounted filesystem here to apply it to. */
  memoryFilesystemPaths: jsonb("memory_filesystem_paths").$type<string[]>(),
  /** The tag's own buckets, added to the organisation's. */
  profileBuckets: jsonb("profile_buckets").$type<ProfileBucket[]>().notNull().default([]),
  createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
});

export type ContainerTagSettingsRow = typeof containerTagSettings.$inferSelect;
