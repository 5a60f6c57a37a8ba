// The values the tables are written in (statuses, priorities, event names, markers), for code above the store
// that validates input or reports with them. Table objects stay in store/schema/, used by the store alone.

export const documentStatuses = ["queued", "extracting", "chunking", "embedding", "done", "failed"] as const;
export type DocumentStatus = (typeof documentStatuses)[number];

/** Lower goes first. Stored as a number so the admission index can order by it. */
export const DOCUMENT_PRIORITY = { interactive: 0, bulk: 1 } as const;
export type DocumentPriority = (typeof DOCUMENT_PRIORITY)[keyof typeof DOCUMENT_PRIORITY];

/**
 * Marks a memory kept word for word from a short document (metadata[SHORT_TEXT_MEMORY_KEY] ===
 * SHORT_TEXT_MEMORY_SOURCE): a copy of the document's text, replaced when it is reprocessed and deleted
 * with it (migration 0011), and forgetting it takes the document's text out of search.
 */
export const SHORT_TEXT_MEMORY_KEY = "memorySource";
export const SHORT_TEXT_MEMORY_SOURCE = "short-text";

export const webhookEvents = ["document.done", "document.failed", "connection.sync"] as const;
export type WebhookEventType = (typeof webhookEvents)[number];

/**
 * Why a sync left an item out, as its run counts them: the reasons of connectors/errors.ts ItemSkippedError
 * (connectors import nothing of the store, so they name them again; activities/sync.ts assigns one to the other).
 */
export const skipReasons = [
  "too_large",
  "export_limit",
  "unsupported_type",
  "archived",
  "no_permission",
  "not_found",
] as const;
export type SkipReason = (typeof skipReasons)[number];
