import { Context } from "@temporalio/activity";
import { type FileDeps, type SweepResult, sweepOrphanFiles } from "../services/document-files.ts";

/** Activities of the fileSweep workflow (started by its schedule, temporal/schedules.ts). */
export function createFileSweepActivities(deps: FileDeps) {
  return {
    /** One pass over the stored files: orphans older than `graceMs` go. Safe to retry from the start. */
    async sweepOrphanFiles(input: { graceMs: number }): Promise<SweepResult> {
      const ctx = Context.current();
      const result = await sweepOrphanFiles(deps, {
        olderThan: new Date(Date.now() - input.graceMs),
        heartbeat: (progress) => ctx.heartbeat(progress),
      });
      if (result.deleted) deps.log.info(result, "orphaned files deleted");
      return result;
    },
  };
}

export type FileSweepActivities = ReturnType<typeof createFileSweepActivities>;
