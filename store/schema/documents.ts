import { sql } from "drizzle-orm";
import { index, integer, jsonb, pgTable, smallint, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

import { DOCUMENT_PRIORITY, type DocumentPriority, type DocumentStatus } from "../vocabulary.ts";

export {
  DOCUMENT_PRIORITY,
  type DocumentPriority,
  type DocumentStatus,
  documentStatuses,
} from "../vocabulary.ts";

export type MetadataValue = string | number | boolean | string[];
export type Metadata = Record<string, MetadataValue>;

export interface StoredSegment {
  text: string;
  page?: number;
  slide?: number;
  section?: string;
  startSeconds?: number;
  endSeconds?: number;
  source?: string;
}

/** What memory extraction made of the document's latest run (only when an LLM is configured). */
export interface MemoryExtractionRecord {
  run: number;
  status: "done" | "skipped" | "failed";
  /** Memories written (new ones and new versions). */
  memories: number;
  reason?: string;
  at: string;
}

export interface StatusEvent {
  status: DocumentStatus;
  at: string;
  run: number;
}

export const documents = pgTable(
  "documents",
  {
    id: text("id").primaryKey(),
    customId: text("custom_id"),
    /** The writer's customId namespace (store/tag-scope.ts customIdNamespace): customIds are unique within one. */
    customIdNamespace: text("custom_id_namespace").notNull().default(""),
    title: text("title"),
    /** What the content is: text, webpage, ... (set at extraction). */
    type: text("type").notNull().default("text"),
    status: text("status").$type<DocumentStatus>().notNull().default("queued"),
    /** What the caller sent: the text itself, or the URL to fetch. */
    source: text("source").notNull(),
    url: text("url"),
    /** Caller's path-like grouping (e.g. "/notes/2025/"), as in the official SDK. */
    filepath: text("filepath"),
    /** Caller's hint about whom the content is about; kept for memory extraction. */
    entityContext: text("entity_context"),
    /** Which end user of the caller's application added it (search can be limited to one). */
    endUserId: text("end_user_id"),
    /** Uploaded or fetched file, by content hash in the blob store (null for inline text). */
    fileKey: text("file_key"),
    fileName: text("file_name"),
    mimeType: text("mime_type"),
    fileSize: integer("file_size"),
    /** Extracted plain text, filled in by the extract stage. */
    content: text("content"),
    /** Facts read from the file at extraction (pages, duration, codecs, author, ...); the caller's metadata stays theirs. */
    fileMetadata: jsonb("file_metadata").$type<Record<string, string | number | boolean>>(),
    /** The extracted text in pieces with their place in the file (page, slide, section, time). */
    segments: jsonb("segments").$type<StoredSegment[]>(),
    summary: text("summary"),
    containerTags: text("container_tags").array().notNull().default(sql`'{}'::text[]`),
    metadata: jsonb("metadata").$type<Metadata>().notNull().default({}),
    contentHash: text("content_hash"),
    errorReason: text("error_reason"),
    embeddingModel: text("embedding_model"),
    /** Bumped whenever processing (re)starts; stale workflow runs cannot overwrite a newer run's work. */
    processingRun: integer("processing_run").notNull().default(0),
    /**
     * The run admission let in (see store/admission.ts): a run is queued in the store until then, at no cost
     * to Temporal, and in flight from then until done or failed. Behind processingRun while it waits.
     */
    admittedRun: integer("admitted_run").notNull().default(0),
    /** When the current run was admitted (a start still unconfirmed long after this is retried). */
    admittedAt: timestamp("admitted_at", { withTimezone: true, mode: "date" }),
    /** The run whose workflow Temporal confirmed as started; behind admittedRun only if a start was lost. */
    workflowRun: integer("workflow_run").notNull().default(0),
    /** Admission order: interactive work (single adds, edits) before bulk work (batches, syncs, imports). */
    priority: smallint("priority").$type<DocumentPriority>().notNull().default(DOCUMENT_PRIORITY.bulk),
    /** Whose share of the in-flight slots this run uses: its connection, else its first container tag. */
    fairnessKey: text("fairness_key").notNull().default(""),
    statusHistory: jsonb("status_history").$type<StatusEvent[]>().notNull().default([]),
    memoryExtraction: jsonb("memory_extraction").$type<MemoryExtractionRecord>(),
    connectionId: text("connection_id"),
    createdAt: timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("documents_custom_id_key")
      .on(t.customIdNamespace, t.customId)
      .where(sql`${t.customId} IS NOT NULL`),
    // Lookups by customId within a scope cross namespaces (a tenant reads what an admin or a sync put in its tags).
    index("documents_custom_id_idx").on(t.customId).where(sql`${t.customId} IS NOT NULL`),
    index("documents_container_tags_gin").using("gin", t.containerTags),
    // Metadata filters (store/filters.ts writes their equality and array conditions as containments this answers).
    index("documents_metadata_gin").using("gin", t.metadata.op("jsonb_path_ops")),
    // ignoreCase filters: the metadata with every string lower-cased, a stored generated column that migration 0019
    // adds (metadata_folded(metadata)) and that is deliberately not declared here, so rows read through drizzle
    // never carry it; store/filters.ts reads it by name.
    index("documents_metadata_folded_gin").using("gin", sql`"metadata_folded" jsonb_path_ops`),
    index("documents_status_idx").on(t.status),
    index("documents_end_user_idx").on(t.endUserId).where(sql`${t.endUserId} IS NOT NULL`),
    // The document list pages in created_at or updated_at order and counts its total under tags and statuses: with
    // those in the index, the count and the rows a page skips are read from it alone, not from the document rows,
    // which hold the text (a 50,001-document tag: page 1 with its count 75 -> 30 ms, page 2,000 105 -> 33). Trailing key
    // columns, not INCLUDE, which drizzle cannot declare; ordered after the unique id, they cost no order.
    index("documents_created_list_idx").on(t.createdAt, t.id, t.status, t.containerTags),
    index("documents_updated_list_idx").on(t.updatedAt, t.id, t.status, t.containerTags),
    // Admission reads only runs that wait (queued, not admitted) or are in flight (admitted, unfinished):
    // partial indexes keep each pass proportional to what it returns, not to the backlog or the table.
    index("documents_awaiting_admission_idx")
      .on(t.priority, t.fairnessKey, t.createdAt)
      .where(sql`${t.admittedRun} < ${t.processingRun} AND ${t.status} NOT IN ('done', 'failed')`),
    // The processing list (GET /v3/documents/processing), oldest first: without it the query walked every finished
    // document in created_at order to find the few that are not (50 ms at 50,000 documents, for an empty answer).
    index("documents_unfinished_idx").on(t.createdAt).where(sql`${t.status} NOT IN ('done', 'failed')`),
    index("documents_in_flight_idx")
      .on(t.fairnessKey)
      .where(sql`${t.admittedRun} = ${t.processingRun} AND ${t.status} NOT IN ('done', 'failed')`),
  ],
);

export type DocumentRow = typeof documents.$inferSelect;
export type NewDocumentRow = typeof documents.$inferInsert;
