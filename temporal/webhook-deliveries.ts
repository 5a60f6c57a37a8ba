// Starting a webhook delivery's workflow: the Temporal side of services/webhooks.ts, which stores the
// deliveries and is handed `startWebhookDelivery` bound to a client and task queue.

import { type Client, WorkflowExecutionAlreadyStartedError } from "@temporalio/client";
import { WorkflowIdReusePolicy } from "@temporalio/common";
import { deliveryWorkflowId, type WebhookDeliveryWorkflow, WORKFLOW_TYPES } from "../contracts/workflows.ts";

/** Idempotent: a delivery whose workflow is running or has completed is not started again. */
export async function startWebhookDelivery(
  client: Client,
  taskQueue: string,
  deliveryId: string,
): Promise<void> {
  try {
    await client.workflow.start<WebhookDeliveryWorkflow>(WORKFLOW_TYPES.webhookDelivery, {
      workflowId: deliveryWorkflowId(deliveryId),
      taskQueue,
      args: [{ deliveryId }],
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}
