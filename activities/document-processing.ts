import { createHash } from "node:crypto";
import { ApplicationFailure, Context } from "@temporalio/activity";
import { DrizzleQueryError } from "drizzle-orm";
import { BlobNotFoundError, type BlobStore } from "../blobs/index.ts";
import type { Logger } from "../config/logger.ts";
import type { Embedder } from "../pipeline/embedder/types.ts";
import type { ContentType } from "../pipeline/extract/types.ts";
import { TranscriberUnavailableError } from "../pipeline/transcribe/types.ts";
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
  saveIdentified,
  setStatus,
} from "../store/processing.ts";
import { readSettings } from "../store/settings.ts";
import { EXTRACTION_FAILED, SUPERSEDED } from "../workflows/failure-types.ts";
import type { CpuPool } from "./cpu-pool.ts";
import {
  type ExtractionRunner,
  extractAll,
  identify,
  resolveSource,
  UnprocessableContentError,
} from "./extract.ts";

export interface ProcessingRef {
  documentId: string;
  run: number;
}

export interface DocumentActivityDeps {
  db: Database;
  embedder: Embedder;
  cpu: CpuPool;
  blobs: BlobStore;
  extract: ExtractionRunner;
  chunking: { maxChars: number; overlapSentences: number };
  fetching: { allowPrivateNetwork: boolean; timeoutMs: number; maxBytes: number };
  log: Logger;
}

const EMBED_BATCH = 16;
const HEARTBEAT_EVERY_MS = 10_000;

/** Activities of the processDocument workflow; side effects only, dependencies injected. */
export function createDocumentActivities(deps: DocumentActivityDeps) {
  const { db } = deps;

  /** Shared by the per-type extraction activities: each has its own name, timeout and heartbeat in the workflow. */
  async function extractAs(ref: ProcessingRef, expected: ContentType[]): Promise<{ chars: number }> {
    return translateErrors(async () => {
      const doc = await loadRun(db, ref);
      const type = doc.type as ContentType;
      if (!expected.includes(type))
        throw new Error(`document ${doc.id} is ${type}, not ${expected.join("/")}`);
      const ctx = Context.current();
      // Long extractions (OCR, transcription) heartbeat on a timer so a stuck one is noticed and retried.
      const ticker = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        const source = await resolveSource(doc, deps, false);
        const extracted = await extractAll(type, source, deps.extract, {
          heartbeat: (details) => ctx.heartbeat(details),
          signal: ctx.cancellationSignal,
        });
        await saveExtraction(db, ref, {
          ...extracted,
          contentHash: createHash("sha256").update(extracted.content).digest("hex"),
        });
        return { chars: extracted.content.length };
      } finally {
        clearInterval(ticker);
      }
    });
  }

  return {
    /** Fetches what must be fetched, then decides from the bytes what the content is. */
    async identifyContent(ref: ProcessingRef): Promise<{ type: ContentType }> {
      return translateErrors(async () => {
        await setStatus(db, ref, "extracting");
        const doc = await loadRun(db, ref);
        const source = await resolveSource(doc, deps, true);
        const found = await identify(source);
        await saveIdentified(db, ref, { type: found.type, mimeType: found.mime, stored: source.stored });
        return { type: found.type };
      });
    },

    extractText: (ref: ProcessingRef) => extractAs(ref, ["text", "webpage", "email", "docx", "pptx"]),
    extractPdf: (ref: ProcessingRef) => extractAs(ref, ["pdf"]),
    extractImage: (ref: ProcessingRef) => extractAs(ref, ["image"]),
    extractAudio: (ref: ProcessingRef) => extractAs(ref, ["audio"]),
    extractVideo: (ref: ProcessingRef) => extractAs(ref, ["video"]),

    async chunkDocument(ref: ProcessingRef): Promise<{ chunks: number }> {
      return translateErrors(async () => {
        await setStatus(db, ref, "chunking");
        const doc = await loadRun(db, ref);
        const segments = doc.segments?.length ? doc.segments : [{ text: doc.content ?? "" }];
        // `chunkSize` from PATCH /v3/settings (characters) overrides CHUNK_MAX_CHARS for new processing runs.
        const { values } = await readSettings(db);
        const chunkSize = typeof values.chunkSize === "number" ? values.chunkSize : undefined;
        const pieces = await deps.cpu.chunkSegments(segments, {
          ...deps.chunking,
          maxChars: chunkSize ?? deps.chunking.maxChars,
        });
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
    if (
      error instanceof UnprocessableContentError ||
      error instanceof BlobNotFoundError ||
      error instanceof TranscriberUnavailableError
    ) {
      throw ApplicationFailure.create({
        type: EXTRACTION_FAILED,
        message: error.message,
        nonRetryable: true,
      });
    }
    if (error instanceof DrizzleQueryError) {
      // The driver's message carries the whole query and its parameters (the document's text): keep only the cause.
      throw new Error(`database error: ${(error.cause as Error | undefined)?.message ?? "query failed"}`);
    }
    throw error;
  }
}
