import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chunkText } from "../../pipeline/chunker.ts";
import {
  BgeSmallEmbedder,
  checkBgeSmallFiles,
  type Embedder,
  type EmbeddingBackend,
  type EmbeddingPriority,
  type EmbeddingPurpose,
  EmbeddingScheduler,
  UseLiteEmbedder,
} from "../../pipeline/embedder/index.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";

/** A text's "vector" is its character codes, so every answer can be checked against the text it belongs to. */
const encode = (text: string) => Array.from(text, (c) => c.charCodeAt(0));
const decode = (vector: number[]) => String.fromCharCode(...vector);

interface FakeTask {
  texts: string[];
  purpose: EmbeddingPurpose;
  resolve(vectors: number[][]): void;
  reject(error: unknown): void;
}

/** A backend whose tasks finish when the test says so (or on their own with `auto`). */
class FakeBackend implements EmbeddingBackend {
  readonly started: FakeTask[] = [];
  readonly running = new Set<FakeTask>();
  maxRunning = 0;
  closed = false;
  /** Tasks containing this text fail. */
  failOn: string | undefined;

  constructor(
    readonly concurrency: number,
    private readonly auto = false,
    /** Threads, when fewer than `concurrency` (the rest of the tasks are queued ahead on them). */
    readonly parallelism?: number,
  ) {}

  get threadCount(): number {
    return this.closed ? 0 : this.concurrency;
  }

  run(texts: string[], purpose: EmbeddingPurpose): Promise<number[][]> {
    return new Promise((resolve, reject) => {
      const task: FakeTask = {
        texts,
        purpose,
        resolve: (v) => {
          this.running.delete(task);
          resolve(v);
        },
        reject: (e) => {
          this.running.delete(task);
          reject(e);
        },
      };
      this.started.push(task);
      this.running.add(task);
      this.maxRunning = Math.max(this.maxRunning, this.running.size);
      if (this.auto) setTimeout(() => this.finish(task), Math.floor(Math.random() * 3));
    });
  }

  /** Completes a running task (the oldest by default), failing it when it holds `failOn`. */
  finish(task: FakeTask | undefined = this.running.values().next().value): void {
    if (!task) throw new Error("no task is running");
    if (this.failOn !== undefined && task.texts.includes(this.failOn))
      task.reject(new Error("model exploded"));
    else task.resolve(task.texts.map(encode));
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** Lets queued microtasks and promise callbacks run (the scheduler dispatches after the current tick). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Submits and records the order in which calls are answered. */
function recorder(scheduler: EmbeddingScheduler) {
  const done: string[] = [];
  const submit = (
    label: string,
    texts: string[],
    purpose?: EmbeddingPurpose,
    priority?: EmbeddingPriority,
  ) => {
    const answer = scheduler.submit(texts, purpose, priority);
    answer.then(
      () => done.push(label),
      () => done.push(`${label}!`),
    );
    return answer;
  };
  return { done, submit };
}

describe("embedding scheduler (fake backend)", () => {
  it("embeds a query submitted after many queued bulk requests before the queued bulk texts", async () => {
    const shared = new FakeBackend(1);
    const scheduler = new EmbeddingScheduler({ shared, textsPerTask: 4 });
    const { done, submit } = recorder(scheduler);
    const bulk = Array.from({ length: 20 }, (_, i) => submit(`b${i}`, [`bulk ${i}`], "document", "bulk"));
    await settle();
    expect(shared.started.map((t) => t.texts)).toEqual([["bulk 0", "bulk 1", "bulk 2", "bulk 3"]]);
    const query = submit("q", ["what is it?"], "query");
    await settle();
    expect(shared.started).toHaveLength(1); // the thread is busy: nothing more is handed to it
    shared.finish();
    await settle();
    // The next task is the query alone, ahead of the 16 bulk texts that were waiting before it.
    expect(shared.started[1]).toMatchObject({ texts: ["what is it?"], purpose: "query" });
    shared.finish();
    expect(decode((await query)[0] as number[])).toBe("what is it?");
    await settle(); // the freed thread takes the next bulk task
    while (shared.running.size > 0) {
      shared.finish();
      await settle();
    }
    await Promise.all(bulk);
    expect(done.slice(0, 5)).toEqual(["b0", "b1", "b2", "b3", "q"]);
    expect(done).toHaveLength(21);
  });

  it("queues one bulk task ahead on a busy thread, but never a query or an interactive call", async () => {
    const shared = new FakeBackend(2, false, 1); // one thread, a second task queued ahead on it
    const queryThread = new FakeBackend(1);
    const scheduler = new EmbeddingScheduler({ shared, queryBackend: queryThread, textsPerTask: 2 });
    const { done, submit } = recorder(scheduler);
    for (let i = 0; i < 6; i++) submit(`b${i}`, [`bulk ${i}`], "document", "bulk");
    await settle();
    // The running task and the one queued behind it, both full (not split as if two threads were free).
    expect(shared.started.map((t) => t.texts)).toEqual([
      ["bulk 0", "bulk 1"],
      ["bulk 2", "bulk 3"],
    ]);
    expect(queryThread.started).toHaveLength(0); // bulk work never goes to the query thread
    submit("q1", ["first question"], "query");
    submit("q2", ["second question"], "query");
    submit("i", ["a memory"], "document", "interactive");
    await settle();
    expect(queryThread.started.map((t) => t.texts)).toEqual([["first question", "second question"]]);
    shared.finish(); // the shared thread moves on to its queued task: a slot opens, but no thread is idle
    await settle();
    // The freed slot takes the next bulk task; the interactive call waits for the query thread.
    expect(shared.started.map((t) => t.texts)[2]).toEqual(["bulk 4", "bulk 5"]);
    queryThread.finish();
    await settle();
    expect(queryThread.started.map((t) => t.texts)[1]).toEqual(["a memory"]);
    queryThread.finish();
    while (shared.running.size > 0) {
      shared.finish();
      await settle();
    }
    await settle();
    expect(done).toEqual(["b0", "b1", "q1", "q2", "i", "b2", "b3", "b4", "b5"]);
    expect(shared.maxRunning).toBe(2);
  });

  it("queues a bulk task ahead on a busy thread only when it is full: texts arriving a document at a time gather for the first thread to finish", async () => {
    const shared = new FakeBackend(4, false, 2); // two threads, a task queued ahead on each
    const scheduler = new EmbeddingScheduler({ shared, textsPerTask: 8 });
    const { done, submit } = recorder(scheduler);
    // A document of two chunks on two idle threads: one text each, and both threads are busy. Then documents
    // arrive one at a time, as an import's do (each after its own extraction and chunking).
    submit("d0", ["d0 a", "d0 b"], "document", "bulk");
    await settle();
    expect(shared.started.map((t) => t.texts)).toEqual([["d0 a"], ["d0 b"]]);
    for (let d = 1; d < 4; d++) {
      submit(`d${d}`, [`d${d} a`, `d${d} b`], "document", "bulk");
      await settle();
    }
    // Six texts wait, none formed into a small task queued ahead on a busy thread.
    expect(shared.started).toHaveLength(2);
    // A thread finishes: the texts gathered meanwhile go to it as one task.
    shared.finish();
    await settle();
    expect(shared.started.map((t) => t.texts.length)).toEqual([1, 1, 6]);
    // Once a full task's worth waits, it is queued ahead although both threads are busy.
    for (let d = 4; d < 8; d++) {
      submit(`d${d}`, [`d${d} a`, `d${d} b`], "document", "bulk");
      await settle();
    }
    expect(shared.started.map((t) => t.texts.length)).toEqual([1, 1, 6, 8]);
    submit("d8", ["d8 a", "d8 b"], "document", "bulk");
    while (shared.running.size > 0) {
      shared.finish();
      await settle();
    }
    expect(done).toHaveLength(9);
  });

  it("answers queries, then interactive calls in small tasks, on the dedicated thread; never bulk work", async () => {
    const shared = new FakeBackend(1);
    const queryThread = new FakeBackend(1);
    const scheduler = new EmbeddingScheduler({ shared, queryBackend: queryThread, textsPerTask: 8 });
    const { done, submit } = recorder(scheduler);
    for (let i = 0; i < 10; i++) submit(`b${i}`, [`bulk ${i}a`, `bulk ${i}b`], "document", "bulk");
    const memories = Array.from({ length: 6 }, (_, i) => `memory ${i}`);
    submit("i", memories, "document", "interactive");
    await settle();
    // The interactive call goes first on both free threads, spread evenly (the bulk calls wait).
    expect(queryThread.started.map((t) => t.texts)).toEqual([memories.slice(0, 3)]);
    expect(shared.started.map((t) => t.texts)).toEqual([memories.slice(3)]);
    const query = submit("q", ["a question"], "query");
    await settle();
    // The dedicated thread frees first here: the query is next on it, ahead of the queued bulk texts.
    queryThread.finish();
    await settle();
    expect(queryThread.started[1]).toMatchObject({ texts: ["a question"], purpose: "query" });
    queryThread.finish();
    expect(await query).toEqual([encode("a question")]);
    shared.finish();
    await settle();
    expect(done).toEqual(["q", "i"]);
    while (shared.running.size > 0) {
      shared.finish();
      await settle();
    }
    // Bulk work never went to the dedicated thread.
    expect(queryThread.started).toHaveLength(2);
    expect(done).toHaveLength(12);
  });

  it("gives queries the top lane of the shared threads when the query thread is busy", async () => {
    const shared = new FakeBackend(1);
    const queryThread = new FakeBackend(1);
    const scheduler = new EmbeddingScheduler({ shared, queryBackend: queryThread, textsPerTask: 4 });
    for (let i = 0; i < 8; i++) scheduler.submit([`bulk ${i}`], "document", "bulk").catch(() => {}); // closed below
    const first = scheduler.submit(["first question"], "query");
    await settle();
    expect(queryThread.started.map((t) => t.texts)).toEqual([["first question"]]);
    expect(shared.started.map((t) => t.texts)).toEqual([["bulk 0", "bulk 1", "bulk 2", "bulk 3"]]);
    const second = scheduler.submit(["second question"], "query");
    await settle();
    shared.finish(); // the shared thread frees first: it takes the waiting query before the bulk texts
    await settle();
    expect(shared.started[1]?.texts).toEqual(["second question"]);
    shared.finish();
    queryThread.finish();
    expect(decode((await second)[0] as number[])).toBe("second question");
    expect(decode((await first)[0] as number[])).toBe("first question");
    await scheduler.close();
  });

  it("keeps queries on the query thread when its weights are the queries' own (queriesOnQueryThreadsOnly)", async () => {
    const shared = new FakeBackend(1);
    const queryThread = new FakeBackend(1);
    const scheduler = new EmbeddingScheduler({
      shared,
      queryBackend: queryThread,
      textsPerTask: 4,
      queriesOnQueryThreadsOnly: true,
    });
    const first = scheduler.submit(["first question"], "query");
    await settle();
    const second = scheduler.submit(["second question"], "query");
    const third = scheduler.submit(["third question"], "query");
    // A document for the shared thread; the two queries wait for the query thread though the shared one is free.
    const doc = scheduler.submit(["a memory"], "document", "interactive");
    await settle();
    expect(queryThread.started.map((t) => t.texts)).toEqual([["first question"]]);
    expect(shared.started.map((t) => t.texts)).toEqual([["a memory"]]);
    shared.finish();
    await settle();
    expect(shared.started).toHaveLength(1);
    queryThread.finish();
    await settle();
    // The waiting queries together, as one task, on the query thread.
    expect(queryThread.started[1]?.texts).toEqual(["second question", "third question"]);
    queryThread.finish();
    for (const [answer, text] of [
      [first, "first question"],
      [second, "second question"],
      [third, "third question"],
      [doc, "a memory"],
    ] as const)
      expect(decode((await answer)[0] as number[])).toBe(text);
    expect(queryThread.started.every((t) => t.purpose === "query")).toBe(true);
    expect(shared.started.every((t) => t.purpose === "document")).toBe(true);
    await scheduler.close();
  });

  it("embeds waiting queries in pairs on the query thread, the next pair queued ahead on it, never interactive work", async () => {
    const shared = new FakeBackend(1);
    const queryThread = new FakeBackend(2, false, 1); // one thread, a second task queued ahead on it
    const scheduler = new EmbeddingScheduler({
      shared,
      queryBackend: queryThread,
      textsPerTask: 16,
      queriesOnQueryThreadsOnly: true,
    });
    const { done, submit } = recorder(scheduler);
    submit("busy", ["a document"], "document", "interactive"); // keeps the shared thread busy
    for (let i = 1; i <= 5; i++) submit(`q${i}`, [`question ${i}`], "query");
    await settle();
    // A task of two queries runs and the next two wait on the thread: a batch is answered when its last query is.
    expect(queryThread.started.map((t) => t.texts)).toEqual([
      ["question 1", "question 2"],
      ["question 3", "question 4"],
    ]);
    submit("memory", ["a memory"], "document", "interactive");
    queryThread.finish();
    await settle();
    expect(done).toEqual(["q1", "q2"]);
    // The freed slot takes the last query; the interactive call is not queued ahead of a busy thread.
    expect(queryThread.started.map((t) => t.texts)[2]).toEqual(["question 5"]);
    queryThread.finish();
    await settle();
    expect(queryThread.started).toHaveLength(3);
    queryThread.finish();
    await settle();
    expect(queryThread.started.map((t) => t.texts)[3]).toEqual(["a memory"]);
    queryThread.finish();
    shared.finish();
    await settle();
    expect(done).toEqual(["q1", "q2", "q3", "q4", "q5", "memory", "busy"]);
    expect(queryThread.maxRunning).toBe(2);
    await scheduler.close();
  });

  it("serves interactive calls before bulk calls, first come first served within each lane", async () => {
    const shared = new FakeBackend(1);
    const scheduler = new EmbeddingScheduler({ shared, textsPerTask: 3 });
    const { done, submit } = recorder(scheduler);
    submit("b0", ["b0"], "document", "bulk");
    await settle(); // b0 runs alone on the idle thread
    for (let i = 1; i <= 4; i++) submit(`b${i}`, [`b${i}`], "document", "bulk");
    submit("i0", ["i0"]); // default priority for documents: interactive
    submit("i1", ["i1"], "document", "interactive");
    await settle();
    while (shared.running.size > 0) {
      shared.finish();
      await settle();
    }
    expect(shared.started.map((t) => t.texts)).toEqual([["b0"], ["i0", "i1"], ["b1", "b2", "b3"], ["b4"]]);
    expect(done).toEqual(["b0", "i0", "i1", "b1", "b2", "b3", "b4"]);
  });

  it("coalesces N single-text calls into ceil(N / batch) tasks and splits the results back", async () => {
    for (const [calls, batch, threads] of [
      [25, 8, 1],
      [25, 8, 2],
      [64, 16, 1],
      [7, 32, 1],
    ] as const) {
      const shared = new FakeBackend(threads, true);
      const scheduler = new EmbeddingScheduler({ shared, textsPerTask: batch });
      const texts = Array.from({ length: calls }, (_, i) => `text number ${i}`);
      const answers = await Promise.all(texts.map((t) => scheduler.submit([t], "document", "bulk")));
      expect(answers.map((a) => decode(a[0] as number[]))).toEqual(texts);
      expect(shared.started, `${calls} calls, batch ${batch}`).toHaveLength(Math.ceil(calls / batch));
      expect(Math.max(...shared.started.map((t) => t.texts.length))).toBeLessThanOrEqual(batch);
      await scheduler.close();
    }
  });

  it("splits a large call across tasks, keeps its order, and never mixes purposes in one task", async () => {
    const shared = new FakeBackend(1, true);
    const scheduler = new EmbeddingScheduler({ shared, textsPerTask: 4 });
    const long = Array.from({ length: 10 }, (_, i) => `chunk ${i}`);
    const [a, b, c] = await Promise.all([
      scheduler.submit(long, "document", "bulk"),
      scheduler.submit(["probe"], "query", "bulk"),
      scheduler.submit(["tail"], "document", "bulk"),
    ]);
    expect(a?.map(decode)).toEqual(long);
    expect(b?.map(decode)).toEqual(["probe"]);
    expect(c?.map(decode)).toEqual(["tail"]);
    for (const task of shared.started) {
      expect(task.texts.length).toBeLessThanOrEqual(4);
      expect(task.texts.includes("probe")).toBe(task.purpose === "query");
    }
    // The document texts (10 + 1) still share tasks: 4 + 4 + 3, plus the query's own task.
    expect(shared.started.map((t) => t.texts.length).sort()).toEqual([1, 3, 4, 4]);
  });

  it("spreads a call over idle threads and never has more tasks outstanding than threads", async () => {
    const split = new FakeBackend(2);
    const splitting = new EmbeddingScheduler({ shared: split, textsPerTask: 16 });
    const big = splitting.submit(
      Array.from({ length: 16 }, (_, i) => `c${i}`),
      "document",
    );
    big.catch(() => {}); // closed below
    await settle();
    expect(split.started.map((t) => t.texts.length)).toEqual([8, 8]);
    await splitting.close();

    const shared = new FakeBackend(3, true);
    const queryThread = new FakeBackend(1, true);
    const scheduler = new EmbeddingScheduler({ shared, queryBackend: queryThread, textsPerTask: 5 });
    const priorities: EmbeddingPriority[] = ["query", "interactive", "bulk"];
    const calls = Array.from({ length: 300 }, (_, i) => {
      const texts = Array.from({ length: 1 + (i % 3) }, (_, j) => `call ${i} text ${j}`);
      const priority = priorities[i % 3] as EmbeddingPriority;
      return {
        texts,
        answer: scheduler.submit(texts, priority === "query" ? "query" : "document", priority),
      };
    });
    for (const { texts, answer } of calls) expect((await answer).map(decode)).toEqual(texts);
    expect(shared.maxRunning).toBe(3);
    expect(queryThread.maxRunning).toBe(1);
    // The dedicated thread took queries and interactive calls (four texts at most), never bulk ones.
    const bulkTexts = new Set(calls.filter((_, i) => i % 3 === 2).flatMap((c) => c.texts));
    expect(queryThread.started.every((t) => t.texts.every((text) => !bulkTexts.has(text)))).toBe(true);
    expect(
      queryThread.started.filter((t) => t.purpose === "document").every((t) => t.texts.length <= 4),
    ).toBe(true);
    expect(scheduler.outstanding).toEqual({ shared: 0, query: 0 });
    expect(scheduler.queued).toBe(0);
  });

  it("rejects only the callers of a failed task and drops the rest of a failed call", async () => {
    const shared = new FakeBackend(1);
    shared.failOn = "bad";
    const scheduler = new EmbeddingScheduler({ shared, textsPerTask: 3 });
    const { done, submit } = recorder(scheduler);
    const fine = submit("fine", ["ok 1"], "document", "bulk");
    const broken = submit("broken", ["bad", "x 1", "x 2", "x 3", "x 4"], "document", "bulk");
    const later = submit("later", ["ok 2"], "document", "bulk");
    await settle();
    // First task: "ok 1", "bad", "x 1": fails, taking only fine and broken with it.
    expect(shared.started[0]?.texts).toEqual(["ok 1", "bad", "x 1"]);
    shared.finish();
    await expect(fine).rejects.toThrow("model exploded");
    await expect(broken).rejects.toThrow("model exploded");
    await settle();
    // broken's remaining texts are not embedded for nothing; later still gets its answer.
    expect(shared.started[1]?.texts).toEqual(["ok 2"]);
    shared.finish();
    expect(await later).toEqual([encode("ok 2")]);
    expect(done).toEqual(["fine!", "broken!", "later"]);
    expect(scheduler.queued).toBe(0);

    // A backend that throws instead of rejecting, or answers with the wrong count, fails the same way.
    const odd: EmbeddingBackend = {
      concurrency: 1,
      threadCount: 1,
      run: (texts) => {
        if (texts[0] === "throw") throw new Error("boom");
        return Promise.resolve([[1]]);
      },
      close: async () => {},
    };
    const s2 = new EmbeddingScheduler({ shared: odd, textsPerTask: 2 });
    await expect(s2.submit(["a", "b"])).rejects.toThrow("the model returned 1 vectors for 2 texts");
    await expect(s2.submit(["throw"])).rejects.toThrow("boom");
    expect(await s2.submit(["c"])).toEqual([[1]]);
  });

  it("rejects pending and running calls on close and releases the backends", async () => {
    const shared = new FakeBackend(1);
    const queryThread = new FakeBackend(1);
    const scheduler = new EmbeddingScheduler({ shared, queryBackend: queryThread, textsPerTask: 2 });
    const calls = [
      scheduler.submit(["queued 1"], "document", "bulk"),
      scheduler.submit(["queued 2"], "document", "bulk"),
      scheduler.submit(["running 1", "running 2"], "document", "interactive"),
      scheduler.submit(["running question"], "query"),
    ];
    await settle();
    expect(scheduler.outstanding).toEqual({ shared: 1, query: 1 });
    expect(scheduler.queued).toBe(2);
    await scheduler.close();
    for (const call of calls) await expect(call).rejects.toThrow("the embedder is closed");
    expect(shared.closed && queryThread.closed).toBe(true);
    await expect(scheduler.submit(["after"])).rejects.toThrow("the embedder is closed");
    shared.finish(); // a task finishing after close changes nothing
    await settle();
    await scheduler.close(); // idempotent
  });

  it("validates purpose and priority and answers an empty call at once", async () => {
    const shared = new FakeBackend(1);
    const scheduler = new EmbeddingScheduler({ shared, textsPerTask: 2 });
    await expect(scheduler.submit(["a"], "summary" as EmbeddingPurpose)).rejects.toThrow(RangeError);
    await expect(scheduler.submit(["a"], "query", "urgent" as EmbeddingPriority)).rejects.toThrow(
      'unknown priority "urgent"',
    );
    expect(await scheduler.submit([])).toEqual([]);
    expect(shared.started).toHaveLength(0);
    expect(() => new EmbeddingScheduler({ shared, textsPerTask: 0 })).toThrow(RangeError);
  });
});

// The real model: bge-small when setup installed it, else the bundled use-lite (always installed), so this never skips.
const bge = checkBgeSmallFiles();
const realName = bge.ok ? "bge-small" : "use-lite";

describe(`embedding scheduler on the real model (${realName})`, () => {
  type Real = Embedder & { queryThreadCount: number };
  let withQueryThread: Real;
  let withoutQueryThread: Real;
  const make = (queryThreads: number): Real =>
    bge.ok
      ? new BgeSmallEmbedder({ threads: 1, queryThreads, textsPerTask: 4 })
      : new UseLiteEmbedder({ threads: 1, queryThreads, textsPerTask: 4 });
  const chunks = chunkText(readFileSync(`${FIXTURES_DIR}/text/norwich-city.txt`, "utf8"), {
    maxChars: 600,
    overlapSentences: 0,
  })
    .map((c) => c.content)
    .slice(0, 16);
  const questions = ["Who was his PE teacher?", "Which clubs did he play for?", "Why was he banned?"];
  const dot = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * (b[i] as number), 0);

  beforeAll(() => {
    withQueryThread = make(1);
    withoutQueryThread = make(0);
  });

  afterAll(async () => {
    await withQueryThread?.close();
    await withoutQueryThread?.close();
  });

  it("gives the same vectors when calls are coalesced as when each text is embedded alone", async () => {
    expect(withQueryThread.queryThreadCount).toBe(1);
    expect(withoutQueryThread.queryThreadCount).toBe(0);
    // Unscheduled: one text per call, one call at a time, so every task holds exactly that text.
    const alone: number[][] = [];
    for (const text of chunks) alone.push(...(await withoutQueryThread.embed([text])));
    const aloneQueries: number[][] = [];
    for (const q of questions) aloneQueries.push(...(await withoutQueryThread.embed([q], "query")));
    // Coalesced: many concurrent calls of 1-2 texts, documents and queries mixed, on both configurations.
    for (const embedder of [withQueryThread, withoutQueryThread]) {
      const calls: Promise<number[][]>[] = [];
      for (let i = 0; i < chunks.length; i += 2) {
        const texts = i % 4 === 0 ? chunks.slice(i, i + 2) : [chunks[i] as string];
        calls.push(embedder.embed(texts, "document", { priority: "bulk" }));
        if (i % 4 !== 0)
          calls.push(embedder.embed([chunks[i + 1] as string], "document", { priority: "bulk" }));
      }
      const queries = questions.map((q) => embedder.embed([q], "query"));
      const together = (await Promise.all(calls)).flat();
      expect(together).toHaveLength(chunks.length);
      for (const [i, v] of together.entries()) expect(dot(v, alone[i] as number[])).toBeGreaterThan(0.9999);
      const queryVectors = (await Promise.all(queries)).flat();
      for (const [i, v] of queryVectors.entries())
        expect(dot(v, aloneQueries[i] as number[])).toBeGreaterThan(0.9999);
    }
  }, 120_000);

  it("answers a query while bulk work is queued, before the queued bulk calls", async () => {
    for (const embedder of [withoutQueryThread, withQueryThread]) {
      await embedder.embed(["warm up"], "query");
      const done: string[] = [];
      const bulk = Array.from({ length: 8 }, (_, i) =>
        embedder
          .embed(chunks.slice(2 * i, 2 * i + 2), "document", { priority: "bulk" })
          .then(() => done.push(`bulk ${i}`)),
      );
      // Let the first bulk task start, so the query arrives behind work in flight and work queued.
      await new Promise((resolve) => setImmediate(resolve));
      const query = embedder.embed([questions[0] as string], "query").then(() => done.push("query"));
      await Promise.all([...bulk, query]);
      const position = done.indexOf("query");
      if (embedder.queryThreadCount === 0) {
        // 8 calls of 2 texts in tasks of 4: only the task already running (2 calls) can finish first.
        expect(position, done.join(", ")).toBeLessThanOrEqual(2);
      } else {
        // Its own thread took it at once; it needs no bulk task to finish first.
        expect(position, done.join(", ")).toBeLessThan(bulk.length);
      }
    }
  }, 120_000);
});
