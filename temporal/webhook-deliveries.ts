// Starting a webhook delivery's workflow: the Temporal side of services/webhooks.ts, which stores the
// deliveries and is handed `startWebhookDelivery` bound to a client and task queue.

import { type Client, WorkflowExecutionAlreadyStartedError } from "@temporalio/client";
import { WorkflowIdReusePolicy } from "@temporalio/common";
import type { webhookDelivery } from "../workflows/deliver-webhook.ts";

export const deliveryWorkflowId = (deliveryId: string) => `webhook/${deliveryId}`;

/** Idempotent: a delivery whose workflow is running or has completed is not started again. */
export async function startWebhookDelivery(
  client: Client,
  taskQueue: string,
  deliveryId: string,
): Promise<void> {
  try {
    await client.workflow.start<typeof webhookDelivery>("webhookDelivery", {
      workflowId: deliveryWorkflowId(deliveryId),
      taskQueue,
      args: [{ deliveryId }],
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}
