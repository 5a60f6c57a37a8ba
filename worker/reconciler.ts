import type { Logger } from "../config/logger.ts";
import type { DocumentProcessing } from "../runtime/processing-client.ts";
import type { Database } from "../store/db.ts";
import { unfinishedDocuments } from "../store/documents.ts";

/**
 * A document is written before its workflow starts; if the API dies in between, the document would
 * wait forever. The reconciler starts the workflow of every unfinished document (idempotently:
 * the workflow id is per run, so a running or finished run is not started twice).
 */
export async function reconcileUnfinished(
  db: Database,
  processing: DocumentProcessing,
  log: Logger,
  olderThanMs = 0,
) {
  const cutoff = Date.now() - olderThanMs;
  let started = 0;
  for (const doc of await unfinishedDocuments(db)) {
    if (doc.updatedAt.getTime() > cutoff) continue;
    await processing.start({ documentId: doc.id, run: doc.processingRun });
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
