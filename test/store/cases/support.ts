// What the store suite's groups of cases share. The cases live in modules of their own (one per store
// area) and run inside test/store/store.test.ts, once per driver, against the store it opened.

import type { Database, Store } from "../../../store/db.ts";
import * as docs from "../../../store/documents.ts";
import * as processing from "../../../store/processing.ts";

export const EMBEDDING_DIMENSION = 16;
export const space = { model: "test-axes", dimension: EMBEDDING_DIMENSION };

/** A unit vector pointing mostly along one axis: distinct, predictable neighbours for search tests. */
export function axis(i: number, noise = 0): number[] {
  const v = new Array(EMBEDDING_DIMENSION).fill(noise);
  v[i] = 1;
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

/** The store of the driver under test; opened by the suite before any case runs. */
export type StoreOf = () => Store;

export function addDocument(db: Database, input: Partial<docs.NewDocumentInput> & { source: string }) {
  return docs.saveDocument(db, { containerTags: [], metadata: {}, ...input });
}

/**
 * A document taken through processing as the activities do: extracted, chunked (one chunk per piece, the
 * i-th embedded along axis axes[i]) and marked done, so search finds it. Returns its id.
 */
export async function processedDocument(
  db: Database,
  input: Partial<docs.NewDocumentInput> & { source: string },
  pieces: string[],
  axes: number[],
): Promise<string> {
  const { document } = await addDocument(db, input);
  const ref = { documentId: document.id, run: document.processingRun };
  await processing.saveExtraction(db, ref, {
    content: input.source,
    title: null,
    type: "text",
    contentHash: "h",
  });
  await processing.replaceChunks(
    db,
    ref,
    pieces.map((content, position) => ({ content, position })),
  );
  // In position order, as the pieces were given.
  const pending = await processing.chunksWithoutEmbedding(db, document.id, 100);
  await processing.saveEmbeddings(
    db,
    ref,
    { name: space.model, dimension: space.dimension },
    pending.map((c, i) => ({ id: c.id, embedding: axis(axes[i] as number, 0.01) })),
  );
  await processing.markDone(db, ref, space.model);
  return document.id;
}
