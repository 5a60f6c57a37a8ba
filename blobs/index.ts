import path from "node:path";
import type { Config } from "../config/env.ts";
import { createDiskBlobStore } from "./disk.ts";
import { createS3BlobStore } from "./s3.ts";
import type { BlobStore } from "./types.ts";

export { BlobNotFoundError, type BlobStore } from "./types.ts";

export function createBlobStore(config: Config): BlobStore {
  if (config.S3_BUCKET) {
    return createS3BlobStore({
      bucket: config.S3_BUCKET,
      prefix: config.S3_PREFIX,
      region: config.S3_REGION,
      endpoint: config.S3_ENDPOINT,
      accessKeyId: config.S3_ACCESS_KEY_ID,
      secretAccessKey: config.S3_SECRET_ACCESS_KEY,
    });
  }
  return createDiskBlobStore(path.join(config.dataDir, "files"));
}
