import { readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chunkText } from "../../pipeline/chunker.ts";
import {
  availableEmbedders,
  BGE_QUERY_PREFIX,
  BgeSmallEmbedder,
  checkBgeSmallInt8BlockFiles,
  checkBgeSmallInt8Files,
  checkBgeSmallInt8SmoothFiles,
  createEmbedder,
  resolveDefaultEmbedder,
  resolveQueryPrecision,
} from "../../pipeline/embedder/index.ts";
import { cpuTicks, cpuTicksSince, withLoopTurns } from "../support/cpu-ticks.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";

const dot = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * (b[i] as number), 0);
const norm = (a: number[]) => Math.sqrt(dot(a, a));

/** ~200-word passages of real prose (a Wikipedia article about a footballer), as the pipeline would cut them. */
function fixtureChunks(): string[] {
  const text = readFileSync(`${FIXTURES_DIR}/text/norwich-city.txt`, "utf8");
  return chunkText(text, { maxChars: 1450, overlapSentences: 0 }).map((c) => c.content);
}

describe("bge-small-en-v1.5 embedder", () => {
  let embedder: BgeSmallEmbedder;

  beforeAll(() => {
    // `npm test` runs `node scripts/setup.mjs --test` first, which installs and verifies the model (or fails):
    // a missing model is a failure here, never a skip.
    const resolved = resolveDefaultEmbedder();
    expect(resolved.reason).toContain("bge-small-en-v1.5");
    expect(resolved.name, resolved.reason).toBe("bge-small");
    const created = createEmbedder("bge-small");
    expect(created).toBeInstanceOf(BgeSmallEmbedder);
    embedder = created as BgeSmallEmbedder;
  });

  afterAll(async () => {
    await embedder?.close();
  });

  it("is listed as available with the bundled fallback", () => {
    const list = availableEmbedders();
    expect(list.map((e) => e.name)).toEqual(["bge-small", "use-lite"]);
    expect(list.every((e) => e.available)).toBe(true);
  });

  it("returns 384-d unit vectors in input order", async () => {
    expect(embedder.model).toBe("bge-small-en-v1.5");
    expect(embedder.dimension).toBe(384);
    const texts = [
      "The cat sat on the mat.",
      "Interest rates rose again this quarter.",
      "😀",
      "naïve café — 日本語",
    ];
    const vectors = await embedder.embed(texts);
    expect(vectors).toHaveLength(texts.length);
    for (const v of vectors) {
      expect(v).toHaveLength(384);
      expect(v.every(Number.isFinite)).toBe(true);
      expect(Math.abs(norm(v) - 1)).toBeLessThan(1e-5);
    }
    // Order is kept and a vector does not depend on what else is in the call (padding is masked).
    const reversed = await embedder.embed([...texts].reverse());
    for (let i = 0; i < texts.length; i++)
      expect(dot(vectors[i] as number[], reversed[texts.length - 1 - i] as number[])).toBeCloseTo(1, 5);
    expect(await embedder.embed([])).toEqual([]);
  });

  it("matches an independent reference (Python tokenizers + onnxruntime, CLS pooling, L2 norm)", async () => {
    // First components computed outside this code base; docs/models.md describes how.
    const [doc] = await embedder.embed(["The cat sat on the mat."], "document");
    const [prefixed] = await embedder.embed([`${BGE_QUERY_PREFIX}The cat sat on the mat.`], "document");
    const expectDoc = [0.031346, -0.010937, 0.003095, 0.066052];
    const expectQuery = [0.029534, -0.007091, -0.010085, 0.090197];
    for (const [i, x] of expectDoc.entries()) expect(doc?.[i]).toBeCloseTo(x, 4);
    for (const [i, x] of expectQuery.entries()) expect(prefixed?.[i]).toBeCloseTo(x, 4);
  });

  it("embeds a query as it is, or with BGE's retrieval instruction when asked (EMBEDDING_QUERY_INSTRUCTION)", async () => {
    const text = "Which clubs did Iwan Roberts play for?";
    const [asDocument] = await embedder.embed([text]);
    const [asQuery] = await embedder.embed([text], "query");
    expect(dot(asDocument as number[], asQuery as number[])).toBeCloseTo(1, 5);

    const instructed = createEmbedder("bge-small", { threads: 1, queryThreads: 1, queryInstruction: true });
    try {
      const [withInstruction] = await instructed.embed([text], "query");
      const [prefixed] = await embedder.embed([`${BGE_QUERY_PREFIX}${text}`], "document");
      expect(dot(withInstruction as number[], prefixed as number[])).toBeCloseTo(1, 5);
      const similarity = dot(asDocument as number[], withInstruction as number[]);
      expect(similarity).toBeLessThan(0.99);
      expect(similarity).toBeGreaterThan(0.7);
      // Documents are embedded as they are either way.
      const [document] = await instructed.embed([text], "document");
      expect(dot(document as number[], asDocument as number[])).toBeCloseTo(1, 5);
    } finally {
      await instructed.close();
    }
  });

  it("embeds queries with the int8 weights when asked (EMBEDDING_QUERY_PRECISION=int8), always those, documents as before", async () => {
    const check = checkBgeSmallInt8Files();
    // Installed by `node scripts/setup.mjs --test` like the fp32 model: missing is a failure, never a skip.
    expect(check.ok, check.ok ? "" : check.reason).toBe(true);
    const questions = [
      "Which clubs did Iwan Roberts play for?",
      "How many goals did he score in the 1998 season for Norwich City?",
      "transfer fee",
    ];
    const fp32 = await embedder.embed(questions, "query");
    const int8 = createEmbedder("bge-small", { threads: 1, queryThreads: 1, queryPrecision: "int8" });
    // No query threads: the shared thread embeds the queries and loads the int8 weights for them.
    const int8Shared = createEmbedder("bge-small", { threads: 1, queryThreads: 0, queryPrecision: "int8" });
    let bulk: Promise<unknown> = Promise.resolve();
    try {
      expect((int8 as BgeSmallEmbedder).queryPrecision).toBe("int8");
      const alone = await int8.embed(questions, "query");
      for (const [i, v] of alone.entries()) {
        expect(Math.abs(norm(v) - 1)).toBeLessThan(1e-5);
        const similarity = dot(v, fp32[i] as number[]);
        // The same model with int8 weights: close to the fp32 vector, but not it.
        expect(similarity).toBeGreaterThan(0.98);
        expect(similarity).toBeLessThan(0.99999);
      }
      // Under load (bulk documents on the shared thread, queries arriving together), every query still gets the
      // same int8 vector: the shared thread, free or not, never takes one, and queries coalesced into one task are
      // still run one by one (the int8 model quantises over its whole input, so a batch would mix them).
      bulk = int8.embed(fixtureChunks().slice(0, 12), "document", { priority: "bulk" });
      bulk.catch(() => {}); // awaited below; a failure before that must not go unhandled
      const together = await Promise.all(
        Array.from({ length: 6 }, (_, i) => int8.embed([questions[i % questions.length] as string], "query")),
      );
      for (const [i, [v]] of together.entries())
        expect(dot(v as number[], alone[i % questions.length] as number[])).toBeCloseTo(1, 5);
      const [sharedVector] = await int8Shared.embed([questions[0] as string], "query");
      expect(dot(sharedVector as number[], alone[0] as number[])).toBeCloseTo(1, 5);
      // Documents are fp32 either way, so stored vectors need no re-embedding.
      const [document] = await int8.embed([questions[0] as string], "document");
      const [fp32Document] = await embedder.embed([questions[0] as string], "document");
      expect(dot(document as number[], fp32Document as number[])).toBeCloseTo(1, 5);
      await bulk;
    } finally {
      await bulk.catch(() => {}); // not closed under a running inference
      await int8.close();
      await int8Shared.close();
    }
  });

  it("embeds queries with the int8-smooth weights by default (auto) on a CPU with int8 dot products: closer to fp32 than the int8 export, one query per call", async () => {
    const check = checkBgeSmallInt8SmoothFiles();
    // Made by `node scripts/setup.mjs --test` from the fp32 model: missing is a failure, never a skip.
    expect(check.ok, check.ok ? "" : check.reason).toBe(true);
    // Where the CPU has int8 dot products (auto chooses fp32 elsewhere: test/pipeline/cpu-features.test.ts).
    expect(resolveQueryPrecision("bge-small", { fast: true, evidence: "VNNI" })).toMatchObject({
      precision: "int8-smooth",
      preferred: true,
    });
    expect(resolveQueryPrecision("use-lite").precision).toBe("fp32");
    const questions = [
      "Which clubs did Iwan Roberts play for?",
      "How many goals did he score in the 1998 season for Norwich City, and who was the manager then?",
      "transfer fee",
      "Welsh international striker",
      "0-dimensional biomaterials show inductive properties.",
      "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
    ];
    const fp32 = await embedder.embed(questions, "query");
    const smooth = createEmbedder("bge-small", {
      threads: 1,
      queryThreads: 1,
      queryPrecision: "int8-smooth",
    });
    const int8 = createEmbedder("bge-small", { threads: 1, queryThreads: 1, queryPrecision: "int8" });
    try {
      expect((smooth as BgeSmallEmbedder).queryPrecision).toBe("int8-smooth");
      const alone: number[][] = [];
      for (const q of questions)
        alone.push(((await smooth.embed([q], "query")) as number[][])[0] as number[]);
      const xenova = await int8.embed(questions, "query");
      let smoothSum = 0;
      let int8Sum = 0;
      for (const [i, v] of alone.entries()) {
        expect(Math.abs(norm(v) - 1)).toBeLessThan(1e-5);
        const similarity = dot(v, fp32[i] as number[]);
        // Its own weights, not fp32's (SciFact's 300 test queries: cosine 0.9974 at the lowest, median 0.9990;
        // a two-word query here 0.9948).
        expect(similarity).toBeGreaterThan(0.993);
        expect(similarity).toBeLessThan(0.99999);
        smoothSum += similarity;
        int8Sum += dot(xenova[i] as number[], fp32[i] as number[]);
      }
      // The calibrated scales are what it adds to the int8 export's kind of quantisation.
      expect(smoothSum / questions.length).toBeGreaterThan(int8Sum / questions.length);
      // Activations are quantised over the whole input, so queries that come together, in one task or at the
      // same time, are still run one per call and keep the vectors they get alone.
      const batched = await smooth.embed(questions, "query");
      for (const [i, v] of batched.entries()) expect(dot(v, alone[i] as number[])).toBeCloseTo(1, 6);
      const together = await Promise.all(questions.map((q) => smooth.embed([q], "query")));
      for (const [i, [v]] of together.entries())
        expect(dot(v as number[], alone[i] as number[])).toBeCloseTo(1, 6);
    } finally {
      await smooth.close();
      await int8.close();
    }
  });

  it("embeds queries with the int8-block weights when asked, the same vector alone or batched with others", async () => {
    const check = checkBgeSmallInt8BlockFiles();
    // Made by `node scripts/setup.mjs --test` from the fp32 model: missing is a failure, never a skip.
    expect(check.ok, check.ok ? "" : check.reason).toBe(true);
    const questions = [
      "Which clubs did Iwan Roberts play for?",
      "How many goals did he score in the 1998 season for Norwich City, and who was the manager then?",
      "transfer fee",
      "Welsh international striker",
    ];
    const fp32 = await embedder.embed(questions, "query");
    const block = createEmbedder("bge-small", { threads: 1, queryThreads: 1, queryPrecision: "int8-block" });
    try {
      expect((block as BgeSmallEmbedder).queryPrecision).toBe("int8-block");
      // One at a time: each query alone in its inference call.
      const alone: number[][] = [];
      for (const q of questions) alone.push(((await block.embed([q], "query")) as number[][])[0] as number[]);
      for (const [i, v] of alone.entries()) {
        expect(Math.abs(norm(v) - 1)).toBeLessThan(1e-5);
        const similarity = dot(v, fp32[i] as number[]);
        // Closer to the fp32 vector than the Xenova int8 export (0.996-0.998), but not it.
        expect(similarity).toBeGreaterThan(0.999);
        expect(similarity).toBeLessThan(0.999999);
      }
      // All four in one call: one inference call, padded to the longest. Each row's activations are quantised on
      // their own, so every query keeps its vector (the Xenova int8 export would mix them: cosine ~0.997).
      const batched = await block.embed(questions, "query");
      for (const [i, v] of batched.entries()) expect(dot(v, alone[i] as number[])).toBeCloseTo(1, 6);
      // Documents are fp32 either way, interactive ones too: the query thread, which holds only the query model
      // until then, creates the fp32 session for its first document.
      const [document] = await block.embed([questions[0] as string], "document", { priority: "interactive" });
      const [fp32Document] = await embedder.embed([questions[0] as string], "document");
      expect(dot(document as number[], fp32Document as number[])).toBeCloseTo(1, 5);
    } finally {
      await block.close();
    }
  });

  it("embeds documents with the int8-block weights when asked (EMBEDDING_DOCUMENT_PRECISION), on every thread, batch or not", async () => {
    const passages = fixtureChunks().slice(0, 6);
    const fp32 = await embedder.embed(passages, "document");
    const block = createEmbedder("bge-small", {
      threads: 1,
      queryThreads: 1,
      queryPrecision: "int8-block",
      documentPrecision: "int8-block",
    }) as BgeSmallEmbedder;
    try {
      expect(block.documentPrecision).toBe("int8-block");
      // A bulk batch on the shared thread: close to fp32's vectors, but not them.
      const batched = await block.embed(passages, "document");
      for (const [i, v] of batched.entries()) {
        expect(Math.abs(norm(v) - 1)).toBeLessThan(1e-5);
        const similarity = dot(v, fp32[i] as number[]);
        expect(similarity).toBeGreaterThan(0.999);
        expect(similarity).toBeLessThan(0.999999);
      }
      // Alone and interactive (the query thread, whose query model is this same model): the same vectors.
      for (const [i, passage] of passages.slice(0, 3).entries()) {
        const [alone] = await block.embed([passage], "document", { priority: "interactive" });
        expect(dot(alone as number[], batched[i] as number[])).toBeCloseTo(1, 6);
      }
      // A query is embedded by the same weights as before.
      const [query] = await block.embed(["Which clubs did Iwan Roberts play for?"], "query");
      const blockQueries = createEmbedder("bge-small", {
        threads: 1,
        queryThreads: 1,
        queryPrecision: "int8-block",
      });
      try {
        const [reference] = await blockQueries.embed(["Which clubs did Iwan Roberts play for?"], "query");
        expect(dot(query as number[], reference as number[])).toBeCloseTo(1, 6);
      } finally {
        await blockQueries.close();
      }
    } finally {
      await block.close();
    }
    expect(
      () => new BgeSmallEmbedder({ documentPrecision: "int8-block", documentModelDir: "/nonexistent" }),
    ).toThrow(/int8-block document model is not available: .*\/nonexistent\/model\.onnx is missing/);
    expect(() => createEmbedder("use-lite", { documentPrecision: "int8-block" })).toThrow(
      /applies to bge-small only/,
    );
  });

  it("refuses int8 queries without their model file, or for a model that has no int8 weights", () => {
    expect(() => new BgeSmallEmbedder({ queryPrecision: "int8", queryModelDir: "/nonexistent" })).toThrow(
      /int8 query model is not available: .*\/nonexistent\/model\.onnx is missing/,
    );
    expect(
      () => new BgeSmallEmbedder({ queryPrecision: "int8-block", queryModelDir: "/nonexistent" }),
    ).toThrow(/int8-block query model is not available: .*\/nonexistent\/model\.onnx is missing/);
    expect(() => createEmbedder("use-lite", { queryPrecision: "int8" })).toThrow(/applies to bge-small only/);
  });

  it("scores related texts clearly above unrelated ones", async () => {
    const [cat, kitten, revenue, striker, goal] = await embedder.embed([
      "The cat sat on the mat.",
      "A kitten was sleeping on the rug.",
      "Quarterly revenue grew by ten percent.",
      "The striker scored a header in the final minute.",
      "A late goal won the football match.",
    ]);
    const c = (a: number[] | undefined, b: number[] | undefined) => dot(a as number[], b as number[]);
    // BGE's similarities sit in a narrow band (unrelated English text is still ~0.4), so margins are smaller
    // than use-lite's.
    expect(c(cat, kitten)).toBeGreaterThan(c(cat, revenue) + 0.1);
    expect(c(cat, kitten)).toBeGreaterThan(c(cat, goal) + 0.1);
    expect(c(striker, goal)).toBeGreaterThan(c(striker, revenue) + 0.1);
    expect(c(striker, goal)).toBeGreaterThan(c(striker, kitten) + 0.1);
  });

  it("finds the passage that answers a question in a real article", async () => {
    const chunks = fixtureChunks().slice(0, 18); // the prose; the rest is the reference list
    const docs = await embedder.embed(chunks);
    const questions: [string, string][] = [
      ["Who was Roberts's PE teacher at school?", "Iolo Owen"],
      ["Did heading the ball cause his memory loss?", "memory loss"],
      ["How many times did he play for the Wales national team?", "senior Wales team"],
      ["Why was he banned for three matches and fined?", "banned for three matches"],
    ];
    const queries = await embedder.embed(
      questions.map(([q]) => q),
      "query",
    );
    questions.forEach(([question, marker], i) => {
      const best = docs
        .map((d, j) => ({ j, score: dot(queries[i] as number[], d) }))
        .sort((a, b) => b.score - a.score)[0];
      expect(chunks[best?.j as number], question).toContain(marker);
    });
  });

  it("truncates long texts to 512 tokens instead of failing", async () => {
    const long = fixtureChunks().slice(0, 6).join(" "); // well over 512 tokens
    const [full, head] = await embedder.embed([long, long.slice(0, Math.floor(long.length * 0.8))]);
    expect(full).toHaveLength(384);
    // Both are cut to the same first 512 tokens.
    expect(dot(full as number[], head as number[])).toBeCloseTo(1, 4);
  });

  it("rejects an empty text with a clear error", async () => {
    await expect(embedder.embed(["fine", ""])).rejects.toThrow("cannot embed an empty text (index 1)");
    await expect(embedder.embed(["  \n"], "query")).rejects.toThrow("cannot embed an empty text (index 0)");
  });

  it("keeps the main event loop responsive while embedding 50 passages", async () => {
    const chunks = fixtureChunks().slice(0, 18);
    const texts = Array.from({ length: 50 }, (_, i) => chunks[i % chunks.length] as string);
    const words = texts.reduce((n, t) => n + t.split(/\s+/).length, 0) / texts.length;
    expect(words).toBeGreaterThan(180);
    const before = cpuTicks();
    const started = performance.now();
    const { value: vectors, turns } = await withLoopTurns(embedder.embed(texts));
    const elapsed = performance.now() - started;
    const used = cpuTicksSince(before);
    expect(vectors).toHaveLength(50);
    console.log(
      `bge-small: embedded 50 passages (~${Math.round(words)} words) in ${elapsed.toFixed(0)} ms = ` +
        `${((50 * 1000) / elapsed).toFixed(1)} texts/s on ${embedder.threadCount} thread(s); ` +
        `CPU ticks: ${used.mainThread} on the main thread of ${used.process} in all; ${turns} loop turns`,
    );
    // Tokenising and inference run in the embedding threads: the main thread's share of the CPU is small.
    expect(used.process).toBeGreaterThan(20);
    expect(used.mainThread).toBeLessThan(used.process / 5);
    // And the loop kept serving timers meanwhile (one blocked by the work would serve none until it ended).
    expect(turns).toBeGreaterThan(10);
  });
});

describe("bge-small lifecycle", () => {
  it("releases its threads on close and refuses work afterwards", async () => {
    const embedder = new BgeSmallEmbedder({ threads: 2, intraOpThreads: 1 });
    expect(embedder.threadCount).toBe(2);
    const texts = ["first text", "second text", "third text"];
    const vectors = await embedder.embed(texts);
    expect(vectors).toHaveLength(3);
    const [again] = await embedder.embed(["second text"]);
    expect(dot(vectors[1] as number[], again as number[])).toBeCloseTo(1, 5);
    await embedder.close();
    expect(embedder.threadCount).toBe(0);
    await expect(embedder.embed(["after close"])).rejects.toThrow("the embedder is closed");
    await embedder.close(); // idempotent
  });

  it("runs its shared threads and their onnxruntime threads at the given niceness, the query thread and the rest at normal", async () => {
    /** Niceness of every thread of this process, by thread id (field 19 of /proc/self/task/<tid>/stat). */
    const niceness = () =>
      new Map(
        readdirSync("/proc/self/task").map((tid) => {
          const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
          // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
          const after = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
          return [tid, Number(after[16])] as const;
        }),
      );
    const before = niceness();
    const embedder = new BgeSmallEmbedder({ threads: 1, intraOpThreads: 2, queryThreads: 1, niceness: 7 });
    try {
      await embedder.embed(["a document for the shared thread"], "document", { priority: "bulk" });
      await embedder.embed(["a query for the query thread"], "query", { priority: "query" });
      const added = [...niceness()].filter(([tid]) => !before.has(tid));
      const lowered = added.filter(([, nice]) => nice === 7);
      // The shared worker thread and the onnxruntime thread it started; the query thread (one onnxruntime thread,
      // its own) stays at the process's priority.
      expect(lowered.length).toBeGreaterThanOrEqual(2);
      expect(added.some(([, nice]) => nice === 0)).toBe(true);
      expect(niceness().get(String(process.pid))).toBe(before.get(String(process.pid)));
    } finally {
      await embedder.close();
    }
  });

  it("runs the query thread's model on the configured number of onnxruntime threads", async () => {
    const threadsAdded = async (queryIntraOpThreads: number) => {
      const before = new Set(readdirSync("/proc/self/task"));
      const embedder = new BgeSmallEmbedder({
        threads: 1,
        intraOpThreads: 1,
        queryThreads: 1,
        queryIntraOpThreads,
      });
      try {
        await embedder.embed(["a document for the shared thread"], "document", { priority: "bulk" });
        await embedder.embed(["a query for the query thread"], "query", { priority: "query" });
        return readdirSync("/proc/self/task").filter((tid) => !before.has(tid)).length;
      } finally {
        await embedder.close();
      }
    };
    // The first embedder in a process also starts a thread that stays (measured: 3, then 2 for the same setting).
    await threadsAdded(1);
    const one = await threadsAdded(1);
    const two = await threadsAdded(2);
    const three = await threadsAdded(3);
    // onnxruntime runs a session's work on the calling thread plus intraOpNumThreads - 1 of its own.
    expect(two - one).toBe(1);
    expect(three - one).toBe(2);
    expect(() => new BgeSmallEmbedder({ queryIntraOpThreads: 0 })).toThrow(/queryIntraOpThreads/);
  });

  it("embeds a lone query on the query thread's full session and waiting queries on its one-thread session, to the same vectors", async () => {
    const queries = Array.from({ length: 24 }, (_, i) => `what does protein ${i} do in the cell?`);
    const cosine = (a: number[], b: number[]) => dot(a, b) / (norm(a) * norm(b));
    for (const queryPrecision of ["int8-smooth", "int8-block", "fp32"] as const) {
      const embedder = new BgeSmallEmbedder({
        threads: 1,
        intraOpThreads: 1,
        queryThreads: 1,
        queryIntraOpThreads: 2,
        queryPrecision,
      });
      try {
        // One at a time: each arrives at an idle thread.
        const alone: number[][] = [];
        for (const q of queries) alone.push(...(await embedder.embed([q], "query", { priority: "query" })));
        expect(embedder.queryRuns).toEqual({ alone: queries.length, waiting: 0 });
        // All at once: they queue, so most go to the one-thread session.
        const together = await Promise.all(
          queries.map(
            async (q) => (await embedder.embed([q], "query", { priority: "query" }))[0] as number[],
          ),
        );
        const runs = embedder.queryRuns;
        if (queryPrecision !== "fp32") {
          // Its queries go to the query thread only (the shared thread's model is fp32).
          expect(runs.alone + runs.waiting).toBe(2 * queries.length);
          expect(runs.waiting).toBeGreaterThan(queries.length / 2);
        } else {
          // fp32 queries may also take the shared thread when it is free.
          expect(runs.alone + runs.waiting).toBeLessThanOrEqual(2 * queries.length);
          expect(runs.waiting).toBeGreaterThan(0);
        }
        // The same weights: only the order of the threads' float sums differs.
        const lowest = Math.min(...together.map((v, i) => cosine(v, alone[i] as number[])));
        expect(lowest).toBeGreaterThan(0.99999);
      } finally {
        await embedder.close();
      }
    }
    // One onnxruntime thread for queries: one session, every query counted as alone.
    const single = new BgeSmallEmbedder({
      threads: 1,
      intraOpThreads: 1,
      queryThreads: 1,
      queryIntraOpThreads: 1,
      queryPrecision: "int8-block",
    });
    try {
      await Promise.all(queries.map((q) => single.embed([q], "query", { priority: "query" })));
      expect(single.queryRuns).toEqual({ alone: queries.length, waiting: 0 });
    } finally {
      await single.close();
    }
  });

  it("refuses to start from a directory without the verified model files", () => {
    expect(() => new BgeSmallEmbedder({ modelDir: FIXTURES_DIR })).toThrow(
      /bge-small-en-v1.5 is not available: .*missing/,
    );
  });
});
