// The second stage of `rerank: true` when no cross-encoder is installed (no package registry ships
// one; see docs/models.md): candidates are rescored by exact Okapi BM25 (corpus document
// frequencies from the GIN index, not ts_rank_cd's IDF-free score) blended with their dense cosine
// similarity, each min-max normalised over the candidates. Named in responses as RESCORER_MODEL so a
// caller can tell it from a cross-encoder.

import type { Database } from "../store/db.ts";
import { bm25, termStatistics } from "../store/search/bm25.ts";

export const RESCORER_MODEL = "bm25-dense-rescorer";
/** Weight of the dense side; the lexical side gets the rest. Fixed at half, not tuned on the evaluation set. */
export const DENSE_WEIGHT = 0.5;

export interface RescoreCandidate {
  id: string;
  table: "chunks" | "memories";
  similarity: number;
}

/** Scores in 0..1 per candidate id, higher is better. */
export async function rescore(
  db: Database,
  query: string,
  candidates: RescoreCandidate[],
): Promise<Map<string, number>> {
  const lexical = new Map<string, number>();
  for (const table of ["chunks", "memories"] as const) {
    const ids = candidates.filter((c) => c.table === table).map((c) => c.id);
    if (!ids.length) continue;
    for (const [id, score] of bm25(await termStatistics(db, table, query, ids))) lexical.set(id, score);
  }
  const dense = normalise(new Map(candidates.map((c) => [c.id, c.similarity])));
  const sparse = normalise(new Map(candidates.map((c) => [c.id, lexical.get(c.id) ?? 0])));
  return new Map(
    candidates.map((c) => [
      c.id,
      DENSE_WEIGHT * (dense.get(c.id) ?? 0) + (1 - DENSE_WEIGHT) * (sparse.get(c.id) ?? 0),
    ]),
  );
}

function normalise(values: Map<string, number>): Map<string, number> {
  const all = [...values.values()];
  const lo = Math.min(...all);
  const hi = Math.max(...all);
  return new Map([...values].map(([id, v]) => [id, hi > lo ? (v - lo) / (hi - lo) : all.length ? 1 : 0]));
}
