import SupermemoryAlpha from "supermemory-alpha";
import SupermemoryV3 from "supermemory-v3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, TEST_ADMIN_KEY, type TestService, waitFor } from "../support/service.ts";

// Clients built on earlier SDK versions keep working: 3.14.0 (documents.*) and 3.0.0-alpha.26,
// which calls /v3/memories, /v3/memories/list and friends.
describe("earlier SDK versions", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("supermemory@3.14.0: add, get, list, update, search, delete", async () => {
    const client = new SupermemoryV3({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    const { id } = await client.documents.add({
      content: "Otters hold hands while sleeping.",
      containerTag: "v3",
    });
    const doc = await waitFor(async () => {
      const d = await client.documents.get(id);
      return d.status === "done" ? d : undefined;
    }, "v3 document");
    expect(doc.content).toBe("Otters hold hands while sleeping.");
    const list = await client.documents.list({ containerTags: ["v3"] });
    expect(list.memories.map((m) => m.id)).toEqual([id]);
    await client.documents.update(id, { metadata: { animal: "otter" } });
    expect((await client.documents.get(id)).metadata).toEqual({ animal: "otter" });
    const found = await client.search.documents({ q: "sleeping otters", containerTags: ["v3"] });
    expect(found.results[0]?.documentId).toBe(id);
    await client.documents.delete(id);
    expect((await client.documents.list({ containerTags: ["v3"] })).pagination.totalItems).toBe(0);
  });

  it("supermemory@3.0.0-alpha.26: /v3/memories add, get, list, update, delete", async () => {
    const client = new SupermemoryAlpha({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    const { id } = await client.memories.add({
      content: "Penguins propose with pebbles.",
      containerTags: ["alpha"],
    });
    const doc = await waitFor(async () => {
      const d = await client.memories.get(id);
      return d.status === "done" ? d : undefined;
    }, "alpha memory");
    expect(doc.content).toBe("Penguins propose with pebbles.");
    const list = await client.memories.list({
      containerTags: ["alpha"],
      filters: JSON.stringify({ AND: [{ key: "kind", value: "bird", negate: true }] }),
    });
    expect(list.memories.map((m) => m.id)).toEqual([id]);
    const updated = await client.memories.update(id, { content: "Penguins propose with smooth pebbles." });
    expect(updated.id).toBe(id);
    const redone = await waitFor(async () => {
      const d = await client.memories.get(id);
      return d.status === "done" && d.content?.includes("smooth") ? d : undefined;
    }, "alpha update");
    expect(redone.content).toBe("Penguins propose with smooth pebbles.");
    await client.memories.delete(id);
    await expect(client.memories.get(id)).rejects.toMatchObject({ status: 404 });
  });
});
