import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createS3BlobStore } from "../../blobs/s3.ts";
import { type S3TestServer, startS3Server } from "../support/s3-server.ts";

// Presigned GETs against an S3-compatible server that checks query signatures (test/support/s3-server.ts):
// the bytes come back without credentials, and a URL whose signature, secret or lifetime is wrong is refused.
describe("S3 presigned downloads", () => {
  let s3: S3TestServer;
  const store = (secretAccessKey = s3.secretAccessKey) =>
    createS3BlobStore({
      bucket: "presign-files",
      prefix: "tenant/",
      region: s3.region,
      endpoint: s3.endpoint,
      accessKeyId: s3.accessKeyId,
      secretAccessKey,
    });

  beforeAll(async () => {
    s3 = await startS3Server({ buckets: ["presign-files"] });
  }, 60_000);
  afterAll(async () => {
    await s3?.stop();
  });

  it("downloads the stored bytes with no credentials, with the name and type asked for", async () => {
    const blobs = store();
    const bytes = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7) % 256));
    // A key with characters SigV4 must encode.
    const key = "files/ab/report (final) ü+1.bin";
    await blobs.put(key, bytes, "application/octet-stream");
    const url = await blobs.presignGet?.(key, {
      expiresInSeconds: 600,
      fileName: "Quarterly report.pdf",
      contentType: "application/pdf",
    });
    expect(url).toContain("X-Amz-Signature=");
    const res = await fetch(url as string);
    expect(res.status).toBe(200);
    expect(Buffer.compare(Buffer.from(await res.arrayBuffer()), bytes)).toBe(0);
    expect(res.headers.get("content-type")).toBe("application/pdf");
    expect(res.headers.get("content-disposition")).toContain('filename="Quarterly report.pdf"');
  });

  it("refuses a tampered URL, one signed with a wrong secret, and an expired one", async () => {
    const blobs = store();
    await blobs.put("files/cd/plain", Buffer.from("plain bytes"), "text/plain");
    const good = (await blobs.presignGet?.("files/cd/plain", { expiresInSeconds: 600 })) as string;
    expect((await fetch(good)).status).toBe(200);

    // Another object under the same signature.
    const tampered = good.replace("files/cd/plain", "files/cd/other");
    expect((await fetch(tampered)).status).toBe(403);
    const wrongSecret = (await store("not-the-secret").presignGet?.("files/cd/plain", {
      expiresInSeconds: 600,
    })) as string;
    expect((await fetch(wrongSecret)).status).toBe(403);

    // Signed two hours ago for one hour.
    const client = new S3Client({
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    const expired = await getSignedUrl(
      client,
      new GetObjectCommand({ Bucket: "presign-files", Key: "tenant/files/cd/plain" }),
      { expiresIn: 3600, signingDate: new Date(Date.now() - 2 * 3600 * 1000) },
    );
    const res = await fetch(expired);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("expired");
  });

  it("stops working once the object is deleted", async () => {
    const blobs = store();
    await blobs.put("files/ef/gone", Buffer.from("soon gone"), "text/plain");
    const url = (await blobs.presignGet?.("files/ef/gone", { expiresInSeconds: 600 })) as string;
    expect((await fetch(url)).status).toBe(200);
    await blobs.delete("files/ef/gone");
    expect((await fetch(url)).status).toBe(404);
  });
});
