import { type Client, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from "@temporalio/client";
import { WorkflowIdReusePolicy } from "@temporalio/common";
import type { ProcessingRef } from "../activities/document-processing.ts";
import type { Database } from "../store/db.ts";
import { markWorkflowStarted } from "../store/documents.ts";
import type { processDocument } from "../workflows/process-document.ts";

/** Workflow ids carry the run, so each (document, run) is processed at most once by Temporal itself. */
export function processingWorkflowId(ref: ProcessingRef): string {
  return `doc/${ref.documentId}/${ref.run}`;
}

/** How the API (and the reconciler) hand documents to Temporal. */
export class DocumentProcessing {
  constructor(
    private readonly client: Client,
    readonly taskQueue: string,
    /** Where confirmed starts are recorded, so the reconciler only retries starts that were lost. */
    private readonly db?: Database,
  ) {}

  /** Idempotent: a run that is already running or finished is left alone. */
  async start(ref: ProcessingRef): Promise<void> {
    await this.startWorkflow(ref);
    if (this.db) await markWorkflowStarted(this.db, ref.documentId, ref.run);
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

  private async startWorkflow(ref: ProcessingRef): Promise<void> {
    try {
      await this.client.workflow.start<typeof processDocument>("processDocument", {
        workflowId: processingWorkflowId(ref),
        taskQueue: this.taskQueue,
        args: [ref],
        // A run that was terminated (not completed) may be started again by the reconciler.
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
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
}
