import { WorkflowExecutionAlreadyStartedError } from "@temporalio/common";
import {
  ActivityFailure,
  ApplicationFailure,
  ContinueAsNew,
  continueAsNew,
  defineSignal,
  getExternalWorkflowHandle,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  startChild,
  workflowInfo,
} from "@temporalio/workflow";
// Type-only: the workflow bundle never contains activity code.
import type { SyncActivities } from "../activities/sync.ts";
import {
  AUTH_EXPIRED,
  CONNECTOR_CONFIG,
  RATE_LIMITED,
  RESYNC_SIGNAL,
  type ScheduledSyncWorkflow,
  type SyncConnectionWorkflow,
  type SyncOutcome,
  type SyncState,
  syncWorkflowId,
} from "../contracts/workflows.ts";
import type { SyncCounts } from "../store/schema/sync-runs.ts";
import type { SkipReason } from "../store/vocabulary.ts";

const nonRetryableErrorTypes = [AUTH_EXPIRED, CONNECTOR_CONFIG];

/** Bookkeeping: quick, retried through store hiccups. */
const bookkeeping = proxyActivities<SyncActivities>({
  startToCloseTimeout: "1 minute",
  retry: {
    initialInterval: "1s",
    backoffCoefficient: 2,
    maximumInterval: "30s",
    maximumAttempts: 20,
    nonRetryableErrorTypes,
  },
});

/**
 * One page of the source: listing, fetching changed items, saving documents. Heartbeats per item; a
 * crashed attempt is retried on another worker and redoes the page, skipping items already saved.
 * Rate limits wait as long as the source asked (the activity sets the next retry delay).
 */
const paging = proxyActivities<SyncActivities>({
  startToCloseTimeout: "30 minutes",
  heartbeatTimeout: "1 minute",
  retry: {
    initialInterval: "2s",
    backoffCoefficient: 2,
    maximumInterval: "5 minutes",
    maximumAttempts: 12,
    nonRetryableErrorTypes,
  },
});

/** Pages per workflow run before continuing as new, so histories of huge sources stay small. */
const PAGES_PER_RUN = 200;

/** "Sync again" (contracts/workflows.ts): handled while a pass runs, so it can go again once it ends. */
const resyncSignal = defineSignal(RESYNC_SIGNAL);

/** Syncs one connection: pages through the source from a checkpoint, then removes what vanished. */
export async function syncConnection(state: SyncState): Promise<SyncOutcome> {
  const { connectionId } = state;
  let runId = state.runId;
  let cursor = state.cursor;
  let listing = state.listing ?? "full";
  const counts: SyncCounts = state.counts ?? { added: 0, updated: 0, deleted: 0, unchanged: 0, failed: 0 };
  let pages = state.pages ?? 0;
  let again = state.again ?? false;
  let carry = state.carry;
  let resynced = state.resynced ?? false;
  setHandler(resyncSignal, () => {
    again = true;
  });
  try {
    if (!runId) {
      const began = await bookkeeping.beginSync({
        connectionId,
        trigger: state.trigger,
        workflowId: workflowInfo().workflowId,
      });
      if ("skipped" in began) return "skipped";
      runId = began.runId;
      cursor = began.cursor;
      listing = began.listing;
      again = false;
    }
    let pagesThisRun = 0;
    for (;;) {
      const page = await paging.syncPage({ connectionId, runId, cursor });
      add(counts, page.counts);
      if (page.carry !== undefined) carry = page.carry;
      if (page.fullResync) resynced = true;
      pages++;
      pagesThisRun++;
      if (page.next === null) break;
      cursor = page.next;
      if (pagesThisRun >= (state.pagesPerRun ?? PAGES_PER_RUN) || workflowInfo().continueAsNewSuggested) {
        return await continueAsNew<typeof syncConnection>({
          connectionId,
          trigger: state.trigger,
          runId,
          cursor,
          listing,
          counts,
          pages,
          pagesPerRun: state.pagesPerRun,
          again: again || undefined,
          carry,
          resynced: resynced || undefined,
        });
      }
    }
    // A delta source that lost its change history listed everything again: what it did not list is gone.
    if (listing === "full" || resynced) {
      const swept = await bookkeeping.sweepUnseen({ connectionId, runId });
      counts.deleted += swept.deleted;
      if (swept.heldForReview) counts.heldForReview = swept.heldForReview;
    }
    await bookkeeping.finishSync({
      connectionId,
      runId,
      status: "done",
      counts,
      ...(carry !== undefined ? { carry } : {}),
    });
    if (again) return await continueAsNew<typeof syncConnection>({ connectionId, trigger: "import" });
    return "done";
  } catch (error) {
    if (error instanceof ContinueAsNew || !runId) throw error;
    const type = failureType(error);
    const status = type === AUTH_EXPIRED ? "auth_expired" : "failed";
    await bookkeeping.finishSync({
      connectionId,
      runId,
      status,
      counts,
      errorCode: errorCodeOf(type),
      error: failureMessage(error),
    });
    return status;
  }
}

function add(total: SyncCounts, page: SyncCounts) {
  total.added += page.added;
  total.updated += page.updated;
  total.deleted += page.deleted;
  total.unchanged += page.unchanged;
  total.failed += page.failed;
  if (page.skipped) {
    total.skipped = (total.skipped ?? 0) + page.skipped;
    const reasons = { ...total.skippedReasons };
    for (const [reason, n] of Object.entries(page.skippedReasons ?? {}) as [SkipReason, number][])
      reasons[reason] = (reasons[reason] ?? 0) + n;
    total.skippedReasons = reasons;
  }
}

/** The run's `errorCode`: what the user can act on. */
function errorCodeOf(type: string | undefined): string {
  if (type === AUTH_EXPIRED) return "auth_expired";
  if (type === CONNECTOR_CONFIG) return "config";
  // The provider still throttled after every attempt. Runs that reached this before the patch say "error".
  if (type === RATE_LIMITED && patched("rate-limited-code")) return "rate_limited";
  return "error";
}

function failureType(error: unknown): string | undefined {
  if (error instanceof ActivityFailure && error.cause instanceof ApplicationFailure)
    return error.cause.type ?? undefined;
  return undefined;
}

function failureMessage(error: unknown): string {
  if (error instanceof ActivityFailure) return error.cause?.message || error.message;
  return error instanceof Error ? error.message : String(error);
}

/**
 * What a connection's Temporal schedule starts: the sync itself runs as `sync/<connectionId>` (one id
 * for every trigger, so two syncs of one connection never overlap); when one is running, it is asked
 * to sync again instead.
 */
export async function scheduledSync(connectionId: string): Promise<void> {
  try {
    await startChild(syncConnection, {
      workflowId: syncWorkflowId(connectionId),
      args: [{ connectionId, trigger: "schedule" }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    await getExternalWorkflowHandle(syncWorkflowId(connectionId)).signal(resyncSignal);
  }
}

// The shapes temporal/sync-client.ts starts them with.
syncConnection satisfies SyncConnectionWorkflow;
scheduledSync satisfies ScheduledSyncWorkflow;
