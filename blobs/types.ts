/** Where uploaded and fetched files live, so a document can be reprocessed from its original bytes. */
export interface BlobStore {
  readonly kind: "disk" | "s3";
  put(key: string, bytes: Buffer, contentType?: string): Promise<void>;
  /** Throws BlobNotFoundError when the key is unknown. */
  get(key: string): Promise<Buffer>;
  delete(key: string): Promise<void>;
  /** Every stored key under `prefix`, with when it was last written (for the sweep of orphaned files). */
  list(prefix: string): AsyncIterable<{ key: string; modifiedAt: Date }>;
  /**
   * A URL that downloads the object without credentials until it expires, where the store can sign one
   * itself (S3's presigned GET); absent on disk, whose files the API serves through a signed route.
   */
  presignGet?(key: string, opts: PresignOptions): Promise<string>;
}

export interface PresignOptions {
  /** Seconds the URL stays valid (S3 accepts at most 604,800). */
  expiresInSeconds: number;
  /** Sent back as `Content-Disposition: attachment` with this name. */
  fileName?: string;
  /** Sent back as `Content-Type` (otherwise the type the object was stored with). */
  contentType?: string;
}

export class BlobNotFoundError extends Error {
  constructor(key: string) {
    super(`stored file ${key} is missing`);
    this.name = "BlobNotFoundError";
  }
}
