import type { Logger } from "../config/logger.ts";
import { staleRunsInFlight } from "../store/admission.ts";
import type { Database } from "../store/db.ts";
import type { DocumentProcessing } from "../temporal/processing-client.ts";

/** Runs in flight untouched this long get their workflow looked up in Temporal. */
const STALE_AFTER_MS = 10 * 60_000;

/**
 * Documents wait in the store until admission starts their workflow (temporal/processing-client.ts).
 * This pass repairs what a crash can leave behind: an admitted run whose start was never confirmed is
 * started again (the workflow id is per run, so a start is never doubled), and a run in flight whose
 * workflow Temporal no longer knows (a wiped dev-server state file) is started anew. Then it admits
 * whatever fits: the timer behind it also keeps admission going if every nudge was missed.
 */
export async function reconcileUnfinished(
  db: Database,
  processing: DocumentProcessing,
  log: Logger,
  unconfirmedAfterMs?: number,
) {
  let started = await processing.restartUnconfirmed(unconfirmedAfterMs);
  for (const run of await staleRunsInFlight(db, new Date(Date.now() - STALE_AFTER_MS))) {
    if (await processing.exists({ documentId: run.documentId, run: run.run })) continue;
    await processing.start(run);
    started++;
  }
  if (started) log.info({ started }, "reconciled unfinished documents");
  const admitted = await processing.admitNow();
  return started + admitted;
}

export function startReconcileLoop(
  db: Database,
  processing: DocumentProcessing,
  log: Logger,
  everyMs = 60_000,
  admitEveryMs = 2_000,
): () => void {
  const timer = setInterval(() => {
    reconcileUnfinished(db, processing, log).catch((error) =>
      log.warn({ err: error }, "reconcile pass failed; will try again"),
    );
  }, everyMs);
  timer.unref();
  // Another process's adds, or runs finished by another worker, free slots this process hears nothing of.
  const admitTimer = setInterval(() => processing.submit(), admitEveryMs);
  admitTimer.unref();
  return () => {
    clearInterval(timer);
    clearInterval(admitTimer);
  };
}
