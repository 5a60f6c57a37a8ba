// The queue in front of an embedding model's threads. Every embed() call lands here, in one of three lanes
// (query > interactive > bulk, strict priority, first come first served within a lane); texts of many calls with
// the same purpose are coalesced into tasks of up to `textsPerTask`, and no more tasks are handed to the threads
// than there are threads, so the order in which work runs is decided here and not by piscina's FIFO queue. An
// optional dedicated backend (a small extra thread with its own model) serves the query lane, then interactive
// work in small tasks, so neither a search nor a memory add waits behind a bulk batch already running. Larger
// tasks embed more texts per second (texts sorted by length pad less): 16 texts gave 37.4 chunks/s against 36.0
// for 8 and 27.8 for 4 on 2 cores (bge-small, all submitted at once).

import { Piscina } from "piscina";
import { threadExecArgv } from "../threads.ts";
import {
  defaultPriority,
  EMBEDDING_PRIORITIES,
  type EmbeddingPriority,
  type EmbeddingPurpose,
} from "./types.ts";

/** Runs one task (a list of texts of one purpose) on a pool of threads; what each embedder provides. */
export interface EmbeddingBackend {
  /** Tasks it takes at once; the scheduler never has more than this outstanding on it. */
  readonly concurrency: number;
  /**
   * Tasks it runs side by side (its threads), when fewer than `concurrency`: the rest wait on a thread, queued
   * ahead so the thread starts its next task without a round trip through the main thread. Default `concurrency`.
   */
  readonly parallelism?: number;
  /** Threads currently alive; 0 after close(). */
  readonly threadCount: number;
  /** One vector per text, in order. */
  run(texts: string[], purpose: EmbeddingPurpose): Promise<ArrayLike<number>[]>;
  close(): Promise<void>;
}

export interface EmbeddingSchedulerOptions {
  /** The model's threads: every lane. */
  shared: EmbeddingBackend;
  /** Serves only the query lane (and takes precedence there); the shared threads serve it too when free. */
  queryBackend?: EmbeddingBackend;
  /** Most texts in one task. */
  textsPerTask: number;
  /**
   * Texts of purpose "query" go to queryBackend only, never to the shared threads even when those are free: set
   * when the query threads embed queries with other weights (EMBEDDING_QUERY_PRECISION=int8), so that the same
   * query always gets the same vector whatever the load. No effect without a queryBackend.
   */
  queriesOnQueryThreadsOnly?: boolean;
}

/** Texts per task when configuration names none (EMBEDDING_BATCH_TEXTS): measured, see the comment at the top. */
export const DEFAULT_TEXTS_PER_TASK = 16;

/** The lanes the query threads serve: query and interactive (EMBEDDING_PRIORITIES order). */
const DEDICATED_LANES = 2;

/** Most interactive texts per task on the query threads (a query waits behind at most one such task). */
const INTERACTIVE_TEXTS_ON_QUERY_THREADS = 4;

/**
 * Most queries per task on the query threads. A task's queries are all answered when its last one is embedded, and
 * a bigger batch saves no time: bge-small's int8-block query model took 11.3 ms a SciFact query alone, 10.2 in
 * pairs, 11.5 in fours and 12.4 in eights (one onnxruntime thread). So eight waiting queries go as four pairs, the
 * first answered after two queries' time rather than all eight after eight.
 */
const QUERY_TEXTS_ON_QUERY_THREADS = 2;

export const PURPOSES: readonly EmbeddingPurpose[] = ["document", "query"];

interface Request {
  readonly texts: string[];
  readonly queue: SubQueue;
  /** Arrival order, so the two purposes within a lane are served first come first served. */
  readonly seq: number;
  /** First text not yet handed to a task. */
  next: number;
  /** Texts still without a vector. */
  remaining: number;
  readonly vectors: number[][];
  settled: boolean;
  resolve(vectors: number[][]): void;
  reject(error: unknown): void;
}

/** The calls of one lane and one purpose, oldest first; only these are coalesced into one task. */
class SubQueue {
  private items: Request[] = [];
  private head = 0;
  /** Texts not yet handed to a task. */
  pending = 0;

  constructor(
    readonly priority: EmbeddingPriority,
    readonly purpose: EmbeddingPurpose,
  ) {}

  push(request: Request): void {
    this.items.push(request);
    this.pending += request.texts.length;
  }

  /** The oldest call with texts left to hand out (dropping those done or failed). */
  peek(): Request | undefined {
    while (this.head < this.items.length) {
      const first = this.items[this.head] as Request;
      if (first.next < first.texts.length) return first;
      this.head++;
    }
    if (this.head > 0) {
      this.items = [];
      this.head = 0;
    }
    return undefined;
  }
}

interface Segment {
  request: Request;
  start: number;
  end: number;
}

interface Slots {
  readonly backend: EmbeddingBackend;
  inFlight: number;
}

export class EmbeddingScheduler {
  private readonly textsPerTask: number;
  private readonly shared: Slots;
  private readonly dedicated: Slots | undefined;
  /** The purpose the shared threads never take (EmbeddingSchedulerOptions.queriesOnQueryThreadsOnly). */
  private readonly notShared: EmbeddingPurpose | undefined;
  /** Lanes in priority order, each with one sub-queue per purpose. */
  private readonly lanes: SubQueue[][];
  private readonly live = new Set<Request>();
  private seq = 0;
  private pumpScheduled = false;
  private closed = false;
  private closing: Promise<void> | undefined;
  /** Tasks handed to the threads so far, per backend (for logs and tests). */
  readonly tasksRun = { shared: 0, query: 0 };

  constructor(options: EmbeddingSchedulerOptions) {
    if (!Number.isInteger(options.textsPerTask) || options.textsPerTask < 1)
      throw new RangeError("textsPerTask must be a positive integer");
    this.textsPerTask = options.textsPerTask;
    this.shared = { backend: options.shared, inFlight: 0 };
    this.dedicated = options.queryBackend ? { backend: options.queryBackend, inFlight: 0 } : undefined;
    this.notShared = this.dedicated && options.queriesOnQueryThreadsOnly ? "query" : undefined;
    this.lanes = EMBEDDING_PRIORITIES.map((priority) =>
      PURPOSES.map((purpose) => new SubQueue(priority, purpose)),
    );
  }

  /** Texts waiting for a thread (not counting those in tasks that run now). */
  get queued(): number {
    let n = 0;
    for (const lane of this.lanes) for (const q of lane) n += q.pending;
    return n;
  }

  /** Tasks running now on the shared threads and on the query threads. */
  get outstanding(): { shared: number; query: number } {
    return { shared: this.shared.inFlight, query: this.dedicated?.inFlight ?? 0 };
  }

  /** Queues the texts; resolves with one vector per text, in order. Validation of the texts is the caller's. */
  submit(
    texts: string[],
    purpose: EmbeddingPurpose = "document",
    priority?: EmbeddingPriority,
  ): Promise<number[][]> {
    if (this.closed) return Promise.reject(new Error("the embedder is closed"));
    const purposeIndex = PURPOSES.indexOf(purpose);
    if (purposeIndex === -1) return Promise.reject(new RangeError(`unknown purpose "${purpose}"`));
    const lane = EMBEDDING_PRIORITIES.indexOf(priority ?? defaultPriority(purpose));
    if (lane === -1) return Promise.reject(new RangeError(`unknown priority "${priority}"`));
    if (texts.length === 0) return Promise.resolve([]);
    const queue = (this.lanes[lane] as SubQueue[])[purposeIndex] as SubQueue;
    return new Promise<number[][]>((resolve, reject) => {
      const request: Request = {
        texts,
        queue,
        seq: this.seq++,
        next: 0,
        remaining: texts.length,
        vectors: new Array(texts.length),
        settled: false,
        resolve,
        reject,
      };
      queue.push(request);
      this.live.add(request);
      // Dispatch after the current synchronous run, so calls made together are coalesced into one task.
      if (!this.pumpScheduled) {
        this.pumpScheduled = true;
        queueMicrotask(() => {
          this.pumpScheduled = false;
          this.pump();
        });
      }
    });
  }

  /** Rejects every call not yet answered, then releases the backends' threads. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    const error = new Error("the embedder is closed");
    for (const request of [...this.live]) this.fail(request, error);
    const backends = [this.shared.backend, this.dedicated?.backend].filter((b) => b !== undefined);
    this.closing = Promise.all(backends.map((b) => b.close())).then(() => {});
    return this.closing;
  }

  /** Hands tasks to every free thread, highest lane first. */
  private pump(): void {
    if (this.closed) return;
    const dedicated = this.dedicated;
    if (dedicated) {
      // Queries first, then interactive work (a memory add, a single document) in small tasks, so that a
      // query arriving meanwhile waits for at most one small task, never for a bulk batch.
      while (dedicated.inFlight < dedicated.backend.concurrency) {
        const queue = this.pick(DEDICATED_LANES);
        if (!queue) break;
        // Queued ahead on a busy query thread (a backend taking more tasks than it has threads): only queries, so
        // the next one starts without waiting for a turn of the main thread, and interactive work waits for a free
        // thread (a query then waits behind at most one such task).
        if (this.free(dedicated) === 0 && queue.priority !== "query") break;
        const limit =
          queue.priority === "query"
            ? Math.min(this.textsPerTask, QUERY_TEXTS_ON_QUERY_THREADS)
            : INTERACTIVE_TEXTS_ON_QUERY_THREADS;
        const alsoShared = queue.purpose === this.notShared ? 0 : this.free(this.shared);
        this.dispatch(dedicated, queue, this.free(dedicated) + alsoShared, limit);
      }
    }
    while (this.shared.inFlight < this.shared.backend.concurrency) {
      // With every shared thread busy, a task handed over now waits behind a running one: the lanes the query
      // threads serve wait for those instead, and only bulk work is queued ahead.
      const from = dedicated && this.free(this.shared) === 0 ? DEDICATED_LANES : 0;
      const queue = this.pick(this.lanes.length, from, this.notShared);
      if (!queue) break;
      // Every thread busy: a task formed now waits behind a running one, and bulk texts arriving a document at
      // a time (two chunks each during an import) would make it a small one, which embeds fewer texts per
      // second. Queue one ahead only when it is full; otherwise the first thread to finish takes whatever has
      // gathered by then (pump runs on every completion).
      if (this.free(this.shared) === 0 && queue.priority === "bulk" && queue.pending < this.textsPerTask)
        break;
      const alsoDedicated = dedicated && queue.priority === "query" ? this.free(dedicated) : 0;
      this.dispatch(this.shared, queue, this.free(this.shared) + alsoDedicated);
    }
  }

  /** Threads with nothing to do: the waiting texts are shared out among these. */
  private free(slots: Slots): number {
    const { concurrency, parallelism = concurrency } = slots.backend;
    return Math.max(0, parallelism - slots.inFlight);
  }

  /**
   * The sub-queue to serve next among lanes from..lanes-1: the highest lane with work, oldest call first, leaving
   * out the calls of purpose `skip`.
   */
  private pick(lanes: number, from = 0, skip?: EmbeddingPurpose): SubQueue | undefined {
    for (let l = from; l < lanes; l++) {
      let best: SubQueue | undefined;
      let bestSeq = Number.POSITIVE_INFINITY;
      for (const queue of this.lanes[l] as SubQueue[]) {
        if (queue.purpose === skip) continue;
        const head = queue.peek();
        if (head && head.seq < bestSeq) {
          best = queue;
          bestSeq = head.seq;
        }
      }
      if (best) return best;
    }
    return undefined;
  }

  /**
   * One task from the front of `queue`: up to textsPerTask texts, and when several threads are free, the waiting
   * texts are shared out evenly among them (one 16-text call on two idle threads runs as 8 + 8).
   */
  private dispatch(slots: Slots, queue: SubQueue, freeThreads: number, limit = this.textsPerTask): void {
    const size = Math.max(1, Math.min(limit, Math.ceil(queue.pending / Math.max(1, freeThreads))));
    const segments: Segment[] = [];
    const texts: string[] = [];
    for (let request = queue.peek(); request && texts.length < size; request = queue.peek()) {
      const take = Math.min(size - texts.length, request.texts.length - request.next);
      const start = request.next;
      segments.push({ request, start, end: start + take });
      for (let i = start; i < start + take; i++) texts.push(request.texts[i] as string);
      request.next += take;
      queue.pending -= take;
    }
    slots.inFlight++;
    if (slots === this.shared) this.tasksRun.shared++;
    else this.tasksRun.query++;
    let running: Promise<ArrayLike<number>[]>;
    try {
      running = slots.backend.run(texts, queue.purpose);
    } catch (error) {
      running = Promise.reject(error);
    }
    running
      .then(
        (vectors) => this.deliver(segments, texts.length, vectors),
        (error: unknown) => {
          for (const { request } of segments) this.fail(request, error);
        },
      )
      .finally(() => {
        slots.inFlight--;
        this.pump();
      });
  }

  private deliver(segments: Segment[], count: number, vectors: ArrayLike<number>[]): void {
    if (vectors.length !== count) {
      const error = new Error(`the model returned ${vectors.length} vectors for ${count} texts`);
      for (const { request } of segments) this.fail(request, error);
      return;
    }
    let offset = 0;
    for (const { request, start, end } of segments) {
      if (!request.settled) {
        for (let i = start; i < end; i++)
          request.vectors[i] = Array.from(vectors[offset + i - start] as ArrayLike<number>);
        request.remaining -= end - start;
        if (request.remaining === 0) {
          request.settled = true;
          this.live.delete(request);
          request.resolve(request.vectors);
        }
      }
      offset += end - start;
    }
  }

  /** Rejects one call and drops its texts that no task has taken yet. */
  private fail(request: Request, error: unknown): void {
    if (request.settled) return;
    request.settled = true;
    this.live.delete(request);
    request.queue.pending -= request.texts.length - request.next;
    request.next = request.texts.length;
    request.reject(error);
  }
}

export interface PiscinaBackendOptions<Task, Result> {
  /** The worker module. */
  filename: string;
  workerData?: unknown;
  threads: number;
  /**
   * Tasks handed to each thread at once (default 1). With 2, a thread's next task is already waiting when its
   * current one ends; the worker module must then run its tasks one after another itself (see bge-small.worker.ts).
   */
  tasksPerThread?: number;
  /** What the worker receives for a task of texts. */
  task(texts: string[], purpose: EmbeddingPurpose): Task;
  /** The worker's answer as one vector per text. */
  vectors(result: Result, count: number): ArrayLike<number>[];
}

/** A backend of `threads` piscina worker threads, started (and their model loading) at once, kept until close(). */
export function piscinaBackend<Task, Result>(options: PiscinaBackendOptions<Task, Result>): EmbeddingBackend {
  const { filename, threads, tasksPerThread = 1 } = options;
  if (!Number.isInteger(threads) || threads < 1) throw new RangeError("threads must be a positive integer");
  if (!Number.isInteger(tasksPerThread) || tasksPerThread < 1)
    throw new RangeError("tasksPerThread must be a positive integer");
  const pool = new Piscina<Task, Result>({
    filename,
    workerData: options.workerData,
    minThreads: threads, // started now, so the model loads before the first request
    maxThreads: threads,
    idleTimeout: Number.POSITIVE_INFINITY, // a reload costs a model load per thread; keep them
    concurrentTasksPerWorker: tasksPerThread,
    execArgv: threadExecArgv(filename),
  });
  // A thread that dies outside a task must not take the process down; piscina replaces it.
  pool.on("error", (error) => console.error("embedding thread failed:", error));
  return {
    concurrency: threads * tasksPerThread,
    parallelism: threads,
    get threadCount() {
      return pool.threads.length;
    },
    run: async (texts, purpose) =>
      options.vectors(await pool.run(options.task(texts, purpose)), texts.length),
    close: () => pool.destroy(),
  };
}

/**
 * An embedder's threads behind one scheduler: `threads` shared ones and `queryThreads` dedicated ones, each set
 * made by `backend(count, dedicated)`. What every embedder here has in common, from validation to close().
 */
export class ScheduledThreads {
  private readonly shared: EmbeddingBackend;
  private readonly queryLane: EmbeddingBackend | undefined;
  private readonly scheduler: EmbeddingScheduler;
  private closed = false;

  constructor(options: {
    threads?: number;
    queryThreads?: number;
    textsPerTask?: number;
    /** EmbeddingSchedulerOptions.queriesOnQueryThreadsOnly. */
    queriesOnQueryThreadsOnly?: boolean;
    backend(count: number, dedicated: boolean): EmbeddingBackend;
  }) {
    const threads = options.threads ?? 1;
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError("threads must be a positive integer");
    const queryThreads = options.queryThreads ?? 1;
    if (!Number.isInteger(queryThreads) || queryThreads < 0)
      throw new RangeError("queryThreads must be a non-negative integer");
    const textsPerTask = options.textsPerTask ?? DEFAULT_TEXTS_PER_TASK;
    if (!Number.isInteger(textsPerTask) || textsPerTask < 1)
      throw new RangeError("textsPerTask must be a positive integer");
    this.shared = options.backend(threads, false);
    this.queryLane = queryThreads > 0 ? options.backend(queryThreads, true) : undefined;
    this.scheduler = new EmbeddingScheduler({
      shared: this.shared,
      queryBackend: this.queryLane,
      textsPerTask,
      queriesOnQueryThreadsOnly: options.queriesOnQueryThreadsOnly,
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

  submit(
    texts: string[],
    purpose: EmbeddingPurpose,
    priority: EmbeddingPriority | undefined,
  ): Promise<number[][]> {
    if (this.closed) return Promise.reject(new Error("the embedder is closed"));
    return this.scheduler.submit(texts, purpose, priority);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.scheduler.close();
  }
}
