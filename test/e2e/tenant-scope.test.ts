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
    // (The memory keeps the metadata it was saved with: it was A's note then and stays A's memory.)
    expect((await search()).results.flatMap((r) => r.documents ?? [])).toEqual([]);
    expect((await call("GET", `/v3/documents/${id}`, undefined, keyA)).status).toBe(404);
  });

  it("lets a scoped key delete only its own share of a document another tenant carries too", async () => {
    const add = async (content: string, customId: string) => {
      const { id } = await admin.documents.add({ content, customId, containerTags: ["share-a", "share-b"] });
      expect((await untilProcessed((i) => admin.documents.get(i), id, 120_000)).status).toBe("done");
      return id;
    };
    const first = await add("The orchard has forty-two pear trees.", "shared-orchard");
    const second = await add("The orchard's well is twelve metres deep.", "shared-well");
    const keyA = (await call("POST", "/v3/auth/scoped-key", { containerTag: "share-a" })).json.key as string;

    // Changing what tenant B sees is refused, through PATCH and through an add with the same customId.
    const patched = await call("PATCH", `/v3/documents/${first}`, { content: "No trees at all." }, keyA);
    expect(patched.status, patched.text).toBe(403);
    expect(patched.json.code).toBe("forbidden");
    const upsert = await call(
      "POST",
      "/v3/documents",
      { content: "No trees at all.", customId: "shared-orchard", containerTag: "share-a" },
      keyA,
    );
    expect(upsert.status, upsert.text).toBe(403);
    expect((await admin.documents.get(first)).content).toBe("The orchard has forty-two pear trees.");

    // Deleting: gone for A, still B's, unchanged and searchable.
    expect((await call("DELETE", `/v3/documents/${first}`, undefined, keyA)).status).toBe(204);
    expect((await call("GET", `/v3/documents/${first}`, undefined, keyA)).status).toBe(404);
    expect(await admin.documents.get(first)).toMatchObject({ status: "done", containerTags: ["share-b"] });
    // The note was kept as a memory in each tag: A's went with A's share, B's stays.
    const memoriesOf = async (containerTag: string) =>
      (await admin.search.memories({ q: "How many pear trees?", containerTag, threshold: 0 })).results.map(
        (r) => r.memory,
      );
    expect(await memoriesOf("share-a")).not.toContain("The orchard has forty-two pear trees.");
    expect(await memoriesOf("share-b")).toContain("The orchard has forty-two pear trees.");
    const bulk = await call("DELETE", "/v3/documents/bulk", { containerTags: ["share-a"] }, keyA);
    expect(bulk.status, bulk.text).toBe(200);
    expect(bulk.json.deletedCount).toBe(1);
    expect((await admin.documents.get(second)).containerTags).toEqual(["share-b"]);
    const found = await admin.search.documents({
      q: "How deep is the orchard's well?",
      containerTags: ["share-b"],
    });
    expect(found.results.map((r) => r.documentId)).toContain(second);
  });

  it("gives each tenant its own customIds: the same one used by another tenant changes nothing it sees", async () => {
    const scoped = async (tag: string) => {
      const res = await call("POST", "/v3/auth/scoped-key", { containerTag: tag });
      expect(res.status, res.text).toBe(200);
      return new Supermemory({ apiKey: res.json.key as string, baseURL: service.url, maxRetries: 0 });
    };
    const tenantA = await scoped("ns-a");
    const tenantB = await scoped("ns-b");

    // What tenant A sees of its customId, as a plain record of every answer it gets.
    const seenByA = async (round: string) => {
      const added = await tenantA.documents.add({ content: `A's plan, ${round}`, customId: "plan-1" });
      const got = await tenantA.documents.get("plan-1");
      const renamed = await call(
        "PATCH",
        `/v3/documents/${added.id}`,
        { customId: "plan-2" },
        keyOf(tenantA),
      );
      const back = await call("PATCH", `/v3/documents/${added.id}`, { customId: "plan-1" }, keyOf(tenantA));
      const list = await tenantA.documents.list({ containerTags: ["ns-a"] });
      return {
        sameIdOnGet: got.id === added.id,
        customId: got.customId,
        renamed: renamed.status,
        back: back.status,
        listed: list.memories.map((m) => m.customId),
        id: added.id,
      };
    };

    const alone = await seenByA("first");
    const { id: bId } = await tenantB.documents.add({ content: "B's plan, secret", customId: "plan-1" });
    await tenantB.documents.add({ content: "B's second plan", customId: "plan-2" });
    const beside = await seenByA("first");
    expect(beside).toEqual(alone);
    expect(alone).toMatchObject({
      sameIdOnGet: true,
      customId: "plan-1",
      renamed: 200,
      back: 200,
    });
    expect(alone.listed).toEqual(["plan-1"]);

    // B's document is B's: its content, and A's re-add did not touch it; each tenant deletes only its own.
    expect((await tenantB.documents.get("plan-1")).id).toBe(bId);
    expect((await tenantB.documents.get("plan-1")).content).toBe("B's plan, secret");
    await tenantA.documents.delete("plan-1");
    expect((await tenantB.documents.get("plan-1")).id).toBe(bId);
    await expect(tenantA.documents.get("plan-1")).rejects.toMatchObject({ status: 404 });

    // Within one namespace a customId still names one document: renaming onto a taken one is a conflict.
    const { id: first } = await tenantA.documents.add({ content: "one", customId: "own-1" });
    await tenantA.documents.add({ content: "two", customId: "own-2" });
    const clash = await call("PATCH", `/v3/documents/${first}`, { customId: "own-2" }, keyOf(tenantA));
    expect(clash.status).toBe(409);
    expect(clash.json.code).toBe("conflict");
  });

  it("checks a customId rename against the caller's own tenant, as an add does", async () => {
    const keyA = await scopedKey("rn-a");
    const keyB = await scopedKey("rn-b");
    const added = async (body: Record<string, unknown>, key?: string) => {
      const res = await call("POST", "/v3/documents", body, key);
      expect(res.status, res.text).toBe(200);
      return res.json.id as string;
    };
    // Written by an admin (the shared namespace, as a sync, an import or a version before namespaces would).
    const legacy = await added({ content: "A's old note", customId: "rn-legacy", containerTag: "rn-a" });
    const bAdmin = await added({ content: "B's report", customId: "rn-report", containerTag: "rn-b" });
    const bOwn = await added({ content: "B's own", customId: "rn-b-own" }, keyB);
    const rename = (customId: string) => call("PATCH", `/v3/documents/${legacy}`, { customId }, keyA);

    // Other tenants' documents, an admin's or their own key's, never hold a customId for A.
    for (const customId of ["rn-report", "rn-b-own"]) {
      const res = await rename(customId);
      expect(res.status, res.text).toBe(200);
    }
    const byA = await call("GET", "/v3/documents/rn-b-own", undefined, keyA);
    expect(byA.json).toMatchObject({ id: legacy, customId: "rn-b-own", content: "A's old note" });
    expect((await call("GET", "/v3/documents/rn-b-own", undefined, keyB)).json.id).toBe(bOwn);
    expect((await call("GET", "/v3/documents/rn-report", undefined, keyB)).json.id).toBe(bAdmin);
    // A's add of the new customId updates the renamed document: it is now in A's namespace.
    expect(await added({ content: "A's new note", customId: "rn-b-own" }, keyA)).toBe(legacy);

    // Within A's tenant a customId still names one document: its own key's, or an admin's in its tags.
    await added({ content: "A's plan", customId: "rn-a-own" }, keyA);
    await added({ content: "A's admin plan", customId: "rn-a-admin", containerTag: "rn-a" });
    for (const customId of ["rn-a-own", "rn-a-admin"]) {
      const res = await rename(customId);
      expect(res.status, res.text).toBe(409);
      expect(res.json.code).toBe("conflict");
    }
    expect((await call("GET", `/v3/documents/${legacy}`, undefined, keyA)).json.customId).toBe("rn-b-own");
  });

  it("narrows an admin's bulk delete by customIds to containerTags, and counts every document deleted", async () => {
    const keyA = await scopedKey("bd-a");
    const keyB = await scopedKey("bd-b");
    const add = async (body: Record<string, unknown>, key?: string) => {
      const res = await call("POST", "/v3/documents", body, key);
      expect(res.status, res.text).toBe(200);
      return res.json.id as string;
    };
    const a = await add({ content: "A's report", customId: "bd-report" }, keyA);
    const b = await add({ content: "B's report", customId: "bd-report" }, keyB);
    const c = await add({ content: "C's report", customId: "bd-report", containerTag: "bd-c" });
    const exists = async (id: string) => (await call("GET", `/v3/documents/${id}`)).status === 200;

    // With containerTags: only the tenant named loses its document.
    const narrowed = await call("DELETE", "/v3/documents/bulk", {
      ids: ["bd-report"],
      containerTags: ["bd-a"],
    });
    expect(narrowed.status, narrowed.text).toBe(200);
    expect(narrowed.json).toMatchObject({ success: true, deletedCount: 1 });
    expect([await exists(a), await exists(b), await exists(c)]).toEqual([false, true, true]);
    expect((await call("GET", "/v3/documents/bd-report", undefined, keyB)).json.id).toBe(b);

    // A scoped key may narrow only to its own tags.
    const foreign = await call(
      "DELETE",
      "/v3/documents/bulk",
      { ids: ["bd-report"], containerTags: ["bd-c"] },
      keyB,
    );
    expect(foreign.status, foreign.text).toBe(403);
    expect(await exists(c)).toBe(true);

    // Without: every document of the customId goes, each one counted; an unknown id is reported.
    const all = await call("DELETE", "/v3/documents/bulk", { ids: ["bd-report", "bd-nothing"] });
    expect(all.status, all.text).toBe(200);
    expect(all.json).toEqual({
      success: false,
      deletedCount: 2,
      errors: [{ id: "bd-nothing", error: "not found" }],
    });
    expect([await exists(b), await exists(c)]).toEqual([false, false]);
  });

  it("shows a scoped key only its own tags of a shared document, and lets only a key of all its tags reprocess it", async () => {
    const note = "The ferry to Skye leaves the harbour at seven each morning.";
    const added = await call("POST", "/v3/documents", { content: note, containerTags: ["sh-a", "sh-b"] });
    expect(added.status, added.text).toBe(200);
    const id = added.json.id as string;
    const done = await untilProcessed(
      async (i) => (await call("GET", `/v3/documents/${i}`)).json,
      id,
      120_000,
    );
    expect(done.status).toBe("done");
    const keyA = await scopedKey("sh-a");
    const keyBoth = await scopedKey("sh-a", ["sh-b"]);

    // Every answer that shows the document's tags: get, list (both routes), search.
    const tagsSeen = async (key: string) => {
      const got = await call("GET", `/v3/documents/${id}`, undefined, key);
      const listed = await call("POST", "/v3/documents/list", { containerTags: ["sh-a"] }, key);
      const memories = await call("POST", "/v3/memories/list", { containerTags: ["sh-a"] }, key);
      const found = await call(
        "POST",
        "/v3/search",
        { q: "When does the ferry leave?", containerTags: ["sh-a"] },
        key,
      );
      for (const res of [got, listed, memories, found]) expect(res.status, res.text).toBe(200);
      const inList = (rows: { id?: string; documentId?: string; containerTags: string[] }[]) =>
        rows.find((r) => (r.id ?? r.documentId) === id)?.containerTags;
      return {
        get: got.json.containerTags,
        list: inList(listed.json.memories),
        memories: inList(memories.json.memories),
        search: inList(found.json.results),
      };
    };
    const only = (tags: string[]) => ({ get: tags, list: tags, memories: tags, search: tags });
    expect(await tagsSeen(keyA)).toEqual(only(["sh-a"]));
    expect(await tagsSeen(keyBoth)).toEqual(only(["sh-a", "sh-b"]));
    expect((await call("GET", `/v3/documents/${id}`)).json.containerTags).toEqual(["sh-a", "sh-b"]);

    // Reprocessing serves both tenants: refused to the key of one, nothing queued; allowed to a key of both.
    const runs = async () => (await call("GET", `/v3/documents/${id}`)).json.statusHistory.length as number;
    const before = await runs();
    const refused = await call("POST", `/v3/documents/${id}/reprocess`, undefined, keyA);
    expect(refused.status, refused.text).toBe(403);
    expect(refused.json.code).toBe("forbidden");
    expect(refused.json.error).toMatch(/shared with container tags outside this key's scope/);
    expect(refused.json.error).not.toContain("sh-b");
    expect(await runs()).toBe(before);
    const metadata = await call("PATCH", `/v3/documents/${id}`, { metadata: { by: "a" } }, keyA);
    expect(metadata.status, metadata.text).toBe(403);
    const allowed = await call("POST", `/v3/documents/${id}/reprocess`, undefined, keyBoth);
    expect(allowed.status, allowed.text).toBe(200);
    expect(allowed.json).toEqual({ id, status: "queued" });
  });

  /** A new scoped key of these tags. */
  async function scopedKey(containerTag: string, containerTags?: string[]): Promise<string> {
    const res = await call("POST", "/v3/auth/scoped-key", {
      containerTag,
      ...(containerTags ? { containerTags } : {}),
    });
    expect(res.status, res.text).toBe(200);
    return res.json.key as string;
  }

  /** The bearer key an SDK client was made with, for the calls the SDK does not make. */
  function keyOf(client: Supermemory): string {
    return client.apiKey;
  }
});
