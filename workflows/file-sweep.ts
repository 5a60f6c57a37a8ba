import { proxyActivities } from "@temporalio/workflow";
// Type-only: the workflow bundle never contains activity code.
import type { FileSweepActivities } from "../activities/file-sweep.ts";
import type { SweepResult } from "../services/document-files.ts";

/**
 * Listing a large bucket takes a while: heartbeats per batch of 500 files let a dead worker be noticed
 * within two minutes; a retry starts the listing again (deleting an orphan twice is harmless).
 */
const sweep = proxyActivities<FileSweepActivities>({
  startToCloseTimeout: "2 hours",
  heartbeatTimeout: "2 minutes",
  retry: { initialInterval: "30s", backoffCoefficient: 2, maximumInterval: "10 minutes", maximumAttempts: 5 },
});

/** Started by the file-sweep schedule: deletes stored files no document references, older than `graceMs`. */
export async function fileSweep(input: { graceMs: number }): Promise<SweepResult> {
  return sweep.sweepOrphanFiles(input);
}
