// The plans search gets on a table big enough for the planner to choose (issue #25): the vector side walks
// the model's HNSW index without a tag filter and under a large tag, sorts a small tag's own chunks exactly
// (found by their tags, never by walking the whole graph for them), neither side reads the documents table
// unless a filter needs it, a selective metadata filter's documents are found by the metadata index, and the
// keyword side scans its GIN index once whatever the tag; the processing list reads only unfinished documents. On
// both drivers, as the shared store suite runs. Plans and results only: nothing here is timed.

import { type SQL, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, queryRows, type Store } from "../../store/db.ts";
import { documentListStatements, listDocuments, unfinishedDocuments } from "../../store/documents.ts";
import { chunks } from "../../store/schema/index.ts";
import {
  documentsInScope,
  documentsToRank,
  type HybridSearchQuery,
  hybridChunkSearch,
  searchStatement,
} from "../../store/search/chunk-search.ts";
import { commonTerms, keywordTsquery, MATCH_BUDGET } from "../../store/search/keyword.ts";
import { ensureVectorIndexes } from "../../store/search/vector-index.ts";
import { cosine, storeDrivers } from "../support/store-drivers.ts";

const DIMENSION = 16;
const space = { model: "plan-test", dimension: DIMENSION };
const HNSW = "chunks_hnsw_plan_test";
const DOCUMENTS = 250;
const CHUNKS_PER_DOCUMENT = 20;
/** Documents 0 and 1 (40 of 5,000 chunks) carry the small tag; documents 10 and up the large one. */
const SMALL = "plan-small";
const LARGE = "plan-large";
/** Every document has metadata {group: "g0".."g4"}; these two (40 chunks, both under the large tag) also {flag: "rare"}. */
const RARE = [20, 21];

/**
 * Seeded pseudo-random vectors, one per chunk, rounded to float4 as pgvector stores them. (Vectors drawn from a
 * smooth function of the chunk number lie on a curve, on which HNSW's greedy walk can miss the nearest ones
 * altogether: real embeddings are not like that.)
 */
function mulberry32(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = mulberry32(25);
const VECTORS = Array.from({ length: DOCUMENTS * CHUNKS_PER_DOCUMENT }, () =>
  Array.from({ length: DIMENSION }, () => Math.fround(random() - 0.5)),
);
const vectorOf = (n: number) => VECTORS[n] as number[];

async function fill(db: Database) {
  await db.execute(sql`
    INSERT INTO documents (id, source, content, status, container_tags, embedding_model, metadata, filepath)
    SELECT 'plan-doc-' || i, 'plan', 'plan', 'done',
           CASE WHEN i < 2 THEN ARRAY[${SMALL}] WHEN i >= 10 THEN ARRAY[${LARGE}] ELSE ARRAY['plan-other'] END,
           ${space.model},
           jsonb_build_object('group', 'g' || (i % 5)) || CASE WHEN i = ANY(${sql.raw(`ARRAY[${RARE.join(", ")}]`)}) THEN '{"flag": "rare"}'::jsonb ELSE '{}' END,
           CASE WHEN i = ANY(${sql.raw(`ARRAY[${RARE.join(", ")}]`)}) THEN '/rare/' || i || '.md' ELSE '/plan/' || i || '.md' END
    FROM generate_series(0, ${DOCUMENTS - 1}) i`);
  // Documents without chunks and with a text of chunk size that does not compress, so that reading every document
  // row costs what it would in a real store (and the planner weighs an index against it rather than a few pages).
  await db.execute(sql`
    INSERT INTO documents (id, source, content, status, container_tags, metadata)
    SELECT 'plan-other-doc-' || i, 'plan', (SELECT string_agg(md5(i::text || '-' || g), ' ') FROM generate_series(1, 40) g), 'done', ARRAY['plan-other'], jsonb_build_object('group', 'g' || (i % 5))
    FROM generate_series(1, 5000) i`);
  // Three documents still in processing among the 5,250 finished ones.
  await db.execute(sql`
    INSERT INTO documents (id, source, content, status, container_tags)
    SELECT 'plan-queued-doc-' || i, 'plan', 'plan', 'queued', ARRAY['plan-other'] FROM generate_series(1, 3) i`);
  // Every chunk says "plan"; one in four also "quarter"; one in 500 "needle" (the keyword cases' terms).
  const rows = VECTORS.map((embedding, n) => ({
    id: `plan-chunk-${n}`,
    documentId: `plan-doc-${Math.floor(n / CHUNKS_PER_DOCUMENT)}`,
    position: n % CHUNKS_PER_DOCUMENT,
    content: `plan chunk ${n}${n % 4 === 0 ? " quarter" : ""}${n % 500 === 7 ? " needle" : ""}`,
    embedding,
    embeddingModel: space.model,
    embeddingDimension: DIMENSION,
  }));
  for (let i = 0; i < rows.length; i += 500) await db.insert(chunks).values(rows.slice(i, i + 500));
  await ensureVectorIndexes(db, space);
  // VACUUM too, as the maintenance pass (or autovacuum) leaves a settled table: the list's counts read the index alone.
  await db.execute(sql`VACUUM ANALYZE documents`);
  await db.execute(sql`ANALYZE chunks`);
}

const query = (n: number, q: Partial<HybridSearchQuery> = {}): HybridSearchQuery => ({
  text: "plan",
  embedding: vectorOf(n),
  space,
  tagMode: "any",
  candidates: 50,
  ...q,
});

/** A query builder's statement with its parameters, as an SQL value that can be EXPLAINed. */
function builtStatement(query: unknown): SQL {
  const built = (query as { toSQL(): { sql: string; params: unknown[] } }).toSQL();
  const parts = built.sql.split(/\$(\d+)/);
  return sql.join(
    parts.map((part, i) => (i % 2 === 0 ? sql.raw(part) : sql`${built.params[Number(part) - 1]}`)),
    sql``,
  );
}

async function plan(db: Database, statement: SQL, analyze = false): Promise<string> {
  const s = searchStatement(query(0), null);
  return db.transaction(async (tx) => {
    for (const setting of s.settings) await tx.execute(sql.raw(setting));
    const rows = await queryRows<{ "QUERY PLAN": string }>(
      tx as Database,
      analyze ? sql`EXPLAIN (ANALYZE, COSTS OFF) ${statement}` : sql`EXPLAIN (COSTS OFF) ${statement}`,
    );
    return rows.map((r) => r["QUERY PLAN"]).join("\n");
  });
}

/** The exact nearest chunks of the documents in `docs`, computed here from the same vectors. */
function exactNearest(n: number, docs: (d: number) => boolean, k: number): string[] {
  const target = vectorOf(n);
  const all: { id: string; s: number }[] = [];
  for (let c = 0; c < DOCUMENTS * CHUNKS_PER_DOCUMENT; c++)
    if (docs(Math.floor(c / CHUNKS_PER_DOCUMENT)))
      all.push({ id: `plan-chunk-${c}`, s: cosine(target, vectorOf(c)) });
  return all
    .sort((a, b) => b.s - a.s)
    .slice(0, k)
    .map((x) => x.id);
}

describe.each(storeDrivers)("search plans on %s", (driver, open) => {
  let store: Store;
  beforeAll(async () => {
    store = await open();
    await fill(store.db);
  }, 60_000);
  afterAll(async () => {
    await store?.close();
  });

  it("walks the HNSW index without a tag filter and under a large tag", async () => {
    for (const q of [
      query(3),
      query(3, { containerTags: [LARGE] }),
      query(3, { scope: [LARGE, "plan-other"] }),
    ]) {
      const p = await plan(store.db, searchStatement({ ...q, retrieval: "vector" }, null).byVector);
      expect(p).toContain(`Index Scan using ${HNSW}`);
    }
  });

  it("sorts a small tag's own chunks exactly, found by their tags, not by walking the graph", async () => {
    for (const q of [query(3, { containerTags: [SMALL] }), query(3, { scope: [SMALL] })]) {
      const p = await plan(store.db, searchStatement({ ...q, retrieval: "vector" }, null).byVector);
      expect(p).not.toContain(HNSW);
      // The tag's chunks by the GIN index on their own tags, sorted by distance.
      expect(p).toContain("chunks_search_tags_gin");
      expect(p).toMatch(/Sort Key: .*<=>/);
    }
  });

  it("reads no document row for a search narrowed only by tags and scope; joins them for document filters", async () => {
    const tsq = "'quarter'";
    for (const q of [
      query(3),
      query(3, { containerTags: [LARGE] }),
      query(3, { containerTags: [SMALL, LARGE], tagMode: "all" }),
      query(3, { scope: [SMALL] }),
    ]) {
      const s = searchStatement(q, tsq);
      for (const statement of [s.byVector, s.byKeyword])
        expect(await plan(store.db, statement)).not.toContain("documents");
    }
    const s = searchStatement(query(3, { containerTags: [LARGE], endUserId: "someone" }), tsq);
    expect(await plan(store.db, s.byKeyword)).toContain("documents");
  });

  it("finds the few documents a metadata filter keeps by the metadata index, not by walking the graph (migration 0016)", async () => {
    const rare = (d: number) => RARE.includes(d);
    for (const filters of [
      { AND: [{ key: "flag", value: "rare" }] },
      {
        OR: [
          { key: "flag", value: "rare" },
          { key: "group", value: "g9" },
        ],
      },
    ]) {
      const q = query(9, { containerTags: [LARGE], filters, retrieval: "vector", candidates: 50 });
      const p = await plan(store.db, searchStatement(q, null).byVector);
      expect(p).toContain("documents_metadata_gin");
      // With the exact condition alone the planner took it for half the documents, walked the graph and
      // dropped nearly every row it met, up to pgvector's scan limit.
      expect(p).not.toContain(HNSW);
      const hits = await hybridChunkSearch(store.db, q);
      expect(hits.map((h) => h.chunkId).sort()).toEqual(exactNearest(9, rare, 50).sort());
    }
    // The keyword side finds them the same way.
    const q = query(9, { containerTags: [LARGE], filters: { AND: [{ key: "flag", value: "rare" }] } });
    expect(await plan(store.db, searchStatement(q, "'plan'").byKeyword)).toContain("documents_metadata_gin");
  });

  it("finds the few documents an ignoreCase filter keeps by the folded metadata index (migration 0019)", async () => {
    const rare = (d: number) => RARE.includes(d);
    for (const filters of [
      { AND: [{ key: "flag", value: "RARE", ignoreCase: true }] },
      {
        OR: [
          { key: "flag", value: "Rare", ignoreCase: true },
          { key: "group", value: "G9", ignoreCase: true },
        ],
      },
    ]) {
      const q = query(9, { containerTags: [LARGE], filters, retrieval: "vector", candidates: 50 });
      // No longer read from the document rows first: the planner estimates the filter itself.
      expect(await documentsToRank(store.db, q)).toBeNull();
      const p = await plan(store.db, searchStatement(q, null).byVector);
      expect(p).toContain("documents_metadata_folded_gin");
      expect(p).not.toContain(HNSW);
      const hits = await hybridChunkSearch(store.db, q);
      expect(hits.map((h) => h.chunkId).sort()).toEqual(exactNearest(9, rare, 50).sort());
    }
  });

  it("ranks exactly the few documents a narrowing no index answers keeps, found from the document rows first", async () => {
    const rare = (d: number) => RARE.includes(d);
    const rareIds = RARE.map((d) => `plan-doc-${d}`).sort();
    for (const narrowing of [
      {
        filters: {
          AND: [{ key: "flag", value: "RAR", filterType: "string_contains" as const, ignoreCase: true }],
        },
      },
      { filters: { AND: [{ key: "flag", value: "ar", filterType: "string_contains" as const }] } },
      // One leaf no index answers makes the whole OR opaque to the planner.
      {
        filters: {
          OR: [
            { key: "flag", value: "RAR", filterType: "string_contains" as const, ignoreCase: true },
            { key: "group", value: "g9" },
          ],
        },
      },
      { filepath: "/rare/" },
    ]) {
      const q = query(9, { containerTags: [LARGE], retrieval: "vector", ...narrowing });
      const documentIds = await documentsToRank(store.db, q);
      expect(documentIds?.sort()).toEqual(rareIds);
      // Given those documents, the search reads no document row and sorts their chunks by distance.
      const p = await plan(
        store.db,
        searchStatement({ ...q, documentIds: documentIds ?? [] }, null).byVector,
      );
      expect(p).not.toContain(HNSW);
      expect(p).not.toContain("documents");
      expect(p).toMatch(/Sort Key: .*<=>/);
      // All 40 of their chunks, though the search asks for 50: nothing is lost to a scan limit.
      const hits = await hybridChunkSearch(store.db, q);
      expect(hits.map((h) => h.chunkId).sort()).toEqual(exactNearest(9, rare, 50).sort());
      expect(hits).toHaveLength(RARE.length * CHUNKS_PER_DOCUMENT);
    }
    // In a small tag the documents are found by their tags' index, not by reading every document row.
    const small = query(9, {
      containerTags: [SMALL],
      filters: { AND: [{ key: "flag", value: "x", filterType: "string_contains", ignoreCase: true }] },
    });
    expect(await plan(store.db, documentsInScope(small))).toContain("documents_container_tags_gin");
    // A narrowing that keeps none: no document, no search.
    const none = query(9, {
      containerTags: [LARGE],
      filters: { AND: [{ key: "flag", value: "NONE", filterType: "string_contains", ignoreCase: true }] },
    });
    expect(await documentsToRank(store.db, none)).toEqual([]);
    expect(await hybridChunkSearch(store.db, none)).toEqual([]);
    // More documents than the limit: the search runs as before (the HNSW scan meets its candidates soon).
    const broad = query(9, {
      containerTags: [LARGE],
      filters: { AND: [{ key: "flag", value: "rare", negate: true }] },
    });
    expect(await documentsToRank(store.db, broad, 100)).toBeNull();
    expect((await documentsToRank(store.db, broad, 1000))?.length).toBe(DOCUMENTS - 10 - RARE.length);
    // Narrowings the planner estimates itself (an indexed filter, tags alone, an end user) are left to it.
    for (const q of [
      query(9, { containerTags: [LARGE], filters: { AND: [{ key: "flag", value: "rare" }] } }),
      query(9, { containerTags: [LARGE] }),
      query(9, { containerTags: [LARGE], endUserId: "someone" }),
    ])
      expect(await documentsToRank(store.db, q)).toBeNull();
  });

  it("lists unfinished documents by their own index, not by walking the finished ones (migration 0016)", async () => {
    const p = await plan(store.db, builtStatement(unfinishedDocuments(store.db, 500)));
    expect(p).toContain("documents_unfinished_idx");
    expect((await unfinishedDocuments(store.db, 500)).map((d) => d.id).sort()).toEqual([
      "plan-queued-doc-1",
      "plan-queued-doc-2",
      "plan-queued-doc-3",
    ]);
  });

  it("counts and pages a tag's document list from the list index, not from the document rows (migration 0017)", async () => {
    for (const sort of ["createdAt", "updatedAt"] as const) {
      const q = {
        containerTags: ["plan-other"],
        tagMode: "any" as const,
        sort,
        order: "desc" as const,
        limit: 10,
        page: 300,
      };
      const { pageIds, total } = documentListStatements(store.db, q);
      const index = sort === "createdAt" ? "documents_created_list_idx" : "documents_updated_list_idx";
      // An index-only scan is chosen when the visibility map says the rows are settled. The embedded store's
      // maintenance pass and the VACUUM above set it; on PostgreSQL autovacuum does, but in the shared test cluster
      // other connections keep VACUUM from marking the fresh rows (relallvisible stays near 0), so the plan is
      // asserted on PGlite and the rows on both.
      if (driver === "pglite") {
        expect(await plan(store.db, builtStatement(pageIds))).toMatch(
          new RegExp(`Index Only Scan.* using ${index}`),
        );
        expect(await plan(store.db, builtStatement(total))).toMatch(
          /Index Only Scan using documents_(created|updated)_list_idx/,
        );
      }
      const { rows, total: n } = await listDocuments(store.db, q);
      const column = sql.raw(sort === "createdAt" ? "created_at" : "updated_at");
      const expected = await queryRows<{ id: string }>(
        store.db,
        sql`SELECT id FROM documents WHERE 'plan-other' = ANY(container_tags) ORDER BY ${column} DESC, id DESC LIMIT 10 OFFSET 2990`,
      );
      expect(rows.map((r) => r.id)).toEqual(expected.map((r) => r.id));
      expect(rows.every((r) => r.content !== undefined && r.containerTags.includes("plan-other"))).toBe(true);
      const [all] = await queryRows<{ n: number }>(
        store.db,
        sql`SELECT count(*)::int AS n FROM documents WHERE 'plan-other' = ANY(container_tags)`,
      );
      expect(n).toBe(all?.n);
    }
  });

  it("returns only the tag's chunks, the nearest ones", async () => {
    const small = (d: number) => d < 2;
    const large = (d: number) => d >= 10;
    for (const n of [5, 15, 1234, 4321]) {
      const inSmall = await hybridChunkSearch(
        store.db,
        query(n, { retrieval: "vector", containerTags: [SMALL] }),
      );
      // The small tag has 40 chunks, fewer than the 50 candidates: all of them, nearest first (exact).
      expect(inSmall.map((h) => h.chunkId).sort()).toEqual(exactNearest(n, small, 50).sort());
      const similarities = inSmall.map((h) => h.similarity);
      expect(similarities).toEqual([...similarities].sort((a, b) => b - a));
      expect(inSmall[0]?.chunkId).toBe(exactNearest(n, small, 1)[0]);
      const inLarge = await hybridChunkSearch(
        store.db,
        query(n, { retrieval: "vector", scope: [LARGE], candidates: 100 }),
      );
      expect(inLarge).toHaveLength(100);
      expect(inLarge.every((h) => large(Number(h.documentId.slice(9))))).toBe(true);
      // Approximate (HNSW, whose graph is built with random levels): nearly all of the exact ten, every run.
      const top = new Set(inLarge.slice(0, 10).map((h) => h.chunkId));
      const exact = exactNearest(n, large, 10);
      expect(exact.filter((id) => top.has(id)).length).toBeGreaterThanOrEqual(8);
    }
  });

  it("reads a chunk again only when the keyword side alone found it", async () => {
    // 60 vector rows and one more from the keyword side, its best (fused 0.4 at least): among the 60 kept.
    const q = query(7, { containerTags: [LARGE], candidates: 60 });
    const vectorSide = await hybridChunkSearch(store.db, { ...q, retrieval: "vector" });
    // Keyword rows that are all on the vector side too, and one that is not: one lookup, not one per fused row.
    const alsoByVector = vectorSide.slice(0, 20).map((h) => h.chunkId);
    const byKeywordOnly = exactNearest(7, (d) => d >= 10, 400).find(
      (id) => !vectorSide.some((h) => h.chunkId === id),
    );
    expect(byKeywordOnly).toBeDefined();
    const keywordRows = JSON.stringify(
      [byKeywordOnly, ...alsoByVector].map((id, i) => ({ id, rank: i + 1, score: 1 / (i + 1) })),
    );
    const s = searchStatement(q, "'quarter'", keywordRows);
    const p = await plan(store.db, s.statement, true);
    const lookups = p.split("\n").filter((l) => l.includes("Index Scan using chunks_pkey on chunks"));
    expect(lookups, p).toHaveLength(1);
    // The index is searched once, for the keyword-only chunk, and gives back that row; none is dropped afterwards.
    expect(lookups[0], p).toMatch(/rows=1(\.00)? loops=1\)/);
    expect(p).not.toMatch(/Rows Removed by Join Filter: [1-9]/);
    const rows = await store.db.transaction(async (tx) => {
      for (const setting of s.settings) await tx.execute(sql.raw(setting));
      return queryRows<{ chunk_id: string; document_id: string; content: string }>(
        tx as Database,
        s.statement,
      );
    });
    expect(rows).toHaveLength(60);
    const own = rows.find((r) => r.chunk_id === byKeywordOnly);
    // Its fields come from the lookup, as the vector side's rows bring their own.
    expect(own?.document_id).toBe(
      `plan-doc-${Math.floor(Number(byKeywordOnly?.slice(11)) / CHUNKS_PER_DOCUMENT)}`,
    );
    expect(own?.content).toBeTruthy();
  });

  it("scans the keyword GIN index once under a small tag, not once per document of the tag", async () => {
    const common = await commonTerms(store.db, "chunks");
    // "quarter" is in a quarter of the chunks (1,250): far too many to look up once per document of the tag.
    const tsq = await keywordTsquery(store.db, "quarter", common);
    expect(tsq).toBe("'quarter'");
    const p = await plan(
      store.db,
      searchStatement(query(3, { retrieval: "keyword", scope: [SMALL] }), tsq).byKeyword,
      true,
    );
    // The whole plan in the failure message: once in a full suite on PostgreSQL it showed loops=2.
    for (const line of p.split("\n").filter((l) => l.includes("chunks_tsv_gin")))
      expect(line, p).toMatch(/loops=1\)/);
    const hits = await hybridChunkSearch(
      store.db,
      query(0, { text: "quarter", retrieval: "keyword", scope: [SMALL] }),
    );
    expect(hits.map((h) => h.documentId).every((d) => d === "plan-doc-0" || d === "plan-doc-1")).toBe(true);
    expect(hits).toHaveLength(10);
  });

  it("keeps the statistics of 10,000 lexemes per text column the keyword budget weighs (migration 0015)", async () => {
    // At the default (100: about 1,000 lexemes) a term outside the list counts as rare; on a million chunks many
    // such terms match thousands each, and the keyword side ranked twice its budget (store/search/keyword.ts).
    const targets = await queryRows<{ table: string; target: number }>(
      store.db,
      sql`SELECT c.relname AS table, a.attstattarget::int AS target
            FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
           WHERE a.attname = 'tsv' AND c.relname IN ('chunks', 'memories')
             AND c.relnamespace = to_regnamespace(current_schema())
           ORDER BY c.relname`,
    );
    expect(targets).toEqual([
      { table: "chunks", target: 1000 },
      { table: "memories", target: 1000 },
    ]);
    const common = await commonTerms(store.db, "chunks");
    expect(common.lexemes.length).toBeGreaterThan(0);
    expect(common.lexemes.length).toBe(common.frequencies.length);
  });

  it("keeps a keyword query's rarest terms while their estimated matches stay within the budget", async () => {
    const lexemes = async (text: string, rows: number) => {
      const tsq = await keywordTsquery(store.db, text, {
        lexemes: ["often", "sometim", "rare"],
        frequencies: [0.02, 0.01, 0.002],
        rows,
        loadedAt: 0,
      });
      return (tsq ?? "").split(" | ").filter(Boolean).sort();
    };
    // 100,000 rows: 200 + 1,000 + 2,000 estimated matches, all within the budget.
    expect(await lexemes("often sometimes rare unlisted", 100_000)).toEqual([
      "'often'",
      "'rare'",
      "'sometim'",
      "'unlist'",
    ]);
    // 200,000 rows: rare 400, + sometimes 2,000 = 2,400, + often 4,000 = 6,400 > the budget: often goes.
    expect(MATCH_BUDGET).toBeGreaterThanOrEqual(3200);
    expect(MATCH_BUDGET).toBeLessThan(6400);
    expect(await lexemes("often sometimes rare unlisted", 200_000)).toEqual([
      "'rare'",
      "'sometim'",
      "'unlist'",
    ]);
    // Rows unknown (0): no budget, only the share rule.
    expect(await lexemes("often sometimes rare", 0)).toEqual(["'often'", "'rare'", "'sometim'"]);
    // Over budget on its own, the rarest term is still kept rather than none.
    expect(await lexemes("often", 1_000_000)).toEqual(["'often'"]);
  });
});
