// A BERT-style cross-encoder (query and passage read together, one relevance logit out) run with
// onnxruntime-node in piscina worker threads, so reranking never stalls the event loop.

import { availableParallelism } from "node:os";
import { Piscina } from "piscina";
import { threadExecArgv, workerFileBeside } from "../threads.ts";
import type { CrossEncoderTask, CrossEncoderWorkerData } from "./cross-encoder.worker.ts";
import { type CrossEncoderSpec, checkCrossEncoderFiles, crossEncoderDir } from "./files.ts";
import type { Reranker } from "./types.ts";

export interface CrossEncoderOptions {
  /** Worker threads, each with its own copy of the model. Default 1. */
  threads?: number;
  /** onnxruntime's native threads per worker. Default: the machine's cores divided among the workers. */
  intraOpThreads?: number;
  /** Most pairs per inference call (padded to the longest of them). Default 4. */
  batchSize?: number;
  /** Directory with the model files. Default <cacheDir>/models/<spec.id>. */
  modelDir?: string;
}

export const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

export class CrossEncoderReranker implements Reranker {
  readonly model: string;
  private readonly pool: Piscina<CrossEncoderTask, Float32Array>;
  private readonly threads: number;
  private readonly batchSize: number;
  private closed = false;

  /** Throws when the model files are missing or not the pinned ones: use resolveReranker() to choose. */
  constructor(spec: CrossEncoderSpec, options: CrossEncoderOptions = {}) {
    const threads = options.threads ?? 1;
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError("threads must be a positive integer");
    const intraOpThreads =
      options.intraOpThreads ?? Math.max(1, Math.floor(availableParallelism() / threads));
    if (!Number.isInteger(intraOpThreads) || intraOpThreads < 1)
      throw new RangeError("intraOpThreads must be a positive integer");
    this.batchSize = options.batchSize ?? 4;
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1)
      throw new RangeError("batchSize must be a positive integer");
    const modelDir = options.modelDir ?? crossEncoderDir(spec);
    const check = checkCrossEncoderFiles(spec, modelDir);
    if (!check.ok) throw new Error(`reranker ${spec.id} is not available: ${check.reason}`);
    this.model = spec.id;
    this.threads = threads;
    const filename = workerFileBeside(import.meta.url);
    const workerData: CrossEncoderWorkerData = {
      modelDir,
      modelFile: spec.modelFile,
      tokenizerFile: spec.tokenizerFile,
      intraOpThreads,
      maxTokens: spec.maxTokens,
    };
    this.pool = new Piscina({
      filename,
      workerData,
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Number.POSITIVE_INFINITY,
      execArgv: threadExecArgv(filename),
    });
    this.pool.on("error", (error) => console.error("reranker thread failed:", error));
  }

  /** Worker threads currently alive; 0 after close(). */
  get threadCount(): number {
    return this.pool.threads.length;
  }

  async score(query: string, passages: string[]): Promise<number[]> {
    if (this.closed) throw new Error("the reranker is closed");
    if (typeof query !== "string" || query.trim() === "")
      throw new RangeError("cannot rerank for an empty query");
    const bad = passages.findIndex((p) => typeof p !== "string");
    if (bad !== -1) throw new TypeError(`passage ${bad} is not a string`);
    if (passages.length === 0) return [];
    const perTask = Math.ceil(passages.length / this.threads);
    const tasks: Promise<Float32Array>[] = [];
    for (let i = 0; i < passages.length; i += perTask)
      tasks.push(
        this.pool.run({ query, passages: passages.slice(i, i + perTask), batchSize: this.batchSize }),
      );
    const logits = (await Promise.all(tasks)).flatMap((chunk) => Array.from(chunk));
    if (logits.length !== passages.length)
      throw new Error(`the model returned ${logits.length} scores for ${passages.length} passages`);
    return logits.map(sigmoid);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.destroy();
  }
}
