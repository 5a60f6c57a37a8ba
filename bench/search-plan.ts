// Where the search time goes, stage by stage, on a 100,000-chunk store (issue #25):
//   npx tsx bench/search-plan.ts --chunks 100000 --tags 1,1000 [--queries 20] [--store DIR] [--rebuild]
// Fills a PGlite store with the search benchmark's SciFact chunks (same migrations and bulk path as
// bench/search.ts, vectors from the cache under ~/.cache/memory-service/bench/vectors), then for each tag
// layout runs `EXPLAIN (ANALYZE, BUFFERS)` of the search statement's stages exactly as store/search/chunk-search.ts
// builds them (searchStatement): by_vector alone, by_keyword alone, the whole statement, for
//   (a) every chunk in one tag, filtered on that tag (--tags 1),
//   (c) no tag filter (--tags 1),
//   (b) the chunks spread over N tags (--tags N), the query scoped to one of them as a scoped key's is.
// It prints per-stage execution times (p50/p95 over the queries), the first query's plans, the wall time
// of hybridChunkSearch itself, and the recall of the top 10 against an exact ranking (no index).
// The built store is kept in --store (default /tmp/search-plan-<chunks>) and reused by the next run.
// With --imported DIR it plans on a store kept by the search-imported scenario instead
// (`npm run bench -- --only search-imported --imported-store DIR --no-page`): filled through the service's
// store path, with its deletes, updates and maintenance pass; the stages run in its big tag `all` and in
// small tags, and nothing is retagged.
// With --postgres DIR it plans on PostgreSQL (the DATABASE_URL path) instead: a native cluster kept in DIR,
// seeded on first use exactly as the `scale` scenario seeds its search store (real chunks, then blends past
// 100,000; bench/scale.ts seedSearchStore) and reused after; --pg NAME=VALUE sets server settings
// (e.g. --pg shared_buffers=6GB). Only the one-tag layouts (a) and (c) run there: retagging a million rows
// would be its own experiment.
//   npx tsx bench/search-plan.ts --postgres /tmp/plan-pg-1m --chunks 1000000 --pg shared_buffers=6GB --queries 20
// --run STATEMENT (repeatable) runs statements on the store before measuring, e.g. a statistics target to try;
// they change the kept store for later runs too.

import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { type SQL, sql } from "drizzle-orm";
import { createEmbedder, resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import { type Database, openPglite, openStore, queryRows, type Store } from "../store/db.ts";
import { type HybridSearchQuery, hybridChunkSearch, searchStatement } from "../store/search/chunk-search.ts";
import { commonTerms, keywordTsquery, MATCH_BUDGET } from "../store/search/keyword.ts";
import { ensureVectorIndexes } from "../store/search/vector-index.ts";
import { startNativePostgres } from "../test/support/postgres.ts";
import { tagName as churnTagName } from "./lib/churn.ts";
import { readCorpus, readQueries } from "./lib/corpus.ts";
import { mean as average, ndcgAt } from "./lib/metrics.ts";
import { log } from "./lib/progress.ts";
import { readJudgedQueries } from "./lib/scifact.ts";
import { searchChunkDocuments } from "./lib/search-corpus.ts";
import { bulkLoad, deferChunkIndexes } from "./lib/search-load.ts";
import { embedderSpace, vectorSource } from "./lib/search-vectors.ts";
import { serviceQueryPrecision } from "./lib/service.ts";
import { summarize } from "./lib/stats.ts";
import { cachedVectors } from "./lib/vector-cache.ts";
import { SEARCH_TAG as SCALE_TAG, seedSearchStore } from "./scale.ts";
import { BIG_TAG, FILL_RECORD } from "./search-imported.ts";

const { values } = parseArgs({
  options: {
    chunks: { type: "string", default: "100000" },
    tags: { type: "string", default: "1,1000" },
    queries: { type: "string", default: "20" },
    candidates: { type: "string", default: "100" },
    store: { type: "string" },
    rebuild: { type: "boolean", default: false },
    imported: { type: "string" },
    postgres: { type: "string" },
    pg: { type: "string", multiple: true, default: [] },
    /** Planner settings for every measured statement, e.g. --set enable_hashjoin=off (repeatable). */
    set: { type: "string", multiple: true, default: [] },
    /** PGlite's buffer pool for the measured runs (default: PGlite's own; the service sets PGLITE_SHARED_BUFFERS=32MB). */
    "shared-buffers": { type: "string" },
    "no-plans": { type: "boolean", default: false },
    /** No recall against an exact ranking (slow at 1M). */
    quick: { type: "boolean", default: false },
    /** Statements run once on the store before measuring (an experiment: --run "ANALYZE chunks"); they persist. */
    run: { type: "string", multiple: true, default: [] },
    /** SciFact test queries to score (nDCG@10 by document) with and without the keyword match budget. */
    judged: { type: "string", default: "0" },
  },
});
const CHUNKS = Number(values.chunks);
const TAG_COUNTS = String(values.tags)
  .split(",")
  .filter((s) => s.trim() && s.trim() !== "none")
  .map((s) => Number(s.trim()));
const QUERIES = Number(values.queries);
const CANDIDATES = Number(values.candidates);
const IMPORTED = values.imported;
const EXTRA_SETTINGS = (values.set ?? []).map((kv) => {
  const m = /^([a-z_.]+)=([\w.]+)$/.exec(kv);
  if (!m) throw new Error(`--set takes NAME=VALUE, got ${kv}`);
  return `SET LOCAL ${m[1]} = ${m[2]}`;
});
const POSTGRES = values.postgres;
if (POSTGRES && IMPORTED) throw new Error("--postgres and --imported are two different stores: pick one");
const STORE = IMPORTED ?? values.store ?? `/tmp/search-plan-${CHUNKS}`;
const K = 10;

const tagName = (i: number, n: number) => (n === 1 ? (POSTGRES ? SCALE_TAG : "plan-all") : `plan-${n}-${i}`);

/**
 * The PostgreSQL store of --postgres: a cluster kept in that dir, seeded with CHUNKS chunks the first time (a
 * marker file records how many), as the scale scenario seeds its search store.
 */
async function openPostgresPlanStore(dir: string): Promise<Store & { stopServer(): Promise<void> }> {
  const settings: Record<string, string> = {};
  for (const kv of values.pg ?? []) {
    const eq = kv.indexOf("=");
    if (eq < 1) throw new Error(`--pg takes NAME=VALUE, got ${kv}`);
    settings[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const server = await startNativePostgres({ settings, keepIn: dir });
  const marker = path.join(dir, "seeded");
  const seeded = existsSync(marker) ? Number(readFileSync(marker, "utf8")) : 0;
  if (server.reused && seeded !== CHUNKS) {
    await server.stop();
    throw new Error(
      `${dir} holds a cluster seeded with ${seeded} chunks, not ${CHUNKS}: remove it to seed again`,
    );
  }
  const data = path.join(dir, "service-data");
  const store = await openStore({ databaseUrl: server.url, dataDir: data });
  if (!server.reused) {
    const seeding = await seedSearchStore(
      store,
      CHUNKS,
      `${Math.max(256, Math.ceil((CHUNKS * 3) / 1024))}MB`,
    );
    log(
      `seeded ${CHUNKS} chunks in ${(seeding.seedMs / 1000).toFixed(0)} s (HNSW ${(seeding.hnswMs / 1000).toFixed(0)} s)`,
    );
    writeFileSync(marker, `${CHUNKS}\n`);
  } else log(`reusing the PostgreSQL store in ${dir} (${CHUNKS} chunks)`);
  return {
    ...store,
    async stopServer() {
      await store.close();
      await server.stop();
    },
  };
}

/** A 384-d vector literal would fill pages: show its size instead. */
const shorten = (line: string) =>
  line.replace(/'\[[^\]]{200,}\]'/g, (m) => `'[${m.split(",").length} values]'`).replace(/\s+$/, "");

async function inTransaction<T>(db: Database, settings: string[], fn: (tx: Database) => Promise<T>) {
  return db.transaction(async (tx) => {
    for (const s of [...settings, ...EXTRA_SETTINGS]) await tx.execute(sql.raw(s));
    return fn(tx as unknown as Database);
  });
}

interface Explained {
  ms: number;
  planningMs: number;
  /** Shared buffers the statement touched (hit + read, the root node's): a figure the machine's load leaves alone. */
  buffers: number;
  lines: string[];
}

async function explain(db: Database, settings: string[], statement: SQL): Promise<Explained> {
  const lines = await inTransaction(db, settings, async (tx) =>
    (await queryRows<{ "QUERY PLAN": string }>(tx, sql`EXPLAIN (ANALYZE, BUFFERS) ${statement}`)).map((r) =>
      shorten(r["QUERY PLAN"]),
    ),
  );
  const num = (re: RegExp) => Number(lines.map((l) => re.exec(l)?.[1]).find((x) => x != null) ?? Number.NaN);
  const root = lines.find((l) => /Buffers: shared/.test(l)) ?? "";
  const buffers = Number(/hit=(\d+)/.exec(root)?.[1] ?? 0) + Number(/read=(\d+)/.exec(root)?.[1] ?? 0);
  return {
    ms: num(/Execution Time: ([\d.]+) ms/),
    planningMs: num(/Planning Time: ([\d.]+) ms/),
    buffers,
    lines,
  };
}

/** The settings that take every index away: the exact ranking the recall is measured against. */
const EXACT = ["SET LOCAL enable_indexscan = off", "SET LOCAL enable_bitmapscan = off"];

async function ids(db: Database, settings: string[], statement: SQL, column: string): Promise<string[]> {
  const rows = await inTransaction(db, settings, (tx) => queryRows(tx, statement));
  return rows.slice(0, K).map((r) => String(r[column]));
}

const overlap = (a: string[], b: string[]) => {
  const set = new Set(b);
  return a.filter((x) => set.has(x)).length / Math.max(1, b.length);
};

async function buildStore(space: { model: string; dimension: number }, name: string) {
  const corpus = readCorpus();
  const docs = searchChunkDocuments(corpus, CHUNKS);
  const texts = docs.flatMap((d) => d.pieces);
  const cache = await cachedVectors({ ...space, texts, embed: vectorSource(name) });
  log(`vectors: ${cache.hit ? "all from the cache" : `${cache.computed} computed`} (${cache.file})`);
  const vectorOf = new Map(texts.map((t, i) => [t, cache.vectors[i] as Float32Array]));
  if (existsSync(STORE)) rmSync(STORE, { recursive: true, force: true });
  const store = await openPglite(STORE);
  const { db } = store;
  const started = performance.now();
  const recreate = await deferChunkIndexes(db);
  await bulkLoad(db, {
    docs,
    tag: tagName(0, 1),
    model: { name: space.model, dimension: space.dimension },
    vectorOf: (t) => vectorOf.get(t) as Float32Array,
    label: `loading ${CHUNKS} chunks`,
  });
  await recreate();
  log(`loaded in ${((performance.now() - started) / 1000).toFixed(0)} s; building the HNSW index`);
  const indexStarted = performance.now();
  await ensureVectorIndexes(db, space);
  log(`HNSW index built in ${((performance.now() - indexStarted) / 1000).toFixed(0)} s`);
  await db.execute(sql`ANALYZE`);
  await store.close();
  writeFileSync(path.join(STORE, "ready"), `${CHUNKS}\n`);
}

/** Spreads the documents over n tags (round robin in id order), as n tenants' keys would have added them. */
async function retag(db: Database, n: number) {
  const started = performance.now();
  await db.execute(sql`
    UPDATE documents d SET container_tags = ARRAY[CASE WHEN ${n} = 1 THEN 'plan-all'
                                                  ELSE 'plan-' || ${n} || '-' || ((o.rn - 1) % ${n}) END]
    FROM (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM documents) o
    WHERE o.id = d.id`);
  await db.execute(sql`VACUUM ANALYZE documents`);
  await db.execute(sql`VACUUM ANALYZE chunks`);
  log(
    `documents spread over ${n} tag(s) in ${((performance.now() - started) / 1000).toFixed(1)} s (+ VACUUM ANALYZE)`,
  );
}

interface Scenario {
  label: string;
  tags: number;
  query: (i: number) => Partial<HybridSearchQuery>;
}

async function main() {
  const name = resolveDefaultEmbedder().name;
  const space = await embedderSpace(name);
  const ready = path.join(STORE, "ready");
  let importedTags = 0;
  if (IMPORTED) {
    const fill = path.join(IMPORTED, FILL_RECORD);
    if (!existsSync(fill))
      throw new Error(`${IMPORTED} holds no store filled by --imported-store (no fill.json)`);
    importedTags = (JSON.parse(readFileSync(fill, "utf8")) as { options: { tags: number } }).options.tags;
    log(`planning on the imported store in ${IMPORTED} (${importedTags} small tags and "all")`);
  } else if (POSTGRES) {
    // seeded below, once the server is up
  } else if (values.rebuild || !existsSync(ready)) await buildStore(space, name);
  else log(`reusing the store in ${STORE} (--rebuild to fill it again)`);

  const texts = readQueries().slice(0, QUERIES);
  const embedder = createEmbedder(name, { threads: 2, queryPrecision: serviceQueryPrecision(name) });
  const vectors = await embedder.embed(texts, "query");
  await embedder.close();

  const pgStore = POSTGRES ? await openPostgresPlanStore(POSTGRES) : undefined;
  const store = pgStore ?? (await openPglite(STORE, { sharedBuffers: values["shared-buffers"] }));
  const { db } = store;
  const [size] = await queryRows<{ chunks: number; documents: number; table: string; hnsw: string }>(
    db,
    sql`SELECT (SELECT count(*)::int FROM chunks) AS chunks, (SELECT count(*)::int FROM documents) AS documents,
               pg_size_pretty(pg_total_relation_size('chunks')) AS table,
               (SELECT string_agg(indexrelname || ' ' || pg_size_pretty(pg_relation_size(indexrelid)), ', ')
                FROM pg_stat_user_indexes WHERE relname = 'chunks') AS hnsw`,
  );
  const [buffers] = await queryRows<{ shared_buffers: string }>(db, sql`SHOW shared_buffers`);
  log(`shared_buffers ${buffers?.shared_buffers}`);
  for (const statement of values.run ?? []) {
    const started = performance.now();
    await db.execute(sql.raw(statement));
    log(`ran ${statement} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  log(
    `store: ${size?.chunks} chunks in ${size?.documents} documents, chunks ${size?.table}; indexes: ${size?.hnsw}`,
  );

  const scenarios: Scenario[] = [];
  if (IMPORTED) {
    // The imported store's layout (bench/search-imported.ts): every document in `all` and in one small tag.
    scenarios.push({
      label: `(a) imported: every chunk, in the tag "${BIG_TAG}"`,
      tags: 0,
      query: () => ({ containerTags: [BIG_TAG] }),
    });
    scenarios.push({
      label: `(b) imported: one of ${importedTags} small tags`,
      tags: 0,
      query: (i) => ({ containerTags: [churnTagName((i * 37) % importedTags, importedTags)] }),
    });
  }
  for (const n of IMPORTED ? [] : POSTGRES ? [1] : TAG_COUNTS) {
    if (n === 1) {
      scenarios.push({
        label: "(a) all chunks in one tag",
        tags: 1,
        query: () => ({ containerTags: [tagName(0, 1)] }),
      });
      scenarios.push({ label: "(c) no tag filter", tags: 1, query: () => ({}) });
    } else {
      scenarios.push({
        label: `(b) chunks over ${n} tags, scoped to one`,
        tags: n,
        query: (i) => ({ scope: [tagName((i * 37) % n, n)] }),
      });
    }
  }

  // A seeded PostgreSQL store holds every chunk in its one tag already.
  let current = POSTGRES ? 1 : 0;
  for (const sc of scenarios) {
    if (sc.tags && current !== sc.tags) {
      await retag(db, sc.tags);
      current = sc.tags;
    }
    const common = await commonTerms(db, "chunks");
    const stageNames = ["by_vector", "by_keyword", "whole"];
    const stageMs: Record<string, number[]> = Object.fromEntries(stageNames.map((n) => [n, []]));
    const stageBuffers: Record<string, number[]> = Object.fromEntries(stageNames.map((n) => [n, []]));
    const wall: number[] = [];
    const recallVector: number[] = [];
    const recallHybrid: number[] = [];
    const sameAsUnbudgeted: number[] = [];
    const vectorRows: number[] = [];
    /** Rows the keyword side fetched and ranked (its Bitmap Heap Scan's actual rows): what the match budget bounds. */
    const keywordMatches: number[] = [];
    let firstPlans: Record<string, string[]> | undefined;
    for (let i = 0; i < texts.length; i++) {
      const q: HybridSearchQuery = {
        text: texts[i] as string,
        embedding: vectors[i] as number[],
        space,
        tagMode: "any",
        candidates: CANDIDATES,
        ...sc.query(i),
      };
      const s = searchStatement(q, await keywordTsquery(db, q.text, common));
      const stages: Record<string, SQL> = {
        by_vector: s.byVector,
        by_keyword: s.byKeyword,
        whole: s.statement,
      };
      const plans: Record<string, string[]> = {};
      for (const [stage, statement] of Object.entries(stages)) {
        const e = await explain(db, s.settings, statement);
        stageMs[stage]?.push(e.ms);
        stageBuffers[stage]?.push(e.buffers);
        if (stage === "by_keyword") {
          const scan = e.lines.find((l) => l.includes("Bitmap Heap Scan"));
          keywordMatches.push(Number(/actual time=\S+ rows=(\d+)/.exec(scan ?? "")?.[1] ?? 0));
        }
        plans[stage] = e.lines;
      }
      firstPlans ??= plans;
      const started = performance.now();
      await hybridChunkSearch(db, q);
      wall.push(performance.now() - started);
      if (values.quick) continue;
      // Recall: the top 10 of the plan the service gets against the same statement with every index off.
      const got = await ids(db, s.settings, s.byVector, "id");
      const exact = await ids(db, [...s.settings, ...EXACT], s.byVector, "id");
      vectorRows.push((await inTransaction(db, s.settings, (tx) => queryRows(tx, s.byVector))).length);
      recallVector.push(overlap(got, exact));
      const gotHybrid = await ids(db, s.settings, s.statement, "chunk_id");
      const exactHybrid = await ids(db, [...s.settings, ...EXACT], s.statement, "chunk_id");
      recallHybrid.push(overlap(gotHybrid, exactHybrid));
      // The keyword query without the match budget (rows unknown: the 3 % rule alone, as before it).
      const unbudgeted = searchStatement(q, await keywordTsquery(db, q.text, { ...common, rows: 0 }));
      sameAsUnbudgeted.push(overlap(gotHybrid, await ids(db, s.settings, unbudgeted.statement, "chunk_id")));
    }
    const fmt = (xs: number[]) => {
      const m = summarize(xs);
      return `p50 ${m.p50.toFixed(1)} ms, p95 ${m.p95.toFixed(1)} ms`;
    };
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    process.stdout.write(`\n=== ${sc.label}: ${texts.length} queries, ${CANDIDATES} candidates ===\n`);
    for (const [stage, xs] of Object.entries(stageMs))
      process.stdout.write(
        `  ${stage.padEnd(18)} EXPLAIN ANALYZE execution ${fmt(xs)}; buffers p50 ${summarize(stageBuffers[stage] ?? []).p50.toFixed(0)}, max ${Math.max(...(stageBuffers[stage] ?? []))}\n`,
      );
    process.stdout.write(`  hybridChunkSearch wall ${fmt(wall)}\n`);
    process.stdout.write(
      `  by_vector rows returned: mean ${mean(vectorRows).toFixed(1)} (min ${Math.min(...vectorRows)}) of ${CANDIDATES}\n`,
    );
    const matches = summarize(keywordMatches);
    process.stdout.write(
      `  keyword matches ranked (budget ${MATCH_BUDGET} estimated): p50 ${matches.p50.toFixed(0)}, p95 ${matches.p95.toFixed(0)}, max ${matches.max}\n`,
    );
    process.stdout.write(
      `  top-${K} overlap with an exact ranking (no index): vector ${mean(recallVector).toFixed(3)}, hybrid ${mean(recallHybrid).toFixed(3)}\n`,
    );
    process.stdout.write(
      `  hybrid top-${K} overlap with the keyword query without the match budget: ${mean(sameAsUnbudgeted).toFixed(3)}\n`,
    );
    if (!values["no-plans"] && firstPlans)
      for (const [stage, lines] of Object.entries(firstPlans)) {
        process.stdout.write(`  --- plan of ${stage} (first query) ---\n`);
        for (const l of lines) process.stdout.write(`    ${l}\n`);
      }
  }
  if (!IMPORTED && !POSTGRES && current !== 1) await retag(db, 1);
  const judged = Number(values.judged);
  if (judged > 0) await judgedQuality(db, space, name, judged);
  if (pgStore) await pgStore.stopServer();
  else await store.close();
}

/**
 * nDCG@10 of the hybrid search by document (SciFact's judged abstracts are the store's documents) on the
 * whole store, with the keyword match budget at MATCH_BUDGET, at other budgets (the same statistics with
 * the row count scaled), and without it (the 3 % rule alone): what the budget costs in quality at this size.
 */
async function judgedQuality(
  db: Database,
  space: { model: string; dimension: number },
  name: string,
  n: number,
) {
  const queries = readJudgedQueries().slice(0, n);
  const embedder = createEmbedder(name, { threads: 2, queryPrecision: serviceQueryPrecision(name) });
  const vectors = await embedder.embed(
    queries.map((q) => q.text),
    "query",
  );
  await embedder.close();
  const abstractOf = new Map(
    (
      await queryRows<{ id: string; abstract: string }>(
        db,
        sql`SELECT id, metadata->>'scifactId' AS abstract FROM documents`,
      )
    ).map((r) => [r.id, r.abstract]),
  );
  const common = await commonTerms(db, "chunks");
  const rows = common.rows ?? 0;
  const budgets = [...new Set([0, 1000, 2000, 4000, 8000, MATCH_BUDGET])].sort((a, b) => a - b);
  const scores = new Map<number, number[]>(budgets.map((b) => [b, []]));
  for (let i = 0; i < queries.length; i++) {
    const jq = queries[i] as (typeof queries)[number];
    for (const budget of budgets) {
      // Budget b ≈ MATCH_BUDGET with the row count scaled by MATCH_BUDGET / b; 0: no budget.
      const scaled = { ...common, rows: budget === 0 ? 0 : (rows * MATCH_BUDGET) / budget };
      const q: HybridSearchQuery = {
        text: jq.text,
        embedding: vectors[i] as number[],
        space,
        tagMode: "any",
        candidates: CANDIDATES,
      };
      const s = searchStatement(q, await keywordTsquery(db, q.text, scaled));
      const hits = await inTransaction(db, s.settings, (tx) =>
        queryRows<{ document_id: string }>(tx, s.statement),
      );
      const ranked = [...new Set(hits.map((h) => abstractOf.get(h.document_id) as string))];
      scores.get(budget)?.push(ndcgAt(ranked, jq.qrels, 10));
    }
  }
  process.stdout.write(
    `\n=== SciFact nDCG@10 by document, ${queries.length} judged queries, whole store ===\n`,
  );
  for (const b of budgets)
    process.stdout.write(
      `  ${b === 0 ? "no match budget (3 % rule only)" : `match budget ${b}`}: ${average(scores.get(b) ?? []).toFixed(4)}\n`,
    );
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    process.exit(1);
  },
);
