/** Where uploaded and fetched files live, so a document can be reprocessed from its original bytes. */
export interface BlobStore {
  readonly kind: "disk" | "s3";
  put(key: string, bytes: Buffer, contentType?: string): Promise<void>;
  /** Throws BlobNotFoundError when the key is unknown. */
  get(key: string): Promise<Buffer>;
  delete(key: string): Promise<void>;
  /** Every stored key under `prefix`, with when it was last written (for the sweep of orphaned files). */
  list(prefix: string): AsyncIterable<{ key: string; modifiedAt: Date }>;
}

export class BlobNotFoundError extends Error {
  constructor(key: string) {
    super(`stored file ${key} is missing`);
    this.name = "BlobNotFoundError";
  }
}
