// BAAI/bge-small-en-v1.5 (384-d, English) as ONNX, run with onnxruntime-node in piscina worker threads so
// tokenisation and inference never stall HTTP handling or Temporal activity heartbeats. The model files are
// installed by scripts/setup.mjs into <cacheDir>/models/bge-small-en-v1.5/ (see docs/models.md).

import { availableParallelism } from "node:os";
import { Piscina } from "piscina";
import { threadExecArgv, workerFileBeside } from "../threads.ts";
import type { BgeTask, BgeWorkerData } from "./bge-small.worker.ts";
import { bgeSmallModelDir, checkBgeSmallFiles } from "./bge-small-files.ts";
import type { Embedder, EmbeddingPurpose } from "./types.ts";

export const BGE_SMALL_MODEL = "bge-small-en-v1.5";
export const BGE_SMALL_DIMENSION = 384;
/** BGE v1.5's instruction for retrieval queries (passages are embedded as they are). */
export const BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: ";
/** Longer inputs lose their tail: BERT's position table has 512 entries. */
export const BGE_MAX_TOKENS = 512;

export interface BgeSmallOptions {
  /** Worker threads, each with its own copy of the model (~250 MB). Default 1. */
  threads?: number;
  /** onnxruntime's native threads per worker. Default: the machine's cores divided among the workers. */
  intraOpThreads?: number;
  /** Most texts per inference call (padded to the longest of them). Default 4: on 2 cores larger batches were no faster. */
  batchSize?: number;
  /** Most texts per task handed to a worker. Default 32; a call is also split evenly across workers. */
  textsPerTask?: number;
  /** Directory with model.onnx and tokenizer.json. Default <cacheDir>/models/bge-small-en-v1.5. */
  modelDir?: string;
}

export class BgeSmallEmbedder implements Embedder {
  readonly model = BGE_SMALL_MODEL;
  readonly dimension = BGE_SMALL_DIMENSION;
  private readonly pool: Piscina<BgeTask, Float32Array>;
  private readonly threads: number;
  private readonly batchSize: number;
  private readonly textsPerTask: number;
  private closed = false;

  /** Throws when the model files are missing or not the pinned ones: use resolveDefaultEmbedder() to choose. */
  constructor(options: BgeSmallOptions = {}) {
    const threads = options.threads ?? 1;
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError("threads must be a positive integer");
    const intraOpThreads =
      options.intraOpThreads ?? Math.max(1, Math.floor(availableParallelism() / threads));
    if (!Number.isInteger(intraOpThreads) || intraOpThreads < 1)
      throw new RangeError("intraOpThreads must be a positive integer");
    this.batchSize = options.batchSize ?? 4;
    this.textsPerTask = options.textsPerTask ?? 32;
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1)
      throw new RangeError("batchSize must be a positive integer");
    const modelDir = options.modelDir ?? bgeSmallModelDir();
    const check = checkBgeSmallFiles(modelDir);
    if (!check.ok) throw new Error(`bge-small-en-v1.5 is not available: ${check.reason}`);
    this.threads = threads;
    const filename = workerFileBeside(import.meta.url);
    const workerData: BgeWorkerData = {
      modelDir,
      intraOpThreads,
      maxTokens: BGE_MAX_TOKENS,
      dimension: BGE_SMALL_DIMENSION,
    };
    this.pool = new Piscina({
      filename,
      workerData,
      minThreads: threads, // started now, so the model loads before the first request
      maxThreads: threads,
      idleTimeout: Number.POSITIVE_INFINITY,
      execArgv: threadExecArgv(filename),
    });
    this.pool.on("error", (error) => console.error("embedding thread failed:", error));
  }

  /** Worker threads currently alive; 0 after close(). */
  get threadCount(): number {
    return this.pool.threads.length;
  }

  async embed(texts: string[], purpose: EmbeddingPurpose = "document"): Promise<number[][]> {
    if (this.closed) throw new Error("the embedder is closed");
    if (purpose !== "document" && purpose !== "query") throw new RangeError(`unknown purpose "${purpose}"`);
    const empty = texts.findIndex((t) => typeof t !== "string" || t.trim() === "");
    if (empty !== -1) throw new RangeError(`cannot embed an empty text (index ${empty})`);
    if (texts.length === 0) return [];
    const inputs = purpose === "query" ? texts.map((t) => BGE_QUERY_PREFIX + t) : texts;
    const perTask = Math.max(1, Math.min(this.textsPerTask, Math.ceil(inputs.length / this.threads)));
    const tasks: Promise<Float32Array>[] = [];
    for (let i = 0; i < inputs.length; i += perTask)
      tasks.push(this.pool.run({ texts: inputs.slice(i, i + perTask), batchSize: this.batchSize }));
    const results = await Promise.all(tasks);
    const vectors: number[][] = [];
    for (const flat of results) {
      for (let offset = 0; offset < flat.length; offset += BGE_SMALL_DIMENSION)
        vectors.push(Array.from(flat.subarray(offset, offset + BGE_SMALL_DIMENSION)));
    }
    if (vectors.length !== texts.length)
      throw new Error(`the model returned ${vectors.length} vectors for ${texts.length} texts`);
    return vectors;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.destroy();
  }
}
