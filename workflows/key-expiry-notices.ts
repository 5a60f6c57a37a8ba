import { proxyActivities } from "@temporalio/workflow";
// Type-only: the workflow bundle never contains activity code.
import type { KeyNoticeActivities } from "../activities/key-notices.ts";

/**
 * A mail server that is down gets a few tries up to a minute apart; after that the schedule's next run
 * (KEY_EXPIRY_NOTICE_INTERVAL) picks the notice up again, since its claim was given back. Heartbeats
 * per key: a worker that dies mid-run is noticed within two minutes, and the schedule (which skips runs
 * while one is open) is not held up until the start-to-close timeout.
 */
const notices = proxyActivities<KeyNoticeActivities>({
  startToCloseTimeout: "10 minutes",
  heartbeatTimeout: "2 minutes",
  retry: { initialInterval: "5s", backoffCoefficient: 2, maximumInterval: "1 minute", maximumAttempts: 4 },
});

/** Started by the key-expiry schedule (temporal/key-notice-schedule.ts): one pass over keys about to expire. */
export async function keyExpiryNotices(): Promise<{ mailed: number; logged: number }> {
  const { mailed, logged } = await notices.sendDueKeyNotices();
  return { mailed, logged };
}
