/**
 * Hugging Face's "longest_first" truncation for a query+passage pair: tokens come off the longer side until the
 * pair fits `budget` (the model's limit less [CLS] and two [SEP]), so a short query is kept whole and the passage
 * loses its tail; when both are longer than half the budget each keeps about half.
 */
export function truncatePair(query: number[], passage: number[], budget: number): [number[], number[]] {
  if (query.length + passage.length <= budget) return [query, passage];
  const half = Math.floor(budget / 2);
  if (query.length <= half) return [query, passage.slice(0, budget - query.length)];
  if (passage.length <= half) return [query.slice(0, budget - passage.length), passage];
  // Both long: the longer keeps the odd token (a tie counts the passage as the longer), as Rust tokenizers does.
  const rest = budget - half;
  return query.length > passage.length
    ? [query.slice(0, rest), passage.slice(0, half)]
    : [query.slice(0, half), passage.slice(0, rest)];
}
