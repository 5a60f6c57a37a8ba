import { randomBytes } from "node:crypto";
import Supermemory, { toFile } from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caller } from "../support/http.ts";
import { type S3TestServer, startS3Server } from "../support/s3-server.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

// GET /v3/documents/{id}/file-url: a link that downloads the original bytes with no API key, and stops
// working when it expires and when the document is deleted. On disk the API serves the link itself; on S3 it
// is a presigned URL the S3 server answers (its test server checks query signatures).

/** Text no other test uploads, with characters of more than one byte. */
const uniqueFile = (label: string) =>
  Buffer.from(`${label}: la cartógrafa dibujó ${randomBytes(6).toString("hex")} costas — ✓\n`);

async function upload(
  client: Supermemory,
  bytes: Buffer,
  opts: { containerTag: string; customId?: string; name?: string },
): Promise<string> {
  const { id } = await client.documents.uploadFile({
    file: await toFile(bytes, opts.name ?? "coast.bin"),
    containerTag: opts.containerTag,
    ...(opts.customId ? { customId: opts.customId } : {}),
  });
  await untilProcessed((i) => client.documents.get(i), id, 120_000);
  return id;
}

/** Fetches a link as a browser would: no Authorization header. */
async function download(url: string) {
  const res = await fetch(url);
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

describe("file URLs on the disk store", () => {
  let service: TestService;
  let client: Supermemory;
  const call = caller(() => service.url);

  beforeAll(async () => {
    service = await startTestService();
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  }, 180_000);
  afterAll(async () => {
    await service?.stop();
  });

  it("downloads the original bytes without a key, then refuses the link once the document is deleted", async () => {
    const bytes = uniqueFile("disk");
    const id = await upload(client, bytes, { containerTag: "urls-a", name: "coast line.bin" });

    const res = await call("GET", `/v3/documents/${id}/file-url`);
    expect(res.status).toBe(200);
    const { url, expiresAt } = res.json as { url: string; expiresAt: string };
    expect(url.startsWith(`${service.url}/v3/documents/${id}/file?`)).toBe(true);
    // 24 hours by default, as the OpenAPI document says.
    const lifetime = Date.parse(expiresAt) - Date.now();
    expect(lifetime).toBeGreaterThan(23 * 3600 * 1000);
    expect(lifetime).toBeLessThanOrEqual(24 * 3600 * 1000);

    const got = await download(url);
    expect(got.status).toBe(200);
    expect(Buffer.compare(got.bytes, bytes)).toBe(0);
    expect(got.headers.get("content-disposition")).toContain('attachment; filename="coast line.bin"');
    expect(got.headers.get("x-content-type-options")).toBe("nosniff");
    // The same link, again: it is not single-use.
    expect((await download(url)).status).toBe(200);

    await client.documents.delete(id);
    const after = await fetch(url);
    expect(after.status).toBe(404);
    expect(((await after.json()) as { code: string }).code).toBe("not_found");
    expect((await call("GET", `/v3/documents/${id}/file-url`)).status).toBe(404);
  });

  it("refuses an expired link and one whose signature or document was changed", async () => {
    const bytes = uniqueFile("tamper");
    const id = await upload(client, bytes, { containerTag: "urls-a" });
    const other = await upload(client, uniqueFile("other"), { containerTag: "urls-a" });

    const short = await call("GET", `/v3/documents/${id}/file-url?expiresIn=1`);
    expect(short.status).toBe(200);
    const shortUrl = new URL(short.json.url as string);
    const expires = Number(shortUrl.searchParams.get("expires"));
    // Wait past the link's end (the service compares whole seconds), then it is refused.
    await new Promise((r) => setTimeout(r, Math.max(0, expires * 1000 - Date.now()) + 50));
    const expired = await fetch(shortUrl);
    expect(expired.status).toBe(403);
    expect(await expired.text()).toContain("expired");

    const url = new URL((await call("GET", `/v3/documents/${id}/file-url`)).json.url as string);
    const signature = url.searchParams.get("signature") as string;
    const flipped = new URL(url);
    flipped.searchParams.set("signature", `${signature[0] === "A" ? "B" : "A"}${signature.slice(1)}`);
    expect((await download(flipped.toString())).status).toBe(403);
    // A later end under the same signature.
    const extended = new URL(url);
    extended.searchParams.set("expires", String(Number(url.searchParams.get("expires")) + 3600));
    expect((await download(extended.toString())).status).toBe(403);
    // Another document's file under this document's signature.
    const elsewhere = new URL(url.toString().replace(`/documents/${id}/`, `/documents/${other}/`));
    expect((await download(elsewhere.toString())).status).toBe(403);
    // No signature at all.
    expect((await fetch(`${service.url}/v3/documents/${id}/file`)).status).toBe(400);
    // The untouched link still works.
    expect(Buffer.compare((await download(url.toString())).bytes, bytes)).toBe(0);
  });

  it("refuses the link of a file the document no longer has", async () => {
    const first = uniqueFile("first version");
    const id = await upload(client, first, { containerTag: "urls-a", customId: "replaced-file" });
    const url = (await call("GET", `/v3/documents/${id}/file-url`)).json.url as string;
    expect((await download(url)).status).toBe(200);
    const second = uniqueFile("second version");
    const sameId = await upload(client, second, { containerTag: "urls-a", customId: "replaced-file" });
    expect(sameId).toBe(id);
    expect((await download(url)).status).toBe(403);
    const fresh = (await call("GET", `/v3/documents/${id}/file-url`)).json.url as string;
    expect(Buffer.compare((await download(fresh)).bytes, second)).toBe(0);
  });

  it("answers 404 for a document without a file, and for another tenant's document", async () => {
    const text = await client.documents.add({
      content: "A note typed in, with no file.",
      containerTag: "urls-a",
    });
    const noFile = await call("GET", `/v3/documents/${text.id}/file-url`);
    expect(noFile.status).toBe(404);
    expect(noFile.json.error).toContain("no stored file");

    const id = await upload(client, uniqueFile("tenant"), { containerTag: "urls-a" });
    const keyB = (await call("POST", "/v3/auth/scoped-key", { containerTag: "urls-b" })).json.key as string;
    const keyA = (await call("POST", "/v3/auth/scoped-key", { containerTag: "urls-a" })).json.key as string;
    expect((await call("GET", `/v3/documents/${id}/file-url`, undefined, keyB)).status).toBe(404);
    const own = await call("GET", `/v3/documents/${id}/file-url`, undefined, keyA);
    expect(own.status).toBe(200);
    expect((await download(own.json.url as string)).status).toBe(200);
    expect((await call("GET", `/v3/documents/${id}/file-url`, undefined, null)).status).toBe(401);
  });
});

describe("file URLs on the S3 store", () => {
  let s3: S3TestServer;
  let service: TestService;
  let client: Supermemory;
  const call = caller(() => service.url);

  beforeAll(async () => {
    s3 = await startS3Server({ buckets: ["file-url-blobs"] });
    service = await startTestService({
      env: {
        S3_BUCKET: "file-url-blobs",
        S3_PREFIX: "svc/",
        S3_REGION: s3.region,
        S3_ENDPOINT: s3.endpoint,
        S3_ACCESS_KEY_ID: s3.accessKeyId,
        S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      },
    });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  }, 180_000);
  afterAll(async () => {
    await service?.stop();
    await s3?.stop();
  });

  it("hands out a presigned URL that downloads the bytes from S3 until the document is deleted", async () => {
    const bytes = uniqueFile("s3");
    const id = await upload(client, bytes, { containerTag: "urls-s3", name: "chart.bin" });
    const res = await call("GET", `/v3/documents/${id}/file-url`);
    expect(res.status).toBe(200);
    const url = res.json.url as string;
    expect(url.startsWith(`${s3.endpoint}/file-url-blobs/svc/files/`)).toBe(true);
    expect(new URL(url).searchParams.get("X-Amz-Expires")).toBe("86400");

    const got = await download(url);
    expect(got.status).toBe(200);
    expect(Buffer.compare(got.bytes, bytes)).toBe(0);
    expect(got.headers.get("content-disposition")).toContain('filename="chart.bin"');

    // The document's file goes with it, so the presigned URL has nothing left to fetch.
    await client.documents.delete(id);
    expect((await download(url)).status).toBe(404);
    expect((await call("GET", `/v3/documents/${id}/file-url`)).status).toBe(404);
  });
});
