import { ApplicationFailure, Context } from "@temporalio/activity";
import type { Logger } from "../config/logger.ts";
import type { Embedder } from "../pipeline/embedder/types.ts";
import type { Database } from "../store/db.ts";
import {
  markDocumentsModel,
  replaceVectors,
  staleVectorCounts,
  staleVectors,
  type VectorTable,
} from "../store/reembed.ts";
import { dropUnusedVectorIndexes } from "../store/search/vector-index.ts";

export interface ReembedDeps {
  db: Database;
  embedder: Embedder;
  log: Logger;
}

export interface ReembedPage {
  table: VectorTable;
  model: string;
  /** Cursor: the last id already migrated ("" to start). */
  afterId: string;
  /** Rows per activity call; the activity heartbeats after each small batch. */
  limit: number;
}

/** Thrown when a worker with another model picks up the migration; it must not write its vectors. */
export const MODEL_MISMATCH = "EmbeddingModelMismatch";

export function createReembedActivities(deps: ReembedDeps) {
  const checkModel = (model: string) => {
    if (deps.embedder.model !== model) {
      throw ApplicationFailure.create({
        type: MODEL_MISMATCH,
        nonRetryable: true,
        message: `this worker embeds with ${deps.embedder.model}, the migration is to ${model}`,
      });
    }
  };
  const space = () => ({ model: deps.embedder.model, dimension: deps.embedder.dimension });

  return {
    async countStaleVectors(model: string): Promise<Record<VectorTable, number>> {
      return staleVectorCounts(deps.db, model);
    },

    /**
     * Re-embeds up to `limit` rows after the cursor, in batches of 16 with a heartbeat (carrying the
     * cursor) after each, so a retried attempt resumes where the last one stopped.
     */
    async reembedPage(page: ReembedPage): Promise<{ migrated: number; lastId: string }> {
      checkModel(page.model);
      const ctx = Context.current();
      const resumed = ctx.info.heartbeatDetails as { lastId: string; migrated: number } | undefined;
      let lastId = resumed?.lastId ?? page.afterId;
      let migrated = resumed?.migrated ?? 0;
      while (migrated < page.limit) {
        const rows = await staleVectors(
          deps.db,
          page.table,
          page.model,
          lastId,
          Math.min(16, page.limit - migrated),
        );
        if (!rows.length) break;
        const vectors = await deps.embedder.embed(
          rows.map((r) => r.content),
          "document",
        );
        await replaceVectors(
          deps.db,
          page.table,
          space(),
          rows.map((r, i) => ({ id: r.id, embedding: vectors[i] as number[] })),
        );
        migrated += rows.length;
        lastId = rows[rows.length - 1]?.id as string;
        ctx.heartbeat({ lastId, migrated });
      }
      return { migrated, lastId };
    },

    /** After every row is migrated: documents name the new model, old per-model indexes go. */
    async finishReembed(model: string): Promise<{ droppedIndexes: string[] }> {
      checkModel(model);
      await markDocumentsModel(deps.db, model);
      const droppedIndexes = await dropUnusedVectorIndexes(deps.db, space());
      deps.log.info({ model, droppedIndexes }, "embedding model migration finished");
      return { droppedIndexes };
    },
  };
}

export type ReembedActivities = ReturnType<typeof createReembedActivities>;
