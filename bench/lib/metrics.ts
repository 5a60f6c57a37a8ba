// Retrieval metrics as BEIR reports them (pytrec_eval / trec_eval): graded gains from the qrels,
// log2 discount, the ideal ranking built from the qrels alone.

/** Relevance judgements of one query: document id → grade (0 = judged not relevant). */
type Judgements = ReadonlyMap<string, number>;

/** Document ids in rank order, each once (a repeated id after its first rank is ignored). */
function distinct(ranked: readonly string[]): string[] {
  return [...new Set(ranked)];
}

/** nDCG@k: sum over ranks r ≤ k of grade / log2(r + 1), divided by the same sum over the ideal ranking. */
export function ndcgAt(ranked: readonly string[], qrels: Judgements, k: number): number {
  const dcg = distinct(ranked)
    .slice(0, k)
    .reduce((sum, id, i) => sum + Math.max(0, qrels.get(id) ?? 0) / Math.log2(i + 2), 0);
  const ideal = [...qrels.values()]
    .filter((g) => g > 0)
    .sort((a, b) => b - a)
    .slice(0, k)
    .reduce((sum, g, i) => sum + g / Math.log2(i + 2), 0);
  return ideal > 0 ? dcg / ideal : 0;
}

/** recall@k: share of the relevant documents (grade > 0) found in the first k ranks. */
export function recallAt(ranked: readonly string[], qrels: Judgements, k: number): number {
  const relevant = [...qrels.entries()].filter(([, g]) => g > 0).map(([id]) => id);
  if (!relevant.length) return 0;
  const top = new Set(distinct(ranked).slice(0, k));
  return relevant.filter((id) => top.has(id)).length / relevant.length;
}

/** Reciprocal rank of the first relevant document (grade > 0) within the first k ranks, else 0 (MRR@k per query). */
export function reciprocalRankAt(ranked: readonly string[], qrels: Judgements, k: number): number {
  const i = distinct(ranked)
    .slice(0, k)
    .findIndex((id) => (qrels.get(id) ?? 0) > 0);
  return i === -1 ? 0 : 1 / (i + 1);
}

export function mean(values: readonly number[]): number {
  return values.length ? values.reduce((s, v) => s + v, 0) / values.length : Number.NaN;
}
