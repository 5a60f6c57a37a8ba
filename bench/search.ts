// Search latency on a store of N chunks with real embeddings: through the HTTP API (query embedding
// included), the hybrid SQL alone with pre-computed query vectors, and single-method baselines.

import { createHash } from "node:crypto";
import { cpus } from "node:os";
import { type SQL, sql } from "drizzle-orm";
import { createEmbedder } from "../pipeline/embedder/index.ts";
import { type Database, openPglite, queryRows } from "../store/db.ts";
import { saveDocument } from "../store/documents.ts";
import {
  chunksWithoutEmbedding,
  markDone,
  replaceChunks,
  saveEmbeddings,
  saveExtraction,
} from "../store/processing.ts";
import { hybridChunkSearch } from "../store/search.ts";
import { ensureVectorIndexes } from "../store/vector-index.ts";
import { type Abstract, searchDocuments } from "./lib/corpus.ts";
import { type CpuShares, cpuMeter } from "./lib/cpu.ts";
import { log, progress } from "./lib/progress.ts";
import { type Cleanup, startBenchService, tempDir } from "./lib/service.ts";
import { type Summary, summarize } from "./lib/stats.ts";
import { cachedVectors } from "./lib/vector-cache.ts";

const TAG = "bench-search";
const WARMUP = 20;
/** What the search handler asks for with the default limit of 10: max(50, limit * 10). */
const CANDIDATES = 100;

export interface SearchResult {
  chunks: number;
  documents: number;
  searches: number;
  warmup: number;
  threads: number;
  cache: { file: string; hit: boolean; computeMs: number };
  loadMs: number;
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
  meanKeywordMatches: number;
  plans: { vector: string[]; keyword: string[] };
  /** Index scans the hybrid statement caused, per index of `chunks` (pg_stat_user_indexes). */
  hybridIndexScans: Record<string, number>;
  hybridQueries: number;
  cpu: { queryEmbedding?: CpuShares; sql?: CpuShares; http?: CpuShares };
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

function orQuery(text: string): SQL {
  // The keyword side of hybridChunkSearch: any stemmed query term may match.
  return sql`to_tsquery('simple', array_to_string(tsvector_to_array(to_tsvector('english', ${text})), ' | '))`;
}

const vectorLiteral = (v: ArrayLike<number>) => `[${Array.from(v).join(",")}]`;

function vectorOnly(db: Database, v: number[]) {
  return queryRows(
    db,
    sql`SELECT id FROM chunks ORDER BY embedding <=> ${vectorLiteral(v)}::vector LIMIT 10`,
  );
}

function keywordOnly(db: Database, text: string) {
  return queryRows(
    db,
    sql`SELECT c.id FROM chunks c, (SELECT ${orQuery(text)} AS tsq) q
        WHERE c.tsv @@ q.tsq ORDER BY ts_rank_cd(c.tsv, q.tsq) DESC LIMIT 10`,
  );
}

async function indexScans(db: Database): Promise<Record<string, number>> {
  const rows = await queryRows<{ name: string; scans: number }>(
    db,
    sql`SELECT indexrelname AS name, idx_scan::int AS scans FROM pg_stat_user_indexes WHERE relname = 'chunks'`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, Number(r.scans)]));
}

async function plan(db: Database, query: SQL): Promise<string[]> {
  const rows = await queryRows<{ "QUERY PLAN": string }>(db, sql`EXPLAIN ${query}`);
  // A 512-d vector literal would fill pages: show its size instead.
  return rows.map((r) =>
    r["QUERY PLAN"].replace(/'\[[^\]]{200,}\]'/g, (m) => `'[${m.split(",").length} values]'`),
  );
}

export async function runSearch(opts: {
  cleanup: Cleanup;
  temporalAddress: string;
  temporalPid?: number;
  corpus: Abstract[];
  queries: string[];
  chunks: number;
  searches: number;
  threads: number;
}): Promise<SearchResult> {
  const { cleanup, threads } = opts;
  const docs = searchDocuments(opts.corpus, opts.chunks);
  const texts = docs.flatMap((d) => d.pieces);
  log(
    `search: ${texts.length} chunks in ${docs.length} documents (sentence-sized pieces of scifact abstracts)`,
  );

  const queryEmbedder = createEmbedder("use-lite", { threads });
  const closeQueryEmbedder = cleanup.add("query embedder", () => queryEmbedder.close());
  const buildThreads = Math.max(1, cpus().length);
  const cache = await cachedVectors({
    model: queryEmbedder.model,
    dimension: queryEmbedder.dimension,
    texts,
    embed: () => {
      log(
        `search: no cached vectors for ${texts.length} chunks; computing them with ${buildThreads} threads`,
      );
      const e = createEmbedder("use-lite", { threads: buildThreads });
      return { embed: (t) => e.embed(t), close: () => e.close(), threads: buildThreads };
    },
  });
  log(`search: vectors ${cache.hit ? "read from" : "computed and written to"} ${cache.file}`);
  const vectorOf = new Map(texts.map((t, i) => [t, cache.vectors[i] as Float32Array]));

  // Queries: a warm-up set, then the measured ones (cycled if more searches than queries are asked for).
  const pick = (n: number, offset: number) =>
    Array.from({ length: n }, (_, i) => opts.queries[(offset + i) % opts.queries.length] as string);
  const warmQueries = pick(WARMUP, 0);
  const measured = pick(opts.searches, WARMUP);

  // Query embedding alone, one call per query as the search handler makes it.
  for (const q of warmQueries) await queryEmbedder.embed([q]);
  const embedMeter = cpuMeter({ temporalPid: opts.temporalPid, topThreads: threads });
  const queryVectors: number[][] = [];
  const queryEmbedding = summarize(
    await timeEach(measured, async (q) => {
      const [v] = await queryEmbedder.embed([q]);
      queryVectors.push(v as number[]);
    }),
  );
  const embedCpu = embedMeter.stop();
  const warmVectors = await queryEmbedder.embed(warmQueries);
  await closeQueryEmbedder();
  log(`search: query embedding p50 ${queryEmbedding.p50.toFixed(1)} ms`);

  // Load through the same store functions the worker uses.
  const data = tempDir(cleanup, "memory-bench-search-");
  const store = await openPglite(data.dir);
  const closeStore = cleanup.add("bench store", () => store.close());
  const { db } = store;
  const model = { name: queryEmbedder.model, dimension: queryEmbedder.dimension };
  const space = { model: model.name, dimension: model.dimension };
  await ensureVectorIndexes(db, space);
  const loadStarted = performance.now();
  const bar = progress("search: loading chunks into PGlite", texts.length, 10_000);
  let loaded = 0;
  for (const doc of docs) {
    const content = doc.pieces.join(" ");
    const saved = await saveDocument(db, {
      source: content,
      containerTags: [TAG],
      metadata: { scifactId: doc.abstractId },
      title: doc.title || null,
    });
    const ref = { documentId: saved.document.id, run: saved.document.processingRun };
    await saveExtraction(db, ref, {
      content,
      title: doc.title || null,
      type: "text",
      contentHash: createHash("sha256").update(content).digest("hex"),
    });
    await replaceChunks(
      db,
      ref,
      doc.pieces.map((p, position) => ({ content: p, position })),
    );
    const rows = await chunksWithoutEmbedding(db, ref.documentId, doc.pieces.length);
    await saveEmbeddings(
      db,
      ref,
      model,
      rows.map((r) => ({ id: r.id, embedding: Array.from(vectorOf.get(r.content) as Float32Array) })),
    );
    await markDone(db, ref, model.name);
    loaded += doc.pieces.length;
    bar.update(loaded);
  }
  const loadMs = performance.now() - loadStarted;
  bar.finish();

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
  const hybrid = (p: { q: string; v: number[] }) =>
    hybridChunkSearch(db, {
      text: p.q,
      embedding: p.v,
      space,
      containerTags: [TAG],
      tagMode: "any",
      candidates: CANDIDATES,
    });

  log(`search: timing SQL (${pairs.length} queries each, after ${WARMUP} warm-up)`);
  await timeEach(warmPairs, hybrid);
  const sqlMeter = cpuMeter({ temporalPid: opts.temporalPid });
  const before = await indexScans(db);
  const hybridSql = summarize(await timeEach(pairs, hybrid));
  const after = await indexScans(db);
  const hybridIndexScans = Object.fromEntries(
    Object.keys(after).map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)]),
  );

  await timeEach(warmPairs, (p) => vectorOnly(db, p.v));
  const vectorSql = summarize(await timeEach(pairs, (p) => vectorOnly(db, p.v)));
  await timeEach(warmPairs, (p) => keywordOnly(db, p.q));
  const keywordSql = summarize(await timeEach(pairs, (p) => keywordOnly(db, p.q)));
  const sqlCpu = sqlMeter.stop();

  let keywordMatches = 0;
  for (const p of pairs) {
    const [row] = await queryRows<{ n: number }>(
      db,
      sql`SELECT count(*)::int AS n FROM chunks c WHERE c.tsv @@ ${orQuery(p.q)}`,
    );
    keywordMatches += row?.n ?? 0;
  }
  const sample = pairs[0] as { q: string; v: number[] };
  const plans = {
    vector: await plan(
      db,
      sql`SELECT id FROM chunks ORDER BY embedding <=> ${vectorLiteral(sample.v)}::vector LIMIT 10`,
    ),
    keyword: await plan(
      db,
      sql`SELECT c.id FROM chunks c, (SELECT ${orQuery(sample.q)} AS tsq) q
          WHERE c.tsv @@ q.tsq ORDER BY ts_rank_cd(c.tsv, q.tsq) DESC LIMIT 10`,
    ),
  };
  await closeStore();

  // The same store behind the real service: HTTP, auth, query embedding, hybrid SQL, grouping, context.
  const service = await startBenchService(cleanup, {
    dataDir: data.dir,
    temporalAddress: opts.temporalAddress,
    threads,
  });
  log(`search: service up at ${service.url}; timing ${measured.length} searches over HTTP`);
  const search = (q: string) => service.client.search.documents({ q, containerTags: [TAG], limit: 10 });
  for (const q of warmQueries) await search(q);
  const httpMeter = cpuMeter({ temporalPid: opts.temporalPid, topThreads: threads });
  const serverTimings: number[] = [];
  let results = 0;
  const httpBar = progress("search: HTTP searches", measured.length);
  let i = 0;
  const http = summarize(
    await timeEach(measured, async (q) => {
      const res = await search(q);
      serverTimings.push(res.timing);
      results += res.results.length;
      httpBar.update(++i);
    }),
  );
  const httpCpu = httpMeter.stop();
  httpBar.finish();
  await service.stop();
  await data.remove();

  return {
    chunks: texts.length,
    documents: docs.length,
    searches: measured.length,
    warmup: WARMUP,
    threads,
    cache: { file: cache.file, hit: cache.hit, computeMs: cache.computeMs },
    loadMs,
    analyzeMs,
    tableSize: size.size,
    queryEmbedding,
    hybridSql,
    vectorSql,
    keywordSql,
    http,
    httpServerTiming: summarize(serverTimings),
    meanResults: results / measured.length,
    meanKeywordMatches: keywordMatches / pairs.length,
    plans,
    hybridIndexScans,
    hybridQueries: pairs.length,
    cpu: { queryEmbedding: embedCpu, sql: sqlCpu, http: httpCpu },
  };
}
