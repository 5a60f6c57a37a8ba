import { describe, expect, it } from "vitest";
import { MEMORY_SEARCH_HEADING, renderMemorySearchSection } from "../../bench/lib/memory-search-report.ts";
import type { MemorySearchOptions, MemorySearchResult } from "../../bench/search-memories.ts";

// The section of the search-memories scenario, from made-up figures: its verdicts and the store-alone column
// are computed from them, so they must change when the figures do.

const summary = (p50: number, p95: number) => ({ n: 200, p50, p95, mean: p50, max: p95 * 1.2 });

const options: MemorySearchOptions = { memories: 100_000, tags: 1000, searches: 200, clients: 8, threads: 2 };
const BIG = '"all" (every memory)';

function result(sequentialP95: number, concurrentP95: number, storeP95?: number): MemorySearchResult {
  return {
    embedder: { name: "bge-small", model: "bge-small-en-v1.5" },
    memories: 100_000,
    fillMs: 900_000,
    fillRate: 222,
    sizes: { heapMb: 220, indexes: [{ name: "memories_hnsw_bge_small_en_v1_5", mb: 390 }], live: 200_000 },
    store:
      storeP95 === undefined
        ? []
        : [{ scope: BIG, latency: summary(storeP95 / 2, storeP95), meanResults: 10 }],
    sequential: [
      {
        route: "POST /v4/search (memories)",
        scope: BIG,
        client: summary(sequentialP95 / 2, sequentialP95),
        server: summary(sequentialP95 / 2 - 3, sequentialP95 - 3),
        errors: 0,
        meanResults: 10,
      },
    ],
    concurrent: [
      {
        route: "POST /v4/search (memories)",
        scope: BIG,
        clients: 8,
        requests: 400,
        latency: summary(concurrentP95 / 2, concurrentP95),
        errors: 0,
        throughput: 40,
      },
    ],
  };
}

describe("the memory search section", () => {
  it("computes its verdicts from the figures against the issue's goals", () => {
    const within = renderMemorySearchSection(result(48, 140, 30), options).join("\n");
    expect(within.startsWith(MEMORY_SEARCH_HEADING)).toBe(true);
    expect(within).toMatch(
      /\| "all" \(every memory\) \| 15\.0 ms \| 30\.0 ms \| 24\.0 ms \| 48\.0 ms \|.*\| within \|/,
    );
    expect(within).toMatch(/\| "all" \(every memory\) \| 8 \|.*\| 140 ms \|.*\| within \|/);
    const over = renderMemorySearchSection(result(61, 300, 30), options).join("\n");
    expect(over).toMatch(/\| 61\.0 ms \|.*\| over \|/);
    expect(over).toMatch(/\| 300 ms \|.*\| over \|/);
  });

  it("says n/a where the store alone was not measured, and names a reused store", () => {
    const text = renderMemorySearchSection({ ...result(40, 100), reusedStore: "/tmp/kept" }, options).join(
      "\n",
    );
    expect(text).toMatch(/\| "all" \(every memory\) \| n\/a \| n\/a \|/);
    expect(text).toContain("reused a store kept in /tmp/kept");
  });
});
