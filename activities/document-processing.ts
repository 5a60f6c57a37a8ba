import { createHash } from "node:crypto";
import { ApplicationFailure, Context } from "@temporalio/activity";
import { BlobNotFoundError, type BlobStore } from "../blobs/index.ts";
import type { Logger } from "../config/logger.ts";
import { EXTRACTION_FAILED, type ProcessingRef, SUPERSEDED } from "../contracts/workflows.ts";
import type { CpuPool } from "../pipeline/cpu-pool.ts";
import type { Embedder, EmbeddingPriority } from "../pipeline/embedder/types.ts";
import { chunkCapMetadata } from "../pipeline/extract/budget.ts";
import type { ContentType, ScalarMetadata } from "../pipeline/extract/types.ts";
import { type ChatModel, ChatModelError } from "../pipeline/llm/chat.ts";
import { extractMemories } from "../pipeline/llm/extract-memories.ts";
import { shortTextMemory } from "../pipeline/short-text-memory.ts";
import { TranscriberUnavailableError } from "../pipeline/transcribe/types.ts";
import { releaseFiles } from "../services/document-files.ts";
import { readTagSettings } from "../store/container-tag-settings.ts";
import type { Database } from "../store/db.ts";
import { isStoreUnavailable, storeErrorMessage } from "../store/errors.ts";
import { type ExtractedForTag, memoriesNear, saveExtractedMemories } from "../store/memories.ts";
import {
  chunksWithoutEmbedding,
  enterStage,
  loadRun,
  markDone,
  markFailed,
  replaceChunks,
  SupersededRunError,
  saveEmbeddings,
  saveExtraction,
  saveIdentified,
  saveProcessedText,
  setStatus,
} from "../store/processing.ts";
import { readSettings } from "../store/settings.ts";
import { DOCUMENT_PRIORITY } from "../store/vocabulary.ts";
import {
  type Captioner,
  type ExtractionRunner,
  extractAll,
  identify,
  type ResolvedSource,
  resolveSource,
  UnprocessableContentError,
} from "./extract.ts";
import { emitWebhookEvent } from "./webhooks.ts";

export interface DocumentActivityDeps {
  db: Database;
  embedder: Embedder;
  cpu: CpuPool;
  blobs: BlobStore;
  extract: ExtractionRunner;
  chunking: { maxChars: number; overlapSentences: number };
  /** What one document may cost: characters of text kept (attachments included) and chunks made. */
  limits: { maxExtractedChars: number; maxChunks: number };
  fetching: { allowPrivateNetwork: boolean; timeoutMs: number; maxBytes: number };
  log: Logger;
  /** OpenAI-compatible chat model for memory extraction; without one, only short texts become memories. */
  llm?: ChatModel;
  memoryExtraction?: { maxChars: number };
  /** Captions a picture without text (a vision-capable LLM, `LLM_VISION`). */
  caption?: Captioner;
  /** Without an LLM, a text added through the API of at most this many characters is also kept as a memory (0: never). */
  shortTextMemoryMaxChars?: number;
  /** Told when a run ends, so admission hands its slot to the next waiting run soon. */
  admission?: { submit(afterMs?: number): void };
}

/** How long a finished run's slot may wait so that one admission pass fills several (32 in flight by default). */
const ADMISSION_COALESCE_MS = 200;
/** Chunks embedded and saved per step of a resumable embedding (a heartbeat between steps). */
const EMBED_BATCH = 64;
/** Kinds whose text comes out in seconds at most: extracted in the activity that identifies them. */
const TEXT_TYPES: readonly ContentType[] = ["text", "webpage", "email", "docx", "pptx"];
/**
 * Up to this many chunks, a text is chunked, embedded and stored in one activity and one transaction;
 * a longer one stores its chunks first and embeds them resumably, a batch at a time.
 */
const ONE_GO_MAX_CHUNKS = 64;

/** How far prepareDocument took a run; the workflow goes on from there. */
export type PreparedStage = "identified" | "chunked" | "embedded" | "done";
/** Memories of a container shown to the LLM as candidates for updates / extends / derives. */
const KNOWN_MEMORIES = 30;
/** A document shared by many containers is read for the first few only: one LLM call each. */
const MAX_TAGS_FOR_MEMORIES = 5;
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
        const extracted = await extractAll(
          type,
          source,
          deps.extract,
          { heartbeat: (details) => ctx.heartbeat(details), signal: ctx.cancellationSignal },
          { maxChars: deps.limits.maxExtractedChars, caption: deps.caption },
        );
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

  /**
   * Splits text into chunks, by `chunkSize` from PATCH /v3/settings (characters) or CHUNK_MAX_CHARS,
   * stopping at MAX_CHUNKS_PER_DOCUMENT; `fileMetadata` is the document's, with a note when it stopped.
   */
  async function chunkPieces(
    segments: Parameters<CpuPool["chunkSegments"]>[0],
    fileMetadata: ScalarMetadata | null,
  ) {
    const { values } = await readSettings(db);
    const chunkSize = typeof values.chunkSize === "number" ? values.chunkSize : undefined;
    const { pieces, truncated } = await deps.cpu.chunkSegments(segments, {
      ...deps.chunking,
      maxChars: chunkSize ?? deps.chunking.maxChars,
      maxChunks: deps.limits.maxChunks,
    });
    return {
      pieces,
      truncated,
      fileMetadata: truncated ? chunkCapMetadata(fileMetadata ?? {}, deps.limits.maxChunks) : fileMetadata,
    };
  }

  /** A page fetched again replaces the document's earlier copy: that file goes once the new one is saved. */
  async function releaseEarlierFetch(doc: { fileKey: string | null }, source: ResolvedSource) {
    if (source.stored && doc.fileKey && doc.fileKey !== source.stored.key)
      await releaseFiles(deps, [doc.fileKey]);
  }

  /** A run ended: webhooks hear of it, and admission gives its slot to the next waiting run. */
  async function finished(ref: ProcessingRef, event: "document.done" | "document.failed") {
    // Slots freed within this short while are filled by one admission pass.
    deps.admission?.submit(ADMISSION_COALESCE_MS);
    await emitWebhookEvent(deps, { ...ref, event });
  }

  function lane(doc: { priority: number }): EmbeddingPriority {
    return doc.priority === DOCUMENT_PRIORITY.interactive ? "interactive" : "bulk";
  }

  return {
    /**
     * Identifies the content and, for the kinds read in seconds (text, web pages, mail, Word,
     * PowerPoint), goes on: extracts, chunks, embeds and stores a short text in one go, and marks it
     * done when there is no memory extraction to follow. Fewer activities per document means fewer
     * round trips through Temporal, which on a small machine cost as much as the work itself.
     */
    async prepareDocument(ref: ProcessingRef): Promise<{ type: ContentType; stage: PreparedStage }> {
      return translateErrors(async () => {
        const doc = await enterStage(db, ref, "extracting");
        // Done already: a worker died after writing the result and before Temporal recorded it.
        if (doc.status === "done") return { type: (doc.type ?? "text") as ContentType, stage: "done" };
        const source = await resolveSource(doc, deps, true);
        const found = await identify(source);
        const identified = { type: found.type, mimeType: found.mime, stored: source.stored };
        if (!TEXT_TYPES.includes(found.type)) {
          await saveIdentified(db, ref, identified);
          await releaseEarlierFetch(doc, source);
          return { type: found.type, stage: "identified" };
        }
        const ctx = Context.current();
        const extracted = await extractAll(
          found.type,
          source,
          deps.extract,
          {
            // A local activity has no heartbeat (the SDK keeps its workflow task alive instead).
            heartbeat: (details) => (ctx.info.isLocal ? undefined : ctx.heartbeat(details)),
            signal: ctx.cancellationSignal,
          },
          { maxChars: deps.limits.maxExtractedChars },
        );
        const chunkingAt = new Date();
        const segments = extracted.segments?.length ? extracted.segments : [{ text: extracted.content }];
        const { pieces, fileMetadata } = await chunkPieces(segments, extracted.metadata);
        const extraction = {
          ...extracted,
          metadata: fileMetadata ?? extracted.metadata,
          contentHash: createHash("sha256").update(extracted.content).digest("hex"),
        };
        if (pieces.length > ONE_GO_MAX_CHUNKS) {
          await saveIdentified(db, ref, identified);
          await releaseEarlierFetch(doc, source);
          await saveExtraction(db, ref, extraction);
          await setStatus(db, ref, "chunking");
          await replaceChunks(db, ref, pieces);
          return { type: found.type, stage: "chunked" };
        }
        const embeddingAt = new Date();
        const vectors = pieces.length
          ? await deps.embedder.embed(
              pieces.map((p) => p.content),
              "document",
              { priority: lane(doc) },
            )
          : [];
        const finish = !deps.llm;
        // Without an LLM a sentence or two saved by a client is kept as a memory too, word for word.
        const memory =
          finish &&
          found.type === "text" &&
          !doc.url &&
          !doc.connectionId &&
          doc.containerTags.length > 0 &&
          pieces.length === 1
            ? shortTextMemory(extracted.content, deps.shortTextMemoryMaxChars ?? 0)
            : undefined;
        await saveProcessedText(db, ref, {
          identified,
          extracted: extraction,
          pieces: pieces.map((p, i) => ({ ...p, embedding: vectors[i] as number[] })),
          model: { name: deps.embedder.model, dimension: deps.embedder.dimension },
          stages: [
            { status: "chunking", at: chunkingAt },
            { status: "embedding", at: embeddingAt },
            ...(finish ? [{ status: "done" as const, at: new Date() }] : []),
          ],
          ...(memory
            ? {
                memory: {
                  ...memory,
                  containerTags: doc.containerTags,
                  endUserId: doc.endUserId,
                  metadata: doc.metadata,
                },
              }
            : {}),
        });
        await releaseEarlierFetch(doc, source);
        if (finish) await finished(ref, "document.done");
        return { type: found.type, stage: finish ? "done" : "embedded" };
      });
    },

    /**
     * Resumable embedding of stored chunks (only those still without a vector), a batch at a time; when
     * no memory extraction follows, the last batch marks the run done in the same transaction.
     */
    async embedAndFinish(ref: ProcessingRef): Promise<{ embedded: number; done: boolean }> {
      return translateErrors(async () => {
        const doc = await enterStage(db, ref, "embedding");
        const finish = !deps.llm;
        // Done already: a worker died after the last batch was written and before Temporal recorded it.
        if (doc.status === "done") return { embedded: 0, done: finish };
        const ctx = Context.current();
        const model = { name: deps.embedder.model, dimension: deps.embedder.dimension };
        let embedded = 0;
        for (;;) {
          if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
          const batch = await chunksWithoutEmbedding(db, ref.documentId, EMBED_BATCH);
          const last = batch.length < EMBED_BATCH;
          const vectors = batch.length
            ? await deps.embedder.embed(
                batch.map((c) => c.content),
                "document",
                { priority: lane(doc) },
              )
            : [];
          await saveEmbeddings(
            db,
            ref,
            model,
            batch.map((c, i) => ({ id: c.id, embedding: vectors[i] as number[] })),
            { done: last && finish },
          );
          embedded += batch.length;
          ctx.heartbeat({ embedded });
          if (last) break;
        }
        if (finish) await finished(ref, "document.done");
        return { embedded, done: finish };
      });
    },

    /** Fetches what must be fetched, then decides from the bytes what the content is. */
    async identifyContent(ref: ProcessingRef): Promise<{ type: ContentType }> {
      return translateErrors(async () => {
        await setStatus(db, ref, "extracting");
        const doc = await loadRun(db, ref);
        const source = await resolveSource(doc, deps, true);
        const found = await identify(source);
        await saveIdentified(db, ref, { type: found.type, mimeType: found.mime, stored: source.stored });
        await releaseEarlierFetch(doc, source);
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
        const { pieces, truncated, fileMetadata } = await chunkPieces(segments, doc.fileMetadata);
        const count = await replaceChunks(
          db,
          ref,
          pieces,
          truncated ? (fileMetadata ?? undefined) : undefined,
        );
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

    /**
     * With an LLM configured: facts about each of the document's containers, related to what those
     * containers already remember. A malformed answer is retried inside, then recorded as skipped;
     * an unreachable endpoint throws so Temporal retries, and the workflow records the final failure.
     */
    async extractDocumentMemories(ref: ProcessingRef): Promise<MemoryExtractionSummary> {
      const llm = deps.llm;
      if (!llm) return { status: "off", memories: 0 };
      return translateErrors(async () => {
        const doc = await loadRun(db, ref);
        if (doc.memoryExtraction?.run === ref.run)
          return { status: doc.memoryExtraction.status, memories: doc.memoryExtraction.memories };
        const text = (doc.content ?? "").slice(0, deps.memoryExtraction?.maxChars ?? 12_000);
        const space = { model: deps.embedder.model, dimension: deps.embedder.dimension };
        const [probe] = await deps.embedder.embed([`${doc.title ?? ""}\n${text.slice(0, 2000)}`], "query");
        const ctx = Context.current();
        const found: ExtractedForTag[] = [];
        const problems: string[] = [];
        for (const containerTag of doc.containerTags.slice(0, MAX_TAGS_FOR_MEMORIES)) {
          const known = await memoriesNear(db, containerTag, space, probe as number[], KNOWN_MEMORIES);
          const result = await extractMemories(
            llm,
            {
              containerTag,
              // The document's own context first; else the one its tag was given (PATCH /v3/container-tags).
              entityContext: doc.entityContext ?? (await readTagSettings(db, containerTag))?.entityContext,
              title: doc.title,
              content: text,
              known,
            },
            { signal: ctx.cancellationSignal },
          );
          ctx.heartbeat();
          if (!result.ok) {
            problems.push(`${containerTag}: ${result.reason}`);
            continue;
          }
          const vectors = result.memories.length
            ? await deps.embedder.embed(result.memories.map((m) => m.content))
            : [];
          found.push({
            containerTag,
            items: result.memories.map((m, i) => ({
              content: m.content,
              isStatic: m.isStatic,
              relation: m.relation,
              embedding: vectors[i] as number[],
            })),
          });
        }
        const status = found.length || !problems.length ? "done" : "skipped";
        if (problems.length)
          deps.log.warn({ documentId: ref.documentId, problems }, "memory extraction skipped");
        const saved = await saveExtractedMemories(db, ref, space, found, {
          status,
          ...(problems.length ? { reason: problems.join("; ") } : {}),
        });
        return { status, memories: saved.written };
      });
    },

    /** The endpoint kept failing: the document is done all the same, and says why it has no memories. */
    async recordMemoryExtractionFailure(input: ProcessingRef & { reason: string }): Promise<void> {
      return translateErrors(async () => {
        const space = { model: deps.embedder.model, dimension: deps.embedder.dimension };
        await saveExtractedMemories(db, input, space, [], { status: "failed", reason: input.reason });
      });
    },

    async indexDocument(ref: ProcessingRef): Promise<void> {
      await translateErrors(() => markDone(db, ref, deps.embedder.model));
      await finished(ref, "document.done");
    },

    async failDocument(input: ProcessingRef & { reason: string }): Promise<void> {
      await translateErrors(() => markFailed(db, input, input.reason));
      await finished(input, "document.failed");
    },
  };
}

export type DocumentActivities = ReturnType<typeof createDocumentActivities>;

export interface MemoryExtractionSummary {
  status: "off" | "done" | "skipped" | "failed";
  memories: number;
}

/** How long an activity waits out a store outage (PostgreSQL restarting) before giving the attempt up. */
const STORE_OUTAGE_BUDGET_MS = 2 * 60 * 1000;

/**
 * Maps domain errors to Temporal failures: bad content and superseded runs must not be retried. A
 * store outage is waited out here (the work is fenced by its run, so doing it again is safe), so a
 * database restart does not use up the attempts meant for the content's own errors.
 */
async function translateErrors<T>(work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  for (let pause = 500; ; pause = Math.min(pause * 2, 5000)) {
    try {
      return await translateOnce(work);
    } catch (error) {
      if (!(error instanceof StoreOutage) || Date.now() - started > STORE_OUTAGE_BUDGET_MS) {
        throw error instanceof StoreOutage ? error.original : error;
      }
      const ctx = Context.current();
      ctx.heartbeat();
      await ctx.sleep(pause);
    }
  }
}

class StoreOutage extends Error {
  constructor(readonly original: Error) {
    super(original.message);
  }
}

async function translateOnce<T>(work: () => Promise<T>): Promise<T> {
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
    if (error instanceof ChatModelError) {
      // Endpoint down or answering errors: worth a retry, and the message says which.
      throw ApplicationFailure.create({ type: "LlmUnavailable", message: error.message });
    }
    const storeMessage = storeErrorMessage(error);
    if (storeMessage !== undefined) {
      // The driver's message carries the whole query and its parameters (the document's text): keep only the cause.
      const clean = new Error(storeMessage);
      if (isStoreUnavailable(error)) throw new StoreOutage(clean);
      throw clean;
    }
    throw error;
  }
}
