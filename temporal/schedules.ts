// Temporal schedules the service keeps: each one a workflow started every so often, created or brought up to
// date by every worker start (idempotent: two workers starting at once, one creates, one updates), removed
// when switched off. Overlapping runs are skipped; runs missed while no worker was up are not made up beyond
// one interval (the next run does whatever became due meanwhile anyway).

import {
  type Client,
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
} from "@temporalio/client";
import type { Logger } from "../config/logger.ts";
import { WORKFLOW_TYPES } from "../contracts/workflows.ts";

export interface IntervalSchedule {
  scheduleId: string;
  /** The workflow type each run starts; its workflow id is the schedule id. */
  workflowType: string;
  args: unknown[];
  taskQueue: string;
  everyMs: number;
  enabled: boolean;
  /** Longest a run may take. */
  runTimeout: string;
  log: Logger;
}

export async function ensureIntervalSchedule(client: Client, opts: IntervalSchedule): Promise<void> {
  const { scheduleId } = opts;
  const handle = client.schedule.getHandle(scheduleId);
  if (!opts.enabled) {
    try {
      await handle.delete();
      opts.log.info({ scheduleId }, "schedule switched off: removed");
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    }
    return;
  }
  const spec = { intervals: [{ every: opts.everyMs }] };
  const action = {
    type: "startWorkflow" as const,
    workflowType: opts.workflowType,
    workflowId: scheduleId,
    taskQueue: opts.taskQueue,
    args: opts.args,
    workflowRunTimeout: opts.runTimeout,
  };
  const policies = {
    overlap: ScheduleOverlapPolicy.SKIP,
    catchupWindow: Math.max(opts.everyMs, 60_000),
  };
  try {
    await client.schedule.create({ scheduleId, spec, action, policies });
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    await handle.update((previous) => ({
      ...previous,
      spec,
      action,
      policies,
      state: { ...previous.state, paused: false },
    }));
  }
}

/** One schedule per task queue (the queue names a deployment; tests run several against one Temporal). */
export const fileSweepScheduleId = (taskQueue: string) => `file-sweep/${taskQueue}`;

/** The sweep of orphaned stored files (workflows/file-sweep.ts); FILE_SWEEP_INTERVAL=0 switches it off. */
export function ensureFileSweepSchedule(
  client: Client,
  opts: { taskQueue: string; everyMs: number; graceMs: number; log: Logger },
): Promise<void> {
  return ensureIntervalSchedule(client, {
    scheduleId: fileSweepScheduleId(opts.taskQueue),
    workflowType: WORKFLOW_TYPES.fileSweep,
    args: [{ graceMs: opts.graceMs }],
    taskQueue: opts.taskQueue,
    everyMs: opts.everyMs,
    enabled: opts.everyMs > 0,
    runTimeout: "12 hours",
    log: opts.log,
  });
}

export const statisticsScheduleId = (taskQueue: string) => `refresh-statistics/${taskQueue}`;

/** The planner-statistics refresh (workflows/refresh-statistics.ts); STATISTICS_INTERVAL=off switches it off. */
export function ensureStatisticsSchedule(
  client: Client,
  opts: { taskQueue: string; everyMs: number; log: Logger },
): Promise<void> {
  return ensureIntervalSchedule(client, {
    scheduleId: statisticsScheduleId(opts.taskQueue),
    workflowType: WORKFLOW_TYPES.refreshStatistics,
    args: [],
    taskQueue: opts.taskQueue,
    everyMs: opts.everyMs,
    enabled: opts.everyMs > 0,
    runTimeout: "1 hour",
    log: opts.log,
  });
}

export const maintenanceScheduleId = (taskQueue: string) => `maintain-tables/${taskQueue}`;

/**
 * Table maintenance (workflows/maintain-tables.ts): VACUUM on PGlite, REINDEX of a bloated HNSW index on both
 * drivers; MAINTENANCE_INTERVAL=off switches it off.
 */
export function ensureMaintenanceSchedule(
  client: Client,
  opts: { taskQueue: string; everyMs: number; log: Logger },
): Promise<void> {
  return ensureIntervalSchedule(client, {
    scheduleId: maintenanceScheduleId(opts.taskQueue),
    workflowType: WORKFLOW_TYPES.maintainTables,
    args: [],
    taskQueue: opts.taskQueue,
    everyMs: opts.everyMs,
    enabled: opts.everyMs > 0,
    runTimeout: "6 hours",
    log: opts.log,
  });
}
