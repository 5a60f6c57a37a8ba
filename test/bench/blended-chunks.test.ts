// The search stores past SciFact's ~120,000 chunks (bench/lib/blended-chunks.ts), and the sizing the scale
// report derives from a seeded store's figures (bench/lib/scale-report.ts).

import { describe, expect, it } from "vitest";
import { blendedDocuments, blendVectors } from "../../bench/lib/blended-chunks.ts";
import {
  SCALE_SEARCH_GOAL,
  SIZING_CHUNKS,
  searchGoalVerdict,
  seedingLines,
} from "../../bench/lib/scale-report.ts";
import type { LoadRun, Seeding } from "../../bench/scale.ts";

const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] as number) * (b[i] as number);
  return s;
};
const unit = (v: number[]) => {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};

describe("blended chunks", () => {
  const texts = ["alpha beta gamma.", "delta epsilon.", "zeta eta theta iota.", "kappa lambda."];
  const vectors = [unit([1, 0, 0, 0]), unit([0, 1, 0, 0]), unit([0, 0, 1, 1]), unit([1, 1, 1, 0])];

  it("blends two vectors into a unit vector between them", () => {
    const v = blendVectors(vectors[0] as number[], vectors[1] as number[]);
    expect(dot(v, v)).toBeCloseTo(1, 6);
    expect(dot(v, vectors[0] as number[])).toBeCloseTo(Math.SQRT1_2, 6);
    expect(dot(v, vectors[1] as number[])).toBeCloseTo(Math.SQRT1_2, 6);
    expect(() => blendVectors([1, 0], [1, 0, 0])).toThrow(/2 and 3/);
  });

  it("yields exactly the chunks asked for, in documents of the size asked, each two base texts joined with their blended vector", () => {
    const docs = [...blendedDocuments({ texts, vectors }, 23, { perDocument: 5, seed: 3 })];
    expect(docs.map((d) => d.pieces.length)).toEqual([5, 5, 5, 5, 3]);
    expect(new Set(docs.map((d) => d.abstractId)).size).toBe(5);
    for (const d of docs) {
      expect(d.vectors).toHaveLength(d.pieces.length);
      d.pieces.forEach((piece, k) => {
        const parts = texts.flatMap((a, i) =>
          texts.map((b, j) => (i !== j && piece === `${a} ${b}` ? [i, j] : undefined)),
        );
        const [i, j] = parts.find((p) => p !== undefined) as number[];
        expect(d.vectors[k]).toEqual(
          blendVectors(vectors[i as number] as number[], vectors[j as number] as number[]),
        );
      });
    }
  });

  it("repeats for a seed and differs between seeds", () => {
    const pieces = (seed: number) =>
      [...blendedDocuments({ texts, vectors }, 12, { seed })].flatMap((d) => d.pieces);
    expect(pieces(7)).toEqual(pieces(7));
    expect(pieces(7)).not.toEqual(pieces(8));
  });

  it("is generated lazily, one document at a time", () => {
    const source = blendedDocuments({ texts, vectors }, 1_000_000_000, { perDocument: 2 });
    expect(source.next().value?.pieces).toHaveLength(2);
    expect(source.next().value?.pieces).toHaveLength(2);
  });

  it("refuses base texts and vectors that do not pair up", () => {
    expect(() => [...blendedDocuments({ texts, vectors: vectors.slice(1) }, 3)]).toThrow(
      /4 base texts but 3/,
    );
    expect(() => [...blendedDocuments({ texts: ["one"], vectors: [[1]] }, 3)]).toThrow(/at least two/);
  });
});

describe("the sizing derived from a seeded store", () => {
  const seeding = (chunks: number, hnswMs: number): Seeding => ({
    chunks,
    blended: chunks - 100_000,
    seedMs: 1,
    loadMs: 1,
    secondaryIndexMs: 1,
    hnswMs,
    analyzeMs: 1,
    buildMemory: "3000MB",
    tableBytes: chunks * 2048,
    hnswBytes: chunks * 1024,
    chunksTotalBytes: chunks * 4096,
    documentsTotalBytes: chunks * 1024,
  });

  it("scales the run's per-chunk sizes and build time to the sizing target", () => {
    const text = seedingLines(seeding(1_000_000, 1_800_000), 2).join("\n");
    // 5,120 bytes a chunk (chunks and documents with their indexes) × 10,000,000 = 47.7 GiB, and so on.
    expect(SIZING_CHUNKS).toBe(10_000_000);
    expect(text).toContain("900,000 blends of two of them");
    expect(text).toContain("48 GiB of disk");
    expect(text).toContain("an HNSW index of 9.54 GiB");
    expect(text).toContain("maintenance_work_mem of about 14 GiB");
    // 30 minutes for a million chunks: at least 5 hours for ten million.
    expect(text).toContain("at least 5.0 h for that rebuild on 2 cores");
    expect(seedingLines(seeding(1_000_000, 3_600_000), 2).join("\n")).toContain("at least 10.0 h");
  });
});

describe("the scale search goal (issue #25 point 4)", () => {
  const run = (apis: number, connections: number, p95: number, errors = 0): LoadRun => ({
    label: `${apis}x${connections}`,
    apis,
    connections,
    durationS: 15,
    requests: 400,
    perSecond: 26,
    latency: { n: 400, mean: p95 / 2, p50: p95 / 2, p95, p99: p95 * 1.5, max: p95 * 2 },
    errors,
    non2xx: 0,
    load: [1, 2],
  });

  it("judges the one-connection row of a million-chunk store against 100 ms", () => {
    expect(SCALE_SEARCH_GOAL).toEqual({ chunks: 1_000_000, p95Ms: 100 });
    const rows = [run(1, 4, 170), run(1, 1, 45)];
    expect(searchGoalVerdict(1_000_000, rows)).toMatch(/45\.0 ms with 0 failed requests, \*\*within\*\*/);
    expect(searchGoalVerdict(1_000_000, [run(1, 1, 126)])).toMatch(/\*\*over\*\*/);
    expect(searchGoalVerdict(1_000_000, [run(1, 1, 45, 2)])).toMatch(/2 failed requests, \*\*over\*\*/);
  });

  it("says nothing for a smaller store or without a one-connection row", () => {
    expect(searchGoalVerdict(10_000, [run(1, 1, 20)])).toBe("");
    expect(searchGoalVerdict(1_000_000, [run(1, 4, 20)])).toBe("");
  });
});
