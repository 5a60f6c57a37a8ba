import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chunkText } from "../../pipeline/chunker.ts";
import { createEmbedder, EMBEDDER_NAMES, UseLiteEmbedder } from "../../pipeline/embedder/index.ts";
import { cpuTicks, cpuTicksSince, withLoopTurns } from "../support/cpu-ticks.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";

const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * (b[i] as number), 0);
const norm = (a: number[]) => Math.sqrt(cosine(a, a));

/** ~200-word passages of real prose (a Wikipedia article), as the pipeline would produce them. */
function passages(count: number): string[] {
  const text = readFileSync(`${FIXTURES_DIR}/text/norwich-city.txt`, "utf8");
  const chunks = chunkText(text, { maxChars: 1450, overlapSentences: 0 }).map((c) => c.content);
  return Array.from({ length: count }, (_, i) => chunks[i % chunks.length] as string);
}

describe("use-lite embedder", () => {
  let embedder: UseLiteEmbedder;

  beforeAll(() => {
    const created = createEmbedder("use-lite");
    expect(created).toBeInstanceOf(UseLiteEmbedder);
    embedder = created as UseLiteEmbedder;
  });

  afterAll(async () => {
    await embedder.close();
  });

  it("returns 512-d unit vectors in input order", async () => {
    expect(embedder.model).toBe("use-lite-512");
    expect(embedder.dimension).toBe(512);
    const texts = ["The cat sat on the mat.", "Interest rates rose again this quarter.", " ", "😀"];
    const vectors = await embedder.embed(texts);
    expect(vectors).toHaveLength(4);
    for (const v of vectors) {
      expect(v).toHaveLength(512);
      expect(v.every(Number.isFinite)).toBe(true);
      expect(Math.abs(norm(v) - 1)).toBeLessThan(1e-5);
    }
    // Order is kept and results do not depend on what else is in the call.
    const reversed = await embedder.embed([...texts].reverse());
    for (let i = 0; i < texts.length; i++) {
      expect(cosine(vectors[i] as number[], reversed[texts.length - 1 - i] as number[])).toBeCloseTo(1, 5);
    }
    expect(await embedder.embed([])).toEqual([]);
  });

  it("rejects an empty text with a clear error", async () => {
    await expect(embedder.embed(["fine", ""])).rejects.toThrow("cannot embed an empty text (index 1)");
  });

  it("scores related sentences above unrelated ones", async () => {
    const [cat, kitten, revenue, striker, goal] = await embedder.embed([
      "The cat sat on the mat.",
      "A kitten was sleeping on the rug.",
      "Quarterly revenue grew by ten percent.",
      "The striker scored a header in the final minute.",
      "A late goal won the football match.",
    ]);
    const related1 = cosine(cat as number[], kitten as number[]);
    const related2 = cosine(striker as number[], goal as number[]);
    expect(related1).toBeGreaterThan(cosine(cat as number[], revenue as number[]) + 0.2);
    expect(related1).toBeGreaterThan(cosine(cat as number[], goal as number[]) + 0.2);
    expect(related2).toBeGreaterThan(cosine(striker as number[], revenue as number[]) + 0.2);
    expect(related2).toBeGreaterThan(cosine(striker as number[], kitten as number[]) + 0.2);
  });

  it("keeps the main event loop responsive while embedding 50 passages", async () => {
    const texts = passages(50);
    const words = texts.reduce((n, t) => n + t.split(/\s+/).length, 0) / texts.length;
    expect(words).toBeGreaterThan(180);
    const before = cpuTicks();
    const started = performance.now();
    const { value: vectors, turns } = await withLoopTurns(embedder.embed(texts));
    const elapsed = performance.now() - started;
    const used = cpuTicksSince(before);
    expect(vectors).toHaveLength(50);
    console.log(
      `embedded 50 passages (~${Math.round(words)} words) in ${elapsed.toFixed(0)} ms = ` +
        `${((50 * 1000) / elapsed).toFixed(1)} texts/s on ${embedder.threadCount} thread(s); ` +
        `CPU ticks: ${used.mainThread} on the main thread of ${used.process} in all; ${turns} loop turns`,
    );
    // Where the CPU went, not how long anything took: the model's work shows up as CPU time of the
    // process, and almost none of it may be the main thread's (on it, all of it would be).
    expect(used.process).toBeGreaterThan(20);
    expect(used.mainThread).toBeLessThan(used.process / 5);
    // And the loop kept serving timers meanwhile (one blocked by the work would serve none until it ended).
    expect(turns).toBeGreaterThan(10);
  });
});

describe("embedder lifecycle", () => {
  it("runs the configured number of threads and terminates them on close", async () => {
    const embedder = new UseLiteEmbedder({ threads: 2 });
    expect(embedder.threadCount).toBe(2);
    const texts = ["first text", "second text", "third text"];
    const vectors = await embedder.embed(texts);
    expect(vectors).toHaveLength(3);
    // Work spread over two threads still comes back in order.
    const [again] = await embedder.embed(["second text"]);
    expect(cosine(vectors[1] as number[], again as number[])).toBeCloseTo(1, 5);
    await embedder.close();
    expect(embedder.threadCount).toBe(0);
    await expect(embedder.embed(["after close"])).rejects.toThrow("the embedder is closed");
    await embedder.close(); // idempotent
  });

  it("knows its embedders by name", () => {
    expect(EMBEDDER_NAMES).toEqual(["bge-small", "use-lite"]);
    expect(() => createEmbedder("no-such-model")).toThrow(
      'unknown embedder "no-such-model"; available: bge-small, use-lite',
    );
  });
});
