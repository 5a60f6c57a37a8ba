import { type Client, WorkflowExecutionAlreadyStartedError } from "@temporalio/client";
import type { Logger } from "../config/logger.ts";
import { WORKFLOW_TYPES } from "../contracts/workflows.ts";
import type { Database } from "../store/db.ts";
import { hasStaleVectors } from "../store/reembed.ts";

export const reembedWorkflowId = (model: string) => `reembed/${model}`;

/**
 * When stored vectors come from another model than the configured one (the model was changed), starts
 * the migration workflow. One per target model: a second worker starting at the same time finds it running.
 */
export async function startReembedIfNeeded(
  client: Client,
  taskQueue: string,
  db: Database,
  model: string,
  log: Logger,
): Promise<string | undefined> {
  if (!(await hasStaleVectors(db, model))) return undefined;
  const workflowId = reembedWorkflowId(model);
  try {
    await client.workflow.start(WORKFLOW_TYPES.reembedVectors, {
      taskQueue,
      workflowId,
      args: [{ model, table: "chunks", afterId: "", migrated: 0 }],
    });
    log.info({ model, workflowId }, "stored vectors come from another model: re-embedding them");
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
  return workflowId;
}
