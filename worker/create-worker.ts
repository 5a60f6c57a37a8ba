import { type NativeConnection, Worker } from "@temporalio/worker";
import { createDocumentActivities, type DocumentActivityDeps } from "../activities/document-processing.ts";
import { createFileSweepActivities } from "../activities/file-sweep.ts";
import { createKeyNoticeActivities, type KeyNoticeActivityDeps } from "../activities/key-notices.ts";
import { createMaintenanceActivities, type MaintenanceActivityDeps } from "../activities/maintenance.ts";
import { createReembedActivities } from "../activities/reembed.ts";
import { createSyncActivities, type SyncActivityDeps } from "../activities/sync.ts";
import { createWebhookActivities } from "../activities/webhooks.ts";
import { heavyQueueOf } from "../contracts/workflows.ts";
import { workflowBundleOptions } from "./workflow-bundle.ts";

export interface WorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: DocumentActivityDeps & MaintenanceActivityDeps;
  /** Connection syncs: the connector registry, sealed secrets, and the processing client for new documents. */
  sync: SyncActivityDeps;
  /** Key-expiry notices: lead times and SMTP settings. */
  keyNotices: KeyNoticeActivityDeps;
  /** Embedding is CPU-bound on a small machine: a few activities at a time keep the event loop free. */
  maxConcurrentActivities?: number;
  /**
   * Short documents are prepared in a local activity each; admission (MAX_DOCUMENTS_IN_FLIGHT) already bounds
   * how many are in flight across all workers, so this only needs to be at least that.
   */
  maxConcurrentLocalActivities?: number;
}

export function createDocumentWorker(opts: WorkerOptions): Promise<Worker> {
  const localActivities = opts.maxConcurrentLocalActivities ?? 100;
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    ...workflowBundleOptions,
    activities: allActivities(opts),
    maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivities ?? 4,
    maxConcurrentLocalActivityExecutions: localActivities,
    // A short document's workflow task stays open while its local activity runs, so each run in flight holds a
    // slot, and idle pollers hold more: with the SDK's 40, a bulk import left no slot free for eager starts (a
    // quarter of starts went eager, measured). Slots are bookkeeping, not threads.
    maxConcurrentWorkflowTaskExecutions: localActivities + 40,
    // Let an activity finish its current batch before the process exits.
    shutdownGraceTime: "10s",
  });
}

/**
 * The heavy queue's worker (OCR, transcription): activities only, with its own small concurrency so
 * long jobs never take the main queue's slots.
 */
export function createHeavyWorker(opts: WorkerOptions & { maxConcurrentHeavy?: number }): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: heavyQueueOf(opts.taskQueue),
    activities: allActivities(opts),
    maxConcurrentActivityTaskExecutions: opts.maxConcurrentHeavy ?? 1,
    shutdownGraceTime: "10s",
  });
}

function allActivities(opts: WorkerOptions) {
  return {
    ...createDocumentActivities(opts.deps),
    ...createReembedActivities(opts.deps),
    ...createSyncActivities(opts.sync),
    ...createWebhookActivities(opts.sync),
    ...createKeyNoticeActivities(opts.keyNotices),
    ...createFileSweepActivities(opts.deps),
    ...createMaintenanceActivities(opts.deps),
  };
}
