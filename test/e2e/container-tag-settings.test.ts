import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../support/fake-llm.ts";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

// GET /v3/container-tags/list, GET/PATCH/DELETE /v3/container-tags/{containerTag}, through HTTP in the shapes
// of the SDK 5 OpenAPI document. A fake chat model (it answers no memories) shows the tag's entityContext
// reaching memory extraction; with a model configured, short texts are not memories, so the only memories
// are those the test adds.
describe("container tag settings", () => {
  let service: TestService;
  let llm: FakeLlm;
  let client: Supermemory;
  const call = caller(() => service.url);

  const addDocument = async (content: string, containerTags: string[], entityContext?: string) => {
    const res = await call("POST", "/v3/documents", {
      content,
      containerTags,
      ...(entityContext ? { entityContext } : {}),
    });
    expect(res.status, res.text).toBe(200);
    await untilProcessed((i) => client.documents.get(i), res.json.id as string, 120_000);
    return res.json.id as string;
  };

  beforeAll(async () => {
    llm = await startFakeLlm(() => '{"memories":[]}');
    service = await startTestService({ env: { LLM_BASE_URL: llm.url, LLM_MODEL: "fake-extractor" } });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  }, 180_000);
  afterAll(async () => {
    await service?.stop();
    await llm?.close();
  });

  it("lists each tag with its documents and live memories, and a tag that has only settings", async () => {
    await addDocument("Notes on the tide tables of the northern harbour.", ["ls-a"]);
    await addDocument("The harbour master's log, shared by both crews.", ["ls-a", "ls-b"]);
    const added = await call("POST", "/v4/memories", {
      containerTag: "ls-a",
      memories: [{ content: "The harbour closes at dusk" }, { content: "The ferry was painted red" }],
    });
    expect(added.status, added.text).toBe(201);
    const forgotten = await call("DELETE", "/v4/memories", {
      containerTag: "ls-a",
      content: "The ferry was painted red",
    });
    expect(forgotten.status, forgotten.text).toBe(200);
    // A tag with neither content nor settings is unknown to PATCH (404, as the OpenAPI document has it).
    expect((await call("PATCH", "/v3/container-tags/ls-c", { name: "Later" })).status).toBe(404);
    await call("POST", "/v4/memories", { containerTag: "ls-c", memories: [{ content: "Later crew" }] });
    expect((await call("PATCH", "/v3/container-tags/ls-c", { name: "Later" })).status).toBe(200);
    // Its only memory forgotten, the tag is listed for its settings alone.
    await call("DELETE", "/v4/memories", { containerTag: "ls-c", content: "Later crew" });

    const res = await call("GET", "/v3/container-tags/list");
    expect(res.status, res.text).toBe(200);
    const byTag = new Map(
      (res.json as { containerTag: string; createdAt: string; updatedAt: string }[]).map((t) => [
        t.containerTag,
        t,
      ]),
    );
    expect(byTag.get("ls-a")).toMatchObject({
      id: "ls-a",
      name: "ls-a",
      description: null,
      isExperimental: false,
      isNova: false,
      documentCount: 2,
      memoryCount: 1,
      lastActivityAt: expect.any(String),
    });
    expect(byTag.get("ls-b")).toMatchObject({ documentCount: 1, memoryCount: 0 });
    expect(byTag.get("ls-c")).toMatchObject({
      name: "Later",
      documentCount: 0,
      memoryCount: 0,
      lastActivityAt: null,
    });
    for (const t of byTag.values()) {
      expect(Number.isNaN(Date.parse(t.createdAt))).toBe(false);
      expect(Number.isNaN(Date.parse(t.updatedAt))).toBe(false);
    }
  });

  it("reads and changes a tag's settings, one field at a time", async () => {
    await addDocument("Survey of the western reef.", ["set-a"]);
    const before = await call("GET", "/v3/container-tags/set-a");
    expect(before.status, before.text).toBe(200);
    expect(before.json).toMatchObject({
      containerTag: "set-a",
      name: null,
      entityContext: null,
      memoryFilesystemPaths: null,
      profileBuckets: [],
    });
    expect((await call("GET", "/v3/container-tags/set-nothing")).status).toBe(404);

    const patched = await call("PATCH", "/v3/container-tags/set-a", {
      name: "Reef survey",
      entityContext: "Field notes of a marine biologist.",
      profileBuckets: [{ key: "work" }, { key: "health_notes", description: "Diving injuries" }],
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.json).toMatchObject({
      containerTag: "set-a",
      name: "Reef survey",
      entityContext: "Field notes of a marine biologist.",
      profileBuckets: [
        { key: "work", description: "" },
        { key: "health_notes", description: "Diving injuries" },
      ],
    });
    const renamed = await call("PATCH", "/v3/container-tags/set-a", { name: "Reef" });
    expect(renamed.json).toMatchObject({ name: "Reef", entityContext: "Field notes of a marine biologist." });
    expect(renamed.json.profileBuckets).toHaveLength(2);
    expect((await call("GET", "/v3/container-tags/set-a")).json).toEqual(renamed.json);
    const cleared = await call("PATCH", "/v3/container-tags/set-a", {
      entityContext: null,
      profileBuckets: [],
    });
    expect(cleared.json).toMatchObject({ name: "Reef", entityContext: null, profileBuckets: [] });

    for (const bad of [
      { profileBuckets: [{ key: "Work!" }] },
      { profileBuckets: [{ key: "a" }, { key: "a" }] },
      { entityContext: "x".repeat(1501) },
      { name: "" },
    ]) {
      const res = await call("PATCH", "/v3/container-tags/set-a", bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.json.code).toBe("validation_error");
    }
  });

  it("gives the tag's entity context to memory extraction when a document has none of its own", async () => {
    await call("POST", "/v4/memories", { containerTag: "ctx-a", memories: [{ content: "Keeps a diary" }] });
    await call("PATCH", "/v3/container-tags/ctx-a", { entityContext: "TAG-CONTEXT-ZETA" });
    await addDocument("CASE-TAGCTX the lighthouse keeper's diary.", ["ctx-a"]);
    await addDocument("CASE-OWNCTX the harbour pilot's notes.", ["ctx-a"], "DOC-CONTEXT-ETA");
    const prompt = (marker: string) =>
      llm.requests
        .map((r) => r.messages.map((m) => m.content).join("\n"))
        .find((text) => text.includes(marker)) ?? "";
    expect(prompt("CASE-TAGCTX")).toContain("TAG-CONTEXT-ZETA");
    expect(prompt("CASE-OWNCTX")).toContain("DOC-CONTEXT-ETA");
    expect(prompt("CASE-OWNCTX")).not.toContain("TAG-CONTEXT-ZETA");
  });

  it("deletes a tag with its settings, in the SDK's shape", async () => {
    await addDocument("Only in the doomed tag.", ["del-a"]);
    await addDocument("Shared with a kept tag.", ["del-a", "del-keep"]);
    await call("POST", "/v4/memories", { containerTag: "del-a", memories: [{ content: "Doomed fact" }] });
    await call("PATCH", "/v3/container-tags/del-a", { name: "Doomed" });
    const res = await call("DELETE", "/v3/container-tags/del-a");
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({
      success: true,
      containerTag: "del-a",
      deletedDocumentsCount: 1,
      deletedMemoriesCount: 1,
      deletedDocuments: 1,
      untaggedDocuments: 1,
      deletedMemories: 1,
    });
    expect((await call("GET", "/v3/container-tags/del-a")).status).toBe(404);
    const list = (await call("GET", "/v3/container-tags/list")).json as { containerTag: string }[];
    expect(list.map((t) => t.containerTag)).not.toContain("del-a");
    expect(list.map((t) => t.containerTag)).toContain("del-keep");

    // A tag left with settings and a forgotten memory is a tag too.
    await call("POST", "/v4/memories", {
      containerTag: "del-settings",
      memories: [{ content: "Passing fact" }],
    });
    expect((await call("PATCH", "/v3/container-tags/del-settings", { name: "Empty" })).status).toBe(200);
    await call("DELETE", "/v4/memories", { containerTag: "del-settings", content: "Passing fact" });
    const empty = await call("DELETE", "/v3/container-tags/del-settings");
    expect(empty.json).toMatchObject({ success: true, deletedDocumentsCount: 0, deletedMemoriesCount: 1 });
    expect((await call("DELETE", "/v3/container-tags/del-settings")).status).toBe(404);
  });

  it("is for admin keys only", async () => {
    const key = (await call("POST", "/v3/auth/scoped-key", { containerTag: "set-a" })).json.key as string;
    expect((await call("GET", "/v3/container-tags/list", undefined, key)).status).toBe(403);
    expect((await call("GET", "/v3/container-tags/set-a", undefined, key)).status).toBe(403);
    expect((await call("PATCH", "/v3/container-tags/set-a", { name: "Mine" }, key)).status).toBe(403);
    expect((await call("GET", "/v3/container-tags/list", undefined, null)).status).toBe(401);
  });
});
