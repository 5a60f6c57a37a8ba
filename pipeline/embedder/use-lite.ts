// Universal Sentence Encoder (lite, 512-d) shipped inside npm, so it works offline. Runs in worker
// threads via piscina so embedding never stalls HTTP handling or Temporal activity heartbeats.

import { Piscina } from "piscina";
import { threadExecArgv, workerFileBeside } from "../threads.ts";
import type { Embedder } from "./types.ts";

export interface UseLiteOptions {
  /** Worker threads, each holding its own copy of the model (~300 MB). Default 1 (2-core machines). */
  threads?: number;
  /** Most texts per task handed to a thread. Default 8; a call is also split evenly across threads. */
  textsPerTask?: number;
}

export const USE_LITE_MODEL = "use-lite-512";
export const USE_LITE_DIMENSION = 512;

export class UseLiteEmbedder implements Embedder {
  readonly model = USE_LITE_MODEL;
  readonly dimension = USE_LITE_DIMENSION;
  private readonly pool: Piscina<string[], Float32Array[]>;
  private readonly textsPerTask: number;
  private readonly threads: number;
  private closed = false;

  constructor(options: UseLiteOptions = {}) {
    const threads = options.threads ?? 1;
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError("threads must be a positive integer");
    this.threads = threads;
    this.textsPerTask = options.textsPerTask ?? 8;
    const filename = workerFileBeside(import.meta.url);
    this.pool = new Piscina({
      filename,
      minThreads: threads, // started now, so the model loads before the first request
      maxThreads: threads,
      idleTimeout: Number.POSITIVE_INFINITY, // a reload costs ~0.6 s per thread; keep them
      execArgv: threadExecArgv(filename),
    });
    // A thread that dies outside a task must not take the process down; piscina replaces it.
    this.pool.on("error", (error) => console.error("embedding thread failed:", error));
  }

  /** Worker threads currently alive; 0 after close(). */
  get threadCount(): number {
    return this.pool.threads.length;
  }

  async embed(texts: string[]): Promise<number[][]> {
    if (this.closed) throw new Error("the embedder is closed");
    // The model's tokenizer yields no tokens for "" and TensorFlow then fails with an opaque shape
    // error from inside the thread; say what is wrong instead.
    const empty = texts.indexOf("");
    if (empty !== -1) throw new RangeError(`cannot embed an empty text (index ${empty})`);
    // Even a small call (one document's 8 chunks) keeps every thread busy.
    const perTask = Math.max(1, Math.min(this.textsPerTask, Math.ceil(texts.length / this.threads)));
    const tasks: Promise<Float32Array[]>[] = [];
    for (let i = 0; i < texts.length; i += perTask) tasks.push(this.pool.run(texts.slice(i, i + perTask)));
    const results = await Promise.all(tasks);
    return results.flat().map((vector) => Array.from(vector));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.destroy();
  }
}
