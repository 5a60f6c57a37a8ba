// Search stores past what SciFact yields. The corpus gives about 120,000 distinct chunk texts, and embedding
// a million texts would take this machine most of a day, so a store of N > base chunks holds the base chunks
// (real text, real vectors from the cache) and then N - base blended ones: the text of two base chunks drawn
// at random, joined (a two-window chunk, as the chunker makes from neighbouring sentences), with the
// normalised sum of their vectors (where the model would put such a text, roughly: between the two). Blends
// keep the table's shape (text length, lexemes per row, one vector each) and spread over the same region of
// the vector space as the real chunks, without near-copies that would make the HNSW graph unusually easy or
// hard. They are grouped into documents of `perDocument` chunks, like a long document's chunks.

import { seededRandom } from "./random.ts";
import type { SearchDocument } from "./search-corpus.ts";

/** A search document whose chunk vectors come with it (blends have no cached vector to look up). */
export interface DocumentWithVectors extends SearchDocument {
  vectors: Float32Array[];
}

/** The normalised sum of two unit vectors (or any two vectors of one length). */
export function blendVectors(a: ArrayLike<number>, b: ArrayLike<number>): Float32Array {
  if (a.length !== b.length) throw new Error(`cannot blend vectors of ${a.length} and ${b.length} values`);
  const out = new Float32Array(a.length);
  let norm = 0;
  for (let i = 0; i < a.length; i++) {
    const v = (a[i] as number) + (b[i] as number);
    out[i] = v;
    norm += v * v;
  }
  norm = Math.sqrt(norm);
  // Two opposite vectors sum to zero; any unit vector is as good as another then (it never happens with
  // real embeddings, whose pairwise cosine stays far above -1).
  if (norm === 0) out[0] = 1;
  else for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) / norm;
  return out;
}

/**
 * `count` blended chunks from the base texts and vectors, in documents of `perDocument` chunks (the last one
 * shorter), generated one document at a time: a million of them never sit in memory together.
 */
export function* blendedDocuments(
  base: { texts: string[]; vectors: ArrayLike<number>[] },
  count: number,
  options: { perDocument?: number; seed?: number } = {},
): Generator<DocumentWithVectors> {
  const { texts, vectors } = base;
  if (texts.length !== vectors.length)
    throw new Error(`${texts.length} base texts but ${vectors.length} vectors`);
  if (texts.length < 2 && count > 0) throw new Error("blending needs at least two base chunks");
  const perDocument = options.perDocument ?? 20;
  if (!Number.isInteger(perDocument) || perDocument < 1)
    throw new RangeError("perDocument must be a positive integer");
  const random = seededRandom(options.seed ?? 1);
  const pick = () => Math.floor(random() * texts.length);
  let made = 0;
  for (let doc = 0; made < count; doc++) {
    const pieces: string[] = [];
    const docVectors: Float32Array[] = [];
    while (pieces.length < perDocument && made < count) {
      const a = pick();
      let b = pick();
      if (b === a) b = (a + 1) % texts.length;
      pieces.push(`${texts[a]} ${texts[b]}`);
      docVectors.push(blendVectors(vectors[a] as ArrayLike<number>, vectors[b] as ArrayLike<number>));
      made++;
    }
    yield { abstractId: `blend-${doc}`, title: `Blended document ${doc + 1}`, pieces, vectors: docVectors };
  }
}
