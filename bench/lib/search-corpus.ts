// The search benchmark's corpus: chunks built from real SciFact text, up to ~120k distinct ones.
// Each abstract is split into sentences; the chunks are windows of consecutive sentences, taken level
// by level over the whole corpus: every single sentence (~46k), then every pair (~41k), then every
// triple. A store of N chunks is the first N of that order, so a smaller store is a prefix of a larger
// one (its vectors are all in the per-text cache once the larger one was embedded), and the cheapest
// texts to embed come first. 10,000 chunks are single sentences; 100,000 are all sentences, all pairs
// and some triples. Chunks are grouped into one document per abstract, in window order.

import type { Abstract } from "./corpus.ts";

export interface SearchDocument {
  abstractId: string;
  title: string;
  /** The document's chunks, in order: its single sentences, then pairs, then triples. */
  pieces: string[];
}

/** Windows shorter than this many words (headings such as "BACKGROUND") are left out. */
const MIN_WORDS = 4;
const MAX_WINDOW = 3;

const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length;

function sentencesOf(text: string): string[] {
  const segmenter = new Intl.Segmenter("en", { granularity: "sentence" });
  return [...segmenter.segment(text)].map((s) => s.segment.trim().replace(/\s+/g, " ")).filter(Boolean);
}

/** Exactly `total` distinct chunk texts grouped by abstract; throws if the corpus yields fewer. */
export function searchChunkDocuments(corpus: Abstract[], total: number): SearchDocument[] {
  const sentences = corpus.map((a) => sentencesOf(a.text));
  const pieces: string[][] = corpus.map(() => []);
  const seen = new Set<string>();
  let count = 0;
  for (let w = 1; w <= MAX_WINDOW && count < total; w++) {
    for (let a = 0; a < corpus.length && count < total; a++) {
      const s = sentences[a] as string[];
      for (let i = 0; i + w <= s.length && count < total; i++) {
        const piece = s.slice(i, i + w).join(" ");
        if (wordCount(piece) < MIN_WORDS || seen.has(piece)) continue;
        seen.add(piece);
        (pieces[a] as string[]).push(piece);
        count++;
      }
    }
  }
  if (count < total) throw new Error(`--chunks ${total}: the corpus yields only ${count} distinct chunks`);
  return corpus
    .map((abstract, a) => ({
      abstractId: abstract.id,
      title: abstract.title,
      pieces: pieces[a] as string[],
    }))
    .filter((d) => d.pieces.length > 0);
}
