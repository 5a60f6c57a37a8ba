import {
  type Client,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  WorkflowNotFoundError,
} from "@temporalio/client";
import { WorkflowIdReusePolicy } from "@temporalio/common";
import {
  RESYNC_SIGNAL,
  type SyncConnectionWorkflow,
  type SyncTrigger,
  syncScheduleId,
  syncWorkflowId,
  WORKFLOW_TYPES,
} from "../contracts/workflows.ts";

/** How the API starts, schedules and stops connection syncs. */
export class ConnectionSyncs {
  constructor(
    private readonly client: Client,
    readonly taskQueue: string,
  ) {}

  /**
   * Starts a sync now, or, when one is running, asks it for one more pass after the current one (a
   * pass that started listing before the request may have missed the change the caller wants).
   */
  async startNow(connectionId: string, trigger: SyncTrigger): Promise<void> {
    await this.client.workflow.signalWithStart<SyncConnectionWorkflow, []>(WORKFLOW_TYPES.syncConnection, {
      workflowId: syncWorkflowId(connectionId),
      taskQueue: this.taskQueue,
      args: [{ connectionId, trigger }],
      signal: RESYNC_SIGNAL,
      signalArgs: [],
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    });
  }

  /** Creates or replaces the connection's schedule; 0 minutes removes it. Overlapping runs are skipped. */
  async schedule(connectionId: string, everyMinutes: number): Promise<void> {
    await this.unschedule(connectionId);
    if (everyMinutes <= 0) return;
    await this.client.schedule.create({
      scheduleId: syncScheduleId(connectionId),
      spec: { intervals: [{ every: `${everyMinutes} minutes` }] },
      action: {
        type: "startWorkflow",
        // A small trigger (Temporal appends the time to its id) that starts sync/<id> or asks the running one to go again.
        workflowType: WORKFLOW_TYPES.scheduledSync,
        workflowId: syncScheduleId(connectionId),
        taskQueue: this.taskQueue,
        args: [connectionId],
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: "1 minute" },
    });
  }

  async unschedule(connectionId: string): Promise<void> {
    try {
      await this.client.schedule.getHandle(syncScheduleId(connectionId)).delete();
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    }
  }

  /** Stops the schedule starting syncs (credentials refused) until the connection is scheduled again. */
  async pauseSchedule(connectionId: string, reason: string): Promise<void> {
    try {
      await this.client.schedule.getHandle(syncScheduleId(connectionId)).pause(reason);
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    }
  }

  /** Whether the schedule exists, and its interval (for status and tests). */
  async describeSchedule(connectionId: string): Promise<{ everyMs: number } | undefined> {
    try {
      const d = await this.client.schedule.getHandle(syncScheduleId(connectionId)).describe();
      const every = d.spec.intervals?.[0]?.every;
      return { everyMs: typeof every === "number" ? every : Number(every ?? 0) };
    } catch (error) {
      if (error instanceof ScheduleNotFoundError) return undefined;
      throw error;
    }
  }

  /** On delete: no schedule, no running sync. */
  async stop(connectionId: string): Promise<void> {
    await this.unschedule(connectionId);
    try {
      await this.client.workflow.getHandle(syncWorkflowId(connectionId)).terminate("connection deleted");
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }
}
