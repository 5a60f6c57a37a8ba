import { readFileSync } from "node:fs";
import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../support/fake-llm.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

// Every option of /v3/search and /v4/search, through the official SDK where it has the option and over
// plain HTTP for this service's extensions (retrieval, endUserId, POST /v4/memories).
describe("search options", () => {
  let service: TestService;
  let llm: FakeLlm;
  let client: Supermemory;
  const call = caller(() => service.url);
  const ids: Record<string, string> = {};
  const PHOTOSYNTHESIS =
    "Photosynthesis converts sunlight, water and carbon dioxide into glucose and oxygen inside the chloroplasts of plant leaves.";

  beforeAll(async () => {
    llm = await startFakeLlm(() => "photosynthesis glucose chloroplasts");
    // Memory extraction has its own test; here the fake LLM only rewrites queries.
    service = await startTestService({
      env: { LLM_BASE_URL: llm.url, LLM_MODEL: "fake-rewriter", MEMORY_EXTRACTION: "false" },
    });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    const add = async (name: string, body: Record<string, unknown>) => {
      const res = await call("POST", "/v3/documents", { containerTag: "lib", ...body });
      expect(res.status).toBe(200);
      ids[name] = res.json.id;
    };
    await add("football", {
      content:
        "Norwich City football club plays its home games at Carrow Road stadium. The club's nickname is the Canaries.",
      metadata: { category: "Sport", year: 1902, tags: ["football", "england"], author: "Jane Smith" },
      endUserId: "reader-1",
    });
    await add("plants", {
      content: PHOTOSYNTHESIS,
      metadata: { category: "science", year: 2019, tags: ["biology"], author: "John Doe" },
      endUserId: "reader-2",
    });
    await add("rust", {
      content:
        "The Rust programming language guarantees memory safety without a garbage collector, through ownership and borrowing.",
      metadata: { category: "Tech", year: 2015, tags: ["programming", "systems"], author: "jane smith" },
    });
    // The same paragraph as "plants" in a second document: search shows it once.
    await add("copy", { content: PHOTOSYNTHESIS, metadata: { category: "copy" } });
    await add("long", {
      content: readFileSync(`${FIXTURES_DIR}/text/norwich-city.txt`, "utf8"),
      metadata: { category: "history" },
    });
    const elsewhere = await call("POST", "/v3/documents", {
      containerTag: "elsewhere",
      content: "Carrow Road is also mentioned in a document of another container.",
    });
    ids.elsewhere = elsewhere.json.id;
    for (const id of Object.values(ids)) {
      const doc = await untilProcessed((i) => client.documents.get(i), id);
      expect(doc.status).toBe("done");
    }
  }, 240_000);

  afterAll(async () => {
    await service?.stop();
    await llm?.close();
  });

  const search = (body: Record<string, unknown>) =>
    client.search.documents({ containerTag: "lib", ...body } as Parameters<
      typeof client.search.documents
    >[0]);
  const docIds = (r: { results: { documentId: string }[] }) => r.results.map((x) => x.documentId);

  it("answers in the SDK's shape, limited to the container tags asked for", async () => {
    // The long article is about a Norwich City player, so it competes for this question; both lead.
    const found = await search({ q: "Where do the Canaries play football?" });
    expect(docIds(found).slice(0, 2)).toContain(ids.football);
    const first = found.results.find((r) => r.documentId === ids.football);
    expect(first).toMatchObject({
      documentId: ids.football,
      type: "text",
      metadata: { category: "Sport" },
    });
    expect(typeof first?.score).toBe("number");
    expect(Date.parse(first?.createdAt as string)).not.toBeNaN();
    expect(Date.parse(first?.updatedAt as string)).not.toBeNaN();
    expect(first?.chunks[0]).toMatchObject({ isRelevant: true });
    expect(typeof first?.chunks[0]?.score).toBe("number");
    expect(typeof found.timing).toBe("number");
    expect(found.total).toBe(found.results.length);
    expect(docIds(found)).not.toContain(ids.elsewhere);
    const both = await client.search.documents({ q: "Carrow Road", containerTags: ["lib", "elsewhere"] });
    expect(docIds(both)).toEqual(expect.arrayContaining([ids.football, ids.elsewhere]));
    // The older method name of the SDK reaches the same search.
    const executed = await client.search.execute({
      q: "Where do the Canaries play football?",
      containerTags: ["lib"],
    });
    expect(docIds(executed).slice(0, 2)).toContain(ids.football);
  });

  it("limits, thresholds and searching inside one document", async () => {
    expect((await search({ q: "plants and sunlight", limit: 1 })).results).toHaveLength(1);
    expect((await search({ q: "plants and sunlight", documentThreshold: 0.999 })).results).toEqual([]);
    expect((await search({ q: "plants and sunlight", chunkThreshold: 0.999 })).results).toEqual([]);
    const loose = await search({ q: "plants and sunlight", chunkThreshold: 0.2 });
    expect(
      loose.results.every((r) => r.chunks.filter((c) => c.isRelevant).every((c) => c.score >= 0.2)),
    ).toBe(true);
    const inside = await search({ q: "football stadium", docId: ids.rust });
    expect(inside.results.length).toBeGreaterThan(0);
    expect(new Set(docIds(inside))).toEqual(new Set([ids.rust]));
  });

  it("shows context chunks unless onlyMatchingChunks, and full documents and summaries on request", async () => {
    const q = "Which clubs did Iwan Roberts play for?";
    const withContext = await search({ q, docId: ids.long, limit: 1 });
    const chunks = withContext.results[0]?.chunks ?? [];
    expect(chunks.some((c) => c.isRelevant)).toBe(true);
    expect(chunks.some((c) => !c.isRelevant)).toBe(true);
    const only = await search({ q, docId: ids.long, limit: 1, onlyMatchingChunks: true });
    expect(only.results[0]?.chunks.every((c) => c.isRelevant)).toBe(true);
    const full = await search({ q: "Rust ownership", includeFullDocs: true, includeSummary: true, limit: 1 });
    const rust = full.results[0] as unknown as { content: string; summary: string; documentId: string };
    expect(rust.documentId).toBe(ids.rust);
    expect(rust.content).toContain("garbage collector");
    expect(rust.summary).toContain("Rust");
    const plain = (await search({ q: "Rust ownership", limit: 1 })).results[0] as unknown as Record<
      string,
      unknown
    >;
    expect(plain.content).toBeUndefined();
    expect(plain.summary).toBeUndefined();
  });

  it("shows a paragraph found in two documents once", async () => {
    const found = await search({ q: "How do plants make glucose?", onlyMatchingChunks: true });
    const copies = found.results.flatMap((r) => r.chunks).filter((c) => c.content === PHOTOSYNTHESIS);
    expect(copies).toHaveLength(1);
  });

  it("filters by metadata: equality, ignoreCase, numeric, array_contains, string_contains, negate, nesting", async () => {
    const q = "sport science programming history";
    const matching = async (filters: unknown) =>
      new Set(docIds(await search({ q, limit: 20, filters: filters as never })));
    expect(await matching({ AND: [{ key: "category", value: "sport" }] })).toEqual(new Set());
    expect(await matching({ AND: [{ key: "category", value: "sport", ignoreCase: true }] })).toEqual(
      new Set([ids.football]),
    );
    expect(
      await matching({ AND: [{ key: "year", value: "2010", filterType: "numeric", numericOperator: ">" }] }),
    ).toEqual(new Set([ids.plants, ids.rust]));
    expect(
      await matching({ AND: [{ key: "year", value: "1902", filterType: "numeric", numericOperator: "<=" }] }),
    ).toEqual(new Set([ids.football]));
    expect(
      await matching({ AND: [{ key: "tags", value: "biology", filterType: "array_contains" }] }),
    ).toEqual(new Set([ids.plants]));
    expect(
      await matching({ AND: [{ key: "author", value: "Smith", filterType: "string_contains" }] }),
    ).toEqual(new Set([ids.football]));
    expect(
      await matching({
        AND: [{ key: "author", value: "SMITH", filterType: "string_contains", ignoreCase: true }],
      }),
    ).toEqual(new Set([ids.football, ids.rust]));
    expect(await matching({ AND: [{ key: "category", value: "science", negate: true }] })).toEqual(
      new Set([ids.football, ids.rust, ids.copy, ids.long]),
    );
    // Five levels deep, OR of two branches; the earlier SDK sends filters as a JSON string.
    const nested = {
      OR: [
        {
          AND: [
            {
              OR: [
                {
                  AND: [
                    { key: "year", value: "2000", filterType: "numeric", numericOperator: ">" },
                    { key: "tags", value: "programming", filterType: "array_contains" },
                  ],
                },
              ],
            },
          ],
        },
        { AND: [{ key: "category", value: "history" }] },
      ],
    };
    expect(await matching(nested)).toEqual(new Set([ids.rust, ids.long]));
    expect(await matching(JSON.stringify(nested))).toEqual(new Set([ids.rust, ids.long]));
    // The SDK's deprecated categoriesFilter: metadata.category is one of these.
    expect(new Set(docIds(await search({ q, limit: 20, categoriesFilter: ["science", "Tech"] })))).toEqual(
      new Set([ids.plants, ids.rust]),
    );
    const bad = await call("POST", "/v3/search", {
      q,
      filters: { AND: [{ key: "year", value: "soon", filterType: "numeric" }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ code: "invalid_request", field: "filters" });
  });

  it("limits results to one end user's documents with endUserId", async () => {
    const res = await call("POST", "/v3/search", {
      q: "football plants rust",
      containerTag: "lib",
      endUserId: "reader-1",
    });
    expect(res.status).toBe(200);
    expect(res.json.results.map((r: { documentId: string }) => r.documentId)).toEqual([ids.football]);
  });

  it("runs keyword-only, vector-only and hybrid retrieval", async () => {
    const run = async (retrieval: string, q: string) => {
      const res = await call("POST", "/v3/search", {
        q,
        containerTag: "lib",
        retrieval,
        onlyMatchingChunks: true,
      });
      expect(res.status).toBe(200);
      return res.json.results.map((r: { documentId: string }) => r.documentId) as string[];
    };
    // A word that appears only in one document: keyword search finds exactly the documents containing it.
    expect(await run("keyword", "chloroplasts")).toEqual([expect.any(String)]);
    expect([ids.plants, ids.copy]).toContain((await run("keyword", "chloroplasts"))[0]);
    expect(await run("keyword", "zeppelin")).toEqual([]);
    // Vector search always finds the nearest documents, even without a shared word.
    expect((await run("vector", "zeppelin")).length).toBeGreaterThan(0);
    expect((await run("hybrid", "Canaries Carrow Road"))[0]).toBe(ids.football);
  });

  it("reranks with the second-stage scorer and names it", async () => {
    const res = await call("POST", "/v3/search", {
      q: "Which stadium is home to the Canaries?",
      containerTag: "lib",
      rerank: true,
      onlyMatchingChunks: true,
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ reranked: true, rerankModel: "bm25-dense-rescorer" });
    const scores = res.json.results.map((r: { score: number }) => r.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(scores.every((x: number) => x >= 0 && x <= 1)).toBe(true);
    expect(res.json.results[0].documentId).toBe(ids.football);
    const plain = await call("POST", "/v3/search", {
      q: "Which stadium is home to the Canaries?",
      containerTag: "lib",
    });
    expect(plain.json.reranked).toBe(false);
    expect(plain.json.rerankModel).toBeUndefined();
    const v4 = await client.search({
      q: "Canaries stadium",
      containerTag: "lib",
      searchMode: "documents",
      rerank: true,
    });
    expect((v4 as unknown as { reranked: boolean; rerankModel: string }).rerankModel).toBe(
      "bm25-dense-rescorer",
    );
    expect(v4.results[0]?.chunk).toContain("Carrow Road");
  });

  it("rewrites the query with the configured LLM and says so", async () => {
    const before = llm.requests.length;
    const res = await call("POST", "/v3/search", {
      q: "how do leaves make sugar?",
      containerTag: "lib",
      rewriteQuery: true,
    });
    expect(res.status).toBe(200);
    expect(llm.requests.length).toBe(before + 1);
    expect(llm.requests.at(-1)?.messages.at(-1)?.content).toBe("how do leaves make sugar?");
    expect(res.json.rewrittenQuery).toBe("photosynthesis glucose chloroplasts");
    expect([ids.plants, ids.copy]).toContain(res.json.results[0]?.documentId);
    const plain = await call("POST", "/v3/search", { q: "how do leaves make sugar?", containerTag: "lib" });
    expect(plain.json.rewrittenQuery).toBeUndefined();
  });

  describe("/v4/search and memories", () => {
    const memoryIds: Record<string, string> = {};

    beforeAll(async () => {
      const created = await call("POST", "/v4/memories", {
        containerTag: "alice",
        memories: [
          {
            content: "Alice prefers dark mode in every editor",
            isStatic: true,
            metadata: { kind: "preference" },
          },
          { content: "Alice is learning the Rust programming language", metadata: { kind: "activity" } },
          {
            content: "Alice's passport number is P1234567",
            forgetAfter: new Date(Date.now() - 60_000).toISOString(),
            forgetReason: "temporary",
          },
          { content: "Alice lives in Norwich, close to Carrow Road", metadata: { kind: "place" } },
        ],
      });
      expect(created.status).toBe(201);
      expect(created.json.documentId).toBeNull();
      expect(created.json.memories).toHaveLength(4);
      for (const m of created.json.memories) memoryIds[m.memory] = m.id;
      await call("POST", "/v4/memories", {
        containerTag: "bob",
        memories: [{ content: "Bob prefers light mode" }],
      });
    });

    const memoriesOf = (r: { results: { memory?: string }[] }) =>
      r.results.flatMap((x) => (x.memory ? [x.memory] : []));

    it("finds memories in the SDK's shape, never another container's", async () => {
      const found = await client.search({ q: "Which colour theme does Alice like?", containerTag: "alice" });
      const top = found.results[0];
      expect(top?.memory).toBe("Alice prefers dark mode in every editor");
      expect(top).toMatchObject({ version: 1, metadata: { kind: "preference" } });
      expect(typeof top?.similarity).toBe("number");
      expect(Date.parse(top?.updatedAt as string)).not.toBeNaN();
      expect(memoriesOf(found)).not.toContain("Bob prefers light mode");
      expect(found.results.every((r) => r.chunk === undefined)).toBe(true);
      expect(
        (await client.search.memories({ q: "theme", containerTag: "alice", limit: 1 })).results,
      ).toHaveLength(1);
    });

    it("leaves out expired memories unless forgottenMemories is asked for", async () => {
      const q = "What is Alice's passport number?";
      const live = await client.search({ q, containerTag: "alice" });
      expect(memoriesOf(live)).not.toContain("Alice's passport number is P1234567");
      const all = await client.search({ q, containerTag: "alice", include: { forgottenMemories: true } });
      expect(memoriesOf(all)[0]).toBe("Alice's passport number is P1234567");
      expect((all.results[0] as { isForgotten?: boolean }).isForgotten).toBe(true);
    });

    it("forgets by content (twice is a conflict) and keeps versions on update", async () => {
      const forgotten = await client.memories.forget({
        containerTag: "alice",
        content: "Alice is learning the Rust programming language",
        reason: "finished the course",
      });
      expect(forgotten).toEqual({
        id: memoryIds["Alice is learning the Rust programming language"],
        forgotten: true,
      });
      const again = await call("DELETE", "/v4/memories", {
        containerTag: "alice",
        id: memoryIds["Alice is learning the Rust programming language"],
      });
      expect(again.status).toBe(409);
      expect(again.json.code).toBe("conflict");
      const rust = await client.search({ q: "Rust programming", containerTag: "alice" });
      expect(memoriesOf(rust)).not.toContain("Alice is learning the Rust programming language");

      const updated = await client.memories.updateMemory({
        containerTag: "alice",
        id: memoryIds["Alice lives in Norwich, close to Carrow Road"],
        newContent: "Alice moved to Cambridge",
      });
      expect(updated).toMatchObject({
        memory: "Alice moved to Cambridge",
        version: 2,
        parentMemoryId: memoryIds["Alice lives in Norwich, close to Carrow Road"],
        rootMemoryId: memoryIds["Alice lives in Norwich, close to Carrow Road"],
      });
      const where = await client.search({
        q: "Where does Alice live?",
        containerTag: "alice",
        include: { relatedMemories: true },
      });
      expect(memoriesOf(where)).toContain("Alice moved to Cambridge");
      expect(memoriesOf(where)).not.toContain("Alice lives in Norwich, close to Carrow Road");
      const latest = where.results.find((r) => r.memory === "Alice moved to Cambridge");
      expect(latest?.version).toBe(2);
      expect(latest?.context?.parents?.[0]).toMatchObject({
        memory: "Alice lives in Norwich, close to Carrow Road",
        relation: "updates",
        version: -1,
      });
    });

    it("searches chunks in documents mode, both in hybrid mode (also via the deprecated include.chunks)", async () => {
      const docs = await client.search({
        q: "Carrow Road stadium",
        containerTag: "lib",
        searchMode: "documents",
      });
      expect(docs.results.length).toBeGreaterThan(0);
      expect(docs.results.every((r) => typeof r.chunk === "string" && r.memory === undefined)).toBe(true);
      const withDocs = await client.search({
        q: "Carrow Road stadium",
        containerTag: "lib",
        searchMode: "documents",
        include: { documents: true, summaries: true },
        limit: 1,
      });
      expect(withDocs.results[0]?.documents?.[0]).toMatchObject({ id: ids.football, type: "text" });
      expect(withDocs.results[0]?.documents?.[0]?.summary).toContain("Carrow Road");

      await call("POST", "/v4/memories", {
        containerTag: "lib",
        memories: [{ content: "The library's visitors often ask about Carrow Road stadium" }],
      });
      const hybrid = await client.search({
        q: "Carrow Road stadium",
        containerTag: "lib",
        searchMode: "hybrid",
        limit: 20,
      });
      expect(hybrid.results.some((r) => r.memory !== undefined)).toBe(true);
      expect(hybrid.results.some((r) => r.chunk !== undefined)).toBe(true);
      const legacy = await client.search({
        q: "Carrow Road stadium",
        containerTag: "lib",
        include: { chunks: true },
        limit: 20,
      });
      expect(legacy.results.some((r) => r.chunk !== undefined)).toBe(true);
    });

    it("builds a profile from live, latest memories (POST /v4/profile)", async () => {
      const { profile } = await client.profile({ containerTag: "alice" });
      expect(profile.static).toEqual(["Alice prefers dark mode in every editor"]);
      expect(profile.dynamic).toContain("Alice moved to Cambridge");
      const everything = [...profile.static, ...profile.dynamic];
      expect(everything).not.toContain("Alice's passport number is P1234567");
      expect(everything).not.toContain("Alice is learning the Rust programming language");
      expect(everything).not.toContain("Alice lives in Norwich, close to Carrow Road");
      expect(everything).not.toContain("Bob prefers light mode");
      const asked = await client.profile({ containerTag: "alice", q: "Where does Alice live?" });
      const firstAsked = asked.searchResults?.results[0] as { memory: string } | undefined;
      expect(firstAsked?.memory).toBe("Alice moved to Cambridge");
      const filtered = await client.profile({
        containerTag: "alice",
        filters: { AND: [{ key: "kind", value: "preference", negate: true }] },
      });
      expect(filtered.profile.static).toEqual([]);
    });

    it("applies threshold and metadata filters to memories", async () => {
      expect(
        (await client.search({ q: "dark mode", containerTag: "alice", threshold: 0.999 })).results,
      ).toEqual([]);
      const filtered = await client.search({
        q: "Alice",
        containerTag: "alice",
        filters: { AND: [{ key: "kind", value: "preference" }] },
      });
      expect(memoriesOf(filtered)).toEqual(["Alice prefers dark mode in every editor"]);
      const negated = await client.search({
        q: "Alice",
        containerTag: "alice",
        filters: { AND: [{ key: "kind", value: "PREFERENCE", ignoreCase: true, negate: true }] },
      });
      expect(memoriesOf(negated)).not.toContain("Alice prefers dark mode in every editor");
      expect(memoriesOf(negated).length).toBeGreaterThan(0);
      const aggregated = await call("POST", "/v4/search", {
        q: "Alice",
        containerTag: "alice",
        aggregate: true,
      });
      expect(aggregated.status).toBe(200);
      expect(aggregated.json.warnings).toEqual([expect.stringContaining("aggregate")]);
    });

    it("keeps a scoped key inside its container tags", async () => {
      const scoped = await call("POST", "/v3/auth/scoped-key", { containerTag: "alice" });
      expect(scoped.status).toBe(200);
      const key = scoped.json.key as string;
      const own = await call("POST", "/v4/search", { q: "light mode" }, key);
      expect(own.status).toBe(200);
      expect(own.json.results.map((r: { memory: string }) => r.memory)).not.toContain(
        "Bob prefers light mode",
      );
      expect((await call("POST", "/v4/search", { q: "light mode", containerTag: "bob" }, key)).status).toBe(
        403,
      );
      expect(
        (await call("POST", "/v4/memories", { containerTag: "bob", memories: [{ content: "x" }] }, key))
          .status,
      ).toBe(403);
      expect(
        (
          await call(
            "DELETE",
            "/v4/memories",
            { containerTag: "bob", content: "Bob prefers light mode" },
            key,
          )
        ).status,
      ).toBe(403);
      expect((await call("POST", "/v4/profile", { containerTag: "bob" }, key)).status).toBe(403);
      expect((await call("POST", "/v4/profile", { containerTag: "alice" }, key)).status).toBe(200);
    });

    it("rejects bad input with 400 in the one error shape", async () => {
      for (const body of [
        { containerTag: "alice", memories: [] },
        { containerTag: "alice", memories: [{ content: "" }] },
        { containerTag: "alice", memories: [{ content: "x", forgetAfter: "next tuesday" }] },
        { memories: [{ content: "x" }] },
      ]) {
        const res = await call("POST", "/v4/memories", body);
        expect(res.status).toBe(400);
        expect(res.json.code).toBe("validation_error");
      }
      const neither = await call("DELETE", "/v4/memories", { containerTag: "alice" });
      expect(neither.status).toBe(400);
      expect(neither.json).toMatchObject({ code: "validation_error", field: "id" });
      // Both are allowed (the SDK's types allow it): the id decides, and an unknown one is not found.
      const both = await call("DELETE", "/v4/memories", { containerTag: "alice", id: "a", content: "b" });
      expect(both.status).toBe(404);
      expect((await call("POST", "/v4/search", { q: "x", searchMode: "everything" })).status).toBe(400);
      expect((await call("POST", "/v4/search", { q: "x", threshold: 2 })).status).toBe(400);
      expect((await call("DELETE", "/v4/memories", { containerTag: "alice", id: "missing" })).status).toBe(
        404,
      );
    });
  });
});
