// The maintenance pass of the maintain-tables schedule (store/maintenance.ts), on a store left with dead rows the
// way the service leaves them: documents processed, then most of them deleted. On PGlite (no autovacuum) the
// pass VACUUMs the churned tables and rebuilds the HNSW index that kept the deleted rows' space; on PostgreSQL
// it leaves VACUUM to autovacuum and rebuilds the index CONCURRENTLY. A second pass finds nothing to do, and
// search answers the same before and after. On PGlite a step that would hold the connection longer than the
// pass's bound is deferred.

import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openMemoryPglite, openPostgres, queryRows, type Store } from "../../store/db.ts";
import { deleteDocument, saveDocument } from "../../store/documents.ts";
import {
  compactTable,
  HEAP_COMPACT_FACTOR,
  heapBloat,
  hnswIndexSizes,
  REBUILD_MEMORY_MAX_MB,
  rebuildMemoryMb,
  runMaintenance,
  serverKind,
  tableChurn,
} from "../../store/maintenance.ts";
import { saveProcessedText } from "../../store/processing.ts";
import { hybridChunkSearch } from "../../store/search/chunk-search.ts";
import { ensureVectorIndexes } from "../../store/search/vector-index.ts";
import { freshDatabase } from "../support/service.ts";
import { publishTableCounters } from "../support/statistics.ts";

// The real dimension: the bloat threshold is relative to what a fresh index of such vectors takes.
const space = { model: "maint-test", dimension: 384 };
const DOCUMENTS = 100;
const CHUNKS_PER_DOCUMENT = 12;
const KEPT = 10;

/** Deterministic pseudo-random unit vectors (mulberry32). */
function vectors(count: number, seed: number): number[][] {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
  return Array.from({ length: count }, () => {
    const v = Array.from({ length: space.dimension }, next);
    const norm = Math.hypot(...v);
    return v.map((x) => x / norm);
  });
}

const words = ["harbour", "lantern", "meadow", "granite", "orchard", "copper", "willow", "saffron"];

/** A document taken through processing as the worker does (one transaction with its chunks and vectors). */
async function processed(db: Database, i: number, embeddings: number[][], tag = "maint"): Promise<string> {
  const pieces = embeddings.map((embedding, position) => ({
    content: `note ${i} part ${position}: the ${words[(i + position) % words.length]} by the ${words[i % words.length]}`,
    position,
    embedding,
  }));
  const source = pieces.map((p) => p.content).join(" ");
  const { document } = await saveDocument(db, { source, containerTags: [tag], metadata: {} });
  await saveProcessedText(
    db,
    { documentId: document.id, run: document.processingRun },
    {
      identified: { type: "text", mimeType: "text/plain" },
      extracted: { content: source, title: null, type: "text", contentHash: String(i) },
      pieces,
      model: { name: space.model, dimension: space.dimension },
      stages: [{ status: "done", at: new Date() }],
    },
  );
  return document.id;
}

const drivers: [string, () => Promise<Store>][] = [
  ["pglite", openMemoryPglite],
  ["postgres", async () => openPostgres(await freshDatabase())],
];

describe("the memory of a rebuild on PGlite", () => {
  it("holds the graph of fresh builds with a quarter spare, between PGlite's default and the bound", () => {
    const rows = (n: number) => ({ expectedBytes: n * (384 * 4 + 400) });
    expect(rebuildMemoryMb([rows(1_000)])).toBe(64);
    expect(rebuildMemoryMb([rows(50_000)])).toBe(116);
    expect(rebuildMemoryMb([rows(50_000), rows(50_000)])).toBe(231);
    expect(rebuildMemoryMb([rows(1_000_000)])).toBe(REBUILD_MEMORY_MAX_MB);
    expect(rebuildMemoryMb([])).toBe(64);
  });
});

describe("a compaction of documents on PGlite", () => {
  it("leaves the table settled, so the document list reads its indexes alone (migration 0017)", async () => {
    const store = await openMemoryPglite();
    try {
      const db = store.db;
      await db.execute(sql`
        INSERT INTO documents (id, source, content, status, container_tags)
        SELECT 'vm-doc-' || i, 'vm', repeat(md5(i::text), 30), 'done', ARRAY['vm'] FROM generate_series(1, 2000) i`);
      await db.execute(sql`DELETE FROM documents WHERE id LIKE 'vm-doc-1%'`);
      await compactTable(db, "documents");
      const [map] = await queryRows<{ pages: number; settled: number }>(
        db,
        sql`SELECT relpages AS pages, relallvisible AS settled FROM pg_class WHERE relname = 'documents'`,
      );
      expect(map?.pages).toBeGreaterThan(10);
      // VACUUM FULL alone leaves relallvisible at 0.
      expect(map?.settled).toBe(map?.pages);
    } finally {
      await store.close();
    }
  });
});

describe.each(drivers)("table maintenance on %s", (driver, open) => {
  let store: Store;
  let db: Database;
  const all = vectors(DOCUMENTS * CHUNKS_PER_DOCUMENT, 25);

  beforeAll(async () => {
    store = await open();
    db = store.background;
    await ensureVectorIndexes(db, space);
  });
  afterAll(async () => {
    await store?.close();
  });

  /** The statistics counters as of now: PGlite's forced out, PostgreSQL's (one per pooled connection) waited for. */
  const settle = async () => {
    if (driver === "pglite") return publishTableCounters(db);
    await new Promise((r) => setTimeout(r, 1_500));
    await db.execute(sql`ANALYZE chunks`);
  };
  const search = (i: number) =>
    hybridChunkSearch(db, {
      text: `${words[i % words.length]} note`,
      embedding: all[i] as number[],
      space,
      containerTags: ["maint"],
      tagMode: "any",
      candidates: 10,
    }).then((hits) => hits.map((h) => h.chunkId));
  const hnswBytes = async () =>
    (await hnswIndexSizes(db)).find((s) => s.table === "chunks" && s.index.includes("maint_test"))?.bytes ??
    0;
  const vacuumCount = async (table: string) =>
    Number(
      (
        await queryRows<{ n: string }>(
          db,
          sql`SELECT vacuum_count AS n FROM pg_stat_user_tables WHERE relid = to_regclass(${table})`,
        )
      )[0]?.n ?? 0,
    );

  it("knows which server it runs on", async () => {
    expect(await serverKind(db)).toBe(driver);
  });

  it("does nothing on a store without churn", async () => {
    await settle();
    expect(await runMaintenance(db, { driver: driver as "pglite" })).toEqual({
      vacuumed: [],
      reindexed: [],
      compacted: [],
      steps: [],
      deferred: [],
    });
  });

  it("rebuilds the bloated HNSW index after mass deletes (PGlite: with the heap, a VACUUM FULL), and search answers the same", async () => {
    const ids: string[] = [];
    for (let i = 0; i < DOCUMENTS; i++)
      ids.push(await processed(db, i, all.slice(i * CHUNKS_PER_DOCUMENT, (i + 1) * CHUNKS_PER_DOCUMENT)));
    // A tenant deletes most of its documents: their chunks die, the index keeps their space.
    for (const id of ids.slice(KEPT)) await deleteDocument(db, id);
    await settle();

    const queries = Array.from({ length: 5 }, (_, q) => q * CHUNKS_PER_DOCUMENT + 1);
    const before = await Promise.all(queries.map(search));
    expect(before.every((hits) => hits.length > 0)).toBe(true);
    const churn = await tableChurn(db, "chunks");
    const indexBefore = await hnswBytes();
    const vacuumsBefore = await vacuumCount("chunks");
    if (driver === "pglite")
      expect(churn.dead).toBeGreaterThanOrEqual((DOCUMENTS - KEPT) * CHUNKS_PER_DOCUMENT);

    if (driver === "pglite") {
      // A bound shorter than the step would hold PGlite's connection leaves the table for later, untouched.
      const bounded = await runMaintenance(db, { driver: "pglite", maxHoldMs: 1 });
      expect(bounded).toMatchObject({ vacuumed: [], reindexed: [], steps: [] });
      expect(bounded.deferred.map((d) => d.table)).toEqual(["chunks"]);
      expect(bounded.deferred[0]?.estimateMs).toBeGreaterThan(1);
      expect(await hnswBytes()).toBe(indexBefore);
      expect(await vacuumCount("chunks")).toBe(vacuumsBefore);
    }

    const heapBefore = (await heapBloat(db, "chunks", 0, 0)).heapBytes;
    const pass = await runMaintenance(db, { driver: driver as "pglite" });
    expect(pass.deferred).toEqual([]);
    expect(await hnswBytes()).toBeLessThan(indexBefore / 2);
    if (driver === "pglite") {
      // With most rows dead the graph is rebuilt rather than repaired (cheaper), and the rebuild is a VACUUM
      // FULL: the heap packed and every index rebuilt. Documents (an insert, an update and a delete each: fewer
      // dead rows than MIN_DEAD_ROWS) and memories (none) are left alone.
      expect(pass.steps.map((s) => [s.step, s.target])).toEqual([["compact", "chunks"]]);
      expect(pass).toMatchObject({ compacted: ["chunks"], vacuumed: [], reindexed: [] });
      await settle();
      expect((await tableChurn(db, "chunks")).dead).toBe(0);
      expect((await heapBloat(db, "chunks", 0, 0)).heapBytes).toBeLessThan(heapBefore / 2);
      // The rebuild's maintenance_work_mem was for that statement only.
      const [mem] = await queryRows<{ maintenance_work_mem: string }>(db, sql`SHOW maintenance_work_mem`);
      expect(mem?.maintenance_work_mem).toBe("64MB");
    } else {
      // autovacuum's job; the bloated index is rebuilt CONCURRENTLY.
      expect(pass.steps.map((s) => [s.step, s.target])).toEqual([["reindex", "chunks_hnsw_maint_test"]]);
      expect(pass).toMatchObject({ vacuumed: [], reindexed: ["chunks_hnsw_maint_test"] });
    }

    // The same answers: each query's own chunk first, and (nearly) the same ten. Not the same order below the
    // first: a rebuilt HNSW graph draws new random levels, and keyword scores tie among these look-alike notes,
    // so equal-scored chunks may come back in another physical order.
    const after = await Promise.all(queries.map(search));
    after.forEach((hits, q) => {
      expect(hits[0]).toBe(before[q]?.[0]);
      expect(hits.filter((id) => before[q]?.includes(id)).length).toBeGreaterThanOrEqual(8);
    });

    await settle();
    expect(await runMaintenance(db, { driver: driver as "pglite" })).toEqual({
      vacuumed: [],
      reindexed: [],
      compacted: [],
      steps: [],
      deferred: [],
    });
  });
  it("compacts a heap that shrank for good (PGlite), a step over the bound only once the service is quiet", async () => {
    const spread = vectors(DOCUMENTS * CHUNKS_PER_DOCUMENT, 99);
    const ids: string[] = [];
    for (let i = 0; i < DOCUMENTS; i++)
      ids.push(
        await processed(
          db,
          1000 + i,
          spread.slice(i * CHUNKS_PER_DOCUMENT, (i + 1) * CHUNKS_PER_DOCUMENT),
          "compact",
        ),
      );
    // Every other document deleted: holes all over the heap, which VACUUM frees but cannot give back.
    for (const id of ids.filter((_, i) => i % 2 === 1)) await deleteDocument(db, id);
    await settle();
    const bySelf = (i: number) =>
      hybridChunkSearch(db, {
        text: "note",
        embedding: spread[i * CHUNKS_PER_DOCUMENT] as number[],
        space,
        containerTags: ["compact"],
        tagMode: "any",
        candidates: 10,
      }).then((hits) => hits[0]?.chunkId);
    const firstBefore = await Promise.all([0, 2, 4].map(bySelf));
    const heapBefore = await heapBloat(db, "chunks", (await tableChurn(db, "chunks")).live, 64 * 1024);
    const small = { minCompactBytes: 64 * 1024 };

    if (driver === "postgres") {
      // VACUUM FULL locks the table on a server that others use: left to the operator (pg_repack).
      const pass = await runMaintenance(db, { driver: "postgres", quiet: true, ...small });
      expect(pass.compacted).toEqual([]);
      return;
    }
    expect(heapBefore.heapBytes).toBeGreaterThan(1.5 * heapBefore.packedBytes);
    // A bound the rewrite would exceed leaves it for later while the API is busy...
    const busy = await runMaintenance(db, { driver: "pglite", maxHoldMs: 1, ...small });
    expect(busy.compacted).toEqual([]);
    expect(busy.deferred).toContainEqual(expect.objectContaining({ table: "chunks", step: "compact" }));
    expect((await heapBloat(db, "chunks", 0, 64 * 1024)).heapBytes).toBe(heapBefore.heapBytes);
    // ...and runs it in the first pass after the API has been quiet.
    const quiet = await runMaintenance(db, { driver: "pglite", maxHoldMs: 1, quiet: true, ...small });
    expect(quiet.compacted).toContain("chunks");
    expect(quiet.steps).toContainEqual(expect.objectContaining({ step: "compact", target: "chunks" }));
    await settle();
    const live = (await tableChurn(db, "chunks")).live;
    const after = await heapBloat(db, "chunks", live, 64 * 1024);
    expect(after.heapBytes).toBeLessThan(0.75 * heapBefore.heapBytes);
    expect(after.heapBytes).toBeLessThanOrEqual(HEAP_COMPACT_FACTOR * after.packedBytes);
    // The rewrite rebuilt the HNSW index with the heap: the same nearest chunk for each query.
    expect(await Promise.all([0, 2, 4].map(bySelf))).toEqual(firstBefore);
    // Nothing left to do.
    expect((await runMaintenance(db, { driver: "pglite", quiet: true, ...small })).compacted).toEqual([]);
  });
});

// PGlite does not keep the statistics collector's counts when it closes: after every restart n_live_tup starts
// from 0. Read alone, a big table then looked all slack, and its compaction (VACUUM FULL with the HNSW rebuild)
// free: the first pass after a restart held every search for minutes. pg_stat_reset() leaves the counts as a
// restart does.
describe("table maintenance after a restart of the embedded store", () => {
  let store: Store;
  let db: Database;
  const small = { minCompactBytes: 64 * 1024 };

  beforeAll(async () => {
    store = await openMemoryPglite();
    db = store.background;
    await ensureVectorIndexes(db, space);
    const all = vectors(DOCUMENTS * CHUNKS_PER_DOCUMENT, 7);
    for (let i = 0; i < DOCUMENTS; i++)
      await processed(db, i, all.slice(i * CHUNKS_PER_DOCUMENT, (i + 1) * CHUNKS_PER_DOCUMENT), "restart");
    await db.execute(sql`ANALYZE`);
  });
  afterAll(async () => {
    await store?.close();
  });

  const forgetCounts = async () => {
    await db.execute(sql`SELECT pg_stat_reset()`);
    await publishTableCounters(db);
  };

  it("counts live rows from the catalog when the collector lost them, and compacts nothing that is packed", async () => {
    await forgetCounts();
    const counted = await tableChurn(db, "chunks");
    expect(counted.live).toBeGreaterThanOrEqual(0.9 * DOCUMENTS * CHUNKS_PER_DOCUMENT);
    expect(counted.catalogKnown).toBe(true);
    const size = (await hnswIndexSizes(db)).find((s) => s.table === "chunks");
    expect(size?.rows).toBe(counted.live);
    const heap = await heapBloat(db, "chunks", counted.live, small.minCompactBytes);
    expect(heap.heapBytes).toBeGreaterThan(small.minCompactBytes);
    expect(heap.heapBytes).toBeLessThanOrEqual(HEAP_COMPACT_FACTOR * heap.packedBytes);

    const pass = await runMaintenance(db, { driver: "pglite", maxHoldMs: 1, ...small });
    expect(pass).toEqual({ vacuumed: [], reindexed: [], compacted: [], steps: [], deferred: [] });
  });

  it("counts a table with no count anywhere (ANALYZE) before judging it", async () => {
    // As if never analyzed: the catalog's count unknown as well.
    await db.execute(sql`UPDATE pg_class SET reltuples = -1 WHERE oid = 'chunks'::regclass`);
    await forgetCounts();
    expect(await tableChurn(db, "chunks")).toMatchObject({ live: 0, catalogKnown: false });

    const pass = await runMaintenance(db, { driver: "pglite", maxHoldMs: 1, ...small });
    expect(pass.steps.map((s) => `${s.step} ${s.target}`)).toEqual(["analyze chunks"]);
    expect(pass.compacted).toEqual([]);
    expect(pass.reindexed).toEqual([]);
    const counted = await tableChurn(db, "chunks");
    expect(counted.catalogKnown).toBe(true);
    expect(counted.live).toBeGreaterThanOrEqual(0.9 * DOCUMENTS * CHUNKS_PER_DOCUMENT);
  });
});
