// BAAI/bge-small-en-v1.5 (384-d, English) as ONNX, run with onnxruntime-node in piscina worker threads so
// tokenisation and inference never stall HTTP handling or Temporal activity heartbeats. The model files are
// installed by scripts/setup.mjs into <cacheDir>/models/bge-small-en-v1.5/ (see docs/models.md).

import { availableParallelism } from "node:os";
import { join } from "node:path";
import { workerFileBeside } from "../threads.ts";
import type { BgeTask, BgeWorkerData } from "./bge-small.worker.ts";
import {
  bgeSmallInt8BlockModelDir,
  bgeSmallInt8ModelDir,
  bgeSmallInt8SmoothModelDir,
  bgeSmallModelDir,
  checkBgeSmallFiles,
  checkBgeSmallInt8BlockFiles,
  checkBgeSmallInt8Files,
  checkBgeSmallInt8SmoothFiles,
  type FilesCheck,
} from "./bge-small-files.ts";
import { piscinaBackend, ScheduledThreads } from "./scheduler.ts";
import type { Embedder, EmbeddingPurpose, EmbedOptions } from "./types.ts";

export const BGE_SMALL_MODEL = "bge-small-en-v1.5";
export const BGE_SMALL_DIMENSION = 384;
/** BGE v1.5's instruction for retrieval queries (passages are embedded as they are). */
export const BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: ";
/** Longer inputs lose their tail: BERT's position table has 512 entries. */
export const BGE_MAX_TOKENS = 512;

/** The weights that embed search queries. */
export type QueryPrecision = "fp32" | "int8" | "int8-block" | "int8-smooth";

/**
 * The weights that embed documents and memories: only batch-invariant ones, since a document's chunks are embedded
 * in batches with other documents' and must get the vectors they would get alone.
 */
export type DocumentPrecision = "fp32" | "int8-block";

/** The weights other than the fp32 model's: where each lives and how it treats a batch. */
const QUANTISED_WEIGHTS: Record<
  Exclude<QueryPrecision, "fp32">,
  { defaultDir: () => string; check: (dir: string) => FilesCheck; batchInvariant: boolean }
> = {
  // The Xenova export quantises activations over the whole input tensor (DynamicQuantizeLinear): a query batched
  // with others would get a vector that depends on them (cosine ~0.997 to its own).
  int8: { defaultDir: bgeSmallInt8ModelDir, check: checkBgeSmallInt8Files, batchInvariant: false },
  // MatMulNBits quantises each row of activations on its own: the same vector alone or in a batch
  // (test/pipeline/embedder-bge.test.ts).
  "int8-block": {
    defaultDir: bgeSmallInt8BlockModelDir,
    check: checkBgeSmallInt8BlockFiles,
    batchInvariant: true,
  },
  // Dynamic per-tensor activations like the Xenova export (so one query per call), after the activations' outlier
  // channels were moved into the weights: within cosine 0.997 of fp32 instead of 0.990, at the same speed.
  "int8-smooth": {
    defaultDir: bgeSmallInt8SmoothModelDir,
    check: checkBgeSmallInt8SmoothFiles,
    batchInvariant: false,
  },
};

export interface BgeSmallOptions {
  /** Worker threads for all work, each with its own copy of the model (~250 MB). Default 1. */
  threads?: number;
  /** onnxruntime's native threads per worker. Default: the machine's cores divided among the workers. */
  intraOpThreads?: number;
  /**
   * Extra threads (own model copy each, one onnxruntime thread) that serve only the query lane, so a search
   * never waits behind a document batch in flight. Default 1; 0 = none (queries then take the top lane of the
   * shared threads).
   */
  queryThreads?: number;
  /**
   * onnxruntime's native threads for each query thread's model. Default two (one on a single core): a query's
   * operators are small, yet two threads embedded one in two thirds of the time for the same CPU on 2 cores, and
   * the query thread is what caps concurrent searches (docs/decisions/README.md#0004-query-thread). With more than one, the query
   * threads also hold a one-thread session of the same weights for queries that had to wait (under load the
   * second thread's CPU is taken from the API and the store): measured 50 MiB more resident memory with
   * int8-block queries, 180 MiB with fp32 ones.
   */
  queryIntraOpThreads?: number;
  /**
   * OS niceness (0–19) of the shared threads and their onnxruntime threads, so the API, the store and the query
   * threads (left at normal priority) get the cores first when both want them. Default 0 (unchanged).
   */
  niceness?: number;
  /** Most texts per inference call (padded to the longest of them). Default 4: on 2 cores larger batches were no faster. */
  batchSize?: number;
  /** Most texts per task handed to a thread; texts of many calls are coalesced up to this. Default DEFAULT_TEXTS_PER_TASK. */
  textsPerTask?: number;
  /** Directory with model.onnx and tokenizer.json. Default <cacheDir>/models/bge-small-en-v1.5. */
  modelDir?: string;
  /**
   * Prepend BGE's retrieval instruction (BGE_QUERY_PREFIX) to queries. Default false: the ranking is the same
   * within noise without it, and a shorter query costs the model less
   * (docs/decisions/README.md#0011-queries-without-instruction).
   */
  queryInstruction?: boolean;
  /**
   * The weights that embed search queries (bge-small-files.ts). "int8-block": the fp32 model with int8 weights
   * in blocks of 64, about two thirds of its time per query and the same ranking within noise (what the service
   * takes by default where "int8-smooth" is not chosen). "int8-smooth": int8 weights and activations after the
   * activations' outlier channels were moved into the weights, about a third of the int8-block model's time per
   * query with int8 dot products (VNNI, AMX, Arm's), hybrid nDCG@10 on SciFact 0.003 lower (the default on such
   * CPUs). "int8": the Xenova int8 export, as fast, at a larger cost in ranking. Documents are embedded in fp32
   * either way, so this can be switched without re-embedding anything. With any of them, queries go to the query
   * threads only (when there are any), so every query is embedded by the same weights whatever the load (docs/models.md gives the figures). Default "fp32".
   */
  queryPrecision?: QueryPrecision;
  /** Directory with the query model's model.onnx. Default: that model's directory under <cacheDir>/models. */
  queryModelDir?: string;
  /**
   * The weights that embed documents and memories (EMBEDDING_DOCUMENT_PRECISION). "int8-block": the weights
   * queries take by default, so a query thread holds one model for both; each thread's model takes about half
   * the memory and less time per text (docs/models.md). Default "fp32".
   */
  documentPrecision?: DocumentPrecision;
  /** Directory with the int8-block model.onnx for documents. Default: that model's directory under <cacheDir>/models. */
  documentModelDir?: string;
}

/** The checked model file of quantised weights for one use, or undefined for fp32 (the model directory's own). */
function quantisedWeights(
  use: "query" | "document",
  precision: QueryPrecision,
  dirOverride: string | undefined,
): { file: string; batchInvariant: boolean } | undefined {
  if (precision === "fp32") return undefined;
  const weights = QUANTISED_WEIGHTS[precision];
  if (!weights) throw new RangeError(`unknown ${use} precision "${precision}"`);
  const dir = dirOverride ?? weights.defaultDir();
  const check = weights.check(dir);
  if (!check.ok) throw new Error(`the ${precision} ${use} model is not available: ${check.reason}`);
  return { file: join(dir, "model.onnx"), batchInvariant: weights.batchInvariant };
}

export class BgeSmallEmbedder implements Embedder {
  readonly model = BGE_SMALL_MODEL;
  readonly dimension = BGE_SMALL_DIMENSION;
  /** The weights that embed queries (BgeSmallOptions.queryPrecision). */
  readonly queryPrecision: QueryPrecision;
  /** The weights that embed documents and memories (BgeSmallOptions.documentPrecision). */
  readonly documentPrecision: DocumentPrecision;
  private readonly threads: ScheduledThreads;
  /** Queries the query threads embedded alone, and waiting (on the busy session when there is one). */
  private readonly queryRunCounts = new Int32Array(new SharedArrayBuffer(8));

  /** Throws when the model files are missing or not the pinned ones: use resolveDefaultEmbedder() to choose. */
  constructor(options: BgeSmallOptions = {}) {
    const threads = options.threads ?? 1;
    const intraOpThreads =
      options.intraOpThreads ?? Math.max(1, Math.floor(availableParallelism() / Math.max(1, threads)));
    if (!Number.isInteger(intraOpThreads) || intraOpThreads < 1)
      throw new RangeError("intraOpThreads must be a positive integer");
    const niceness = options.niceness ?? 0;
    if (!Number.isInteger(niceness) || niceness < 0 || niceness > 19)
      throw new RangeError("niceness must be an integer from 0 to 19");
    const batchSize = options.batchSize ?? 4;
    if (!Number.isInteger(batchSize) || batchSize < 1)
      throw new RangeError("batchSize must be a positive integer");
    const modelDir = options.modelDir ?? bgeSmallModelDir();
    const check = checkBgeSmallFiles(modelDir);
    if (!check.ok) throw new Error(`bge-small-en-v1.5 is not available: ${check.reason}`);
    const filename = workerFileBeside(import.meta.url);
    const queryThreads = options.queryThreads ?? 1;
    const queryIntraOpThreads = options.queryIntraOpThreads ?? Math.min(2, availableParallelism());
    if (!Number.isInteger(queryIntraOpThreads) || queryIntraOpThreads < 1)
      throw new RangeError("queryIntraOpThreads must be a positive integer");
    const queryPrefix = options.queryInstruction ? BGE_QUERY_PREFIX : "";
    const queryPrecision = options.queryPrecision ?? "fp32";
    const query = quantisedWeights("query", queryPrecision, options.queryModelDir);
    const queryModelFile = query?.file;
    // Queries are batched like documents unless their model mixes a batch's texts.
    const batchQueries = query?.batchInvariant ?? true;
    this.queryPrecision = queryPrecision;
    const documentPrecision = options.documentPrecision ?? "fp32";
    const document = quantisedWeights("document", documentPrecision, options.documentModelDir);
    // A document's chunks are embedded in batches with other documents' and must get the vectors they get alone.
    if (document && !document.batchInvariant)
      throw new RangeError(`document precision "${documentPrecision}" mixes a batch's texts`);
    const documentModelFile = document?.file ?? join(modelDir, "model.onnx");
    this.documentPrecision = documentPrecision;
    this.threads = new ScheduledThreads({
      threads,
      queryThreads,
      textsPerTask: options.textsPerTask,
      queriesOnQueryThreadsOnly: queryModelFile !== undefined,
      backend: (count, dedicated) =>
        piscinaBackend<BgeTask, Float32Array>({
          filename,
          workerData: {
            modelDir,
            intraOpThreads: dedicated ? queryIntraOpThreads : intraOpThreads,
            niceness: dedicated ? 0 : niceness,
            maxTokens: BGE_MAX_TOKENS,
            dimension: BGE_SMALL_DIMENSION,
            queryModelFile,
            documentModelFile,
            // The query threads load it with the thread, so the first search does not wait for it; the shared
            // threads embed queries only when there are no query threads, and load it then.
            preloadQueryModel: dedicated,
            // A query thread with its own query model seldom embeds documents, so it creates the document model,
            // the larger of the two, only when it has to. (With the same weights for both, the query model is the
            // document model: one session.)
            deferDocumentModel: dedicated && queryModelFile !== undefined,
            // A lone query is faster on two onnxruntime threads, but queries that wait run on one, leaving the
            // other core to the API and the store (docs/decisions/README.md#0004-query-thread).
            busyIntraOpThreads: dedicated && queryIntraOpThreads > 1 ? 1 : undefined,
            queryRuns: dedicated ? this.queryRunCounts : undefined,
          } satisfies BgeWorkerData,
          threads: count,
          // The shared threads get their next bulk task queued ahead: measured during a 2,000-document import,
          // 1.5 % of the model's time went to waiting for the main thread to hand it the next task (the A/B
          // after the change, 7.04 → 7.06 documents/s, is within run-to-run noise). Only with query threads,
          // else a query would wait behind the queued task too. The query threads also take a second task, but
          // the scheduler queues only queries ahead on them (EmbeddingScheduler), in pairs.
          tasksPerThread: dedicated || queryThreads > 0 ? 2 : 1,
          task: (texts, purpose) => ({
            texts: purpose === "query" && queryPrefix ? texts.map((t) => queryPrefix + t) : texts,
            // A query model that mixes a batch's texts (QUANTISED_WEIGHTS) embeds one query per call: alone, the same
            // query always gets the same vector; batching saved little on queries anyway (short texts).
            batchSize: purpose === "query" && !batchQueries ? 1 : batchSize,
            query: purpose === "query",
          }),
          vectors: (flat) => {
            const vectors: Float32Array[] = [];
            for (let offset = 0; offset < flat.length; offset += BGE_SMALL_DIMENSION)
              vectors.push(flat.subarray(offset, offset + BGE_SMALL_DIMENSION));
            return vectors;
          },
        }),
    });
  }

  /** Shared worker threads currently alive (not counting the query threads); 0 after close(). */
  get threadCount(): number {
    return this.threads.threadCount;
  }

  /** Queries the query threads embedded: `alone` on their full session, `waiting` ones on the busy session. */
  get queryRuns(): { alone: number; waiting: number } {
    return { alone: Atomics.load(this.queryRunCounts, 0), waiting: Atomics.load(this.queryRunCounts, 1) };
  }

  /** Query-lane threads currently alive; 0 when configured off and after close(). */
  get queryThreadCount(): number {
    return this.threads.queryThreadCount;
  }

  async embed(
    texts: string[],
    purpose: EmbeddingPurpose = "document",
    options: EmbedOptions = {},
  ): Promise<number[][]> {
    if (purpose !== "document" && purpose !== "query") throw new RangeError(`unknown purpose "${purpose}"`);
    const empty = texts.findIndex((t) => typeof t !== "string" || t.trim() === "");
    if (empty !== -1) throw new RangeError(`cannot embed an empty text (index ${empty})`);
    return this.threads.submit(texts, purpose, options.priority);
  }

  close(): Promise<void> {
    return this.threads.close();
  }
}
