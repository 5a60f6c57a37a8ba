// Documents for the bulk-import benchmark: the ingestion benchmark's 200-word SciFact documents
// (abstract i, trimmed or padded with the next abstracts' words), as many as asked. Past the corpus
// (5,183 abstracts) it starts over, each repeat with a suffix naming the copy, so no two texts are equal.

import { type Abstract, ingestDocuments } from "./corpus.ts";

export function bulkDocuments(corpus: Abstract[], count: number, wordCount = 200): string[] {
  const base = ingestDocuments(corpus, Math.min(count, corpus.length), wordCount);
  if (count <= base.length) return base;
  const out = [...base];
  for (let i = base.length; i < count; i++) {
    const copy = Math.floor(i / base.length) + 1;
    out.push(`${base[i % base.length] as string} (copy ${copy})`);
  }
  return out;
}

/**
 * A second tenant's documents: taken from the end of the corpus (the imports start at its beginning)
 * and marked, so they never repeat a text of the big import.
 */
export function tenantDocuments(corpus: Abstract[], count: number): string[] {
  const all = ingestDocuments(corpus, corpus.length);
  return all.slice(-count).map((t, i) => `${t} (tenant document ${i + 1})`);
}
