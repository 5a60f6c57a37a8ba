/**
 * S3 connector (provider `s3`): syncs the objects of one bucket, or of the keys under one prefix, from
 * AWS S3 or any S3-compatible store (MinIO, R2, Ceph, s3rver...). Every object becomes a document; its
 * id is the object key and its version the ETag, so an object is fetched again only when its content
 * changes, and a deleted object's document goes away after the next complete pass.
 *
 * Settings (bucket, prefix, region, endpoint...) and secrets (the access key): see settings.ts.
 *
 * Not synced: "folder" marker keys (ending in `/`) and objects in the GLACIER / DEEP_ARCHIVE storage
 * classes, which cannot be read without a restore.
 */

import type { Connector } from "../types.ts";
import { type S3Config, type S3Secrets, s3ConfigSchema, s3SecretsSchema } from "./settings.ts";
import { fetchS3Item, listS3Page, type S3Cursor, s3CursorSchema, verifyS3 } from "./sync.ts";

export const s3Connector: Connector<S3Config, S3Secrets, S3Cursor> = {
  provider: "s3",
  displayName: "Amazon S3 (and S3-compatible stores)",
  configSchema: s3ConfigSchema,
  secretKeys: ["accessKeyId", "secretAccessKey", "sessionToken"],
  secretsSchema: s3SecretsSchema,
  listing: "full",
  cursorSchema: s3CursorSchema,
  initialCursor: () => ({ continuationToken: null }),
  listPage: listS3Page,
  fetchItem: fetchS3Item,
  verify: verifyS3,
};
