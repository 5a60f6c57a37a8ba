import { createHash } from "node:crypto";
import { type Client, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from "@temporalio/client";
import { WorkflowIdReusePolicy } from "@temporalio/common";
import type { Logger } from "../config/logger.ts";
// Workflow ids carry the run (processingWorkflowId), so each (document, run) is processed at most once by Temporal itself.
import {
  type ProcessDocumentWorkflow,
  type ProcessingRef,
  processingWorkflowId,
  WORKFLOW_TYPES,
} from "../contracts/workflows.ts";
import {
  type AdmittedRun,
  admitRuns,
  admittedWithoutWorkflow,
  releaseAdmission,
} from "../store/admission.ts";
import type { Database } from "../store/db.ts";
import { markWorkflowsStarted } from "../store/documents.ts";
import { DOCUMENT_PRIORITY, type DocumentStatus } from "../store/vocabulary.ts";

/** Temporal's priority keys: 1 (first) … 5, default 3. Interactive runs go before bulk ones on the task queues too. */
const TEMPORAL_PRIORITY_KEY = { [DOCUMENT_PRIORITY.interactive]: 1, [DOCUMENT_PRIORITY.bulk]: 3 } as const;

/** Temporal limits fairness keys to 64 bytes; longer ones (long tags) are shortened to a stable hash. */
export function temporalFairnessKey(key: string): string {
  if (Buffer.byteLength(key) <= 64) return key;
  return `${key.slice(0, 20)}#${createHash("sha256").update(key).digest("hex").slice(0, 32)}`;
}

export interface AdmissionSettings {
  /** Most document runs in flight (admitted, not yet done or failed) across every process sharing the store. */
  maxInFlight: number;
}

/** An admitted run whose start is not confirmed this long after admission is started again (idempotent). */
const UNCONFIRMED_START_MS = 60_000;

/**
 * How documents reach Temporal. A saved run waits in the store; `submit()` asks for an admission pass,
 * which admits as many runs as there are free slots (interactive first, fairly across tenants and
 * connections, see store/admission.ts) and starts their workflows. Passes also run when a run finishes
 * and on a timer, so the store's queue drains at the pace processing allows, whatever its length.
 */
export class DocumentProcessing {
  private pass: Promise<void> | undefined;
  private passAgain = false;
  private delayed: NodeJS.Timeout | undefined;
  private closed = false;
  /** Round robin among fairness keys with equal load: the last key served. */
  private lastKey: string | undefined;
  /** A client on the connection of a document worker in this process: starts hand it the first task directly. */
  private localWorkerClient: Client | undefined;
  /** Workflows this process started, and how many of them Temporal handed straight to its own worker. */
  readonly starts = { total: 0, eager: 0 };

  constructor(
    private readonly client: Client,
    readonly taskQueue: string,
    private readonly db: Database,
    readonly admission: AdmissionSettings,
    private readonly log?: Logger,
  ) {}

  /**
   * Asks for an admission pass; calls while one runs (or waits) coalesce into one more pass. Never throws.
   * `afterMs` lets a burst of calls share one pass: runs that finish call it with a short delay, so a pass
   * admits several runs at once instead of one per finished run (a pass is a few statements under a lock).
   */
  submit(afterMs = 0): void {
    if (this.closed) return;
    if (this.pass) {
      this.passAgain = true;
      return;
    }
    if (afterMs > 0) {
      if (this.delayed) return;
      this.delayed = setTimeout(() => {
        this.delayed = undefined;
        this.submit();
      }, afterMs);
      this.delayed.unref();
      return;
    }
    if (this.delayed) {
      clearTimeout(this.delayed);
      this.delayed = undefined;
    }
    this.pass = this.passes().finally(() => {
      this.pass = undefined;
    });
  }

  /** At shutdown, before the store closes: no more passes; waits for the one running. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.delayed) clearTimeout(this.delayed);
    this.delayed = undefined;
    this.passAgain = false;
    await this.pass;
  }

  /** Runs admission until a pass admits nothing new; resolves when the workflows of the admitted runs started. */
  async admitNow(): Promise<number> {
    if (this.pass) {
      this.passAgain = true;
      await this.pass;
    }
    let total = 0;
    for (;;) {
      const n = await this.admitOnce();
      total += n;
      if (n === 0) return total;
    }
  }

  private async passes(): Promise<void> {
    do {
      this.passAgain = false;
      try {
        // Keep going while a pass fills slots: a burst of adds may need several.
        while (!this.closed && (await this.admitOnce()) > 0 && !this.passAgain);
      } catch (err) {
        this.log?.warn({ err }, "admission pass failed; the next one will retry");
      }
    } while (this.passAgain);
  }

  private async admitOnce(): Promise<number> {
    const admitted = await admitRuns(this.db, {
      maxInFlight: this.admission.maxInFlight,
      after: this.lastKey,
    });
    if (!admitted.length) return 0;
    this.lastKey = admitted[admitted.length - 1]?.fairnessKey;
    const failed: AdmittedRun[] = [];
    const started: AdmittedRun[] = [];
    await Promise.all(
      admitted.map((run) =>
        this.startWorkflow(run).then(
          () => started.push(run),
          (err) => {
            failed.push(run);
            this.log?.warn({ err, documentId: run.documentId }, "could not start processing now; will retry");
          },
        ),
      ),
    );
    await markWorkflowsStarted(this.db, started);
    if (failed.length) {
      await releaseAdmission(this.db, failed);
      throw new Error(`${failed.length} of ${admitted.length} workflow starts failed`);
    }
    return admitted.length;
  }

  /**
   * Starts go through a document worker of this process when there is one (`undefined`: no longer). Temporal's
   * eager workflow start then answers the start with the run's first workflow task for that worker, instead of
   * queueing it for a poll, which saves the Temporal server a round of work per document during an import.
   * Without a free workflow-task slot in that worker, the task is queued as usual.
   */
  startThroughLocalWorker(client: Client | undefined): void {
    this.localWorkerClient = client;
  }

  /** Starts an admitted run's workflow and records that Temporal has it. Idempotent. */
  async start(run: AdmittedRun): Promise<void> {
    await this.startWorkflow(run);
    await markWorkflowsStarted(this.db, [run]);
  }

  private async startWorkflow(run: AdmittedRun): Promise<void> {
    const ref = { documentId: run.documentId, run: run.run };
    const local = this.localWorkerClient;
    try {
      const handle = await (local ?? this.client).workflow.start<ProcessDocumentWorkflow>(
        WORKFLOW_TYPES.processDocument,
        {
          workflowId: processingWorkflowId(ref),
          ...(local ? { requestEagerStart: true } : {}),
          taskQueue: this.taskQueue,
          args: [ref],
          // Its activities inherit it: an interactive document's tasks go before the bulk import's.
          priority: {
            priorityKey: TEMPORAL_PRIORITY_KEY[run.priority] ?? 3,
            fairnessKey: temporalFairnessKey(run.fairnessKey),
          },
          // A run that was terminated (not completed) may be started again by the reconciler.
          workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
        },
      );
      this.starts.total++;
      if (handle.eagerlyStarted) this.starts.eager++;
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }

  /** Starts again the admitted runs whose start was lost (the admitting process stopped in between). */
  async restartUnconfirmed(olderThanMs = UNCONFIRMED_START_MS): Promise<number> {
    const runs = await admittedWithoutWorkflow(this.db, new Date(Date.now() - olderThanMs));
    for (const run of runs) await this.start(run);
    return runs.length;
  }

  /** Whether Temporal knows this run's workflow (running, or closed in any way). */
  async exists(ref: ProcessingRef): Promise<boolean> {
    try {
      await this.client.workflow.getHandle(processingWorkflowId(ref)).describe();
      return true;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return false;
      throw error;
    }
  }

  /** Stops the previous run after content changed or the document was deleted; its writes are already fenced. */
  async stop(ref: ProcessingRef, reason: string): Promise<void> {
    try {
      await this.client.workflow.getHandle(processingWorkflowId(ref)).terminate(reason);
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }

  /**
   * After a delete: stops the runs that were in flight, frees their slots at once and admits the next
   * ones. Runs still waiting for admission had no workflow: deleting their rows was all there was to do.
   */
  async stopDeleted(
    rows: readonly { id: string; status: DocumentStatus; processingRun: number; admittedRun: number }[],
    reason: string,
  ): Promise<void> {
    const inFlight = rows.filter(
      (r) => r.admittedRun === r.processingRun && r.status !== "done" && r.status !== "failed",
    );
    await Promise.all(
      inFlight.map((r) =>
        this.stop({ documentId: r.id, run: r.processingRun }, reason).catch((err) =>
          this.log?.debug({ err, documentId: r.id }, "no run to stop"),
        ),
      ),
    );
    if (inFlight.length) this.submit();
  }
}
