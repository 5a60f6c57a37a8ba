import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDiskBlobStore } from "../../blobs/disk.ts";
import { createS3BlobStore } from "../../blobs/s3.ts";
import { BlobNotFoundError, type BlobStore } from "../../blobs/types.ts";

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), "memory-blobs-"));
  dirs.push(d);
  return d;
};

let s3: S3rver;
let s3Endpoint = "";
beforeAll(async () => {
  // A real S3-compatible server on loopback.
  s3 = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: tempDir() });
  const { port } = await s3.run();
  s3Endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    region: "us-east-1",
    endpoint: s3Endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  });
  await client.send(new CreateBucketCommand({ Bucket: "memory-files" }));
});
afterAll(async () => {
  await s3?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const stores: [string, () => BlobStore][] = [
  ["disk", () => createDiskBlobStore(tempDir())],
  [
    "s3",
    () =>
      createS3BlobStore({
        bucket: "memory-files",
        prefix: "test/",
        region: "us-east-1",
        endpoint: s3Endpoint,
        accessKeyId: "S3RVER",
        secretAccessKey: "S3RVER",
      }),
  ],
];

describe.each(stores)("%s blob store", (_name, make) => {
  it("stores, reads back byte for byte, and deletes", async () => {
    const store = make();
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 256));
    await store.put("files/ab/abcdef", bytes, "application/octet-stream");
    expect(Buffer.compare(await store.get("files/ab/abcdef"), bytes)).toBe(0);
    await store.delete("files/ab/abcdef");
    await expect(store.get("files/ab/abcdef")).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  it("reports a missing key as not found", async () => {
    await expect(make().get("files/00/missing")).rejects.toBeInstanceOf(BlobNotFoundError);
  });
});

it("never lets a disk key escape its root", async () => {
  const store = createDiskBlobStore(tempDir());
  await expect(store.put("../escape", Buffer.from("x"))).rejects.toThrow(/invalid blob key/);
});
