// Search latency on stores of N chunks (one or several sizes per run, e.g. 10,000 and 100,000) with
// the service's default embedder: the query embedding alone, the hybrid SQL alone with pre-computed
// query vectors, the single-method baselines (the same function with retrieval "vector" / "keyword"),
// and end-to-end HTTP `POST /v3/search` against the real service over the same PGlite data.

import { type SQL, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { createEmbedder, resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import { type Database, openPglite, queryRows } from "../store/db.ts";
import { hybridChunkSearch, type Retrieval } from "../store/search/chunk-search.ts";
import { commonTerms, keywordTsquery } from "../store/search/keyword.ts";
import { ensureVectorIndexes } from "../store/search/vector-index.ts";
import type { Abstract } from "./lib/corpus.ts";
import { type CpuShares, cpuMeter } from "./lib/cpu.ts";
import { log, progress } from "./lib/progress.ts";
import { searchChunkDocuments } from "./lib/search-corpus.ts";
import { bulkLoad, deferChunkIndexes } from "./lib/search-load.ts";
import { embedderSpace, vectorSource } from "./lib/search-vectors.ts";
import { type Cleanup, serviceQueryPrecision, startBenchService, tempDir } from "./lib/service.ts";
import { type Summary, summarize } from "./lib/stats.ts";
import { cachedVectors } from "./lib/vector-cache.ts";

const TAG = "bench-search";
const WARMUP = 20;
/** What the search handler asks for with the default limit of 10: max(50, limit * 10). */
export const CANDIDATES = 100;

interface SlowQuery {
  query: string;
  ms: number;
  /** Chunks the keyword query matched (each is ranked). */
  matches: number;
  /** Lexemes of the keyword query after the very common ones were left out. */
  terms: number;
}

export interface SearchSizeResult {
  chunks: number;
  documents: number;
  meanChunkWords: number;
  loadMs: number;
  /** Building the per-model HNSW index (ensureVectorIndexes) after the rows were loaded. */
  indexMs: number;
  /** Recreating the other indexes of `chunks` (GIN on tsv, btrees), dropped during the load. */
  secondaryIndexMs: number;
  analyzeMs: number;
  tableSize: string;
  queryEmbedding: Summary;
  hybridSql: Summary;
  vectorSql: Summary;
  keywordSql: Summary;
  http: Summary;
  /** The `timing` field the API reports (server side, ms, rounded). */
  httpServerTiming: Summary;
  meanResults: number;
  keywordMatches: Summary;
  /** The slowest keyword-only queries with their match counts. */
  slowKeyword: SlowQuery[];
  /** Plans (EXPLAIN ANALYZE) of the statements hybridChunkSearch ran for one query. */
  plans: Record<Retrieval, string[]>;
  vectorIndex: string;
  /** Whether the vector side's plan scans the model's HNSW index (vector-only and hybrid). */
  vectorIndexUsed: { vector: boolean; hybrid: boolean };
  /** Index scans each measurement caused, per index of `chunks` (pg_stat_user_indexes). */
  indexScans: Record<Retrieval, Record<string, number>>;
  cpu: { queryEmbedding?: CpuShares; sql?: CpuShares; http?: CpuShares };
}

export interface SearchResult {
  embedder: { name: string; model: string; dimension: number; reason: string };
  searches: number;
  /** The query whose plans are shown. */
  firstQuery: string;
  warmup: number;
  threads: number;
  cache: { dir: string; hit: boolean; computed: number; computeMs: number; textsPerSecond: number };
  sizes: SearchSizeResult[];
}

async function timeEach<T>(items: T[], fn: (item: T) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (const item of items) {
    const started = performance.now();
    await fn(item);
    out.push(performance.now() - started);
  }
  return out;
}

async function indexScans(db: Database): Promise<Record<string, number>> {
  const rows = await queryRows<{ name: string; scans: number }>(
    db,
    sql`SELECT indexrelname AS name, idx_scan::int AS scans FROM pg_stat_user_indexes WHERE relname = 'chunks'`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, Number(r.scans)]));
}

async function scansDuring(db: Database, run: () => Promise<void>): Promise<Record<string, number>> {
  // PGlite is one backend: its statistics are flushed when a transaction ends, so a read after the run sees them.
  const before = await indexScans(db);
  await run();
  const after = await indexScans(db);
  return Object.fromEntries(
    Object.keys(after)
      .map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)] as const)
      .filter(([, v]) => v > 0),
  );
}

const dialect = new PgDialect();

/**
 * The plans of the statements hybridChunkSearch runs, in order: the keyword side (its first transaction,
 * while the query would be embedded; it also runs for real, as the fusion takes its rows) and the vector
 * side with the fusion (the second transaction, explained in place of being run).
 */
async function explainSearch(db: Database, run: (db: Database) => Promise<unknown>): Promise<string[]> {
  const plan: string[] = [];
  const explain = async (target: Database, query: SQL, stage: string) => {
    const rows = await queryRows<{ "QUERY PLAN": string }>(target, sql`EXPLAIN ANALYZE ${query}`);
    plan.push(
      `-- ${stage}`,
      ...rows.map((r) =>
        // A 384-d vector literal would fill pages: show its size instead.
        r["QUERY PLAN"].replace(/'\[[^\]]{200,}\]'/g, (m) => `'[${m.split(",").length} values]'`),
      ),
    );
  };
  const wrapTx = (tx: Database) =>
    new Proxy(tx, {
      get(target, prop, receiver) {
        if (prop !== "execute") return Reflect.get(target, prop, receiver);
        return async (query: SQL) => {
          const text = dialect.sqlToQuery(query).sql;
          // SET LOCAL and the keyword query (keywordTsquery) are not search stages.
          if (/^\s*(SET\b|SELECT tsq::text)/i.test(text)) return target.execute(query);
          if (/^\s*WITH by_vector/i.test(text)) {
            await explain(target, query, "vector side and fusion");
            return { rows: [] };
          }
          await explain(target, query, "keyword side");
          return target.execute(query);
        };
      },
    });
  const wrapped = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop !== "transaction") return Reflect.get(target, prop, receiver);
      return (fn: (tx: Database) => Promise<unknown>) =>
        target.transaction((tx) => fn(wrapTx(tx as unknown as Database)));
    },
  });
  await run(wrapped);
  return plan;
}

function hnswIndexName(model: string) {
  return `chunks_hnsw_${model.replace(/[^A-Za-z0-9]/g, "_").toLowerCase()}`.slice(0, 63);
}

export async function runSearch(opts: {
  cleanup: Cleanup;
  temporalAddress: string;
  temporalPid?: number;
  corpus: Abstract[];
  queries: string[];
  /** One store per size, smallest first. */
  chunks: number | number[];
  searches: number;
  threads: number;
  /** Embedder name; default: the service's default (resolveDefaultEmbedder). */
  embedder?: string;
}): Promise<SearchResult> {
  const { cleanup, threads } = opts;
  const sizes = [...new Set([opts.chunks].flat())].sort((a, b) => a - b);
  const resolved = resolveDefaultEmbedder();
  const name = opts.embedder ?? resolved.name;
  const reason = opts.embedder ? "chosen with --embedder" : resolved.reason;
  const space = await embedderSpace(name);
  log(`search: embedder ${name} (${space.model}, ${space.dimension}-d): ${reason}`);

  // Every size is a prefix of the largest corpus: one cache fill covers them all.
  const largest = sizes[sizes.length - 1] as number;
  const allTexts = searchChunkDocuments(opts.corpus, largest).flatMap((d) => d.pieces);
  const cache = await cachedVectors({ ...space, texts: allTexts, embed: vectorSource(name) });
  log(
    `search: chunk vectors ${cache.hit ? "read from" : `computed (${cache.computed}) and written to`} ${cache.file}`,
  );
  const vectorOf = new Map(allTexts.map((t, i) => [t, cache.vectors[i] as Float32Array]));

  // Queries: a warm-up set, then the measured ones (cycled if more searches than queries are asked for).
  const pick = (n: number, offset: number) =>
    Array.from({ length: n }, (_, i) => opts.queries[(offset + i) % opts.queries.length] as string);
  const warmQueries = pick(WARMUP, 0);
  const measured = pick(opts.searches, WARMUP);

  const results: SearchSizeResult[] = [];
  for (const size of sizes) {
    results.push(
      await runSize({ ...opts, name, space, size, vectorOf, warmQueries, measured, threads, cleanup }),
    );
  }
  return {
    embedder: { name, ...space, reason },
    searches: measured.length,
    firstQuery: measured[0] as string,
    warmup: WARMUP,
    threads,
    cache: {
      dir: cache.file,
      hit: cache.hit,
      computed: cache.computed,
      computeMs: cache.computeMs,
      textsPerSecond: cache.textsPerSecond,
    },
    sizes: results,
  };
}

async function runSize(o: {
  cleanup: Cleanup;
  temporalAddress: string;
  temporalPid?: number;
  corpus: Abstract[];
  name: string;
  space: { model: string; dimension: number };
  size: number;
  vectorOf: Map<string, Float32Array>;
  warmQueries: string[];
  measured: string[];
  threads: number;
}): Promise<SearchSizeResult> {
  const { cleanup, threads, space, warmQueries, measured } = o;
  const docs = searchChunkDocuments(o.corpus, o.size);
  const texts = docs.flatMap((d) => d.pieces);
  const meanChunkWords = texts.reduce((s, t) => s + t.split(/\s+/).length, 0) / texts.length;
  log(
    `search @${o.size}: ${texts.length} chunks in ${docs.length} documents (windows of 1-3 sentences of scifact abstracts, ${meanChunkWords.toFixed(0)} words on average)`,
  );

  // Query embedding alone, one call per query as the search handler makes it.
  const queryEmbedder = createEmbedder(o.name, { threads, queryPrecision: serviceQueryPrecision(o.name) });
  const closeQueryEmbedder = cleanup.add("query embedder", () => queryEmbedder.close());
  for (const q of warmQueries) await queryEmbedder.embed([q], "query");
  const embedMeter = cpuMeter({ temporalPid: o.temporalPid, topThreads: threads });
  const queryVectors: number[][] = [];
  const queryEmbedding = summarize(
    await timeEach(measured, async (q) => {
      const [v] = await queryEmbedder.embed([q], "query");
      queryVectors.push(v as number[]);
    }),
  );
  const embedCpu = embedMeter.stop();
  const warmVectors = await queryEmbedder.embed(warmQueries, "query");
  await closeQueryEmbedder();
  log(`search @${o.size}: query embedding p50 ${queryEmbedding.p50.toFixed(1)} ms`);

  // Load through the same store functions the worker uses; the HNSW index is built after the rows.
  const data = tempDir(cleanup, "memory-bench-search-");
  const store = await openPglite(data.dir);
  const closeStore = cleanup.add("bench store", () => store.close());
  const { db } = store;
  const model = { name: space.model, dimension: space.dimension };
  const loadStarted = performance.now();
  const recreateIndexes = await deferChunkIndexes(db);
  await bulkLoad(db, {
    docs,
    tag: TAG,
    model,
    vectorOf: (t) => o.vectorOf.get(t) as Float32Array,
    label: `search @${o.size}: loading chunks into PGlite`,
  });
  const loadMs = performance.now() - loadStarted;
  const secondaryStarted = performance.now();
  const rebuilt = await recreateIndexes();
  const secondaryIndexMs = performance.now() - secondaryStarted;
  log(`search @${o.size}: rebuilt ${rebuilt.join(", ")} in ${(secondaryIndexMs / 1000).toFixed(1)} s`);

  const indexStarted = performance.now();
  await ensureVectorIndexes(db, space);
  const indexMs = performance.now() - indexStarted;
  log(`search @${o.size}: HNSW index built in ${(indexMs / 1000).toFixed(1)} s`);

  const analyzeStarted = performance.now();
  await db.execute(sql`ANALYZE`);
  const analyzeMs = performance.now() - analyzeStarted;
  const [size] = await queryRows<{ size: string; n: number }>(
    db,
    sql`SELECT pg_size_pretty(pg_total_relation_size('chunks')) AS size, (SELECT count(*)::int FROM chunks) AS n`,
  );
  if (size?.n !== texts.length)
    throw new Error(`the store holds ${size?.n} chunks, expected ${texts.length}`);

  const pairs = measured.map((q, i) => ({ q, v: queryVectors[i] as number[] }));
  const warmPairs = warmQueries.map((q, i) => ({ q, v: warmVectors[i] as number[] }));
  const searchWith =
    (retrieval: Retrieval, on: Database = db) =>
    (p: { q: string; v: number[] }) =>
      hybridChunkSearch(on, {
        text: p.q,
        embedding: p.v,
        space,
        retrieval,
        containerTags: [TAG],
        tagMode: "any",
        candidates: CANDIDATES,
      });

  log(`search @${o.size}: timing SQL (${pairs.length} queries each, after ${WARMUP} warm-up)`);
  const sqlMeter = cpuMeter({ temporalPid: o.temporalPid });
  const timed: Record<Retrieval, number[]> = { hybrid: [], vector: [], keyword: [] };
  const scans = {} as Record<Retrieval, Record<string, number>>;
  for (const retrieval of ["hybrid", "vector", "keyword"] as const) {
    await timeEach(warmPairs, searchWith(retrieval));
    scans[retrieval] = await scansDuring(db, async () => {
      timed[retrieval] = await timeEach(pairs, searchWith(retrieval));
    });
  }
  const sqlCpu = sqlMeter.stop();

  // Keyword matches per query, with the same common-term filtering the search uses.
  const common = await commonTerms(db, "chunks");
  const matches: number[] = [];
  const terms: number[] = [];
  for (const p of pairs) {
    const tsq = await keywordTsquery(db, p.q, common);
    const [row] = await queryRows<{ n: number; terms: number }>(
      db,
      sql`SELECT (SELECT count(*)::int FROM chunks c WHERE c.tsv @@ ${tsq}::tsquery) AS n,
                 numnode(${tsq}::tsquery) AS terms`,
    );
    matches.push(row?.n ?? 0);
    // numnode counts the OR operators too: n terms are 2n - 1 nodes.
    terms.push(row?.terms == null ? 0 : (Number(row.terms) + 1) / 2);
  }
  const slowKeyword = pairs
    .map((p, i) => ({
      query: p.q,
      ms: timed.keyword[i] as number,
      matches: matches[i] as number,
      terms: terms[i] as number,
    }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 3);

  const sample = pairs[0] as { q: string; v: number[] };
  const plans = {} as Record<Retrieval, string[]>;
  for (const retrieval of ["hybrid", "vector", "keyword"] as const)
    plans[retrieval] = await explainSearch(db, (on) => searchWith(retrieval, on)(sample));
  const vectorIndex = hnswIndexName(space.model);
  const vectorIndexUsed = {
    vector: plans.vector.some((l) => l.includes(vectorIndex)),
    hybrid: plans.hybrid.some((l) => l.includes(vectorIndex)),
  };
  if (!vectorIndexUsed.vector || !vectorIndexUsed.hybrid)
    log(`search @${o.size}: WARNING: the vector side does not use ${vectorIndex} (see the plans)`);
  await closeStore();

  // The same store behind the real service: HTTP, auth, query embedding, hybrid SQL, grouping, context. Ranked
  // by SQL, named (the default is the in-memory index): these rows are the bulk-loaded table's SQL figures, the
  // baseline of search-imported's SQL rows.
  const service = await startBenchService(cleanup, {
    dataDir: data.dir,
    temporalAddress: o.temporalAddress,
    threads,
    embeddingModel: o.name,
    searchIndex: "sql",
  });
  log(`search @${o.size}: service up at ${service.url}; timing ${measured.length} searches over HTTP`);
  const search = (q: string) => service.client.search.documents({ q, containerTags: [TAG], limit: 10 });
  for (const q of warmQueries) await search(q);
  const httpMeter = cpuMeter({ temporalPid: o.temporalPid, topThreads: threads });
  const serverTimings: number[] = [];
  let returned = 0;
  const httpBar = progress(`search @${o.size}: HTTP searches`, measured.length);
  let i = 0;
  const http = summarize(
    await timeEach(measured, async (q) => {
      const res = await search(q);
      serverTimings.push(res.timing);
      returned += res.results.length;
      httpBar.update(++i);
    }),
  );
  const httpCpu = httpMeter.stop();
  httpBar.finish();
  await service.stop();
  await data.remove();

  const result: SearchSizeResult = {
    chunks: texts.length,
    documents: docs.length,
    meanChunkWords,
    loadMs,
    indexMs,
    secondaryIndexMs,
    analyzeMs,
    tableSize: size.size,
    queryEmbedding,
    hybridSql: summarize(timed.hybrid),
    vectorSql: summarize(timed.vector),
    keywordSql: summarize(timed.keyword),
    http,
    httpServerTiming: summarize(serverTimings),
    meanResults: returned / measured.length,
    keywordMatches: summarize(matches),
    slowKeyword,
    plans,
    vectorIndex,
    vectorIndexUsed,
    indexScans: scans,
    cpu: { queryEmbedding: embedCpu, sql: sqlCpu, http: httpCpu },
  };
  log(
    `search @${o.size}: p50 HTTP ${http.p50.toFixed(1)} ms, embed ${queryEmbedding.p50.toFixed(1)}, hybrid ${result.hybridSql.p50.toFixed(1)}, vector ${result.vectorSql.p50.toFixed(1)}, keyword ${result.keywordSql.p50.toFixed(1)}`,
  );
  return result;
}
