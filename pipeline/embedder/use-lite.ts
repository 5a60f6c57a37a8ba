// Universal Sentence Encoder (lite, 512-d) shipped inside npm, so it works offline. Runs in worker
// threads via piscina so embedding never stalls HTTP handling or Temporal activity heartbeats; calls are
// ordered and coalesced by the scheduler in front of the threads (scheduler.ts).

import { workerFileBeside } from "../threads.ts";
import { piscinaBackend, ScheduledThreads } from "./scheduler.ts";
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
  private readonly threads: ScheduledThreads;

  constructor(options: UseLiteOptions = {}) {
    const filename = workerFileBeside(import.meta.url);
    this.threads = new ScheduledThreads({
      ...options,
      // The model has no query/document asymmetry: the purpose only keeps calls apart in the scheduler.
      backend: (count) =>
        piscinaBackend<string[], Float32Array[]>({
          filename,
          threads: count,
          task: (texts) => texts,
          vectors: (vectors) => vectors,
        }),
    });
  }

  /** Shared worker threads currently alive (not counting the query threads); 0 after close(). */
  get threadCount(): number {
    return this.threads.threadCount;
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
    // The model's tokenizer yields no tokens for "" and TensorFlow then fails with an opaque shape
    // error from inside the thread; say what is wrong instead.
    const empty = texts.indexOf("");
    if (empty !== -1) throw new RangeError(`cannot embed an empty text (index ${empty})`);
    return this.threads.submit(texts, purpose, options.priority);
  }

  close(): Promise<void> {
    return this.threads.close();
  }
}
