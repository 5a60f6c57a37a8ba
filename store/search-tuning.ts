// The constants of hybrid search that were chosen by measuring retrieval quality, in one place.
//
// They are chosen on the development half of SciFact's judged queries only and reported on the other,
// held-out half (bench/scifact-split.json: this copy of SciFact has no train judgements, so the
// 300 judged test queries are split in two). The figures cited below come from
// `npm run eval -- --sweep` (bench/eval.ts), which runs every candidate through POST /v3/search.

/**
 * How the two rankings combine. rrf: reciprocal rank fusion (ranks only, no score calibration
 * needed). blend: each side's scores (cosine similarity, ts_rank) min-max normalised over its
 * candidates, then averaged with `blendVectorWeight`.
 */
export type Fusion = "rrf" | "blend";

/** How the keyword side ranks a chunk: Postgres ts_rank or ts_rank_cd with a length normalisation flag. */
export type KeywordRank = "ts_rank/1" | "ts_rank/0" | "ts_rank_cd/0";

export interface SearchTuning {
  fusion: Fusion;
  /** blend only: the vector side's weight; the keyword side gets 1 − this. */
  blendVectorWeight: number;
  keywordRank: KeywordRank;
  /**
   * Query terms found in more than this share of rows are left out of the keyword query (unless no
   * other term is left): like stop words, they barely change the ranking, but ranking every row that
   * contains one is what made keyword search slow on large stores.
   */
  maxTermFrequency: number;
}

/**
 * The defaults. Dev / test nDCG@10 of hybrid search with bge-small, each candidate varied alone from
 * these defaults (`npm run eval -- --sweep`, 150 dev and 150 test queries):
 * - fusion: blend DEV_TEST_FUSION_BLEND, rrf DEV_TEST_FUSION_RRF.
 * - blendVectorWeight: DEV_TEST_WEIGHTS.
 * - keywordRank: DEV_TEST_RANKS.
 * - maxTermFrequency: DEV_TEST_MTF.
 */
export const TUNED_SEARCH: Readonly<SearchTuning> = Object.freeze({
  fusion: "blend",
  blendVectorWeight: 0.5,
  keywordRank: "ts_rank/1",
  maxTermFrequency: 0.03,
});

let current: Readonly<SearchTuning> = TUNED_SEARCH;

/** The tuning searches run with: TUNED_SEARCH unless an evaluation replaced it. */
export function searchTuning(): Readonly<SearchTuning> {
  return current;
}

/**
 * Evaluation only (bench/eval.ts --sweep runs the service in its own process and measures each
 * candidate): searches started after this call use `changes` over TUNED_SEARCH. No argument restores it.
 */
export function setSearchTuning(changes: Partial<SearchTuning> = {}): void {
  if (
    changes.blendVectorWeight !== undefined &&
    !(changes.blendVectorWeight >= 0 && changes.blendVectorWeight <= 1)
  )
    throw new Error(`blendVectorWeight must be within 0..1, got ${changes.blendVectorWeight}`);
  if (changes.maxTermFrequency !== undefined && !(changes.maxTermFrequency > 0))
    throw new Error(`maxTermFrequency must be above 0, got ${changes.maxTermFrequency}`);
  current = Object.keys(changes).length ? Object.freeze({ ...TUNED_SEARCH, ...changes }) : TUNED_SEARCH;
}

/** The SQL ranking function of the keyword side, over the alias's tsv and the query's `tsq`. */
export function keywordRankSql(rank: KeywordRank, alias: "c" | "m"): string {
  const [fn, normalization] = rank.split("/") as [string, string];
  return `${fn}(${alias}.tsv, (SELECT tsq FROM query), ${Number(normalization)})`;
}
