/**
 * S3 connector settings: the schemas of a connection's config and secrets, and their types.
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
 */

import { z } from "zod";

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
