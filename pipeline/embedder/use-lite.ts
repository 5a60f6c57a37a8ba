// Universal Sentence Encoder (lite, 512-d) shipped inside npm, so it works offline. Runs in worker
// threads via piscina so embedding never stalls HTTP handling or Temporal activity heartbeats; calls are
// ordered and coalesced by the scheduler in front of the threads (scheduler.ts).

import { workerFileBeside } from "../threads.ts";
import {
  DEFAULT_TEXTS_PER_TASK,
  type EmbeddingBackend,
  EmbeddingScheduler,
  piscinaBackend,
} from "./scheduler.ts";
import type { Embedder, EmbeddingPurpose, EmbedOptions } from "./types.ts";

export interface UseLiteOptions {
  /** Worker threads for all work, each holding its own copy of the model (~300 MB). Default 1 (2-core machines). */
  threads?: number;
  /**
   * Extra threads (own model copy each) that serve only the query lane, so a search never waits behind a
   * document batch in flight. Default 1; 0 = none (queries then take the top lane of the shared threads).
   */
  queryThreads?: number;
  /** Most texts per task handed to a thread; texts of many calls are coalesced up to this. */
  textsPerTask?: number;
}

export const USE_LITE_MODEL = "use-lite-512";
export const USE_LITE_DIMENSION = 512;

export class UseLiteEmbedder implements Embedder {
  readonly model = USE_LITE_MODEL;
  readonly dimension = USE_LITE_DIMENSION;
  private readonly shared: EmbeddingBackend;
  private readonly queryLane: EmbeddingBackend | undefined;
  private readonly scheduler: EmbeddingScheduler;
  private closed = false;

  constructor(options: UseLiteOptions = {}) {
    const threads = options.threads ?? 1;
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError("threads must be a positive integer");
    const queryThreads = options.queryThreads ?? 1;
    if (!Number.isInteger(queryThreads) || queryThreads < 0)
      throw new RangeError("queryThreads must be a non-negative integer");
    const textsPerTask = options.textsPerTask ?? DEFAULT_TEXTS_PER_TASK;
    const filename = workerFileBeside(import.meta.url);
    // The model has no query/document asymmetry: the purpose only keeps calls apart in the scheduler.
    const backend = (count: number) =>
      piscinaBackend<string[], Float32Array[]>({
        filename,
        threads: count,
        task: (texts) => texts,
        vectors: (vectors) => vectors,
      });
    this.shared = backend(threads);
    this.queryLane = queryThreads > 0 ? backend(queryThreads) : undefined;
    this.scheduler = new EmbeddingScheduler({
      shared: this.shared,
      queryBackend: this.queryLane,
      textsPerTask,
    });
  }

  /** Shared worker threads currently alive (not counting the query threads); 0 after close(). */
  get threadCount(): number {
    return this.shared.threadCount;
  }

  /** Query-lane threads currently alive; 0 when configured off and after close(). */
  get queryThreadCount(): number {
    return this.queryLane?.threadCount ?? 0;
  }

  async embed(
    texts: string[],
    purpose: EmbeddingPurpose = "document",
    options: EmbedOptions = {},
  ): Promise<number[][]> {
    if (this.closed) throw new Error("the embedder is closed");
    // The model's tokenizer yields no tokens for "" and TensorFlow then fails with an opaque shape
    // error from inside the thread; say what is wrong instead.
    const empty = texts.indexOf("");
    if (empty !== -1) throw new RangeError(`cannot embed an empty text (index ${empty})`);
    return this.scheduler.submit(texts, purpose, options.priority);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.scheduler.close();
  }
}
