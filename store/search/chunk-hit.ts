/** A chunk a search found, with how it ranked (store/search/chunk-search.ts, and the in-memory index of store/search/chunk-index). */
export interface ChunkHit {
  chunkId: string;
  documentId: string;
  position: number;
  content: string;
  /** Where in the file: page, slide, section, start/end seconds. */
  metadata: Record<string, string | number>;
  /** Cosine similarity of the chunk to the query, 0..1 (0 when only the keyword side matched). */
  similarity: number;
  keywordRank: number | null;
  fused: number;
}
