/** Lower-cased words without punctuation. */
export const words = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s']/gu, " ")
    .split(/\s+/)
    .filter(Boolean);

/**
 * 1 − word error rate: Levenshtein distance over lower-cased words without punctuation, divided by the
 * reference's length, floored at 0. Used to measure transcription and OCR against known text.
 */
export function wordAccuracy(reference: string, hypothesis: string): number {
  const ref = words(reference);
  const hyp = words(hypothesis);
  let prev = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    const row = [i];
    for (let j = 1; j <= hyp.length; j++) {
      const sub = (prev[j - 1] as number) + (ref[i - 1] === hyp[j - 1] ? 0 : 1);
      row.push(Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, sub));
    }
    prev = row;
  }
  return Math.max(0, 1 - (prev[hyp.length] as number) / Math.max(1, ref.length));
}

/** Share of the reference's distinct words found anywhere in the hypothesis (order-free). */
export function wordRecall(reference: string, hypothesis: string): number {
  const found = new Set(words(hypothesis));
  const wanted = [...new Set(words(reference))];
  return wanted.filter((w) => found.has(w)).length / Math.max(1, wanted.length);
}
