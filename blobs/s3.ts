import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { BlobNotFoundError, type BlobStore } from "./types.ts";

export interface S3BlobOptions {
  bucket: string;
  prefix?: string;
  region: string;
  endpoint?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle?: boolean;
}

/** Any S3-compatible object store (AWS, MinIO, R2, ...), for deployments with several machines. */
export function createS3BlobStore(opts: S3BlobOptions): BlobStore {
  const forcePathStyle = opts.forcePathStyle ?? Boolean(opts.endpoint);
  const client = new S3Client({
    region: opts.region,
    endpoint: opts.endpoint,
    forcePathStyle,
    credentials:
      opts.accessKeyId && opts.secretAccessKey
        ? { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey }
        : undefined,
    // Checksums only where the protocol demands them: S3-compatible stores differ in what they accept.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const key = (k: string) => `${opts.prefix ?? ""}${k}`;
  return {
    kind: "s3",
    async put(k, bytes, contentType) {
      await client.send(
        new PutObjectCommand({ Bucket: opts.bucket, Key: key(k), Body: bytes, ContentType: contentType }),
      );
    },
    async get(k) {
      try {
        const out = await client.send(new GetObjectCommand({ Bucket: opts.bucket, Key: key(k) }));
        return Buffer.from(
          await (out.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
        );
      } catch (error) {
        if (error instanceof NoSuchKey || (error as { name?: string }).name === "NoSuchKey") {
          throw new BlobNotFoundError(k);
        }
        throw error;
      }
    },
    async delete(k) {
      await client.send(new DeleteObjectCommand({ Bucket: opts.bucket, Key: key(k) }));
    },
    async presignGet(k, { expiresInSeconds, fileName, contentType }) {
      // Signed with the client's own credentials: the configured pair, or whatever the default chain resolved
      // (a role's temporary ones carry a session token, and a URL signed with them dies with them).
      return getSignedUrl(
        client,
        new GetObjectCommand({
          Bucket: opts.bucket,
          Key: key(k),
          ...(fileName ? { ResponseContentDisposition: attachment(fileName) } : {}),
          ...(contentType ? { ResponseContentType: contentType } : {}),
        }),
        { expiresIn: expiresInSeconds },
      );
    },
    async *list(prefix) {
      const own = opts.prefix ?? "";
      let token: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: opts.bucket, Prefix: key(prefix), ContinuationToken: token }),
        );
        for (const object of page.Contents ?? [])
          if (object.Key?.startsWith(own))
            yield { key: object.Key.slice(own.length), modifiedAt: object.LastModified ?? new Date(0) };
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    },
  };
}

/** `attachment` with the name in both forms of RFC 6266: a plain ASCII fallback and the UTF-8 original. */
export function attachment(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\]/g, "_");
  const utf8 = encodeURIComponent(fileName).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}"; filename*=UTF-8''${utf8}`;
}
