// The plans memory search gets on a table big enough for the planner to choose (issue #25), as
// search-plan.test.ts checks for chunks: the vector side walks the model's HNSW index in a large container and
// sorts a small container's own memories exactly (found by the container index, never by walking the graph for
// them); the keyword side finds its matches by the GIN index; an ignoreCase filter finds its few memories by the
// folded metadata beside them (migration 0020); a filter no index answers has its few memories read first and
// ranked exactly. Also what a search returns: the exact nearest where it sorts, rows without their
// vectors, and a query vector that may still be on its way. On both drivers. Plans and results only: nothing
// here is timed.

import { type SQL, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seededRandom } from "../../bench/lib/random.ts";
import { type Database, queryRows, type Store } from "../../store/db.ts";
import { metadataColumns } from "../../store/filters.ts";
import {
  type MemorySearchQuery,
  memoryConditions,
  memoryKeywordSide,
  memorySearchStatement,
  searchMemories,
} from "../../store/memories.ts";
import { memories } from "../../store/schema/index.ts";
import { inIdList, opaqueFilter } from "../../store/search/exact-rank.ts";
import { ensureVectorIndexes } from "../../store/search/vector-index.ts";
import { cosine, storeDrivers } from "../support/store-drivers.ts";

const DIMENSION = 16;
const space = { model: "memory-plan-test", dimension: DIMENSION };
const HNSW = "memories_hnsw_memory_plan_test";
const MEMORIES = 5_000;
/** Memories 0–39 are the small container's; the rest the large one's. */
const SMALL = "memory-plan-small";
const LARGE = "memory-plan-large";
const SMALL_COUNT = 40;
/** Two memories of the large container carry {flag: "rare"}. */
const RARE = [100, 101];

const random = seededRandom(25);
const VECTORS = Array.from({ length: MEMORIES }, () =>
  Array.from({ length: DIMENSION }, () => Math.fround(random() - 0.5)),
);
const vectorOf = (n: number) => VECTORS[n] as number[];
const containerOf = (n: number) => (n < SMALL_COUNT ? SMALL : LARGE);

async function fill(db: Database) {
  const rows = VECTORS.map((embedding, n) => ({
    id: `memory-plan-${n}`,
    containerTag: containerOf(n),
    // Every memory says "memo"; one in 500 also "needle" (the keyword side's term).
    content: `memo ${n}${n % 500 === 7 ? " needle" : ""}`,
    metadata: (RARE.includes(n) ? { flag: "rare" } : { group: `g${n % 5}` }) as Record<string, string>,
    rootId: `memory-plan-${n}`,
    embedding,
    embeddingModel: space.model,
  }));
  for (let i = 0; i < rows.length; i += 500) await db.insert(memories).values(rows.slice(i, i + 500));
  await ensureVectorIndexes(db, space);
  await db.execute(sql`ANALYZE memories`);
}

const query = (n: number, q: Partial<MemorySearchQuery> = {}): MemorySearchQuery => ({
  text: "memo",
  embedding: vectorOf(n),
  space,
  scope: null,
  includeForgotten: false,
  candidates: 30,
  ...q,
});

async function plan(db: Database, statement: SQL): Promise<string> {
  const settings = memorySearchStatement(query(0), sql`true`, vectorOf(0), "[]").settings;
  return db.transaction(async (tx) => {
    await tx.execute(sql.raw(settings));
    const rows = await queryRows<{ "QUERY PLAN": string }>(
      tx as Database,
      sql`EXPLAIN (COSTS OFF) ${statement}`,
    );
    return rows.map((r) => r["QUERY PLAN"]).join("\n");
  });
}

const byVector = (q: MemorySearchQuery, where = memoryConditions(q)) =>
  memorySearchStatement(q, where, q.embedding as number[], "[]").byVector;

/** The exact nearest memories among those `keep` keeps, computed here from the same vectors. */
function exactNearest(n: number, keep: (m: number) => boolean, k: number): string[] {
  return VECTORS.map((v, m) => ({ m, s: cosine(vectorOf(n), v) }))
    .filter((x) => keep(x.m))
    .sort((a, b) => b.s - a.s)
    .slice(0, k)
    .map((x) => `memory-plan-${x.m}`);
}

describe.each(storeDrivers)("memory search plans on %s", (_driver, open) => {
  let store: Store;
  beforeAll(async () => {
    store = await open();
    await fill(store.db);
  }, 60_000);
  afterAll(async () => {
    await store?.close();
  });

  it("walks the HNSW index in a large container and without one", async () => {
    for (const q of [query(3, { containerTags: [LARGE] }), query(3, { scope: [LARGE] }), query(3)])
      expect(await plan(store.db, byVector(q))).toContain(`Index Scan using ${HNSW}`);
  });

  it("sorts a small container's own memories exactly, found by the container index, not by walking the graph", async () => {
    for (const q of [query(3, { containerTags: [SMALL] }), query(3, { scope: [SMALL] })]) {
      const p = await plan(store.db, byVector(q));
      expect(p).not.toContain(HNSW);
      expect(p).toContain("memories_container_latest_idx");
      expect(p).toMatch(/Sort Key: .*<=>/);
      // Sorted, so exact: the 30 nearest of the container's 40.
      const hits = await searchMemories(store.db, { ...q, text: "zzz" });
      expect(hits.map((h) => h.row.id)).toEqual(exactNearest(3, (m) => m < SMALL_COUNT, 30));
    }
  });

  it("finds the keyword side's matches by the GIN index in a large container", async () => {
    const p = await plan(
      store.db,
      memoryKeywordSide(memoryConditions(query(3, { containerTags: [LARGE] })), "'needle'", 30),
    );
    expect(p).toContain("memories_tsv_gin");
  });

  it("finds the few memories an ignoreCase filter keeps by the folded metadata index (migration 0020)", async () => {
    const rare = (m: number) => RARE.includes(m);
    for (const filters of [
      { AND: [{ key: "flag", value: "RARE", ignoreCase: true }] },
      {
        OR: [
          { key: "flag", value: "Rare", ignoreCase: true },
          { key: "group", value: "none" },
        ],
      },
    ]) {
      const q = query(9, { containerTags: [LARGE], filters });
      // Not read from the memories first: the planner estimates the filter itself.
      expect(opaqueFilter(filters, metadataColumns("m"))).toBe(false);
      const p = await plan(store.db, byVector(q));
      expect(p).toContain("memories_metadata_folded_gin");
      expect(p).not.toContain(HNSW);
      const hits = await searchMemories(store.db, q);
      expect(hits.map((h) => h.row.id).sort()).toEqual(exactNearest(9, rare, 30).sort());
    }
    // A filter that keeps a fifth of the container walks the graph, its memories checked on the way.
    const many = query(9, {
      containerTags: [LARGE],
      filters: { AND: [{ key: "group", value: "G1", ignoreCase: true }] },
    });
    expect(await plan(store.db, byVector(many))).toContain(`Index Scan using ${HNSW}`);
    const found = await searchMemories(store.db, many);
    expect(found.length).toBe(30);
    for (const h of found) expect(h.row.metadata).toEqual({ group: "g1" });
    // A memory added or changed since is found by its new metadata, whatever its case.
    const id = "memory-plan-folded";
    await store.db.insert(memories).values({
      id,
      containerTag: LARGE,
      content: "folded",
      metadata: { Flag: "Odd" },
      rootId: id,
      embedding: vectorOf(1),
      embeddingModel: space.model,
    });
    const odd = query(1, {
      containerTags: [LARGE],
      filters: { AND: [{ key: "Flag", value: "ODD", ignoreCase: true }] },
    });
    expect((await searchMemories(store.db, odd)).map((h) => h.row.id)).toEqual([id]);
    await store.db.execute(sql`UPDATE memories SET metadata = '{"Flag": "Even"}' WHERE id = ${id}`);
    expect(await searchMemories(store.db, odd)).toEqual([]);
    await store.db.execute(sql`DELETE FROM memories WHERE id = ${id}`);
  });

  it("folds metadata as migration 0019 did, at once where nothing in it is upper-case (migration 0020)", async () => {
    const samples = [
      { project: "p37", team: "t1" },
      { Project: "P37", tags: ["A", "b", 1, { X: "Y" }], nested: { Key: "Value" } },
      { name: "ÉCOLE Straße", greek: "ΟΔΟΣ", n: 1.5e5, ok: true, none: null },
      { quote: 'say "Hi"\n\t\\', control: "\u0001A" },
      { lower: "already lower", list: ["x", "y"], empty: [] },
      {},
      ["A", "b"],
      "Text",
      7,
      null,
    ];
    for (const sample of samples) {
      const [row] = await queryRows<{ fast: unknown; each: unknown }>(
        store.db,
        sql`SELECT metadata_folded(${JSON.stringify(sample)}::jsonb) AS fast,
                   metadata_folded_each(${JSON.stringify(sample)}::jsonb) AS each`,
      );
      expect(row?.fast).toEqual(row?.each);
    }
    const [missing] = await queryRows<{ folded: unknown }>(
      store.db,
      sql`SELECT metadata_folded(NULL::jsonb) AS folded`,
    );
    expect(missing?.folded).toEqual({});
    const [mixed] = await queryRows<{ folded: unknown }>(
      store.db,
      sql`SELECT metadata_folded('{"Project": "P37", "tags": ["A", 1]}'::jsonb) AS folded`,
    );
    expect(mixed?.folded).toEqual({ Project: "p37", tags: ["a", 1] });
  });

  it("ranks exactly the few memories a filter no index answers keeps, read first", async () => {
    const q = query(9, {
      containerTags: [LARGE],
      filters: { AND: [{ key: "flag", value: "AR", filterType: "string_contains", ignoreCase: true }] },
    });
    const hits = await searchMemories(store.db, q);
    expect(hits.map((h) => h.row.id).sort()).toEqual(RARE.map((m) => `memory-plan-${m}`).sort());
    // Given their ids, the vector side sorts them by distance without the graph.
    const p = await plan(
      store.db,
      byVector(
        q,
        inIdList(
          sql`m.id`,
          RARE.map((m) => `memory-plan-${m}`),
        ),
      ),
    );
    expect(p).not.toContain(HNSW);
    expect(p).toMatch(/Sort Key: .*<=>/);
    // A filter that keeps none returns nothing.
    const none = {
      ...q,
      filters: {
        AND: [{ key: "flag", value: "NOPE", filterType: "string_contains" as const, ignoreCase: true }],
      },
    };
    expect(await searchMemories(store.db, none)).toEqual([]);
  });

  it("returns the memories without their vectors, and takes a query vector still on its way", async () => {
    let resolve: (v: number[]) => void = () => undefined;
    const pending = new Promise<number[]>((r) => {
      resolve = r;
    });
    const search = searchMemories(
      store.db,
      query(5, { containerTags: [SMALL], embedding: pending, text: "needle memo" }),
    );
    setTimeout(() => resolve(vectorOf(5)), 20);
    const hits = await search;
    // Its own vector: the vector side's first (the fusion puts "needle", on both sides, before it).
    const own = hits.find((h) => h.row.id === "memory-plan-5");
    expect(own?.similarity).toBeCloseTo(1, 5);
    expect(own?.row.content).toBe("memo 5");
    for (const h of hits) {
      expect(h.row).not.toHaveProperty("embedding");
      expect(h.row).not.toHaveProperty("tsv");
    }
    // A memory the keyword side alone found gets its similarity all the same.
    const needle = await searchMemories(
      store.db,
      query(3, { containerTags: [SMALL], text: "needle", candidates: 2 }),
    );
    expect(needle.map((h) => h.row.id)).toContain("memory-plan-7");
    const found = needle.find((h) => h.row.id === "memory-plan-7");
    expect(found?.similarity).toBeCloseTo(cosine(vectorOf(3), vectorOf(7)), 4);
    // A failed embedding fails the search (and goes unhandled nowhere).
    const failing = Promise.reject(new Error("model gone"));
    await expect(
      searchMemories(store.db, query(3, { containerTags: [SMALL], embedding: failing })),
    ).rejects.toThrow("model gone");
  });
});
