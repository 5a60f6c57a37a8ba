import { describe, expect, it } from "vitest";
import type { ChurnOptions, ChurnResult, ChurnSnapshot } from "../../bench/churn.ts";
import type { TableSizes } from "../../bench/lib/churn.ts";
import { CHURN_HEADING, churnComparisons, renderChurnSection } from "../../bench/lib/churn-report.ts";
import { scenario } from "../../bench/scenarios.ts";

// The section of the churn scenario (issue #25 point 2), from made-up figures: its verdicts are computed from
// them, so they must flip when the figures do.

const MB = 1_048_576;

const options: ChurnOptions = {
  adds: 100_000,
  deletes: 50_000,
  updates: 50_000,
  tags: 1,
  chunksPerDoc: 1,
  rounds: 10,
  maintain: "rounds",
  searches: 300,
  seed: 25,
  steps: false,
};

const table = (name: string, heapMb: number, indexes: Record<string, number>): TableSizes => ({
  table: name,
  heap: heapMb * MB,
  toast: 0,
  live: 50_000,
  dead: 0,
  indexes: Object.fromEntries(Object.entries(indexes).map(([k, v]) => [k, v * MB])),
});

function state(label: string, chunksHeapMb: number, hnswMb: number, p95: number): ChurnSnapshot {
  return {
    label,
    chunks: table("chunks", chunksHeapMb, {
      chunks_hnsw_bge_small_en_v1_5: hnswMb,
      chunks_tsv_gin: 3,
      tiny_idx: 0.004,
    }),
    documents: table("documents", 40, { documents_pkey: 2 }),
    memories: table("memories", 20, { memories_hnsw_bge_small_en_v1_5: hnswMb }),
    search: { n: 300, p50: p95 / 2, p95, mean: p95 / 2, max: p95 * 1.5 },
  };
}

function result(after: ChurnSnapshot): ChurnResult {
  return {
    liveDocuments: 50_000,
    churnSeconds: 3_000,
    passes: [
      {
        round: 1,
        ms: 4_000,
        pass: {
          vacuumed: ["chunks"],
          reindexed: ["chunks_hnsw_bge_small_en_v1_5"],
          compacted: [],
          steps: [
            { step: "reindex", target: "chunks_hnsw_bge_small_en_v1_5", ms: 3_500 },
            { step: "vacuum", target: "chunks", ms: 500 },
          ],
          deferred: [],
        },
      },
      {
        round: 2,
        ms: 9_000,
        pass: {
          vacuumed: [],
          reindexed: [],
          compacted: ["chunks"],
          steps: [{ step: "compact", target: "chunks", ms: 9_000 }],
          deferred: [],
        },
      },
    ],
    afterChurn: after,
    fresh: state("fresh load", 100, 80, 30),
    freshLoadSeconds: 700,
    totalSeconds: 4_000,
  };
}

const row = (lines: string[], start: string) => lines.find((l) => l.startsWith(start)) ?? "";

describe("the churn section", () => {
  it("compares every table's heap and index and the search with the fresh load", () => {
    const what = churnComparisons(result(state("after", 110, 90, 33))).map((c) => c.what);
    expect(what).toEqual([
      "chunks heap",
      "chunks: chunks_hnsw_bge_small_en_v1_5",
      "chunks: chunks_tsv_gin",
      "chunks: tiny_idx",
      "documents heap",
      "documents: documents_pkey",
      "memories heap",
      "memories: memories_hnsw_bge_small_en_v1_5",
      "search p50",
      "search p95",
    ]);
  });

  it("says within or over 1.2× from the figures", () => {
    const flat = renderChurnSection(result(state("after", 110, 90, 33)), options);
    expect(flat[0]).toBe(CHURN_HEADING);
    expect(row(flat, "| chunks heap |")).toMatch(/\| 1\.10× \| within \|$/);
    expect(row(flat, "| search p95 |")).toMatch(/\| 1\.10× \| within \|$/);
    expect(flat.join("\n")).toContain("Every size of a page or more and the search p95 are within 1.2×");

    const bloated = renderChurnSection(result(state("after", 150, 200, 45)), options);
    expect(row(bloated, "| chunks heap |")).toMatch(/\| 1\.50× \| over \|$/);
    expect(row(bloated, "| search p95 |")).toMatch(/\| 1\.50× \| over \|$/);
    expect(bloated.join("\n")).toContain(
      "Over 1.2× of the fresh load: chunks heap 1.50×, chunks: chunks_hnsw_bge_small_en_v1_5 2.50×",
    );
  });

  it("does not judge an index smaller than a page, and names the passes' longest statement", () => {
    const lines = renderChurnSection(result(state("after", 110, 90, 33)), options);
    expect(row(lines, "| chunks: tiny_idx |")).toMatch(/\(under a page\) \|$/);
    expect(row(lines, "| search p50 |")).toMatch(/\| — \|$/);
    const text = lines.join("\n");
    expect(text).toContain("2 passes: 1 VACUUMs, 1 HNSW rebuilds, 1 compactions");
    expect(text).toContain("the longest single statement 9000 ms (compact chunks, round 2)");
  });

  it("is a scenario of npm run bench with the issue's sizes by default", () => {
    const churn = scenario("churn");
    expect(churn?.options({}, { threads: 2 })).toMatchObject({
      adds: 100_000,
      deletes: 50_000,
      updates: 50_000,
      maintain: "rounds",
    });
    expect(() => churn?.options({ "churn-adds": "10", "churn-deletes": "20" }, { threads: 2 })).toThrow(
      /cannot exceed/,
    );
    expect(churn?.headline?.(result(state("after", 110, 200, 33)))).toEqual({
      "months: worst size, p95 vs fresh": "2.50× (chunks: chunks_hnsw_bge_small_en_v1_5), 1.10×",
    });
  });
});
