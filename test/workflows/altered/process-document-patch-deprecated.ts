/**
 * A deliberately wrong change to processDocument, for the replay test to catch: the compact pipeline's patch is
 * deprecated (`deprecatePatch`, the second step of Temporal's patching procedure) and the stage-per-activity
 * pipeline removed, as if no run from before the compact pipeline were still in flight. A run started by the
 * compact pipeline replays unchanged; a run started before it must fail with a determinism violation.
 *
 * Only the short-text path is kept (a text prepared and stored by the one local activity): that is the history
 * the test replays, and the rest of the workflow would not change what the test shows.
 */
import { ApplicationFailure, deprecatePatch, proxyLocalActivities } from "@temporalio/workflow";
import type { DocumentActivities } from "../../../activities/document-processing.ts";
import type { ProcessingRef } from "../../../contracts/workflows.ts";

const localPreparation = proxyLocalActivities<DocumentActivities>({ startToCloseTimeout: "10 minutes" });

export async function processDocument(ref: ProcessingRef): Promise<"done"> {
  deprecatePatch("compact-pipeline");
  const prepared = await localPreparation.prepareDocument(ref);
  if (prepared.stage !== "done") {
    throw ApplicationFailure.nonRetryable(
      `this altered workflow covers short texts only, not stage ${prepared.stage}`,
    );
  }
  return "done";
}
