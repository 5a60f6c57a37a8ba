/** Scores how well each passage answers a query, reading both together (a cross-encoder), to reorder search hits. */
export interface Reranker {
  /** Name of the model, for logs and API responses. */
  readonly model: string;
  /** One score per passage, in input order: higher is more relevant, in 0..1 (the sigmoid of the model's logit). */
  score(query: string, passages: string[]): Promise<number[]>;
  /** Releases threads and model memory; `score` fails afterwards. */
  close(): Promise<void>;
}
