import type { Logger } from "../config/logger.ts";
import type { DocumentProcessing } from "../runtime/processing-client.ts";
import type { Database } from "../store/db.ts";
import { documentsAwaitingWorkflow, staleUnfinishedDocuments } from "../store/documents.ts";

/** Unfinished documents untouched this long get their workflow looked up in Temporal. */
const STALE_AFTER_MS = 10 * 60_000;

/**
 * A document is written before its workflow starts; if the API dies in between, the document would
 * wait forever. Starts are recorded once Temporal confirms them, so the reconciler restarts exactly
 * the documents whose start was lost (the workflow id is per run, so a start is never doubled). A
 * slower second pass asks Temporal about documents untouched for a long time, in case its history
 * was lost (a wiped dev-server state file).
 */
export async function reconcileUnfinished(
  db: Database,
  processing: DocumentProcessing,
  log: Logger,
  olderThanMs = 0,
) {
  let started = 0;
  for (const doc of await documentsAwaitingWorkflow(db, new Date(Date.now() - olderThanMs))) {
    await processing.start({ documentId: doc.id, run: doc.processingRun });
    started++;
  }
  for (const doc of await staleUnfinishedDocuments(db, new Date(Date.now() - STALE_AFTER_MS))) {
    const ref = { documentId: doc.id, run: doc.processingRun };
    if (await processing.exists(ref)) continue;
    await processing.start(ref);
    started++;
  }
  if (started) log.info({ started }, "reconciled unfinished documents");
  return started;
}

export function startReconcileLoop(
  db: Database,
  processing: DocumentProcessing,
  log: Logger,
  everyMs = 60_000,
): () => void {
  const timer = setInterval(() => {
    reconcileUnfinished(db, processing, log, everyMs).catch((error) =>
      log.warn({ err: error }, "reconcile pass failed; will try again"),
    );
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
