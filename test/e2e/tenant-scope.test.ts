import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

// A memory search shows a memory's source document only when the document is still in the caller's scope.
// A short note saved under two tenants' tags is kept as a memory in each; when the document is later retagged
// to tenant B alone, tenant A keeps its memory but no longer sees the document's title, metadata or summary.
describe("memory search and the scope of source documents", () => {
  let service: TestService;
  let admin: Supermemory;
  const call = caller(() => service.url);

  beforeAll(async () => {
    service = await startTestService();
    admin = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  }, 180_000);
  afterAll(async () => {
    await service?.stop();
  });

  it("leaves out a source document retagged away from the caller's tags", async () => {
    const note = "Rita always books a window seat on night trains.";
    const { id } = await admin.documents.add({
      content: note,
      containerTags: ["scope-a", "scope-b"],
      metadata: { secretProject: "tenant b only" },
    });
    expect((await untilProcessed((i) => admin.documents.get(i), id, 120_000)).status).toBe("done");
    const keyA = (await call("POST", "/v3/auth/scoped-key", { containerTag: "scope-a" })).json.key as string;
    const tenantA = new Supermemory({ apiKey: keyA, baseURL: service.url, maxRetries: 0 });
    const search = () =>
      tenantA.search.memories({
        q: "Which seat does Rita book on night trains?",
        containerTag: "scope-a",
        threshold: 0,
        include: { documents: true, summaries: true },
      });

    const shared = (await search()).results.find((r) => r.memory === note);
    expect(shared?.documents?.map((d) => d.id)).toEqual([id]);

    // Tenant B's copy only now: A's memory stays, the document is no longer A's to see.
    const res = await call("PATCH", `/v3/documents/${id}`, { containerTags: ["scope-b"] });
    expect(res.status, res.text).toBe(200);
    const after = (await search()).results.find((r) => r.memory === note);
    expect(after).toBeDefined();
    expect(after?.documents ?? []).toEqual([]);
    expect(JSON.stringify(await search())).not.toContain("tenant b only");
    expect((await call("GET", `/v3/documents/${id}`, undefined, keyA)).status).toBe(404);
  });
});
