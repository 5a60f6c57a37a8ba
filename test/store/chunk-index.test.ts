// The in-memory chunk index (SEARCH_INDEX=memory, embedded store only) must rank what SQL ranks, the same way,
// and follow every write the store takes. Real PGlite: its ts_rank and pgvector are the reference.
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seededRandom } from "../../bench/lib/random.ts";
import { openMemoryPglite, queryRows, type Store } from "../../store/db.ts";
import { deleteDocument, updateDocument } from "../../store/documents.ts";
import { lastChange } from "../../store/search/chunk-index/change-log.ts";
import { TagRows } from "../../store/search/chunk-index/held-chunks.ts";
import {
  ChunkIndex,
  detachChunkIndex,
  startChunkIndex,
  withoutChunkIndex,
} from "../../store/search/chunk-index/index.ts";
import { kthLargest, rankChunks } from "../../store/search/chunk-index/rank.ts";
import { indexAnswers } from "../../store/search/chunk-index/search.ts";
import { normalisedRank, parseTsvector, termScore } from "../../store/search/chunk-index/ts-rank.ts";
import { chunksAt, type HybridSearchQuery, hybridChunkSearch } from "../../store/search/chunk-search.ts";
import { ensureVectorIndexes } from "../../store/search/vector-index.ts";
import { axis, processedDocument, space } from "./cases/support.ts";

const WORDS =
  "otter river salmon protein gene expression cell cells patients study increase rate levels higher kelp reef tide storm harbor".split(
    " ",
  );
const textOf = (next: () => number, words: number) =>
  Array.from({ length: words }, () => WORDS[Math.floor(next() * WORDS.length)]).join(" ");

describe("in-memory chunk index", () => {
  let store: Store;
  beforeAll(async () => {
    store = await openMemoryPglite();
    await ensureVectorIndexes(store.db, space);
  });
  afterAll(async () => {
    detachChunkIndex(store.db);
    await store.close();
  });

  it("computes ts_rank(tsv, query, 1) exactly as PostgreSQL does", async () => {
    const next = seededRandom(7);
    for (let i = 0; i < 60; i++) {
      const text = textOf(next, 3 + Math.floor(next() * 300));
      const query = textOf(next, 1 + Math.floor(next() * 4));
      const [row] = await queryRows<{ tsv: string; lexemes: string[] }>(
        store.db,
        sql`SELECT to_tsvector('english', ${text})::text AS tsv, tsvector_to_array(to_tsvector('english', ${query})) AS lexemes`,
      );
      const lexemes = [...new Set(row?.lexemes ?? [])].sort();
      const tsq = lexemes.map((l) => `'${l}'`).join(" | ");
      const [ranked] = await queryRows<{ rank: number }>(
        store.db,
        sql`SELECT ts_rank(to_tsvector('english', ${text}), ${tsq}::tsquery, 1)::float8 AS rank`,
      );
      const tsv = parseTsvector(row?.tsv ?? "");
      const sum = new Float32Array(1);
      for (const lexeme of lexemes) {
        const at = tsv.lexemes.indexOf(lexeme);
        if (at >= 0) sum[0] = (sum[0] ?? 0) + termScore(tsv.positions[at] ?? 1);
      }
      expect(normalisedRank(sum[0] ?? 0, lexemes.length, tsv.length)).toBe(Number(ranked?.rank));
    }
  });

  it("ranks a tag's chunks as the SQL search does, then follows adds, retags and deletes", async () => {
    const next = seededRandom(11);
    const documents: string[] = [];
    for (let d = 0; d < 40; d++) {
      const pieces = Array.from({ length: 3 }, () => textOf(next, 20 + Math.floor(next() * 60)));
      documents.push(
        await processedDocument(
          store.db,
          {
            source: `doc ${d}`,
            containerTags: [d % 4 === 0 ? "small" : "big", ...(d % 5 === 0 ? ["both"] : [])],
          },
          pieces,
          pieces.map(() => Math.floor(next() * 16)),
        ),
      );
    }
    // Distinct vectors near each chunk's axis: chunks on one axis would otherwise tie, and tied rows come in any order.
    const ids = await queryRows<{ id: string }>(store.db, sql`SELECT id FROM chunks ORDER BY id`);
    for (const [n, { id }] of ids.entries()) {
      const [row] = await queryRows<{ v: string }>(
        store.db,
        sql`SELECT embedding::text AS v FROM chunks WHERE id = ${id}`,
      );
      const moved = (JSON.parse(row?.v ?? "[]") as number[]).map((x) => x + (next() - 0.5) * 0.2);
      // Some chunks carry metadata (a page, as from a PDF), which the index holds and hits show.
      const metadata = n % 3 === 0 ? JSON.stringify({ page: n, section: `part ${n}` }) : "{}";
      await store.db.execute(
        sql`UPDATE chunks SET embedding = ${`[${moved.join(",")}]`}::vector, metadata = ${metadata}::jsonb WHERE id = ${id}`,
      );
    }
    const { index, built } = startChunkIndex(store.db, store.background, space);
    await built;
    expect(index.size).toBe(120);
    expect(index.ready).toBe(true);

    // store.db searches through the index, store.background (no index attached) through SQL.
    const both = async (q: Partial<HybridSearchQuery> & { text: string; embedding: number[] }) => {
      const query = { space, tagMode: "any" as const, candidates: 30, containerTags: ["big"], ...q };
      expect(indexAnswers(index, query)).toBe(true);
      return {
        indexed: await hybridChunkSearch(store.db, query),
        bySql: await hybridChunkSearch(store.background, query),
      };
    };
    // The same rows with the same scores. Two rows whose fused scores differ by float rounding alone (pgvector
    // sums in single precision) may come in either order, and one of them may be the last kept.
    const expectSame = ({ indexed, bySql }: Awaited<ReturnType<typeof both>>) => {
      expect(indexed.length).toBe(bySql.length);
      const sqlHits = new Map(bySql.map((h) => [h.chunkId, h]));
      const lastFused = bySql[bySql.length - 1]?.fused ?? 0;
      indexed.forEach((hit, i) => {
        expect(hit.fused).toBeCloseTo(bySql[i]?.fused ?? Number.NaN, 5);
        const other = sqlHits.get(hit.chunkId);
        if (!other) {
          expect(hit.fused).toBeCloseTo(lastFused, 5);
          return;
        }
        expect(hit.documentId).toBe(other.documentId);
        expect(hit.content).toBe(other.content);
        // Held by the index, not read per search: the same as the store's row.
        expect(hit.position).toBe(other.position);
        expect(hit.metadata).toEqual(other.metadata);
        expect(hit.similarity).toBeCloseTo(other.similarity, 5);
        expect(hit.fused).toBeCloseTo(other.fused, 5);
        if (hit.keywordRank !== other.keywordRank) expect(hit.fused).toBeCloseTo(bySql[i]?.fused ?? 0, 5);
      });
    };
    for (let i = 0; i < 12; i++) {
      const q = { text: textOf(next, 1 + (i % 3)), embedding: axis(i % 16, 0.05) };
      const result = await both(q);
      expect(result.indexed.length).toBeGreaterThan(0);
      expectSame(result);
      expectSame(await both({ ...q, containerTags: ["small"] }));
      expectSame(await both({ ...q, containerTags: ["big", "both"], tagMode: "all" }));
      expectSame(await both({ ...q, containerTags: undefined, scope: ["small", "both"] }));
      expectSame(await both({ ...q, retrieval: "keyword" }));
      expectSame(await both({ ...q, retrieval: "vector", fusion: "rrf" }));
    }

    // Every write reaches the index through the change log before the next search ranks.
    const query = { text: "walrus", embedding: axis(3, 0.05), containerTags: ["small"] };
    const added = await processedDocument(
      store.db,
      { source: "new", containerTags: ["small"] },
      ["a walrus"],
      [3],
    );
    expect((await both(query)).indexed[0]?.documentId).toBe(added);
    expectSame(await both(query));
    await updateDocument(store.db, added, { containerTags: ["big"] });
    expect((await both(query)).indexed.map((h) => h.documentId)).not.toContain(added);
    expect((await both({ ...query, containerTags: ["big"] })).indexed[0]?.documentId).toBe(added);
    // A chunk that changes again and again takes its old slot back: the index does not grow with the changes.
    const slots = index.stats().slots;
    for (let i = 0; i < 20; i++)
      await updateDocument(store.db, added, { containerTags: [i % 2 ? "small" : "big"] });
    expect((await both({ ...query, containerTags: ["small"] })).indexed.map((h) => h.documentId)).toContain(
      added,
    );
    expect(index.stats().slots).toBe(slots);
    await updateDocument(store.db, added, { containerTags: ["big"] });
    await deleteDocument(store.db, added);
    const afterDelete = await both({ ...query, containerTags: ["big"] });
    expect(afterDelete.indexed.map((h) => h.documentId)).not.toContain(added);
    expectSame(afterDelete);
    expect(index.size).toBe(120);
    // The log keeps only what the index has not read yet.
    const [left] = await queryRows<{ n: number }>(
      store.db,
      sql`SELECT count(*)::int AS n FROM chunk_changes`,
    );
    expect(left?.n).toBe(0);
    expect(await lastChange(store.db)).toBe(0);

    // What the index cannot answer goes to SQL: narrowings on the document row, another vector space.
    const base = { text: "otter", embedding: axis(1), space, tagMode: "any" as const, candidates: 10 };
    expect(indexAnswers(index, { ...base, filters: { key: "lang", value: "en" } })).toBe(false);
    expect(indexAnswers(index, { ...base, documentId: documents[0] })).toBe(false);
    expect(indexAnswers(index, { ...base, space: { model: "other", dimension: 16 } })).toBe(false);
  });

  it("answers from SQL while a long backlog of changes is applied in the background, then from the index", async () => {
    const { index, built } = startChunkIndex(store.db, store.background, space);
    await built;
    // Only the searches and syncs below apply changes here, not its once-a-second pass.
    index.keepCurrent(store.db, 600_000);
    const before = index.size;
    // One document of 2,100 chunks: inserted, embedded and made searchable, over 6,000 logged changes.
    const pieces = Array.from({ length: 2_100 }, (_, i) => `narwhal tusk ${i}`);
    const big = await processedDocument(
      store.db,
      { source: "many", containerTags: ["backlog"] },
      pieces,
      pieces.map((_, i) => i % 16),
    );
    expect(await lastChange(store.db)).toBeGreaterThan(2_000);
    expect(await index.sync(store.db)).toBe(false);
    const query = {
      text: "narwhal",
      embedding: axis(2, 0.05),
      space,
      tagMode: "any" as const,
      candidates: 10,
      containerTags: ["backlog"],
    };
    // Behind: the search is SQL's, and already finds the new chunks.
    expect((await hybridChunkSearch(store.db, query)).map((h) => h.documentId)).toContain(big);
    let current = false;
    for (let i = 0; i < 600 && !current; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      current = await index.sync(store.db);
    }
    expect(current).toBe(true);
    expect(index.size).toBe(before + 2_100);
    const sqlHits = await hybridChunkSearch(store.background, query);
    const indexed = await hybridChunkSearch(store.db, query);
    // Many of these chunks tie on both sides (one text, shared axes), and tied rows come in any order: the same
    // number of hits, all of the new document's.
    expect(indexed.length).toBe(sqlHits.length);
    expect(new Set(indexed.map((h) => h.documentId))).toEqual(new Set([big]));
    await deleteDocument(store.db, big);
    expect(await hybridChunkSearch(store.db, query)).toEqual([]);
  });

  it("gives the chunks beside a hit from its copy, as of its last sync, and asks the store about documents it does not hold", async () => {
    const { index, built } = startChunkIndex(store.db, store.background, space);
    await built;
    // Only the syncs below apply changes here, not its once-a-second pass.
    index.keepCurrent(store.db, 600_000);
    // Built and not catching up (the test before leaves a large delete behind it) before the checks below.
    let caughtUp = false;
    for (let i = 0; i < 600 && !caughtUp; i++) {
      caughtUp = (await index.sync(store.db)) && index.current;
      if (!caughtUp) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(caughtUp).toBe(true);
    const id = await processedDocument(
      store.db,
      { source: "context", containerTags: ["context"] },
      ["first manatee part", "second manatee part", "third manatee part"],
      [4, 5, 6],
    );
    await store.db.execute(
      sql`UPDATE chunks SET metadata = '{"page": 2}'::jsonb WHERE document_id = ${id} AND position = 2`,
    );
    const wanted = [
      { documentId: id, position: 0 },
      { documentId: id, position: 2 },
      { documentId: id, position: 7 },
      { documentId: "no-such-document", position: 1 },
    ];
    const sorted = (chunks: Awaited<ReturnType<typeof chunksAt>>) =>
      chunks.map((c) => [c.documentId, c.position, c.content, c.metadata]).sort();
    // Not synced yet: the index holds nothing of the document, so the store answers.
    expect(index.current).toBe(true);
    expect(index.chunksAt(wanted).found).toEqual([]);
    const fromStore = await chunksAt(store.background, wanted);
    expect(sorted(fromStore)).toEqual([
      [id, 0, "first manatee part", {}],
      [id, 2, "third manatee part", { page: 2 }],
    ]);
    expect(sorted(await chunksAt(store.db, wanted))).toEqual(sorted(fromStore));
    // Synced: the same answer, from the index's copy. (Inline: an index started over an emptied log counts from
    // the log's sequence, so the few changes since are no backlog.)
    expect(await index.sync(store.db)).toBe(true);
    expect(
      index
        .chunksAt(wanted)
        .found.map((f) => f.position)
        .sort(),
    ).toEqual([0, 2]);
    expect(sorted(await chunksAt(store.db, wanted))).toEqual(sorted(fromStore));
    // A change the index has not read is not seen by it (as of its last sync, like the hits it ranks) ...
    await store.db.execute(
      sql`UPDATE chunks SET content = 'changed manatee part' WHERE document_id = ${id} AND position = 0`,
    );
    expect(sorted(await chunksAt(store.db, wanted))).toEqual(sorted(fromStore));
    // ... until it syncs; a deleted document's chunks go with it.
    expect(await index.sync(store.db)).toBe(true);
    expect((await chunksAt(store.db, wanted)).find((c) => c.position === 0)?.content).toBe(
      "changed manatee part",
    );
    await deleteDocument(store.db, id);
    expect(await index.sync(store.db)).toBe(true);
    expect(index.chunksAt(wanted)).toEqual({ found: [], elsewhere: wanted });
    expect(await chunksAt(store.db, wanted)).toEqual([]);
    detachChunkIndex(store.db);
  });

  it("applies the store's changes on its own while nobody searches, so the log stays short", async () => {
    const { index, built } = startChunkIndex(store.db, store.background, space);
    await built;
    const before = index.size;
    const documentId = await processedDocument(
      store.db,
      { source: "quiet", containerTags: ["quiet"] },
      ["a dugong"],
      [6],
    );
    expect(await lastChange(store.db)).toBeGreaterThan(0);
    let applied = false;
    for (let i = 0; i < 100 && !applied; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      applied = index.size === before + 1 && (await lastChange(store.db)) === 0;
    }
    expect(applied).toBe(true);
    detachChunkIndex(store.db);
    await deleteDocument(store.db, documentId);
  });

  it("drops the postings of removed and replaced chunks once they outnumber the live ones", async () => {
    const index = new ChunkIndex(space, { compactAfterStalePostings: 1 });
    await index.build(store.background);
    const documentId = await processedDocument(
      store.db,
      { source: "churned", containerTags: ["churn"] },
      ["seals on the rocks", "seals in the kelp"],
      [4, 5],
    );
    for (let i = 0; i < 5; i++) await updateDocument(store.db, documentId, { containerTags: [`churn-${i}`] });
    // Everything since the build: applied, then the stale postings dropped.
    for (let i = 0; i < 5; i++) await index.sync(store.background);
    await index.compacted();
    const stats = index.stats();
    expect(stats.live).toBe(122);
    expect(stats.stalePostings).toBe(0);
    expect(stats.livePostings).toBeGreaterThan(0);
    const ranked = rankChunks(index.held, {
      scope: { containerTags: ["churn-4"], tagMode: "any" },
      embedding: axis(4),
      lexemes: ["seal"],
      candidates: 10,
      fuse: (v, k) => (v ? v.score : 0) + (k ? k.score : 0),
    });
    expect(ranked).toHaveLength(2);
    expect(ranked.every((r) => r.keywordRank !== null)).toBe(true);
    await deleteDocument(store.db, documentId);
  });

  it("builds a large tag's graph on its own thread, finds through it what an exact scan finds, then follows changes", async () => {
    const before = (await queryRows<{ n: number }>(store.db, sql`SELECT count(*)::int AS n FROM chunks`))[0]
      ?.n as number;
    // More rows than an exact scan takes (4,096), so the scope's nearest come from the graph.
    const pieces = Array.from({ length: 5_000 }, (_, i) => `walrus ${i}`);
    const large = await processedDocument(
      store.db,
      { source: "large", containerTags: ["large"] },
      pieces,
      pieces.map(() => 0),
    );
    // Random directions, one per chunk (set in SQL: a statement for 5,000 rows, not 5,000 of them).
    await store.db.execute(sql`SELECT setseed(0.25)`);
    await store.db.execute(
      sql`UPDATE chunks SET embedding_model = ${space.model},
            embedding = ARRAY(SELECT random() - 0.5 FROM generate_series(1, ${space.dimension}) WHERE chunks.id IS NOT NULL)::real[]::vector
          WHERE document_id = ${large}`,
    );
    const rows = await queryRows<{ id: string; v: string }>(
      store.db,
      sql`SELECT id, embedding::text AS v FROM chunks WHERE document_id = ${large}`,
    );
    const vectors = rows.map((r) => ({ id: r.id, v: JSON.parse(r.v) as number[] }));
    const cosine = (a: number[], b: number[]) => {
      let dot = 0;
      let na = 0;
      let nb = 0;
      a.forEach((x, i) => {
        const y = b[i] as number;
        dot += x * y;
        na += x * x;
        nb += y * y;
      });
      return dot / Math.sqrt(na * nb);
    };
    const index = new ChunkIndex(space);
    await index.build(store.background);
    expect(index.ready).toBe(true);
    expect(index.size).toBe(before + 5_000);
    const nearest = (query: number[]) =>
      rankChunks(index.held, {
        scope: { containerTags: ["large"], tagMode: "any" },
        embedding: query,
        lexemes: null,
        candidates: 10,
        fuse: (v) => (v ? v.score : 0),
      }).map((r) => r.id);
    const random = seededRandom(5);
    let found = 0;
    for (let q = 0; q < 20; q++) {
      const query = Array.from({ length: space.dimension }, () => random() - 0.5);
      const exact = vectors
        .map((r) => ({ id: r.id, score: cosine(r.v, query) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 10)
        .map((r) => r.id);
      const hits = nearest(query);
      expect(hits).toHaveLength(10);
      found += hits.filter((id) => exact.includes(id)).length;
    }
    // An HNSW graph is approximate; at 5,000 rows of 16 dimensions it misses few.
    expect(found / 200).toBeGreaterThan(0.9);

    // The loaded graph takes changes: a chunk moved onto a query's direction is found first, then not once gone.
    const moved = vectors[123] as { id: string };
    const query = Array.from({ length: space.dimension }, (_, i) => (i % 3) - 1 + 0.1);
    await store.db.execute(
      sql`UPDATE chunks SET embedding = ${`[${query.join(",")}]`}::vector WHERE id = ${moved.id}`,
    );
    await index.sync(store.background);
    expect(nearest(query)[0]).toBe(moved.id);
    await deleteDocument(store.db, large);
    // 5,000 deletions: a backlog applied in the background.
    for (let i = 0; i < 600 && !(await index.sync(store.background)); i++)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(index.size).toBe(before);
    expect(nearest(query)).toEqual([]);
    index.stop();
  });

  it("tells a large tag's rows by a byte per slot exactly as by its set, through adds and deletes", () => {
    const random = seededRandom(7);
    const tag = new TagRows();
    const reference = new Set<number>();
    // Past the exact-scan size the byte mask takes over; rows far beyond its length make it grow.
    for (let i = 0; i < 12_000; i++) {
      const row = Math.floor(random() * (i < 6_000 ? 8_000 : 40_000));
      if (random() < 0.2) {
        tag.delete(row);
        reference.delete(row);
      } else {
        tag.add(row);
        reference.add(row);
      }
    }
    expect(tag.size).toBe(reference.size);
    expect(reference.size).toBeGreaterThan(4_096);
    for (let row = 0; row < 45_000; row++) expect(tag.has(row)).toBe(reference.has(row));
  });

  it("finds the k-th largest score as a full sort does, duplicates counted", () => {
    const random = seededRandom(11);
    for (const [n, k] of [
      [1, 1],
      [50, 10],
      [2_000, 100],
      [2_000, 2_000],
    ] as const) {
      // Rounded so that many scores tie.
      const values = Float64Array.from({ length: n }, () => Math.round(random() * 300) / 10);
      const sorted = Float64Array.from(values).sort();
      expect(kthLargest(values, k)).toBe(sorted[n - k]);
    }
  });

  it("leaves no change log behind when the store is searched without an index", async () => {
    detachChunkIndex(store.db);
    await withoutChunkIndex(store.db);
    const [row] = await queryRows<{ log: string | null; triggers: number }>(
      store.db,
      sql`SELECT to_regclass('chunk_changes')::text AS log,
                 (SELECT count(*)::int FROM pg_trigger WHERE tgname LIKE 'chunk_changes_%') AS triggers`,
    );
    expect(row).toEqual({ log: null, triggers: 0 });
    // A new index creates it again.
    const index = new ChunkIndex(space);
    await index.build(store.background);
    expect(index.size).toBe(120);
  });
});
