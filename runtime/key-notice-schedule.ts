import {
  type Client,
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
} from "@temporalio/client";
import type { Logger } from "../config/logger.ts";
import type { keyExpiryNotices } from "../workflows/key-expiry-notices.ts";

/**
 * One schedule per task queue (the queue names a deployment; tests run several against one Temporal):
 * `key-expiry-notices/documents` by default.
 */
export const keyNoticeScheduleId = (taskQueue: string) => `key-expiry-notices/${taskQueue}`;

/**
 * Creates the key-expiry schedule, or brings an existing one to the current interval and queue; every
 * worker start calls it, so it is idempotent (two workers starting at once: one creates, one updates).
 * No lead times configured (`KEY_EXPIRY_NOTICE_LEAD_TIMES=off`) removes it. Overlapping runs are
 * skipped; runs missed while no worker was up are not made up beyond one interval (the next run sends
 * whatever became due meanwhile anyway).
 */
export async function ensureKeyNoticeSchedule(
  client: Client,
  opts: { taskQueue: string; everyMs: number; enabled: boolean; log: Logger },
): Promise<void> {
  const scheduleId = keyNoticeScheduleId(opts.taskQueue);
  const handle = client.schedule.getHandle(scheduleId);
  if (!opts.enabled) {
    try {
      await handle.delete();
      opts.log.info({ scheduleId }, "key-expiry notices off: schedule removed");
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    }
    return;
  }
  const spec = { intervals: [{ every: opts.everyMs }] };
  const action = {
    type: "startWorkflow" as const,
    workflowType: "keyExpiryNotices",
    workflowId: scheduleId,
    taskQueue: opts.taskQueue,
    args: [] as [],
    workflowRunTimeout: "1 hour",
  };
  const policies = {
    overlap: ScheduleOverlapPolicy.SKIP,
    catchupWindow: Math.max(opts.everyMs, 60_000),
  };
  try {
    await client.schedule.create<typeof keyExpiryNotices>({ scheduleId, spec, action, policies });
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    await handle.update<typeof keyExpiryNotices>((previous) => ({
      ...previous,
      spec,
      action,
      policies,
      state: { ...previous.state, paused: false },
    }));
  }
}
