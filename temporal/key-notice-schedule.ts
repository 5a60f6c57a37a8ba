import type { Client } from "@temporalio/client";
import type { Logger } from "../config/logger.ts";
import { WORKFLOW_TYPES } from "../contracts/workflows.ts";
import { ensureIntervalSchedule } from "./schedules.ts";

/**
 * One schedule per task queue (the queue names a deployment; tests run several against one Temporal):
 * `key-expiry-notices/documents` by default.
 */
export const keyNoticeScheduleId = (taskQueue: string) => `key-expiry-notices/${taskQueue}`;

/**
 * The key-expiry schedule (temporal/schedules.ts has the rules every schedule follows). No lead times
 * configured (`KEY_EXPIRY_NOTICE_LEAD_TIMES=off`) removes it.
 */
export function ensureKeyNoticeSchedule(
  client: Client,
  opts: { taskQueue: string; everyMs: number; enabled: boolean; log: Logger },
): Promise<void> {
  return ensureIntervalSchedule(client, {
    scheduleId: keyNoticeScheduleId(opts.taskQueue),
    workflowType: WORKFLOW_TYPES.keyExpiryNotices,
    args: [],
    taskQueue: opts.taskQueue,
    everyMs: opts.everyMs,
    enabled: opts.enabled,
    runTimeout: "1 hour",
    log: opts.log,
  });
}
