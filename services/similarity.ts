// The `similarity` a /v4/search result reports, from the cosine similarity of its embedding to the query's.
//
// Clients filter on it with fixed thresholds (assistant toolkits send 0.6), but an embedding model's cosines
// are compressed into a band of its own: with bge-small-en-v1.5, a short saved fact asked for in other words
// scored 0.568 / 0.642 / 0.719 (p10 / p50 / p90) and the other facts of the same container 0.453 / 0.508 (p50 /
// p90), so a quarter of the right answers fell under 0.6 although almost no wrong one reached it
// (`npm run eval -- --scores`, docs/benchmarks.md). So the reported value is the cosine mapped piecewise
// linearly through (0, 0), (pivot, 0.6) and (1, 1): monotone, so ranking is unchanged, and a model's `pivot`
// is the cosine at which its relevant and irrelevant results part. Models not measured are reported as they are.

/** Where a threshold of 0.6 should cut, per embedding model (measured, see above). */
const PIVOT_BY_MODEL: Readonly<Record<string, number>> = {
  "bge-small-en-v1.5": 0.53,
};

/** What a threshold of 0.6 means: "more likely relevant than not". */
const PIVOT_SCORE = 0.6;

/** The reported similarity (0–1) for a cosine similarity under `model`; the identity for unmeasured models. */
export function reportedSimilarity(model: string, cosine: number): number {
  const pivot = PIVOT_BY_MODEL[model];
  const c = Math.min(1, Math.max(0, cosine));
  if (pivot === undefined) return c;
  return c <= pivot
    ? (c / pivot) * PIVOT_SCORE
    : PIVOT_SCORE + ((c - pivot) / (1 - pivot)) * (1 - PIVOT_SCORE);
}

/** The cosine behind a reported similarity (the inverse of reportedSimilarity; for the evaluation's tables). */
export function cosineOf(model: string, reported: number): number {
  const pivot = PIVOT_BY_MODEL[model];
  if (pivot === undefined) return reported;
  return reported <= PIVOT_SCORE
    ? (reported / PIVOT_SCORE) * pivot
    : pivot + ((reported - PIVOT_SCORE) / (1 - PIVOT_SCORE)) * (1 - pivot);
}
