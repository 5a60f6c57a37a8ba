import { ActivityFailure, proxyActivities } from "@temporalio/workflow";
// Type-only: the workflow bundle never contains activity code.
import type { WebhookActivities } from "../activities/webhooks.ts";
import type { WebhookDeliveryOutcome, WebhookDeliveryWorkflow } from "../contracts/workflows.ts";

/**
 * Receivers go down for minutes or hours: retries start at 1 s and back off fourfold up to an hour
 * apart, ten attempts in all (about 3.4 hours). A webhook deleted or disabled meanwhile, or a URL that
 * is refused, fails the attempt as non-retryable and ends the retries at once.
 */
const sending = proxyActivities<WebhookActivities>({
  startToCloseTimeout: "1 minute",
  retry: {
    initialInterval: "1s",
    backoffCoefficient: 4,
    maximumInterval: "1 hour",
    maximumAttempts: 10,
  },
});

/** Recording the failure must not itself give up while the store is briefly unavailable. */
const bookkeeping = proxyActivities<WebhookActivities>({
  startToCloseTimeout: "30s",
  retry: { initialInterval: "1s", backoffCoefficient: 2, maximumInterval: "30s", maximumAttempts: 50 },
});

/** Workflow id `webhook/<deliveryId>`: one per stored delivery, started when the event is emitted. */
export async function webhookDelivery(input: { deliveryId: string }): Promise<WebhookDeliveryOutcome> {
  try {
    await sending.deliverWebhook(input.deliveryId);
    return "delivered";
  } catch (error) {
    const reason =
      error instanceof ActivityFailure ? (error.cause?.message ?? error.message) : (error as Error).message;
    await bookkeeping.markWebhookDeliveryFailed({ deliveryId: input.deliveryId, reason });
    return "failed";
  }
}

// The shape temporal/webhook-deliveries.ts starts it with.
webhookDelivery satisfies WebhookDeliveryWorkflow;
