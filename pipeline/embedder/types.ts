/** What a text is embedded for: asymmetric models (e.g. BGE) encode search queries differently from passages. */
export type EmbeddingPurpose = "document" | "query";

/** Turns texts into vectors for similarity search. Implementations own their resources (threads, models). */
export interface Embedder {
  /** Stored next to every vector: vectors from different models must never be compared. */
  readonly model: string;
  readonly dimension: number;
  /** One vector per text, in input order, each of length `dimension`. Purpose defaults to "document". */
  embed(texts: string[], purpose?: EmbeddingPurpose): Promise<number[][]>;
  /** Releases threads and model memory; `embed` fails afterwards. */
  close(): Promise<void>;
}
