import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ConnectorAuthError,
  ConnectorConfigError,
  ConnectorRateLimitError,
  ItemSkippedError,
} from "../../connectors/errors.ts";
import { s3Connector } from "../../connectors/s3/index.ts";
import type { S3Config, S3Secrets } from "../../connectors/s3/settings.ts";
import type { S3Cursor } from "../../connectors/s3/sync.ts";
import type { SourceItem, SyncContext } from "../../connectors/types.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { type S3TestServer, startS3Server } from "../support/s3-server.ts";

const BUCKET = "memory-docs";
const MUTABLE = "memory-mutable";
const pdfBytes = readFileSync(`${FIXTURES_DIR}/pdf/DA-1p.pdf`);
const md5 = (data: string | Buffer) => createHash("md5").update(data).digest("hex");

const files: Record<string, { body: string | Buffer; type?: string }> = {
  "readme.txt": { body: "Top-level notes about the bucket.\n", type: "text/plain; charset=utf-8" },
  "blob.bin": { body: "opaque bytes", type: "application/octet-stream" },
  "docs/a.md": { body: "# A\n\nFirst document.\n", type: "text/markdown" },
  "docs/b.md": { body: "# B\n\nSecond document.\n", type: "text/markdown" },
  "docs/sub/c.txt": { body: "third", type: "text/plain" },
  // Not "docs-old/": s3rver walks directories and so orders "docs/" before "docs-old/", unlike S3's
  // byte order, and a page boundary inside docs/ then loses docs-old/ keys.
  "docs_old/d.txt": { body: "outside the docs/ prefix", type: "text/plain" },
  "reports/DA-1p.pdf": { body: pdfBytes, type: "application/pdf" },
};
const folderMarkers = ["docs/", "docs/sub/"];

let s3: S3TestServer;
beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET, MUTABLE] });
  for (const [key, { body, type }] of Object.entries(files)) await s3.putObject(BUCKET, key, body, type);
  for (const key of folderMarkers) await s3.putObject(BUCKET, key, "");
});
afterAll(async () => {
  await s3?.stop();
});

interface TestContext extends SyncContext<S3Config, S3Secrets> {
  logLines: string[];
  heartbeats: number;
}

function makeCtx(
  metadata: Record<string, string | number | boolean> = {},
  opts: { secrets?: Partial<S3Secrets>; allowPrivateNetwork?: boolean } = {},
): TestContext {
  const logLines: string[] = [];
  const ctx: TestContext = {
    connectionId: "conn-s3-test",
    config: s3Connector.configSchema.parse({ bucket: BUCKET, endpoint: s3.endpoint, ...metadata }),
    secrets: s3Connector.secretsSchema.parse({
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      ...opts.secrets,
    }),
    network: { allowPrivateNetwork: opts.allowPrivateNetwork ?? true, timeoutMs: 5_000, maxBytes: 1 << 20 },
    signal: new AbortController().signal,
    heartbeat: () => {
      ctx.heartbeats++;
    },
    log: pino({ level: "info" }, { write: (line: string) => logLines.push(line) }),
    logLines,
    heartbeats: 0,
  };
  return ctx;
}

/** One complete pass, the way the engine drives it. */
async function fullPass(ctx: TestContext) {
  let cursor: S3Cursor | null = await s3Connector.initialCursor(ctx);
  const items: SourceItem[] = [];
  let pages = 0;
  while (cursor) {
    const page = await s3Connector.listPage(ctx, cursor);
    expect(page.deleted).toBeUndefined();
    items.push(...page.items);
    pages++;
    cursor = page.next;
  }
  return { items, pages, versions: new Map(items.map((i) => [i.id, i.version])) };
}

describe("s3 connector listing", () => {
  it("lists every object over several pages, skipping folder markers, with ETags as versions", async () => {
    const ctx = makeCtx({ pageSize: 2 });
    const { items, pages, versions } = await fullPass(ctx);
    // 7 files + 2 folder markers = 9 keys at 2 per page.
    expect(pages).toBe(5);
    expect(items.map((i) => i.id).sort()).toEqual(Object.keys(files).sort());
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length);
    expect(items.every((i) => i.content === undefined)).toBe(true);
    for (const [key, { body }] of Object.entries(files)) expect(versions.get(key)).toBe(md5(body));
    expect(ctx.heartbeats).toBeGreaterThanOrEqual(pages);
  });

  it("lists in one page with the default page size", async () => {
    const { items, pages } = await fullPass(makeCtx());
    expect(pages).toBe(1);
    expect(items).toHaveLength(Object.keys(files).length);
  });

  it("lists only keys under the prefix, across pages", async () => {
    const { items, pages } = await fullPass(makeCtx({ prefix: "docs/", pageSize: 1 }));
    expect(items.map((i) => i.id).sort()).toEqual(["docs/a.md", "docs/b.md", "docs/sub/c.txt"]);
    // docs/, docs/a.md, docs/b.md, docs/sub/, docs/sub/c.txt: one key per page.
    expect(pages).toBe(5);
  });

  it("changes the version of an overwritten object only, and drops deleted objects", async () => {
    await s3.putObject(MUTABLE, "notes/one.txt", "version one");
    await s3.putObject(MUTABLE, "notes/two.txt", "stays the same");
    const ctx = makeCtx({ bucket: MUTABLE, pageSize: 1 });
    const first = await fullPass(ctx);
    expect([...first.versions.keys()].sort()).toEqual(["notes/one.txt", "notes/two.txt"]);

    await s3.putObject(MUTABLE, "notes/one.txt", "version two, longer");
    const second = await fullPass(ctx);
    expect(second.versions.get("notes/one.txt")).not.toBe(first.versions.get("notes/one.txt"));
    expect(second.versions.get("notes/one.txt")).toBe(md5("version two, longer"));
    expect(second.versions.get("notes/two.txt")).toBe(first.versions.get("notes/two.txt"));
    const fetched = await s3Connector.fetchItem(ctx, { id: "notes/one.txt", version: "" });
    expect(fetched?.file?.bytes.toString()).toBe("version two, longer");

    await s3.deleteObject(MUTABLE, "notes/two.txt");
    const third = await fullPass(ctx);
    expect([...third.versions.keys()]).toEqual(["notes/one.txt"]);
    // Deleted between listing and fetch: absent rather than an error.
    expect(await s3Connector.fetchItem(ctx, { id: "notes/two.txt", version: "x" })).toBeNull();
  });
});

describe("s3 connector fetch", () => {
  it("returns the bytes of a real PDF with its name, type, path and metadata", async () => {
    const ctx = makeCtx();
    const version = md5(pdfBytes);
    const item = await s3Connector.fetchItem(ctx, { id: "reports/DA-1p.pdf", version });
    expect(item).not.toBeNull();
    expect(item?.file?.name).toBe("DA-1p.pdf");
    expect(item?.file?.mimeType).toBe("application/pdf");
    expect(Buffer.compare(item?.file?.bytes ?? Buffer.alloc(0), pdfBytes)).toBe(0);
    expect(item?.text).toBeUndefined();
    expect(item?.title).toBe("DA-1p.pdf");
    expect(item?.filepath).toBe(`/${BUCKET}/reports/`);
    // A custom endpoint has no page a person could open.
    expect(item?.url).toBeUndefined();
    expect(item?.metadata).toMatchObject({ bucket: BUCKET, key: "reports/DA-1p.pdf", etag: version });
    expect(item?.metadata?.size).toBe(pdfBytes.length);
    expect(Date.parse(String(item?.metadata?.lastModified))).toBeGreaterThan(Date.now() - 600_000);
  });

  it("keeps a specific content type with its charset and drops a generic one", async () => {
    const ctx = makeCtx();
    const readme = await s3Connector.fetchItem(ctx, { id: "readme.txt", version: "" });
    expect(readme?.filepath).toBe(`/${BUCKET}/`);
    expect(readme?.file?.mimeType).toBe("text/plain; charset=utf-8");
    expect(readme?.file?.bytes.toString()).toBe(files["readme.txt"]?.body);
    const blob = await s3Connector.fetchItem(ctx, { id: "blob.bin", version: "" });
    expect(blob?.file?.name).toBe("blob.bin");
    expect(blob?.file).not.toHaveProperty("mimeType");
    const nested = await s3Connector.fetchItem(ctx, { id: "docs/sub/c.txt", version: "" });
    expect(nested?.filepath).toBe(`/${BUCKET}/docs/sub/`);
  });

  it("lists objects over maxObjectBytes as skipped too_large, and fetching one is skipped the same", async () => {
    const ctx = makeCtx({ maxObjectBytes: 1024 });
    expect(pdfBytes.length).toBeGreaterThan(1024);
    const { items } = await fullPass(ctx);
    const pdf = items.find((i) => i.id === "reports/DA-1p.pdf");
    expect(pdf?.skipped).toMatchObject({
      reason: "too_large",
      message: expect.stringMatching(/maxObjectBytes/),
    });
    expect(items.find((i) => i.id === "readme.txt")?.skipped).toBeUndefined();

    // The object may grow between listing and fetch: the fetch refuses it with the same reason.
    const fetched = await s3Connector
      .fetchItem(ctx, { id: "reports/DA-1p.pdf", version: md5(pdfBytes) })
      .catch((e: unknown) => e);
    expect(fetched).toBeInstanceOf(ItemSkippedError);
    expect(fetched).toMatchObject({ reason: "too_large" });
  });
});

describe("s3 connector errors", () => {
  it("verifies good settings", async () => {
    await expect(s3Connector.verify?.(makeCtx({ prefix: "docs/" }))).resolves.toBeUndefined();
  });

  it("reports a wrong secret or an unknown access key as ConnectorAuthError", async () => {
    const wrongSecret = makeCtx({}, { secrets: { secretAccessKey: "not-the-secret" } });
    await expect(s3Connector.verify?.(wrongSecret)).rejects.toThrow(/SignatureDoesNotMatch/);
    await expect(s3Connector.verify?.(wrongSecret)).rejects.toBeInstanceOf(ConnectorAuthError);
    await expect(s3Connector.listPage(wrongSecret, { continuationToken: null })).rejects.toBeInstanceOf(
      ConnectorAuthError,
    );
    await expect(
      s3Connector.fetchItem(wrongSecret, { id: "readme.txt", version: "" }),
    ).rejects.toBeInstanceOf(ConnectorAuthError);
    const unknownKey = makeCtx({}, { secrets: { accessKeyId: "AKIANOBODY" } });
    await expect(s3Connector.verify?.(unknownKey)).rejects.toThrow(/InvalidAccessKeyId/);
    await expect(s3Connector.verify?.(unknownKey)).rejects.toBeInstanceOf(ConnectorAuthError);
  });

  it("skips one object GetObject refuses with AccessDenied, and one deleted after the listing", async () => {
    const bucket = "memory-denied";
    await s3.createBucket(bucket);
    await s3.putObject(bucket, "open/ok.txt", "readable");
    await s3.putObject(bucket, "locked/secret.txt", "not for these credentials");
    await s3.putObject(bucket, "open/gone.txt", "deleted before the fetch");
    await s3.denyObject(bucket, "locked/secret.txt");
    const ctx = makeCtx({ bucket });
    const { versions } = await fullPass(ctx);
    expect([...versions.keys()]).toEqual(
      expect.arrayContaining(["open/ok.txt", "locked/secret.txt", "open/gone.txt"]),
    );
    await s3.deleteObject(bucket, "open/gone.txt");

    const refused = await s3Connector
      .fetchItem(ctx, { id: "locked/secret.txt", version: versions.get("locked/secret.txt") ?? "" })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ItemSkippedError);
    expect(refused).toMatchObject({
      reason: "no_permission",
      message: expect.stringMatching(/AccessDenied/),
    });
    await expect(
      s3Connector.fetchItem(ctx, { id: "open/gone.txt", version: versions.get("open/gone.txt") ?? "" }),
    ).resolves.toBeNull();
    // The other objects and the listing itself are unaffected.
    const ok = await s3Connector.fetchItem(ctx, {
      id: "open/ok.txt",
      version: versions.get("open/ok.txt") ?? "",
    });
    expect(ok?.file?.bytes.toString()).toBe("readable");
    await expect(s3Connector.verify?.(ctx)).resolves.toBeUndefined();
  });

  it("reports a missing bucket as ConnectorConfigError", async () => {
    const ctx = makeCtx({ bucket: "no-such-bucket" });
    await expect(s3Connector.verify?.(ctx)).rejects.toBeInstanceOf(ConnectorConfigError);
    await expect(s3Connector.listPage(ctx, { continuationToken: null })).rejects.toThrow(/NoSuchBucket/);
    await expect(s3Connector.listPage(ctx, { continuationToken: null })).rejects.toBeInstanceOf(
      ConnectorConfigError,
    );
    // A vanished bucket must not look like a vanished object (which would read as "absent").
    await expect(s3Connector.fetchItem(ctx, { id: "readme.txt", version: "" })).rejects.toBeInstanceOf(
      ConnectorConfigError,
    );
  });

  it("refuses loopback endpoints when the network policy forbids private networks", async () => {
    const literal = makeCtx({}, { allowPrivateNetwork: false });
    await expect(s3Connector.verify?.(literal)).rejects.toBeInstanceOf(ConnectorConfigError);
    const byName = makeCtx(
      { endpoint: s3.endpoint.replace("127.0.0.1", "localhost") },
      { allowPrivateNetwork: false },
    );
    await expect(s3Connector.verify?.(byName)).rejects.toThrow(/private network/);
    await expect(s3Connector.listPage(byName, { continuationToken: null })).rejects.toBeInstanceOf(
      ConnectorConfigError,
    );
  });

  it("reports SlowDown as ConnectorRateLimitError with the wait the server asked for", async () => {
    // s3rver never throttles: a loopback server answers every request the way S3 does when throttling.
    let requests = 0;
    const throttler = http.createServer((_req, res) => {
      requests++;
      res.writeHead(503, { "content-type": "application/xml", "retry-after": "1" });
      res.end(
        '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>',
      );
    });
    await new Promise<void>((resolve) => throttler.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = throttler.address() as AddressInfo;
      const ctx = makeCtx({ endpoint: `http://127.0.0.1:${port}` });
      const error = await s3Connector.listPage(ctx, { continuationToken: null }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectorRateLimitError);
      expect((error as ConnectorRateLimitError).retryAfterMs).toBe(1000);
      expect(requests).toBeGreaterThanOrEqual(1);
    } finally {
      await new Promise((resolve) => throttler.close(resolve));
    }
  });
});

describe("s3 connector declaration", () => {
  it("parses flat metadata with defaults and string-typed numbers and booleans", () => {
    expect(s3Connector.provider).toBe("s3");
    expect(s3Connector.listing).toBe("full");
    const config = s3Connector.configSchema.parse({
      bucket: "my-bucket",
      pageSize: "10",
      forcePathStyle: "false",
    });
    expect(config).toEqual({
      bucket: "my-bucket",
      prefix: "",
      region: "us-east-1",
      pageSize: 10,
      forcePathStyle: false,
      maxObjectBytes: 100 * 1024 * 1024,
    });
  });

  it("rejects settings that can never work", () => {
    const parse = (m: Record<string, unknown>) => s3Connector.configSchema.safeParse(m).success;
    expect(parse({ bucket: "ab" })).toBe(false);
    expect(parse({ bucket: "a/b/c" })).toBe(false);
    expect(parse({ bucket: "fine-bucket", endpoint: "ftp://example.com" })).toBe(false);
    expect(parse({ bucket: "fine-bucket", pageSize: 5000 })).toBe(false);
    expect(parse({ bucket: "fine-bucket", region: "US East" })).toBe(false);
    expect(parse({})).toBe(false);
  });

  it("declares exactly the secret keys its secrets schema reads, and requires credentials", () => {
    expect([...s3Connector.secretKeys].sort()).toEqual(["accessKeyId", "secretAccessKey", "sessionToken"]);
    expect(s3Connector.secretsSchema.safeParse({ accessKeyId: "AKIA" }).success).toBe(false);
    expect(
      s3Connector.secretsSchema.parse({ accessKeyId: "a", secretAccessKey: "b", sessionToken: "c" }),
    ).toEqual({
      accessKeyId: "a",
      secretAccessKey: "b",
      sessionToken: "c",
    });
  });
});
