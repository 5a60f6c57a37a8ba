import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

// The whole flow through the official SDK (4.25.x), unchanged, against the running service.
describe("official supermemory SDK against the service", () => {
  let service: TestService;
  let client: Supermemory;

  beforeAll(async () => {
    service = await startTestService();
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await service?.stop();
  });

  const untilFinished = (id: string) => untilProcessed((i) => client.documents.get(i), id);

  it("adds, processes, lists, reads, updates, searches and deletes documents", async () => {
    const added = await client.documents.add({
      content:
        "Temporal workflows are durable. They survive worker crashes and resume from their event history. " +
        "The service processes each document in stages: extraction, chunking, embedding and indexing.",
      containerTag: "user_alice",
      customId: "alice-notes-1",
      metadata: { topic: "durability", priority: 2 },
    });
    expect(added.id).toBeTruthy();
    expect(["queued", "extracting", "chunking", "embedding", "done"]).toContain(added.status);

    const other = await client.documents.add({
      content: "Bananas are rich in potassium. A ripe banana is yellow with brown spots.",
      containerTag: "user_bob",
    });

    const processing = await client.documents.listProcessing();
    expect(Array.isArray(processing.documents)).toBe(true);
    expect(typeof processing.totalCount).toBe("number");

    const done = await untilFinished(added.id);
    expect(done.status).toBe("done");
    expect(done.content).toContain("Temporal workflows are durable");
    expect(done.type).toBe("text");
    expect(done.containerTags).toEqual(["user_alice"]);
    expect(done.metadata).toMatchObject({ topic: "durability", priority: 2 });
    const history = (done as unknown as { statusHistory: { status: string }[] }).statusHistory.map(
      (h) => h.status,
    );
    expect(history).toEqual(["queued", "extracting", "chunking", "embedding", "done"]);
    expect((await untilFinished(other.id)).status).toBe("done");

    const listed = await client.documents.list({ containerTags: ["user_alice"] });
    expect(listed.memories.map((m) => m.id)).toEqual([added.id]);
    expect(listed.pagination).toMatchObject({ currentPage: 1, totalItems: 1, totalPages: 1 });
    const all = await client.documents.list({ limit: 1, page: 2, sort: "createdAt", order: "asc" });
    expect(all.pagination).toMatchObject({ currentPage: 2, totalItems: 2, totalPages: 2 });
    expect(all.memories.map((m) => m.id)).toEqual([other.id]);

    const found = await client.search.documents({
      q: "what survives a worker crash?",
      containerTags: ["user_alice"],
    });
    expect(found.results[0]?.documentId).toBe(added.id);
    expect(found.results[0]?.chunks.some((c) => c.isRelevant && c.content.includes("durable"))).toBe(true);
    expect(found.results.every((r) => r.documentId !== other.id)).toBe(true);
    const fruit = await client.search.documents({ q: "potassium in bananas" });
    expect(fruit.results[0]?.documentId).toBe(other.id);

    // Metadata-only update: no reprocessing, chunks untouched.
    const metaOnly = await client.documents.update(added.id, { metadata: { topic: "temporal" } });
    expect(metaOnly.status).toBe("done");
    expect((await client.documents.get(added.id)).metadata).toMatchObject({ topic: "temporal", priority: 2 });

    // Content update: full reprocessing, and search follows the new content.
    const changed = await client.documents.update(added.id, {
      content: "PGlite is PostgreSQL compiled to WebAssembly, embedded in the Node.js process.",
    });
    expect(changed.status).toBe("queued");
    expect((await untilFinished(added.id)).content).toContain("WebAssembly");
    const wasm = await client.search.documents({
      q: "postgres in webassembly",
      containerTags: ["user_alice"],
    });
    expect(wasm.results[0]?.chunks[0]?.content).toContain("WebAssembly");

    // Re-adding the same customId updates the document instead of duplicating it.
    const again = await client.documents.add({
      content: "Second version of the notes.",
      customId: "alice-notes-1",
    });
    expect(again.id).toBe(added.id);
    await untilFinished(added.id);
    expect((await client.documents.list({ containerTags: ["user_alice"] })).pagination.totalItems).toBe(1);

    await client.documents.delete("alice-notes-1");
    await expect(client.documents.get(added.id)).rejects.toMatchObject({ status: 404 });

    const bulk = await client.documents.deleteBulk({ containerTags: ["user_bob"] });
    expect(bulk).toMatchObject({ success: true, deletedCount: 1 });
    expect((await client.documents.list({})).pagination.totalItems).toBe(0);
  });

  it("adds a batch and deletes by ids", async () => {
    const batch = await client.documents.batchAdd({
      documents: [
        { content: "First batch item about rivers." },
        { content: "Second batch item about mountains." },
      ],
      containerTag: "batch",
    });
    expect(batch).toMatchObject({ success: 2, failed: 0 });
    const ids = batch.results.map((r) => r.id);
    for (const id of ids) expect((await untilFinished(id)).status).toBe("done");
    const removed = await client.documents.deleteBulk({ ids: [...ids, "missing-id"] });
    expect(removed.deletedCount).toBe(2);
    expect(removed.errors).toEqual([{ id: "missing-id", error: "not found" }]);
  });

  it("rejects bad input with one error shape", async () => {
    await expect(client.documents.list({ limit: 500 })).rejects.toMatchObject({
      status: 400,
      error: { code: "validation_error", field: "limit" },
    });
    await expect(client.documents.add({ content: "" })).rejects.toMatchObject({
      status: 400,
      error: { field: "content" },
    });
    const anonymous = new Supermemory({ apiKey: "sm_wrong", baseURL: service.url, maxRetries: 0 });
    await expect(anonymous.documents.list({})).rejects.toMatchObject({
      status: 401,
      error: { code: "unauthorized" },
    });
    await expect(client.documents.get("no-such-document")).rejects.toMatchObject({
      status: 404,
      error: { code: "not_found" },
    });
  });
});
