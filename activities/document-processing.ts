import { createHash } from "node:crypto";
import { ApplicationFailure, Context } from "@temporalio/activity";
import type { Logger } from "../config/logger.ts";
import type { Embedder } from "../pipeline/embedder/types.ts";
import type { Database } from "../store/db.ts";
import {
  chunksWithoutEmbedding,
  loadRun,
  markDone,
  markFailed,
  replaceChunks,
  SupersededRunError,
  saveEmbeddings,
  saveExtraction,
  setStatus,
} from "../store/processing.ts";
import { EXTRACTION_FAILED, SUPERSEDED } from "../workflows/failure-types.ts";
import type { CpuPool } from "./cpu-pool.ts";
import { extractFromSource, UnprocessableContentError } from "./extract.ts";

export interface ProcessingRef {
  documentId: string;
  run: number;
}

export interface DocumentActivityDeps {
  db: Database;
  embedder: Embedder;
  cpu: CpuPool;
  chunking: { maxChars: number; overlapSentences: number };
  fetching: { allowPrivateNetwork: boolean; timeoutMs: number; maxBytes: number };
  log: Logger;
}

const EMBED_BATCH = 16;

/** Activities of the processDocument workflow; side effects only, dependencies injected. */
export function createDocumentActivities(deps: DocumentActivityDeps) {
  const { db } = deps;
  return {
    async extractDocument(ref: ProcessingRef): Promise<{ chars: number }> {
      return translateErrors(async () => {
        await setStatus(db, ref, "extracting");
        const doc = await loadRun(db, ref);
        const extracted = await extractFromSource(doc, deps, () => Context.current().heartbeat());
        if (!extracted.content.trim())
          throw new UnprocessableContentError("no text could be extracted from the content");
        await saveExtraction(db, ref, {
          ...extracted,
          contentHash: createHash("sha256").update(extracted.content).digest("hex"),
        });
        return { chars: extracted.content.length };
      });
    },

    async chunkDocument(ref: ProcessingRef): Promise<{ chunks: number }> {
      return translateErrors(async () => {
        await setStatus(db, ref, "chunking");
        const doc = await loadRun(db, ref);
        const pieces = await deps.cpu.chunk(doc.content ?? "", deps.chunking);
        const count = await replaceChunks(db, ref, pieces);
        return { chunks: count };
      });
    },

    /** Resumable: only chunks still without a vector are embedded, so a retry continues where the last attempt stopped. */
    async embedDocument(ref: ProcessingRef): Promise<{ embedded: number }> {
      return translateErrors(async () => {
        await setStatus(db, ref, "embedding");
        const ctx = Context.current();
        let embedded = 0;
        for (;;) {
          if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
          const batch = await chunksWithoutEmbedding(db, ref.documentId, EMBED_BATCH);
          if (!batch.length) break;
          const vectors = await deps.embedder.embed(batch.map((c) => c.content));
          await saveEmbeddings(
            db,
            ref,
            { name: deps.embedder.model, dimension: deps.embedder.dimension },
            batch.map((c, i) => ({ id: c.id, embedding: vectors[i] as number[] })),
          );
          embedded += batch.length;
          ctx.heartbeat({ embedded });
        }
        return { embedded };
      });
    },

    async indexDocument(ref: ProcessingRef): Promise<void> {
      return translateErrors(() => markDone(db, ref, deps.embedder.model));
    },

    async failDocument(input: ProcessingRef & { reason: string }): Promise<void> {
      return translateErrors(() => markFailed(db, input, input.reason));
    },
  };
}

export type DocumentActivities = ReturnType<typeof createDocumentActivities>;

/** Maps domain errors to Temporal failures: bad content and superseded runs must not be retried. */
async function translateErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof SupersededRunError) {
      throw ApplicationFailure.create({ type: SUPERSEDED, message: error.message, nonRetryable: true });
    }
    if (error instanceof UnprocessableContentError) {
      throw ApplicationFailure.create({
        type: EXTRACTION_FAILED,
        message: error.message,
        nonRetryable: true,
      });
    }
    throw error;
  }
}
