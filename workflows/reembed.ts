import { continueAsNew, log, proxyActivities, workflowInfo } from "@temporalio/workflow";
// Type-only: the workflow bundle never contains activity code.
import type { ReembedActivities } from "../activities/reembed.ts";
import type { VectorTable } from "../store/reembed.ts";

const { countStaleVectors, finishReembed } = proxyActivities<ReembedActivities>({
  startToCloseTimeout: "1 minute",
  retry: { initialInterval: "1s", maximumInterval: "30s", maximumAttempts: 10 },
});

/** Embedding is CPU-bound: a page of 256 rows takes a while on 2 cores, so heartbeats guard it. */
const { reembedPage } = proxyActivities<ReembedActivities>({
  startToCloseTimeout: "30 minutes",
  heartbeatTimeout: "2 minutes",
  retry: {
    initialInterval: "2s",
    backoffCoefficient: 2,
    maximumInterval: "1 minute",
    nonRetryableErrorTypes: ["EmbeddingModelMismatch"],
  },
});

export interface ReembedState {
  model: string;
  table: VectorTable;
  afterId: string;
  migrated: number;
}

const TABLES: VectorTable[] = ["chunks", "memories"];
const PAGE = 256;
/** Pages per run before continuing as new, which keeps the event history short. */
const PAGES_PER_RUN = 100;

/**
 * Moves every stored vector to the configured embedding model, table by table, in id order. Search
 * compares a query only with vectors of its own model, so rows not yet migrated are found by keyword
 * alone until their turn comes; two models' vectors are never mixed in one comparison.
 */
export async function reembedVectors(state: ReembedState): Promise<{ migrated: number }> {
  let { table, afterId, migrated } = state;
  for (let pages = 0; ; pages++) {
    if (pages >= PAGES_PER_RUN || workflowInfo().continueAsNewSuggested) {
      return continueAsNew<typeof reembedVectors>({ model: state.model, table, afterId, migrated });
    }
    const page = await reembedPage({ table, model: state.model, afterId, limit: PAGE });
    migrated += page.migrated;
    afterId = page.lastId;
    if (page.migrated < PAGE) {
      const next = TABLES[TABLES.indexOf(table) + 1];
      if (!next) break;
      table = next;
      afterId = "";
    }
  }
  // Rows written by an older worker while this ran are caught by one more pass.
  const left = await countStaleVectors(state.model);
  if (left.chunks + left.memories > 0) {
    return continueAsNew<typeof reembedVectors>({
      model: state.model,
      table: "chunks",
      afterId: "",
      migrated,
    });
  }
  await finishReembed(state.model);
  log.info("re-embedding finished", { model: state.model, migrated });
  return { migrated };
}
