import { describe, expect, it } from "vitest";
import { reportedSimilarity } from "../../services/similarity.ts";

describe("the similarity /v4/search reports", () => {
  const bge = "bge-small-en-v1.5";

  it("maps bge-small's cosine so that 0.6 cuts where its relevant and irrelevant results part", () => {
    expect(reportedSimilarity(bge, 0.53)).toBeCloseTo(0.6, 10);
    // The measured spread of short facts asked in other words: relevant p10 0.568 lands above 0.6,
    // irrelevant p90 0.508 below it.
    expect(reportedSimilarity(bge, 0.568)).toBeGreaterThan(0.6);
    expect(reportedSimilarity(bge, 0.508)).toBeLessThan(0.6);
    expect(reportedSimilarity(bge, 0)).toBe(0);
    expect(reportedSimilarity(bge, 1)).toBe(1);
  });

  it("keeps the order of results (monotone) and stays within 0..1", () => {
    let previous = -1;
    for (let c = -0.2; c <= 1.2; c += 0.01) {
      const s = reportedSimilarity(bge, c);
      expect(s).toBeGreaterThanOrEqual(previous);
      expect(s).toBeGreaterThanOrEqual(0);
      expect(s).toBeLessThanOrEqual(1);
      previous = s;
    }
  });

  it("reports an unmeasured model's cosine as it is", () => {
    expect(reportedSimilarity("use-lite", 0.42)).toBe(0.42);
  });
});
