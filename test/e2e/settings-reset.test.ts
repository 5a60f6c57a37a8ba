import { randomBytes } from "node:crypto";
import Supermemory, { toFile } from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectionProbe } from "../support/connections.ts";
import { caller } from "../support/http.ts";
import { htmlPage, type LocalSite, startLocalSite } from "../support/local-site.ts";
import {
  startTestService,
  TEST_ADMIN_KEY,
  type TestService,
  untilProcessed,
  waitFor,
} from "../support/service.ts";
import { storedCopies } from "../support/stored-files.ts";

// POST /v3/settings/reset on the real service: refused without its confirmation or to a scoped key; with it, the
// organisation keeps no document, memory, stored file or setting, and keeps its API keys.
describe("organisation reset", () => {
  let service: TestService;
  let client: Supermemory;
  const call = caller(() => service.url);
  const fileBytes = Buffer.from(`reset ledger ${randomBytes(8).toString("hex")}\n`.repeat(20));
  let scopedKey: string;
  let site: LocalSite;
  let connectionId = "";
  const { syncAfter } = connectionProbe(call, () => connectionId);

  beforeAll(async () => {
    site = await startLocalSite();
    site.setPage(
      "/",
      htmlPage("Harbour log", ["The harbour master logs every ferry arrival by hand."], ["/tides"]),
    );
    site.setPage("/tides", htmlPage("Tides", ["Spring tides run strongest two hours after high water."]));
    service = await startTestService({ env: { MEMORY_EXTRACTION: "false" } });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    const uploaded = await client.documents.uploadFile({
      file: await toFile(fileBytes, "ledger.txt"),
      containerTags: "reset-docs",
    });
    const text = await call("POST", "/v3/documents", {
      containerTag: "reset-docs",
      content: "A short note about the lighthouse keeper and the storm of 1953.",
    });
    for (const id of [uploaded.id, text.json.id as string]) {
      const doc = await untilProcessed((i) => client.documents.get(i), id, 120_000);
      expect(doc.status).toBe("done");
    }
    for (const containerTag of ["reset-a", "reset-b"]) {
      const res = await call("POST", "/v4/memories", {
        containerTag,
        memories: [
          { content: `A fact of ${containerTag}` },
          { content: "Alice prefers green tea", isStatic: true },
        ],
      });
      expect(res.status).toBe(201);
    }
    // A connection with its synced documents: the reset removes it the way DELETE /v3/connections does.
    const created = await client.connections.create("web-crawler", {
      containerTag: "reset-site",
      metadata: { startUrls: `${site.url}/`, maxDepth: 1, maxPages: 10 },
    });
    connectionId = created.id;
    expect(await syncAfter(undefined)).toMatchObject({ status: "done", counts: { added: 2 } });
    await waitFor(async () => {
      const docs = await client.connections.listDocuments("web-crawler", { containerTags: ["reset-site"] });
      return docs.length === 2 && docs.every((d) => d.status === "done") ? docs : undefined;
    }, "the crawled pages to be processed");
    // A forgotten memory and an earlier version are rows of the organisation too.
    const [first] = (await call("POST", "/v4/memories/list", { containerTag: "reset-a" })).json.memories;
    await call("PATCH", "/v4/memories", {
      containerTag: "reset-a",
      id: first.id,
      newContent: "An edited fact",
    });
    await call("DELETE", "/v4/memories", { containerTag: "reset-b", content: "Alice prefers green tea" });
    expect((await call("PATCH", "/v3/settings", { chunkSize: 900 })).status).toBe(200);
    scopedKey = (await call("POST", "/v3/auth/scoped-key", { containerTag: "reset-a" })).json.key;
  }, 240_000);
  afterAll(async () => {
    await service?.stop();
    await site?.stop();
  });

  const memoryRows = async () =>
    (await call("POST", "/v4/memories/list", { includeHistory: true, includeForgotten: true })).json
      .pagination.totalItems as number;

  it("is refused to a scoped key and without the confirmation", async () => {
    const scoped = await call("POST", "/v3/settings/reset", { confirmation: "default" }, scopedKey);
    expect(scoped.status).toBe(403);
    const missing = await call("POST", "/v3/settings/reset", {});
    expect(missing.status).toBe(400);
    const wrong = await call("POST", "/v3/settings/reset", { confirmation: "yes" });
    expect(wrong.status).toBe(400);
    expect(wrong.json.error).toContain("'default'");
    // Nothing was deleted.
    expect((await call("POST", "/v3/documents/list", {})).json.memories).toHaveLength(4);
    expect(await memoryRows()).toBeGreaterThanOrEqual(5);
  });

  it("leaves no documents, memories, files or settings, and keeps the keys", async () => {
    expect(storedCopies(service.dataDir, fileBytes).length).toBeGreaterThan(0);
    const rowsBefore = await memoryRows();

    const res = await call("POST", "/v3/settings/reset", { confirmation: "default" });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({
      success: true,
      deletedConnections: 1,
      deletedDocumentBatches: 1,
      deletedDocumentsApprox: 4,
      deletedMemoryRows: rowsBefore,
      deletedExtraSpaces: 4,
      clearedDefaultSpaceContext: false,
      clearedBrainMemoryRegistry: false,
      settingsReset: true,
    });

    expect((await call("POST", "/v3/documents/list", {})).json.memories).toEqual([]);
    expect((await call("POST", "/v3/connections/list", {})).json).toEqual([]);
    expect((await call("GET", `/v3/connections/${connectionId}`)).status).toBe(404);
    expect(await memoryRows()).toBe(0);
    const search = await call("POST", "/v4/search", {
      q: "green tea",
      searchMode: "hybrid",
      include: { forgottenMemories: true },
    });
    expect(search.json.results).toEqual([]);
    expect(storedCopies(service.dataDir, fileBytes)).toEqual([]);
    expect((await call("GET", "/v3/settings")).json.chunkSize).toBeNull();
    // Keys are the organisation's members, not its content: the scoped key still works, on an empty tag.
    const profile = await call("POST", "/v4/profile", { containerTag: "reset-a" }, scopedKey);
    expect(profile.status).toBe(200);
    expect(profile.json.profile).toEqual({ static: [], dynamic: [] });
  });
});
