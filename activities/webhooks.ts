import { ApplicationFailure, Context } from "@temporalio/activity";
import type { Logger } from "../config/logger.ts";
import {
  attemptDelivery,
  type DeliveryDeps,
  deliveryStarter,
  emitEvent,
  type NetworkPolicy,
  type WebhookEmission,
} from "../services/webhooks.ts";
import type { Database } from "../store/db.ts";
import { markDeliveryFailed } from "../store/webhooks.ts";

export interface WebhookActivityDeps extends DeliveryDeps {
  network: NetworkPolicy;
  log: Logger;
}

/** Activities of the webhookDelivery workflow. */
export function createWebhookActivities(deps: WebhookActivityDeps) {
  return {
    /** One signed POST; anything but a 2xx throws so Temporal retries with backoff. */
    async deliverWebhook(deliveryId: string): Promise<{ status?: number }> {
      const outcome = await attemptDelivery(deps, deliveryId);
      if (outcome.kind === "delivered") return { status: outcome.status };
      if (outcome.kind === "abandoned")
        throw ApplicationFailure.create({
          type: "WebhookAbandoned",
          message: outcome.reason,
          nonRetryable: true,
        });
      throw ApplicationFailure.create({ type: "WebhookNotDelivered", message: outcome.reason });
    },

    async markWebhookDeliveryFailed(input: { deliveryId: string; reason: string }): Promise<void> {
      await markDeliveryFailed(deps.db, input.deliveryId, input.reason);
      deps.log.warn(input, "gave up delivering a webhook");
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;

/**
 * For other activities: emits an event with the worker's Temporal client. Deliveries go to the emitting
 * activity's task queue, which must be one whose worker runs workflows (indexDocument, failDocument and
 * finishSync run on the main queue, not the heavy one). Never throws (see emitEvent).
 */
export async function emitWebhookEvent(deps: { db: Database; log: Logger }, emission: WebhookEmission) {
  try {
    const ctx = Context.current();
    await emitEvent(
      {
        db: deps.db,
        log: deps.log,
        startDelivery: deliveryStarter(ctx.client, ctx.info.taskQueue),
      },
      emission,
    );
  } catch (error) {
    deps.log.warn({ err: error, event: emission.event }, "could not emit a webhook event");
  }
}
