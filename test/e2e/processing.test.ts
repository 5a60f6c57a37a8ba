import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

const fixtures = new URL("../fixtures/", import.meta.url);
const ideasPage = readFileSync(new URL("html/ideas-page.html", fixtures));

/** A real local web site whose answers the tests control. */
function startSite() {
  const responses = new Map<string, { status: number; type: string; body: Buffer | string }[]>();
  const server: Server = createServer((req, res) => {
    const queue = responses.get(req.url ?? "/") ?? [];
    const next = queue.length > 1 ? queue.shift() : queue[0];
    if (!next) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    res.writeHead(next.status, { "content-type": next.type }).end(next.body);
  });
  return new Promise<{ url: (p: string) => string; serve: typeof serve; close: () => void }>((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: (p) => `http://127.0.0.1:${port}${p}`, serve, close: () => server.close() });
    });
  });
  function serve(path: string, ...answers: { status: number; type: string; body: Buffer | string }[]) {
    responses.set(path, answers);
  }
}

describe("document processing through Temporal", () => {
  let service: TestService;
  let client: Supermemory;
  let site: Awaited<ReturnType<typeof startSite>>;

  beforeAll(async () => {
    site = await startSite();
    service = await startTestService();
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await service?.stop();
    site?.close();
  });

  const finished = (id: string, timeoutMs?: number) =>
    untilProcessed((i) => client.documents.get(i), id, timeoutMs);
  const reason = (doc: object) => (doc as { errorReason: string | null }).errorReason ?? "";

  it("starts each document's workflow on its own worker (eager start), and the run completes there", async () => {
    const before = service.processingStarts();
    const added = await Promise.all(
      [1, 2, 3].map((n) =>
        client.documents.add({ content: `Eager start note ${n}: tides at the north pier.` }),
      ),
    );
    for (const { id } of added) expect((await finished(id)).status).toBe("done");
    const after = service.processingStarts();
    expect(after.total - before.total).toBe(3);
    expect(after.eager - before.eager).toBe(3);
  });

  it("fetches a web page, extracts its article text and title", async () => {
    site.serve("/ideas.html", { status: 200, type: "text/html; charset=utf-8", body: ideasPage });
    const { id } = await client.documents.add({ content: site.url("/ideas.html"), containerTag: "web" });
    const doc = await finished(id);
    expect(doc.status).toBe("done");
    expect(doc.type).toBe("webpage");
    expect(doc.title).toBe("How to Get New Ideas");
    expect(doc.url).toBe(site.url("/ideas.html"));
    expect(doc.content).toContain("The way to get new ideas is to notice anomalies");
    expect(doc.content).not.toContain("store.yahoo.net");
    const hits = await client.search.documents({ q: "where do new ideas come from", containerTags: ["web"] });
    expect(hits.results[0]?.documentId).toBe(id);
  });

  it("ends failed with a reason when the page does not exist, and a re-submit with the same customId retries", async () => {
    const path = "/later.html";
    const { id } = await client.documents.add({ content: site.url(path), customId: "later-page" });
    const failed = await finished(id);
    expect(failed.status).toBe("failed");
    expect(reason(failed)).toMatch(/404/);

    site.serve(path, { status: 200, type: "text/plain", body: "Now the page exists and has words in it." });
    const again = await client.documents.add({ content: site.url(path), customId: "later-page" });
    expect(again).toMatchObject({ id, status: "queued" });
    const done = await finished(id);
    expect(done.status).toBe("done");
    expect(done.content).toBe("Now the page exists and has words in it.");
  });

  it("retries transient server errors and then succeeds", async () => {
    site.serve(
      "/flaky.txt",
      { status: 503, type: "text/plain", body: "busy" },
      { status: 503, type: "text/plain", body: "busy" },
      { status: 200, type: "text/plain", body: "Third time lucky: flaky servers recover." },
    );
    const { id } = await client.documents.add({ content: site.url("/flaky.txt") });
    const doc = await finished(id);
    expect(doc.status).toBe("done");
    expect(doc.content).toContain("Third time lucky");
  });

  it("reads HTML given inline as content like a web page", async () => {
    const { id } = await client.documents.add({
      content:
        '<!doctype html><html><head><title>Inline page</title><meta name="description" content="An inline test page"></head>' +
        "<body><nav>Home | About</nav><article><h1>Inline page</h1><p>Inline HTML is parsed like any web page, " +
        "with its title and its metadata kept.</p></article></body></html>",
    });
    const doc = await finished(id);
    expect(doc.status).toBe("done");
    expect(doc.type).toBe("webpage");
    expect(doc.title).toBe("Inline page");
    expect(doc.content).toContain("Inline HTML is parsed like any web page");
    expect((doc as unknown as { fileMetadata: Record<string, unknown> }).fileMetadata).toMatchObject({
      description: "An inline test page",
    });
  });

  it("fails without retrying when there is no text at all", async () => {
    const { id } = await client.documents.add({ content: " \n\t " });
    const doc = await finished(id);
    expect(doc.status).toBe("failed");
    expect(reason(doc)).toMatch(/no text could be extracted/);
  });

  it("fails on content types it cannot read yet, without crashing", async () => {
    site.serve("/blob.bin", {
      status: 200,
      type: "application/octet-stream",
      body: Buffer.from([0, 1, 2, 3]),
    });
    const { id } = await client.documents.add({ content: site.url("/blob.bin") });
    const doc = await finished(id);
    expect(doc.status).toBe("failed");
    expect(reason(doc)).toMatch(/application\/octet-stream/);
  });
});

describe("private network protection", () => {
  let service: TestService;
  let client: Supermemory;
  let site: Awaited<ReturnType<typeof startSite>>;

  beforeAll(async () => {
    site = await startSite();
    service = await startTestService({ env: { ALLOW_PRIVATE_NETWORK: "false" } });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await service?.stop();
    site?.close();
  });

  it("refuses to fetch loopback addresses unless configured", async () => {
    site.serve("/secret", { status: 200, type: "text/plain", body: "internal secret" });
    const { id } = await client.documents.add({ content: site.url("/secret") });
    const doc = await untilProcessed((i) => client.documents.get(i), id);
    expect(doc.status).toBe("failed");
    expect((doc as { errorReason?: string }).errorReason).toMatch(/refused/);
    expect(doc.content ?? "").not.toContain("internal secret");
  });

  it("says an internal host is refused without telling what it resolves to", async () => {
    site.serve("/inside", { status: 200, type: "text/plain", body: "internal secret" });
    // localhost is a name: the refusal names it, not the loopback address it resolves to.
    const url = site.url("/inside").replace("127.0.0.1", "localhost");
    const { id } = await client.documents.add({ content: url });
    const doc = await untilProcessed((i) => client.documents.get(i), id);
    expect(doc.status).toBe("failed");
    const reason = (doc as { errorReason?: string }).errorReason ?? "";
    expect(reason).toContain("the host localhost is not allowed (refused: private or internal network)");
    expect(reason).not.toMatch(/127\.0\.0\.1|::1|loopback/);
    expect(doc.content ?? "").not.toContain("internal secret");
  });
});

describe("a stage that takes too long", () => {
  let service: TestService;
  let client: Supermemory;
  let hanging: Server;
  let url = "";

  beforeAll(async () => {
    // A server that accepts the request and never answers.
    hanging = createServer(() => {});
    await new Promise<void>((r) => hanging.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/slow`;
    service = await startTestService({ env: { FETCH_TIMEOUT_MS: "300" } });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await service?.stop();
    hanging?.closeAllConnections();
    hanging?.close();
  });

  it("times out, is retried, and ends failed with the reason instead of staying in extracting", async () => {
    const { id } = await client.documents.add({ content: url });
    const doc = await untilProcessed((i) => client.documents.get(i), id, 120_000);
    expect(doc.status).toBe("failed");
    expect((doc as { errorReason?: string }).errorReason).toMatch(
      /timed out after 300 ms.*gave up after retries/,
    );
  });
});
