import { describe, expect, it } from "vitest";
import {
  chooseOnDev,
  type EvalResult,
  type QueryScore,
  renderEvalSection,
  type SweepCandidate,
  scoreRanking,
  splitFigures,
} from "../../bench/lib/eval-report.ts";
import { reciprocalRankAt } from "../../bench/lib/metrics.ts";
import { type SearchTuning, TUNED_SEARCH } from "../../store/search/tuning.ts";

const judged = (...relevant: string[]) => new Map(relevant.map((id) => [id, 1]));

// Four queries, one relevant abstract each, found at a known rank (or not at all).
// nDCG@10 of a single relevant result at rank r is 1 / log2(r + 1): rank 1 → 1, rank 3 → 0.5.
const rankings: { id: string; half: "dev" | "test"; ranked: string[]; relevant: string }[] = [
  { id: "q1", half: "dev", ranked: ["a", "x", "y"], relevant: "a" }, // rank 1
  { id: "q2", half: "dev", ranked: ["x", "y", "b"], relevant: "b" }, // rank 3
  { id: "q3", half: "test", ranked: ["x", "y", "z"], relevant: "c" }, // missed
  { id: "q4", half: "test", ranked: [], relevant: "d" }, // no result at all
];
const scores: QueryScore[] = rankings.map((r) => scoreRanking(r.id, r.ranked, judged(r.relevant)));
const halfOf = (id: string) => rankings.find((r) => r.id === id)?.half as "dev" | "test";

describe("eval figures per half of the split", () => {
  it("averages each half over its own queries only", () => {
    const f = splitFigures(scores, halfOf);
    expect(f.dev.queries).toBe(2);
    expect(f.test.queries).toBe(2);
    expect(f.dev.ndcg10).toBeCloseTo((1 + 0.5) / 2, 12);
    expect(f.test.ndcg10).toBe(0);
    expect(f.all.ndcg10).toBeCloseTo(1.5 / 4, 12);
    expect(f.dev.mrr10).toBeCloseTo((1 + 1 / 3) / 2, 12);
    expect(f.dev.recall100).toBe(1);
    expect(f.test.recall100).toBe(0);
    expect(f.test.empty).toBe(1);
    expect(f.dev.empty).toBe(0);
  });

  it("reports null, not NaN, for an empty half (the result stays JSON)", () => {
    const f = splitFigures(
      scores.filter((s) => halfOf(s.id) === "dev"),
      halfOf,
    );
    expect(f.test).toEqual({ queries: 0, ndcg10: null, recall100: null, mrr10: null, empty: 0 });
  });

  it("MRR@10 counts the first relevant result within 10 only", () => {
    const ranked = Array.from({ length: 12 }, (_, i) => `d${i + 1}`);
    expect(reciprocalRankAt(ranked, judged("d4"), 10)).toBeCloseTo(0.25, 12);
    expect(reciprocalRankAt(ranked, judged("d11"), 10)).toBe(0);
    expect(reciprocalRankAt(ranked, new Map([["d1", 0]]), 10)).toBe(0);
  });
});

function candidate(
  parameter: keyof SearchTuning,
  value: string | number,
  dev: number,
  test: number,
): SweepCandidate {
  const f = (ndcg10: number) => ({ queries: 150, ndcg10, recall100: 0.9, mrr10: 0.6, empty: 0 });
  return {
    parameter,
    value,
    isDefault: TUNED_SEARCH[parameter] === value,
    tuning: { ...TUNED_SEARCH, [parameter]: value } as SearchTuning,
    figures: { dev: f(dev), test: f(test), all: f((dev + test) / 2) },
  };
}

describe("choosing the defaults on the dev split", () => {
  it("picks by dev nDCG@10 and ignores test; a tie keeps the default", () => {
    const candidates = [
      candidate("fusion", "blend", 0.7, 0.6),
      candidate("fusion", "rrf", 0.69, 0.9), // better on test only: not chosen
      candidate("blendVectorWeight", 0.4, 0.71, 0.5), // better on dev: chosen
      candidate("blendVectorWeight", 0.5, 0.7, 0.6),
      candidate("keywordRank", "ts_rank_cd/0", 0.7, 0.7), // a tie with the default
      candidate("keywordRank", "ts_rank/1", 0.7, 0.6),
    ];
    expect(chooseOnDev({ ...TUNED_SEARCH }, candidates)).toEqual({
      ...TUNED_SEARCH,
      fusion: "blend",
      blendVectorWeight: 0.4,
      keywordRank: "ts_rank/1",
    });
  });
});

describe("renderEvalSection", () => {
  const f = splitFigures(scores, halfOf);
  const candidates = [candidate("fusion", "blend", 0.7, 0.6), candidate("fusion", "rrf", 0.69, 0.9)];
  const result: EvalResult = {
    kind: "scifact-eval",
    started: "2026-11-26T10:00:00.000Z",
    command: "npm run eval -- --sweep",
    revision: "abc1234 (clean)",
    machine: "test cpu (2 cores, 8 GB), Node 20, linux",
    model: "bge-small",
    threads: 2,
    corpus: 5183,
    split: {
      file: "bench/scifact-split.json",
      method: "by hash",
      tuning: "dev",
      dev: 150,
      test: 150,
      note: "no train qrels,",
    },
    queries: { dev: 2, test: 2 },
    tuning: { ...TUNED_SEARCH },
    ingestion: "5183 of 5183 documents `done`",
    modes: [
      { mode: "hybrid", label: "hybrid", figures: f, p50: 10, p95: 20 },
      { mode: "rerank", label: "rerank", unavailable: "no reranker", figures: null, p50: null, p95: null },
    ],
    sweep: {
      mode: "hybrid",
      chosenBy: "dev nDCG@10",
      defaults: { ...TUNED_SEARCH },
      candidates,
      chosen: chooseOnDev({ ...TUNED_SEARCH }, candidates),
    },
    published: "BM25 0.679",
  };

  it("is built from a JSON-serialisable result", () => {
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it("shows dev and test separately, says which was used for tuning, and lists the sweep", () => {
    const md = renderEvalSection(JSON.parse(JSON.stringify(result)) as EvalResult);
    expect(md).toMatch(/^## Retrieval quality \(SciFact\)/);
    expect(md).toContain("tuned on the dev split only");
    expect(md).toContain("| hybrid | 0.750 | **0.000** |");
    expect(md).toContain("- rerank: not available (no reranker)");
    expect(md).toContain("| fusion | `blend` | 0.700 | 0.600 | 0.900 | 0.900 | default, chosen on dev |");
    expect(md).toContain("| fusion | `rrf` | 0.690 | 0.900 |");
    expect(md).toContain("The dev split chooses every default as it is");
  });
});
