// What the workflows and everyone who starts, signals or serves them agree on: workflow type names with their
// arguments and results, workflow ids, signal names, failure types and task queues. The workflows import it
// (plain constants and types: deterministic, nothing of Node), and so do temporal/ (the client side) and the
// activities, so no side has to import the other: a workflow's callers never name the workflow module itself.

import type { SyncCounts } from "../store/schema/sync-runs.ts";

// ── Task queues ────────────────────────────────────────────────────────────────────────────────────────────

/**
 * Heavy extraction (OCR, transcription) runs on its own task queue, `<queue>-heavy`, so minutes-long
 * jobs cannot take every activity slot while small documents wait; each queue has its own concurrency.
 */
export const HEAVY_QUEUE_SUFFIX = "-heavy";

export const heavyQueueOf = (taskQueue: string) => `${taskQueue}${HEAVY_QUEUE_SUFFIX}`;

// ── Failure types: raised by activities, reacted to by workflows ───────────────────────────────────────────

export const SUPERSEDED = "Superseded";
export const EXTRACTION_FAILED = "ExtractionFailed";
/** The source refused the connection's credentials: the connection stops until someone reconnects it. */
export const AUTH_EXPIRED = "AuthExpired";
/** Settings that can never work (no such bucket, a deleted connection): no retry. */
export const CONNECTOR_CONFIG = "ConnectorConfig";
/** The source kept asking to slow down: retried after the wait it asked for, until attempts run out. */
export const RATE_LIMITED = "RateLimited";

// ── Processing a document: `doc/<documentId>/<run>` ───────────────────────────────────────────────────────

/** One version (run) of one document: what admission starts and every processing activity is fenced by. */
export interface ProcessingRef {
  documentId: string;
  run: number;
}

export type ProcessingOutcome = "done" | "failed" | "superseded";

export type ProcessDocumentWorkflow = (ref: ProcessingRef) => Promise<ProcessingOutcome>;

export const processingWorkflowId = (ref: ProcessingRef) => `doc/${ref.documentId}/${ref.run}`;

// ── Syncing a connection: `sync/<connectionId>`, started by its schedule `sync-schedule/<connectionId>` ────

export type SyncTrigger = "create" | "import" | "schedule";

export interface SyncState {
  connectionId: string;
  trigger: SyncTrigger;
  /** Set once the run is open; a continued workflow carries on with it. */
  runId?: string;
  cursor?: unknown;
  listing?: "full" | "delta";
  counts?: SyncCounts;
  pages?: number;
  /** Pages per workflow run before continuing as new (default 200; tests use a small number). */
  pagesPerRun?: number;
  /** A resync was asked for during this pass (carried across continue-as-new). */
  again?: boolean;
  /** The connector's state for its next pass, from the latest page that had one. */
  carry?: unknown;
  /** A page of this pass was a delta source's full resync: the pass ends with a sweep, as a full listing does. */
  resynced?: boolean;
}

export type SyncOutcome = "done" | "failed" | "auth_expired" | "skipped";

export type SyncConnectionWorkflow = (state: SyncState) => Promise<SyncOutcome>;
export type ScheduledSyncWorkflow = (connectionId: string) => Promise<void>;

/** Readable ids in Temporal's UI: the sync of a connection, and the schedule that starts it. */
export const syncWorkflowId = (connectionId: string) => `sync/${connectionId}`;
export const syncScheduleId = (connectionId: string) => `sync-schedule/${connectionId}`;

/**
 * "Sync again": an import or a scheduled run while a sync is running. Requests that arrive before the
 * listing starts are covered by this pass; later ones get one more pass after it.
 */
export const RESYNC_SIGNAL = "resync";

// ── Delivering a webhook: `webhook/<deliveryId>` ───────────────────────────────────────────────────────────

export type WebhookDeliveryOutcome = "delivered" | "failed";

export type WebhookDeliveryWorkflow = (input: { deliveryId: string }) => Promise<WebhookDeliveryOutcome>;

export const deliveryWorkflowId = (deliveryId: string) => `webhook/${deliveryId}`;

// ── The workflow types a worker registers (workflows/index.ts exports each under this name) ───────────────

export const WORKFLOW_TYPES = {
  processDocument: "processDocument",
  syncConnection: "syncConnection",
  scheduledSync: "scheduledSync",
  webhookDelivery: "webhookDelivery",
  reembedVectors: "reembedVectors",
  fileSweep: "fileSweep",
  keyExpiryNotices: "keyExpiryNotices",
  refreshStatistics: "refreshStatistics",
  maintainTables: "maintainTables",
} as const;
