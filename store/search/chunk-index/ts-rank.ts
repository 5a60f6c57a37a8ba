// PostgreSQL's ts_rank(tsv, query, 1) for the keyword queries of search (an OR of lexemes, store/search/keyword.ts),
// computed outside the database from a tsvector's positions, with the same single-precision steps as
// src/backend/utils/adt/tsrank.c (calc_rank_or, then the length normalisation of flag 1), so an in-memory
// ranking orders rows the way the SQL keyword side does.

/** ts_rank's default weight of position class D, which to_tsvector gives every position (a C float). */
const WEIGHT_D = Math.fround(0.1);
/** The limit of Σ 1/i², which calc_rank_or divides by. */
const PI_SQUARED_OVER_SIX = 1.64493406685;
/** A tsvector keeps at most this many positions per lexeme (MAXNUMPOS). */
export const MAX_POSITIONS = 256;

const termScores = (() => {
  const scores = new Float64Array(MAX_POSITIONS + 1);
  let sum = 0;
  for (let n = 1; n <= MAX_POSITIONS; n++) {
    sum = Math.fround(sum + Math.fround(WEIGHT_D / (n * n)));
    // All positions have one weight, so the heaviest is the first (jm = 0): wjm + resj − wjm / 1.
    scores[n] = Math.fround(Math.fround(WEIGHT_D + sum) - WEIGHT_D) / PI_SQUARED_OVER_SIX;
  }
  return scores;
})();

/** What one matched lexeme with `positions` occurrences adds to a row's rank (before the division by terms). */
export function termScore(positions: number): number {
  return termScores[Math.min(MAX_POSITIONS, Math.max(1, positions))] ?? 0;
}

/**
 * The rank from the sum of the matched terms' scores (accumulated in single precision in the query's lexeme
 * order), the query's distinct lexemes, and the row's length (its positions, each lexeme without any counting 1).
 */
export function normalisedRank(sum: number, queryTerms: number, length: number): number {
  return rankOver(sum, queryTerms, lengthDivisor(length));
}

/** Flag 1's divisor for a row of `length` positions: log2(length + 1), or 0 for an empty row (no division). */
export function lengthDivisor(length: number): number {
  return length > 0 ? Math.log(length + 1) / Math.log(2) : 0;
}

/** normalisedRank with the row's divisor worked out beforehand (lengthDivisor). */
export function rankOver(sum: number, queryTerms: number, divisor: number): number {
  const perTerm = queryTerms > 0 ? Math.fround(sum / queryTerms) : Math.fround(sum);
  return divisor > 0 ? Math.fround(perTerm / divisor) : perTerm;
}

/** The lexemes of a tsvector's text form ('word':1,5 'other':3) with how many positions each has. */
export function parseTsvector(text: string): { lexemes: string[]; positions: number[]; length: number } {
  const lexemes: string[] = [];
  const positions: number[] = [];
  let length = 0;
  for (const m of text.matchAll(/'((?:[^']|'')*)'(?::([0-9A-D,]+))?/g)) {
    const count = m[2] ? m[2].split(",").length : 1;
    lexemes.push((m[1] ?? "").replace(/''/g, "'").replace(/\\(.)/g, "$1"));
    positions.push(count);
    length += count;
  }
  return { lexemes, positions, length };
}
