import { describe, expect, it } from "vitest";
import { mean, ndcgAt, recallAt } from "../../bench/lib/metrics.ts";

const judged = (entries: [string, number][]) => new Map(entries);

describe("ndcgAt", () => {
  it("is 1 for the ideal ranking and 0 without a relevant result", () => {
    const q = judged([
      ["a", 1],
      ["b", 1],
    ]);
    expect(ndcgAt(["a", "b", "x"], q, 10)).toBeCloseTo(1, 12);
    expect(ndcgAt(["b", "a"], q, 10)).toBeCloseTo(1, 12);
    expect(ndcgAt(["x", "y"], q, 10)).toBe(0);
    expect(ndcgAt([], q, 10)).toBe(0);
  });

  it("discounts by log2(rank + 1)", () => {
    // One relevant document at rank 3: DCG = 1/log2(4) = 0.5, ideal = 1/log2(2) = 1.
    expect(ndcgAt(["x", "y", "a"], judged([["a", 1]]), 10)).toBeCloseTo(0.5, 12);
    // Two relevant, found at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5) = 0.6309 + 0.4307; ideal = 1 + 0.6309.
    const q = judged([
      ["a", 1],
      ["b", 1],
    ]);
    const dcg = 1 / Math.log2(3) + 1 / Math.log2(5);
    const ideal = 1 + 1 / Math.log2(3);
    expect(ndcgAt(["x", "a", "y", "b"], q, 10)).toBeCloseTo(dcg / ideal, 12);
    expect(ndcgAt(["x", "a", "y", "b"], q, 10)).toBeCloseTo(0.6509209298071326, 12);
  });

  it("uses graded gains, the ideal from the qrels and the cut-off k", () => {
    const q = judged([
      ["a", 2],
      ["b", 1],
      ["c", 0],
    ]);
    // Ranked b, a: DCG = 1 + 2/log2(3); ideal a, b: 2 + 1/log2(3).
    expect(ndcgAt(["b", "a"], q, 10)).toBeCloseTo((1 + 2 / Math.log2(3)) / (2 + 1 / Math.log2(3)), 12);
    // A judged-non-relevant document (grade 0) earns nothing.
    expect(ndcgAt(["c"], q, 10)).toBe(0);
    // Only the first k ranks count; the ideal is cut at k too: k = 1 → 1 / 2.
    expect(ndcgAt(["b", "a"], q, 1)).toBeCloseTo(0.5, 12);
    // More relevant documents than k: the ideal has k of them, so a perfect top k scores 1.
    const many = judged([
      ["a", 1],
      ["b", 1],
      ["c", 1],
    ]);
    expect(ndcgAt(["a", "b"], many, 2)).toBeCloseTo(1, 12);
    // Relevant documents the ranking misses lower the score through the ideal DCG.
    expect(ndcgAt(["a"], many, 10)).toBeCloseTo(1 / (1 + 1 / Math.log2(3) + 1 / Math.log2(4)), 12);
  });

  it("counts a repeated document once, at its first rank", () => {
    expect(ndcgAt(["a", "a"], judged([["a", 1]]), 10)).toBeCloseTo(1, 12);
    expect(ndcgAt(["x", "x", "a"], judged([["a", 1]]), 10)).toBeCloseTo(1 / Math.log2(3), 12);
  });
});

describe("recallAt", () => {
  const q = judged([
    ["a", 1],
    ["b", 1],
    ["c", 1],
    ["n", 0],
  ]);
  it("is the share of relevant documents in the first k", () => {
    expect(recallAt(["a", "x", "c"], q, 100)).toBeCloseTo(2 / 3, 12);
    expect(recallAt(["a", "x", "c"], q, 2)).toBeCloseTo(1 / 3, 12);
    expect(recallAt(["n"], q, 100)).toBe(0);
    expect(recallAt([], q, 100)).toBe(0);
    expect(recallAt(["c", "b", "a"], q, 3)).toBe(1);
  });
  it("is 0 for a query without relevant documents", () => {
    expect(recallAt(["a"], judged([["a", 0]]), 100)).toBe(0);
  });
});

describe("mean", () => {
  it("averages, NaN when empty", () => {
    expect(mean([1, 0, 0.5])).toBeCloseTo(0.5, 12);
    expect(mean([])).toBeNaN();
  });
});
