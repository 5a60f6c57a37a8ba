/** What a text is embedded for: asymmetric models (e.g. BGE) encode search queries differently from passages. */
export type EmbeddingPurpose = "document" | "query";

/**
 * Whose work it is, which decides what waits: "query" (a search waiting on one vector) goes before
 * "interactive" (a memory add, a single document someone waits for), which goes before "bulk" (imports).
 * Strict priority between them, first come first served within each.
 */
export type EmbeddingPriority = "query" | "interactive" | "bulk";

export const EMBEDDING_PRIORITIES: readonly EmbeddingPriority[] = ["query", "interactive", "bulk"];

export interface EmbedOptions {
  /** Default: "query" when the purpose is "query", else "interactive". */
  priority?: EmbeddingPriority;
}

/** Turns texts into vectors for similarity search. Implementations own their resources (threads, models). */
export interface Embedder {
  /** Stored next to every vector: vectors from different models must never be compared. */
  readonly model: string;
  readonly dimension: number;
  /**
   * One vector per text, in input order, each of length `dimension`. Purpose defaults to "document"; priority
   * (see EmbedOptions) orders this call's texts against other calls waiting for the model.
   */
  embed(texts: string[], purpose?: EmbeddingPurpose, options?: EmbedOptions): Promise<number[][]>;
  /** Releases threads and model memory; `embed` fails afterwards. */
  close(): Promise<void>;
}

/** The priority a call gets when it names none. */
export function defaultPriority(purpose: EmbeddingPurpose): EmbeddingPriority {
  return purpose === "query" ? "query" : "interactive";
}
