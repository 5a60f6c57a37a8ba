/**
 * S3 connector (provider `s3`): syncs the objects of one bucket, or of the keys under one prefix, from
 * AWS S3 or any S3-compatible store (MinIO, R2, Ceph, s3rver...). Every object becomes a document; its
 * id is the object key and its version the ETag, so an object is fetched again only when its content
 * changes, and a deleted object's document goes away after the next complete pass.
 *
 * Settings (the create call's `metadata`):
 * - `bucket` (required): the bucket name.
 * - `prefix` (default ""): only keys starting with this string, as S3 means a prefix: `docs/` is
 *   everything in the docs folder and below; `docs` would also take `docs-old/...`. No leading slash.
 * - `region` (default "us-east-1"): the bucket's region. On AWS a wrong region is followed to the right
 *   one; S3-compatible stores usually accept any value.
 * - `endpoint` (optional): http(s) URL of an S3-compatible store, e.g. `http://minio.lan:9000`. Without
 *   it the client talks to AWS. Loopback and private addresses are refused unless the deployment's
 *   network policy allows private networks (the same rule as for crawled URLs).
 * - `forcePathStyle` (default: true when `endpoint` is set, else false): `host/bucket/key` URLs instead
 *   of `bucket.host/key`.
 * - `maxObjectBytes` (default 100 MiB): larger objects are skipped (logged), not synced.
 * - `pageSize` (default 1000, the S3 maximum): keys per listing request.
 *
 * Secrets (sealed at rest, never returned): `accessKeyId`, `secretAccessKey` (both required) and
 * `sessionToken` (for temporary credentials). Credentials are required on purpose: falling back to
 * the service's own AWS credentials would let any user read whatever the service itself can.
 *
 * Not synced: "folder" marker keys (ending in `/`) and objects in the GLACIER / DEEP_ARCHIVE storage
 * classes, which cannot be read without a restore.
 */

import { z } from "zod";
import type { Connector } from "../types.ts";
import { fetchS3Item, listS3Page, type S3Cursor, s3CursorSchema, verifyS3 } from "./sync.ts";

const flatBoolean = z.union([z.boolean(), z.enum(["true", "false"]).transform((v) => v === "true")]);

export const s3ConfigSchema = z.object({
  bucket: z
    .string()
    .min(3)
    .max(255)
    .regex(/^[A-Za-z0-9._-]+$/, "a bucket name has only letters, digits, dots, hyphens and underscores"),
  prefix: z.string().max(1024).default(""),
  region: z
    .string()
    .regex(/^[a-z0-9-]+$/, "a region looks like us-east-1")
    .default("us-east-1"),
  endpoint: z.url({ protocol: /^https?$/ }).optional(),
  forcePathStyle: flatBoolean.optional(),
  maxObjectBytes: z.coerce
    .number()
    .int()
    .min(1)
    .default(100 * 1024 * 1024),
  pageSize: z.coerce.number().int().min(1).max(1000).default(1000),
});
export type S3Config = z.infer<typeof s3ConfigSchema>;

export const s3SecretsSchema = z.object({
  accessKeyId: z.string().min(1),
  secretAccessKey: z.string().min(1),
  sessionToken: z.string().min(1).optional(),
});
export type S3Secrets = z.infer<typeof s3SecretsSchema>;

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
