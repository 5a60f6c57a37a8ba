import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import Supermemory, { toFile } from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDiskBlobStore } from "../../blobs/disk.ts";
import { createLogger } from "../../config/logger.ts";
import { newFileKey } from "../../services/document-files.ts";
import { exportContainerTag, parseImport } from "../../services/export.ts";
import { openMemoryPglite, openPglite, queryRows } from "../../store/db.ts";
import { documents, memories } from "../../store/schema/index.ts";
import { type FakeLlm, startFakeLlm } from "../support/fake-llm.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";
import { storedCopies } from "../support/stored-files.ts";

interface MemoryJson {
  id: string;
  memory: string;
  version: number;
  isLatest: boolean;
  isForgotten: boolean;
  forgetAfter: string | null;
  forgetReason: string | null;
  parentId: string | null;
  rootId: string | null;
  relation: string | null;
  relatedTo: string | null;
  sourceDocumentId: string | null;
  containerTag: string;
  createdAt: string;
  updatedAt: string;
}

// Listing memories (POST /v4/memories/list, GET /v4/memories/:id), deleting a container tag
// (DELETE /v3/container-tags/:tag) and its export/import as JSON Lines, on the real service.
describe("container tags: listing memories, deleting a tag, export and import", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "memory-tags-"));
  const JSON_LIMIT = 16_384;
  let service: TestService;
  let client: Supermemory;
  let llm: FakeLlm | undefined;
  const call = caller(() => service.url);
  const EXTRACTED = "The roundtrip note is about quasars";
  /** Memory extraction asked about the round-trip note (by its marker); other documents yield no memories. */
  const extractionsOfNote = () =>
    llm?.requests.filter((r) => r.messages.some((m) => m.content.includes("CASE-ROUNDTRIP"))).length ?? 0;

  const start = async () => {
    llm ??= await startFakeLlm((messages) => {
      const says = (marker: string) => messages.some((m) => m.content.includes(marker));
      if (says("CASE-ROUNDTRIP"))
        return JSON.stringify({ memories: [{ content: EXTRACTED, isStatic: false, relation: null }] });
      // A model that never answers in the expected shape: extraction is skipped, its reason names the tags.
      if (says("CASE-GARBLED")) return "Sure! The lighthouse keeper is fit.";
      return '{"memories":[]}';
    });
    // A small JSON body limit: an import (which carries files) must still be accepted up to MAX_FILE_BYTES.
    service = await startTestService({
      dataDir,
      env: { MAX_CONTENT_BYTES: String(JSON_LIMIT), LLM_BASE_URL: llm.url, LLM_MODEL: "fake-extractor" },
    });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  };
  beforeAll(start, 180_000);
  afterAll(async () => {
    await service?.stop();
    await llm?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const addMemories = async (containerTag: string, memories: Record<string, unknown>[]) => {
    const res = await call("POST", "/v4/memories", { containerTag, memories });
    expect(res.status).toBe(201);
    return res.json.memories.map((m: { id: string }) => m.id) as string[];
  };
  const list = async (body: Record<string, unknown>, key?: string) => {
    const res = await call("POST", "/v4/memories/list", body, key);
    expect(res.status, res.text).toBe(200);
    return res.json as {
      memories: MemoryJson[];
      pagination: { currentPage: number; totalPages: number; totalItems: number; limit: number };
    };
  };
  const contents = (r: { memories: MemoryJson[] }) => r.memories.map((m) => m.memory);
  const scopedKey = async (containerTag: string) => {
    const res = await call("POST", "/v3/auth/scoped-key", { containerTag });
    expect(res.status).toBe(200);
    return res.json.key as string;
  };
  const done = async (id: string) => {
    const doc = await untilProcessed((i) => client.documents.get(i), id, 120_000);
    expect(doc.status, doc.errorReason ?? "").toBe("done");
    return doc;
  };
  const stored = (bytes: Buffer) => storedCopies(dataDir, bytes).length > 0;

  it("describes the new routes and the deletion semantics in the OpenAPI document", async () => {
    const doc = (await call("GET", "/openapi.json", undefined, null)).json as {
      paths: Record<string, Record<string, { description?: string }>>;
    };
    expect(Object.keys(doc.paths["/v4/memories/list"] ?? {})).toEqual(["post"]);
    expect(Object.keys(doc.paths["/v4/memories/{id}"] ?? {})).toEqual(["get"]);
    expect(Object.keys(doc.paths["/v3/container-tags/{containerTag}/export"] ?? {})).toEqual(["get"]);
    expect(Object.keys(doc.paths["/v3/container-tags/{containerTag}/import"] ?? {})).toEqual(["post"]);
    const del = doc.paths["/v3/container-tags/{containerTag}"]?.delete?.description ?? "";
    expect(del).toContain("Scoped API keys restricted to the tag are NOT deleted");
    expect(del).toContain("one transaction");
  });

  describe("listing memories", () => {
    const ids: Record<string, string> = {};

    beforeAll(async () => {
      // One call per memory, so creation times differ and the order can be checked.
      const add = async (name: string, memory: Record<string, unknown>) => {
        ids[name] = (await addMemories("list-a", [memory]))[0] as string;
      };
      await add("a1", { content: "Ada writes her notes in Markdown" });
      await add("a2", { content: "Ada is reading a book about whales" });
      await add("a3", {
        content: "Ada's locker code is 4711",
        forgetAfter: new Date(Date.now() - 60_000).toISOString(),
        forgetReason: "temporary",
      });
      await add("a4", { content: "Ada drinks green tea", isStatic: true, metadata: { kind: "preference" } });
      await add("a5", { content: "Ada cycles to work" });
      ids.b1 = (await addMemories("list-b", [{ content: "Bo keeps bees" }]))[0] as string;
      const updated = await client.memories.updateMemory({
        containerTag: "list-a",
        id: ids.a1 as string,
        newContent: "Ada writes her notes in Org mode",
      });
      ids.a1v2 = updated.id;
      await client.memories.forget({ containerTag: "list-a", id: ids.a2 as string, reason: "finished" });
    });

    it("lists latest, live memories by default, in the shape POST /v4/memories answers", async () => {
      const page = await list({ containerTag: "list-a" });
      expect(new Set(contents(page))).toEqual(
        new Set(["Ada writes her notes in Org mode", "Ada drinks green tea", "Ada cycles to work"]),
      );
      expect(page.pagination).toEqual({ currentPage: 1, totalPages: 1, totalItems: 3, limit: 50 });
      const tea = page.memories.find((m) => m.id === ids.a4);
      expect(tea).toEqual({
        id: ids.a4,
        memory: "Ada drinks green tea",
        isStatic: true,
        createdAt: expect.any(String),
        forgetAfter: null,
        version: 1,
        containerTag: "list-a",
        metadata: { kind: "preference" },
        isForgotten: false,
        forgetReason: null,
        parentId: null,
        rootId: ids.a4,
        isLatest: true,
        relation: null,
        relatedTo: null,
        sourceDocumentId: null,
        updatedAt: expect.any(String),
      });
      // Newest first by default; the order can be reversed and sorted by updatedAt.
      const asc = await list({ containerTag: "list-a", order: "asc" });
      expect(asc.memories.map((m) => m.id)).toEqual([ids.a4, ids.a5, ids.a1v2]);
      const desc = await list({ containerTag: "list-a" });
      expect(desc.memories.map((m) => m.id)).toEqual([ids.a1v2, ids.a5, ids.a4]);
      const byUpdate = await list({ containerTag: "list-a", sort: "updatedAt", order: "asc" });
      expect(byUpdate.memories.map((m) => m.id)).toEqual([ids.a4, ids.a5, ids.a1v2]);
    });

    it("shows earlier versions with includeHistory", async () => {
      const all = await list({ containerTag: "list-a", includeHistory: true, order: "asc" });
      expect(all.memories.map((m) => m.id)).toEqual([ids.a1, ids.a4, ids.a5, ids.a1v2]);
      const [v1, , , v2] = all.memories;
      expect(v1).toMatchObject({ version: 1, isLatest: false, memory: "Ada writes her notes in Markdown" });
      expect(v2).toMatchObject({
        version: 2,
        isLatest: true,
        parentId: ids.a1,
        rootId: ids.a1,
        relation: "updates",
        relatedTo: ids.a1,
      });
    });

    it("shows forgotten and expired memories with includeForgotten", async () => {
      const all = await list({ containerTag: "list-a", includeForgotten: true });
      expect(all.pagination.totalItems).toBe(5);
      expect(all.memories.find((m) => m.id === ids.a2)).toMatchObject({
        isForgotten: true,
        forgetReason: "finished",
      });
      expect(all.memories.find((m) => m.id === ids.a3)).toMatchObject({
        isForgotten: true,
        forgetReason: "temporary",
        forgetAfter: expect.any(String),
      });
      const everything = await list({
        containerTags: ["list-a"],
        includeForgotten: true,
        includeHistory: true,
      });
      expect(everything.pagination.totalItems).toBe(6);
    });

    it("pages through the results", async () => {
      const body = { containerTag: "list-a", includeForgotten: true, includeHistory: true, limit: 4 };
      const first = await list({ ...body, order: "asc" });
      const second = await list({ ...body, order: "asc", page: 2 });
      const third = await list({ ...body, order: "asc", page: 3 });
      expect(first.pagination).toEqual({ currentPage: 1, totalPages: 2, totalItems: 6, limit: 4 });
      expect(second.pagination).toEqual({ currentPage: 2, totalPages: 2, totalItems: 6, limit: 4 });
      expect(first.memories).toHaveLength(4);
      expect(second.memories).toHaveLength(2);
      expect(third.memories).toEqual([]);
      expect([...first.memories, ...second.memories].map((m) => m.id)).toEqual([
        ids.a1,
        ids.a2,
        ids.a3,
        ids.a4,
        ids.a5,
        ids.a1v2,
      ]);
      // An admin key without tags lists every container's memories.
      const everyTag = await list({ limit: 1000 });
      expect(everyTag.memories.map((m) => m.id)).toEqual(expect.arrayContaining([ids.b1, ids.a4]));
      for (const bad of [
        { limit: 0 },
        { limit: 1001 },
        { page: 0 },
        { sort: "size" },
        { containerTag: "a b" },
      ]) {
        const res = await call("POST", "/v4/memories/list", bad);
        expect(res.status).toBe(400);
        expect(res.json.code).toBe("validation_error");
      }
      // The body is optional.
      const empty = await fetch(`${service.url}/v4/memories/list`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
      });
      expect(empty.status).toBe(200);
    });

    it("gets one memory by id, any version", async () => {
      const old = await call("GET", `/v4/memories/${ids.a1}`);
      expect(old.status).toBe(200);
      expect(old.json).toMatchObject({ id: ids.a1, version: 1, isLatest: false, containerTag: "list-a" });
      const forgotten = await call("GET", `/v4/memories/${ids.a2}`);
      expect(forgotten.json).toMatchObject({ id: ids.a2, isForgotten: true });
      const missing = await call("GET", "/v4/memories/no-such-memory");
      expect(missing.status).toBe(404);
      expect(missing.json.code).toBe("not_found");
    });

    it("keeps a scoped key inside its tags", async () => {
      const key = await scopedKey("list-a");
      const own = await list({}, key);
      expect(own.memories.every((m) => m.containerTag === "list-a")).toBe(true);
      expect(own.pagination.totalItems).toBe(3);
      expect((await list({ containerTag: "list-a", includeHistory: true }, key)).pagination.totalItems).toBe(
        4,
      );
      const foreign = await call("POST", "/v4/memories/list", { containerTag: "list-b" }, key);
      expect(foreign.status).toBe(403);
      expect(foreign.json.code).toBe("forbidden");
      expect(
        (await call("POST", "/v4/memories/list", { containerTags: ["list-a", "list-b"] }, key)).status,
      ).toBe(403);
      const other = await call("GET", `/v4/memories/${ids.b1}`, undefined, key);
      expect(other.status).toBe(404);
      // Exactly the answer to an id that does not exist.
      expect(other.json).toEqual((await call("GET", "/v4/memories/no-such-memory", undefined, key)).json);
      expect(other.json.code).toBe("not_found");
      expect((await call("GET", `/v4/memories/${ids.a4}`, undefined, key)).status).toBe(200);
    });
  });

  describe("deleting a container tag", () => {
    // Distinctive, and without LIKE wildcards (_ or %), so a text search over every table finds only it.
    const TAG = "zq-purge.tenant:7f3k";
    const OTHER = "keep-b";
    const docs: Record<string, string> = {};
    const onlyA = Buffer.from(`Field notes ${randomBytes(8).toString("hex")}: the tide pools hold starfish.`);
    const sharedBytes = Buffer.from(
      `Shared file ${randomBytes(8).toString("hex")}: both containers keep this recipe for rye bread.`,
    );

    beforeAll(async () => {
      const add = async (name: string, body: Record<string, unknown>) => {
        const res = await call("POST", "/v3/documents", body);
        expect(res.status).toBe(200);
        docs[name] = res.json.id;
      };
      await add("onlyA", {
        content: "Glaciers carve U-shaped valleys as they slowly move downhill.",
        containerTag: TAG,
      });
      await add("shared", {
        content: "The lighthouse keeper climbs one hundred and twelve steps every evening. CASE-GARBLED",
        containerTags: [TAG, OTHER],
      });
      const upload = async (name: string, bytes: Buffer, containerTag: string) => {
        const res = await client.documents.uploadFile({
          file: await toFile(bytes, `${name}.txt`),
          containerTag,
        });
        docs[name] = res.id;
      };
      await upload("fileA", onlyA, TAG);
      await upload("sharedFileA", sharedBytes, TAG);
      await upload("sharedFileB", sharedBytes, OTHER);
      for (const id of Object.values(docs)) await done(id);
      const [m1] = await addMemories(TAG, [
        { content: "The tenant prefers metric units" },
        { content: "The tenant's office is on the third floor" },
      ]);
      await client.memories.updateMemory({
        containerTag: TAG,
        id: m1 as string,
        newContent: "The tenant prefers imperial units",
      });
      await addMemories(OTHER, [{ content: "Keep-b likes rye bread" }]);
    }, 300_000);

    it("is refused to scoped keys, even for their own tag", async () => {
      const key = await scopedKey(TAG);
      const res = await call("DELETE", `/v3/container-tags/${TAG}`, undefined, key);
      expect(res.status).toBe(403);
      expect(res.json.code).toBe("forbidden");
      expect((await client.documents.get(docs.onlyA as string)).id).toBe(docs.onlyA);
    });

    it("deletes the tag's documents, memories and unused files; shared documents stay with their other tags", async () => {
      expect(stored(onlyA)).toBe(true);
      const before = await call("GET", `/v3/documents/${docs.shared}`);
      expect(before.json.memoryExtraction).toMatchObject({
        status: "skipped",
        reason: expect.stringContaining(TAG),
      });
      const res = await call("DELETE", `/v3/container-tags/${TAG}`);
      expect(res.status, res.text).toBe(200);
      expect(res.json).toEqual({
        success: true,
        containerTag: TAG,
        deletedDocuments: 3,
        deletedDocumentsCount: 3,
        untaggedDocuments: 1,
        deletedMemories: 3,
        deletedMemoriesCount: 3,
      });
      for (const name of ["onlyA", "fileA", "sharedFileA"]) {
        expect((await call("GET", `/v3/documents/${docs[name]}`)).status).toBe(404);
      }
      const shared = await client.documents.get(docs.shared as string);
      expect(shared.containerTags).toEqual([OTHER]);
      const found = await client.search.documents({
        q: "How many steps does the lighthouse keeper climb?",
        containerTags: [OTHER],
      });
      expect(found.results.map((r) => r.documentId)).toContain(docs.shared);
      const gone = await client.search.documents({ q: "lighthouse keeper glaciers", containerTags: [TAG] });
      expect(gone.results).toEqual([]);
      expect(
        (await list({ containerTag: TAG, includeHistory: true, includeForgotten: true })).memories,
      ).toEqual([]);
      expect(contents(await list({ containerTag: OTHER }))).toEqual(["Keep-b likes rye bread"]);
      // The file only the tag used is gone; the one another document still uses stays.
      expect(stored(onlyA)).toBe(false);
      expect(stored(sharedBytes)).toBe(true);
      expect((await client.documents.get(docs.sharedFileB as string)).status).toBe("done");

      const again = await call("DELETE", `/v3/container-tags/${TAG}`);
      expect(again.status).toBe(404);
      expect(again.json.code).toBe("not_found");
      const bad = await call("DELETE", "/v3/container-tags/not%20a%20tag!");
      expect(bad.status).toBe(400);
      expect(bad.json.code).toBe("validation_error");
    });

    it("leaves no row in any table mentioning the tag (credentials aside)", async () => {
      await service.stop();
      const store = await openPglite(dataDir);
      try {
        const tables = await queryRows<{ name: string }>(
          store.db,
          sql`SELECT table_name AS name FROM information_schema.tables
              WHERE table_schema = 'public' AND table_type = 'BASE TABLE'
                AND table_name NOT IN ('api_keys', 'rate_limits', '__drizzle_migrations')
              ORDER BY 1`,
        );
        expect(tables.map((t) => t.name)).toEqual(
          expect.arrayContaining(["chunks", "documents", "memories"]),
        );
        const mentions = async (text: string) => {
          const counts: Record<string, number> = {};
          for (const { name } of tables) {
            const [row] = await queryRows<{ n: number }>(
              store.db,
              sql`SELECT count(*)::int AS n FROM ${sql.identifier(name)} t WHERE t::text LIKE ${`%${text}%`}`,
            );
            counts[name] = Number(row?.n ?? 0);
          }
          return counts;
        };
        const leftovers = await mentions(TAG);
        expect(
          Object.values(leftovers).every((n) => n === 0),
          JSON.stringify(leftovers),
        ).toBe(true);
        // The same query does find the other tag, so a zero above means something.
        expect((await mentions(OTHER)).documents).toBe(2);
        // The scoped key for the tag is a credential: it is kept (and excluded above).
        const [keys] = await queryRows<{ n: number }>(
          store.db,
          sql`SELECT count(*)::int AS n FROM api_keys WHERE ${TAG} = ANY(container_tags)`,
        );
        expect(keys?.n).toBe(1);
      } finally {
        await store.close();
      }
      await start();
    });
  });

  describe("export and import", () => {
    const TAG = "roundtrip-x";
    const docx = readFileSync(path.join(FIXTURES_DIR, "docx/handbook-1p.docx"));
    const ids: Record<string, string> = {};
    const before: Record<string, MemoryJson> = {};
    let exported = "";
    const FUTURE = "2099-01-01T00:00:00.000Z";

    const importBody = (body: string, tag = TAG) =>
      fetch(`${service.url}/v3/container-tags/${tag}/import`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, "content-type": "application/x-ndjson" },
        body,
      });
    const lines = (text: string) =>
      text
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>);

    beforeAll(async () => {
      const note = await call("POST", "/v3/documents", {
        content:
          "Quasars are the luminous cores of distant galaxies, powered by supermassive black holes. CASE-ROUNDTRIP",
        containerTag: TAG,
        customId: "roundtrip-note",
        metadata: { topic: "astronomy", year: 2024 },
      });
      ids.note = note.json.id;
      ids.docx = (
        await client.documents.uploadFile({
          file: await toFile(docx, "handbook.docx"),
          containerTag: TAG,
          metadata: JSON.stringify({ topic: "law" }),
        })
      ).id;
      for (const id of [ids.note, ids.docx]) await done(id as string);
      const [cello, forgotten, later, expired] = await addMemories(TAG, [
        { content: "Xavier plays the cello in an orchestra" },
        { content: "Xavier is moving flats in March" },
        {
          content: "Xavier's guest wifi password is swordfish",
          forgetAfter: FUTURE,
          forgetReason: "rotates",
        },
        {
          content: "Xavier is at a conference this week",
          forgetAfter: new Date(Date.now() - 60_000).toISOString(),
        },
      ]);
      Object.assign(ids, { cello, forgotten, later, expired });
      ids.viola = (
        await client.memories.updateMemory({
          containerTag: TAG,
          id: cello as string,
          newContent: "Xavier plays the viola in an orchestra",
        })
      ).id;
      await client.memories.forget({ containerTag: TAG, id: forgotten as string, reason: "moved already" });
      for (const m of (await list({ containerTag: TAG, includeHistory: true, includeForgotten: true }))
        .memories)
        before[m.id] = m;
      // Five memories written through the API, one extracted from the note by the (fake) LLM.
      expect(Object.keys(before)).toHaveLength(6);
      ids.extracted = Object.values(before).find((m) => m.memory === EXTRACTED)?.id as string;
      expect(before[ids.extracted]?.sourceDocumentId).toBe(ids.note);
      expect(extractionsOfNote()).toBe(1);
    }, 300_000);

    it("exports the tag as JSON lines: header, documents with their files, every memory version", async () => {
      const res = await fetch(`${service.url}/v3/container-tags/${TAG}/export`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("application/x-ndjson");
      exported = await res.text();
      expect(exported.length).toBeGreaterThan(JSON_LIMIT);
      const [header, ...rest] = lines(exported);
      expect(header).toEqual({
        kind: "header",
        format: "memory-service-export",
        version: 1,
        containerTag: TAG,
        exportedAt: expect.any(String),
        counts: { documents: 2, memories: 6 },
      });
      const documents = rest.filter((l) => l.kind === "document");
      const memories = rest.filter((l) => l.kind === "memory");
      expect(rest.map((l) => l.kind)).toEqual([
        ...documents.map(() => "document"),
        ...memories.map(() => "memory"),
      ]);
      expect(new Set(documents.map((d) => d.id))).toEqual(new Set([ids.note, ids.docx]));
      const file = documents.find((d) => d.id === ids.docx);
      expect(file).toMatchObject({ fileName: "handbook.docx", metadata: { topic: "law" }, status: "done" });
      expect(Buffer.from(file?.file as string, "base64").equals(docx)).toBe(true);
      const note = documents.find((d) => d.id === ids.note);
      expect(note).toMatchObject({
        customId: "roundtrip-note",
        metadata: { topic: "astronomy", year: 2024 },
        type: "text",
        content: expect.stringContaining("Quasars"),
      });
      expect(note?.file).toBeUndefined();
      // Memories ordered by chain then version; both versions of the updated one, no vectors.
      const roots = memories.map((m) => m.rootId as string);
      expect(roots.filter((r, i) => i === 0 || r !== roots[i - 1])).toHaveLength(new Set(roots).size);
      const chain = memories.filter((m) => m.rootId === ids.cello);
      expect(chain.map((m) => [m.id, m.version])).toEqual([
        [ids.cello, 1],
        [ids.viola, 2],
      ]);
      expect(memories[0]).not.toHaveProperty("embedding");
      expect(memories[0]).not.toHaveProperty("tsv");
      expect(memories.find((m) => m.id === ids.forgotten)).toMatchObject({ isForgotten: true });

      const slim = await fetch(`${service.url}/v3/container-tags/${TAG}/export?files=false`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
      });
      expect(lines(await slim.text()).some((l) => "file" in l)).toBe(false);
      const key = await scopedKey(TAG);
      expect((await call("GET", `/v3/container-tags/${TAG}/export`, undefined, key)).status).toBe(403);
      expect((await call("GET", "/v3/container-tags/never-used-tag/export")).status).toBe(404);
    });

    it("refuses a malformed import naming the line, writing nothing", async () => {
      expect((await call("DELETE", `/v3/container-tags/${TAG}`)).status).toBe(200);
      expect((await call("GET", `/v3/documents/${ids.note}`)).status).toBe(404);
      expect(stored(docx)).toBe(false);
      const original = exported.trim().split("\n");
      const broken = [...original];
      broken[3] = JSON.stringify({ kind: "memory", id: "m-without-content" });
      const res = await importBody(`${broken.join("\n")}\n`);
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: string; code: string; field: string };
      expect(body.code).toBe("validation_error");
      expect(body.error).toMatch(/^line 4: /);
      expect(body.field).toBe("line 4");
      const notJson = [...original.slice(0, 5), "{not json", ...original.slice(5)].join("\n");
      const res2 = await importBody(notJson);
      expect(res2.status).toBe(400);
      expect(((await res2.json()) as { error: string }).error).toBe("line 6: not valid JSON");
      const noHeader = await importBody(original.slice(1).join("\n"));
      expect(noHeader.status).toBe(400);
      expect((await call("POST", "/v3/documents/list", { containerTags: [TAG] })).json.memories).toEqual([]);
      expect((await call("GET", `/v3/documents/${ids.note}`)).status).toBe(404);
      expect(
        (await list({ containerTag: TAG, includeForgotten: true, includeHistory: true })).memories,
      ).toEqual([]);
      const key = await scopedKey(TAG);
      const scoped = await fetch(`${service.url}/v3/container-tags/${TAG}/import`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: exported,
      });
      expect(scoped.status).toBe(403);
    });

    it("imports the export back: documents processed again, memories with versions and forget state", async () => {
      // Larger than a JSON body may be, yet accepted: imports have the file limit.
      const tooLarge = await call("POST", "/v3/documents", {
        content: "x".repeat(JSON_LIMIT),
        containerTag: TAG,
      });
      expect(tooLarge.status).toBe(413);
      const res = await importBody(exported);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        containerTag: TAG,
        documents: { imported: 2, skipped: 0 },
        memories: { imported: 6, skipped: 0 },
      });
      const note = await done(ids.note as string);
      expect(note).toMatchObject({
        customId: "roundtrip-note",
        containerTags: [TAG],
        metadata: { topic: "astronomy" },
      });
      const file = await done(ids.docx as string);
      expect(file).toMatchObject({ type: "docx", containerTags: [TAG] });
      expect(stored(docx)).toBe(true);
      const found = await client.search.documents({ q: "Who appoints the trustee?", containerTags: [TAG] });
      expect(found.results.map((r) => r.documentId)).toContain(ids.docx);
      const quasar = await client.search.documents({ q: "What powers a quasar?", containerTags: [TAG] });
      expect(quasar.results[0]?.documentId).toBe(ids.note);

      // Only the latest version is searched; history, forget state and timestamps are as before.
      const viola = await client.search({ q: "Which instrument does Xavier play?", containerTag: TAG });
      const found2 = viola.results.flatMap((r) => (r.memory ? [r.memory] : []));
      expect(found2).toContain("Xavier plays the viola in an orchestra");
      expect(found2).not.toContain("Xavier plays the cello in an orchestra");
      const history = await list({ containerTag: TAG, includeHistory: true, includeForgotten: true });
      expect(history.pagination.totalItems).toBe(6);
      // The note's memories came with the import: processing did not ask the LLM for them again.
      expect(extractionsOfNote()).toBe(1);
      for (const m of history.memories) expect(m).toEqual(before[m.id]);
      expect(new Set(contents(await list({ containerTag: TAG })))).toEqual(
        new Set([
          "Xavier plays the viola in an orchestra",
          "Xavier's guest wifi password is swordfish",
          EXTRACTED,
        ]),
      );
      expect(before[ids.later as string]).toMatchObject({ forgetAfter: FUTURE, forgetReason: "rotates" });
      expect(before[ids.expired as string]?.isForgotten).toBe(true);
      expect(before[ids.viola as string]).toMatchObject({
        version: 2,
        parentId: ids.cello,
        rootId: ids.cello,
      });
    });

    it("skips everything when the same export is imported again", async () => {
      const res = await importBody(exported);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        containerTag: TAG,
        documents: { imported: 0, skipped: 2 },
        memories: { imported: 0, skipped: 6 },
      });
      expect(
        (await list({ containerTag: TAG, includeHistory: true, includeForgotten: true })).pagination
          .totalItems,
      ).toBe(6);
      const docs = await call("POST", "/v3/documents/list", { containerTags: [TAG] });
      expect(docs.json.pagination.totalItems).toBe(2);
    });

    it("keeps a memory's source document only when that document exists", async () => {
      const at = new Date().toISOString();
      const memory = (id: string, sourceDocumentId: string) => ({
        kind: "memory",
        id,
        content: `Handmade memory ${id}`,
        isStatic: false,
        metadata: {},
        isForgotten: false,
        version: 1,
        rootId: id,
        isLatest: true,
        sourceDocumentId,
        createdAt: at,
        updatedAt: at,
      });
      const body = [
        {
          kind: "header",
          format: "memory-service-export",
          version: 1,
          containerTag: "elsewhere",
          exportedAt: at,
        },
        memory("handmade-1", "no-such-document"),
        memory("handmade-2", ids.note as string),
      ]
        .map((l) => JSON.stringify(l))
        .join("\n");
      const res = await importBody(body, "handmade");
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({
        containerTag: "handmade",
        memories: { imported: 2, skipped: 0 },
      });
      const lost = await call("GET", "/v4/memories/handmade-1");
      expect(lost.json).toMatchObject({ containerTag: "handmade", sourceDocumentId: null });
      expect((await call("GET", "/v4/memories/handmade-2")).json.sourceDocumentId).toBe(ids.note);
    });
  });
});

// The export reads a tag page by page (keyset paging): with tiny pages every row still comes exactly
// once, in order, and the import's line reader splits a stream cut at arbitrary byte boundaries.
describe("export paging and the import reader", () => {
  it("pages through documents and memory chains, and reads the lines back", async () => {
    const store = await openMemoryPglite();
    const filesDir = mkdtempSync(path.join(tmpdir(), "memory-export-"));
    try {
      const blobs = createDiskBlobStore(filesDir);
      const bytes = Buffer.from("stored bytes \u00e9\u2713");
      const key = newFileKey(createHash("sha256").update(bytes).digest("hex"));
      await blobs.put(key, bytes);
      const tag = "paged";
      const docIds = Array.from({ length: 5 }, (_, i) => `doc-${i}`);
      await store.db.insert(documents).values([
        ...docIds.map((id, i) => ({
          id,
          source: `text ${i}`,
          containerTags: i === 4 ? [tag, "other"] : [tag],
          metadata: { n: i },
          ...(i === 0 ? { fileKey: key } : {}),
          // A stored file that went missing: exported without bytes.
          ...(i === 1 ? { fileKey: newFileKey("0".repeat(64)) } : {}),
        })),
        { id: "doc-elsewhere", source: "not this tag", containerTags: ["other"], metadata: {} },
      ]);
      const chains = [3, 1, 2, 1, 3];
      const rows = chains.flatMap((versions, c) =>
        Array.from({ length: versions }, (_, v) => ({
          id: `m${c}-v${v + 1}`,
          containerTag: tag,
          content: `memory ${c} version ${v + 1} caf\u00e9 \u2713`,
          version: v + 1,
          rootId: `m${c}-v1`,
          parentId: v ? `m${c}-v${v}` : null,
          isLatest: v + 1 === versions,
        })),
      );
      await store.db
        .insert(memories)
        .values([
          ...rows,
          { id: "elsewhere", containerTag: "other", content: "not this tag", rootId: "elsewhere" },
        ]);
      const log = createLogger("silent");
      const stream = await exportContainerTag({ db: store.db, blobs, log }, tag, {
        files: true,
        pageSize: { documents: 2, memories: 2 },
      });
      const text = await new Response(stream).text();
      const lines = text
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines[0]).toMatchObject({ kind: "header", counts: { documents: 5, memories: 10 } });
      const docs = lines.filter((l) => l.kind === "document");
      expect(docs.map((d) => d.id)).toEqual(docIds);
      expect(docs[0]?.file).toBe(bytes.toString("base64"));
      expect(docs[1]).not.toHaveProperty("file");
      expect(docs[4]?.containerTags).toEqual([tag, "other"]);
      const mems = lines.filter((l) => l.kind === "memory");
      expect(mems).toHaveLength(rows.length);
      expect(new Set(mems.map((m) => m.id))).toEqual(new Set(rows.map((r) => r.id)));
      // Each chain's versions are together and in order.
      const byChain = new Map<string, number[]>();
      mems.forEach((m, i) => {
        byChain.set(m.rootId as string, [...(byChain.get(m.rootId as string) ?? []), i]);
        if (i && mems[i - 1]?.rootId === m.rootId)
          expect(m.version).toBe((mems[i - 1]?.version as number) + 1);
      });
      for (const positions of byChain.values())
        expect(positions).toEqual(positions.map((_, k) => (positions[0] as number) + k));

      // Fed back seven bytes at a time (cutting multi-byte characters), every line parses.
      const encoded = new TextEncoder().encode(text);
      const chunked = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < encoded.length; i += 7) controller.enqueue(encoded.slice(i, i + 7));
          controller.close();
        },
      });
      const parsed = await parseImport(chunked);
      expect(parsed.documents.map((d) => d.doc.id)).toEqual(docIds);
      expect(parsed.documents[0]?.file?.equals(bytes)).toBe(true);
      expect(parsed.memories.map((m) => m.memory.content)).toEqual(mems.map((m) => m.content));
      expect(parsed.memories[0]?.line).toBe(7);
    } finally {
      await store.close();
      rmSync(filesDir, { recursive: true, force: true });
    }
  });
});
