// Benchmark of the scale-out shape as real processes: `bin/api.ts` and `bin/worker.ts` children
// against one native PostgreSQL + pgvector and one Temporal dev server, and the embedded default
// (`main.ts`) holding a large PGlite store. The scenario `scale` of bench/main.ts
// (`npm run bench -- --with scale`, or `npm run bench:scale`); bench/lib/scale-report.ts renders it.
// Needs the test tools (`node scripts/setup.mjs --test` installs PostgreSQL).

import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import autocannon from "autocannon";
import { sql } from "drizzle-orm";
import pg from "pg";
import { createEmbedder, resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import { findFreePort } from "../runtime/temporal-dev-server.ts";
import { openStore, queryRows, type Store } from "../store/db.ts";
import { ensureVectorIndexes } from "../store/search/vector-index.ts";
import { startNativePostgres } from "../test/support/postgres.ts";
import { type Spawned, spawnEntry } from "../test/support/processes.ts";
import { blendedDocuments, type DocumentWithVectors } from "./lib/blended-chunks.ts";
import { type Abstract, readCorpus } from "./lib/corpus.ts";
import { log } from "./lib/progress.ts";
import { searchChunkDocuments } from "./lib/search-corpus.ts";
import { bulkLoad, deferChunkIndexes } from "./lib/search-load.ts";
import { embedderSpace, vectorSource } from "./lib/search-vectors.ts";
import { type Cleanup, tempDir } from "./lib/service.ts";
import { percentile, type Summary, summarize } from "./lib/stats.ts";
import { cachedVectors } from "./lib/vector-cache.ts";

const INGEST_TAG = "bench-scale";
export const SEARCH_TAG = "bench-search";
export const WORDS_PER_DOCUMENT = 200;

export interface ScaleOptions {
  /** Documents per ingestion run. */
  docs: number;
  /** Worker process counts, one ingestion run each. */
  workers: number[];
  searchChunks: number;
  /** maintenance_work_mem of the search store's HNSW build (the whole graph should fit: ~2 KB per chunk). */
  buildMemory: string;
  connections: number[];
  /** Seconds per search-load row. */
  durationS: number;
  /** Seconds of searches before the measured rows (caches, plans, pool); 5 in results stored before it was an option. */
  warmupS?: number;
  /** PostgreSQL server settings beyond the test server's (e.g. shared_buffers); none in older results. */
  serverSettings?: Record<string, string>;
  memoryChunks: number;
  skipIngest: boolean;
  skipSearch: boolean;
  skipMemory: boolean;
}

export interface ScaleResult {
  /** The embedding model the processes used. */
  embedder: string;
  ingest: IngestRun[];
  /** `seeding` is missing from results stored before it was measured. */
  search?: { chunks: number; seedMs: number; seeding?: Seeding; runs: LoadRun[] };
  memory?: MemoryRun;
  totalMs: number;
}

export interface IngestRun {
  workers: number;
  documents: number;
  chunks: number;
  wallMs: number;
  docsPerSecond: number;
  chunksPerSecond: number;
  addToDone: Summary;
  failed: number;
  load: [number, number];
}

export interface LoadRun {
  label: string;
  apis: number;
  connections: number;
  durationS: number;
  requests: number;
  perSecond: number;
  latency: Summary & { p99: number };
  errors: number;
  non2xx: number;
  load: [number, number];
}

interface MemoryRun {
  chunks: number;
  seedMs: number;
  startMs: number;
  idle: ProcessMemory;
  underLoad: ProcessMemory & { peakServiceRss: number };
  search: LoadRun;
}

interface ProcessMemory {
  /** The node process: API, worker, embedder threads and PGlite (WebAssembly) together. */
  serviceRss: number;
  /** The Temporal dev server child. */
  temporalRss: number;
}

const load = (): number => Math.round((loadavg()[0] ?? 0) * 100) / 100;
const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MiB`;
const fixed = (v: number, digits = 1) => v.toFixed(digits);

/** Resident memory of a process, from /proc (bytes). */
function rssOf(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return kb ? Number(kb) * 1024 : 0;
  } catch {
    return 0;
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

function memoryOf(pid: number): ProcessMemory {
  const temporalRss = childrenOf(pid).reduce((s, child) => s + rssOf(child), 0);
  return { serviceRss: rssOf(pid), temporalRss };
}

/** A fresh database with pgvector on the benchmark's PostgreSQL server. */
async function createDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = new pg.Client({ connectionString: url.toString() });
  await db.connect();
  try {
    await db.query("CREATE EXTENSION IF NOT EXISTS vector");
  } finally {
    await db.end();
  }
  return url.toString();
}

async function sqlRows<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []) {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return (await db.query<T>(text, values)).rows;
  } finally {
    await db.end();
  }
}

/** API and worker processes of one deployment (one database, one task queue). */
function deployment(
  cleanup: Cleanup,
  opts: { databaseUrl: string; temporalAddress: string; dataDir: string },
) {
  const adminKey = `sm_bench_${randomBytes(16).toString("hex")}`;
  const env = {
    DATABASE_URL: opts.databaseUrl,
    TEMPORAL_ADDRESS: opts.temporalAddress,
    TEMPORAL_TASK_QUEUE: `scale-${randomBytes(4).toString("hex")}`,
    MEMORY_ADMIN_KEY: adminKey,
    DATA_DIR: opts.dataDir,
    LOG_LEVEL: "warn",
    EMBEDDING_THREADS: "1",
    // The benchmark sends from loopback; nothing here fetches URLs.
    ADMIN_RATE_LIMIT_MAX: "0",
  };
  const start = async (entry: "api" | "worker") => {
    const port = entry === "api" ? await findFreePort() : 0;
    const child = spawnEntry(`bin/${entry}.ts`, { ...env, PORT: String(port), LOG_LEVEL: "info" });
    cleanup.add(`${entry} process ${child.child.pid}`, () => child.stop("SIGTERM").then(() => undefined));
    await child.waitFor(new RegExp(`memory service running \\(${entry}\\)`), 240_000);
    return Object.assign(child, { url: `http://127.0.0.1:${port}` });
  };
  return { env, adminKey, start };
}

async function post(url: string, key: string, body: unknown): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function runIngest(o: {
  cleanup: Cleanup;
  serverUrl: string;
  temporalAddress: string;
  workers: number;
  texts: string[];
}): Promise<IngestRun> {
  const databaseUrl = await createDatabase(o.serverUrl, `scale_ingest_${o.workers}w`);
  const data = tempDir(o.cleanup, "memory-bench-scale-");
  const d = deployment(o.cleanup, { databaseUrl, temporalAddress: o.temporalAddress, dataDir: data.dir });
  const api = await d.start("api");
  const workers: Spawned[] = [];
  for (let i = 0; i < o.workers; i++) workers.push(await d.start("worker"));
  log(`ingest with ${o.workers} worker(s): API ${api.url}, ${workers.length} worker process(es) up`);

  const pending = () =>
    sqlRows<{ n: number }>(
      databaseUrl,
      "SELECT count(*)::int AS n FROM documents WHERE status NOT IN ('done','failed')",
    );
  const waitIdle = async (timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (((await pending())[0]?.n ?? 0) > 0) {
      if (Date.now() > deadline) throw new Error("documents still pending after the time limit");
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  // Warm-up: one document per worker process end to end (model, workflow bundle, connection pools).
  await post(`${api.url}/v3/documents/batch`, d.adminKey, {
    documents: o.texts.slice(0, o.workers).map((content) => ({ content: `${content} warm-up` })),
    containerTag: "bench-warmup",
  });
  await waitIdle(300_000);

  const load0 = load();
  const started = performance.now();
  const startedAt = Date.now();
  for (let i = 0; i < o.texts.length; i += 25) {
    await post(`${api.url}/v3/documents/batch`, d.adminKey, {
      documents: o.texts.slice(i, i + 25).map((content) => ({ content })),
      containerTag: INGEST_TAG,
    });
  }
  await waitIdle(3_600_000);
  const wallMs = performance.now() - started;
  const load1 = load();

  const rows = await sqlRows<{ status: string; history: { status: string; at: string }[]; chunks: number }>(
    databaseUrl,
    `SELECT d.status, d.status_history AS history, (SELECT count(*)::int FROM chunks c WHERE c.document_id = d.id) AS chunks
       FROM documents d WHERE $1 = ANY(d.container_tags)`,
    [INGEST_TAG],
  );
  const perDocument = rows.flatMap((r) => {
    const done = [...r.history].reverse().find((e) => e.status === "done");
    return done ? [Date.parse(done.at) - startedAt] : [];
  });
  const chunks = rows.reduce((s, r) => s + r.chunks, 0);
  for (const w of workers) await w.stop("SIGTERM");
  await api.stop("SIGTERM");
  const run: IngestRun = {
    workers: o.workers,
    documents: rows.length,
    chunks,
    wallMs,
    docsPerSecond: rows.length / (wallMs / 1000),
    chunksPerSecond: chunks / (wallMs / 1000),
    addToDone: summarize(perDocument),
    failed: rows.filter((r) => r.status === "failed").length,
    load: [load0, load1],
  };
  log(
    `ingest with ${o.workers} worker(s): ${run.documents} documents (${chunks} chunks) in ${fixed(wallMs / 1000)} s = ${fixed(run.docsPerSecond, 2)} documents/s, ${run.failed} failed`,
  );
  return run;
}

/** Loads `size` search chunks (the search benchmark's corpus and cached vectors) into a store. */
/** Real chunks (text and cached vector) a seeded store holds at most; past them, blends (bench/lib/blended-chunks.ts). */
const REAL_SEED_CHUNKS = 100_000;

/** How a seeded store was built, and what it takes on disk. */
export interface Seeding {
  chunks: number;
  /** Of those, chunks blended from two real ones. */
  blended: number;
  /** Every step below, end to end. */
  seedMs: number;
  loadMs: number;
  /** The GIN and btree indexes of `chunks`, built after the load. */
  secondaryIndexMs: number;
  hnswMs: number;
  analyzeMs: number;
  /** maintenance_work_mem of the HNSW build. */
  buildMemory: string;
  /** `chunks` without its indexes (heap and TOAST). */
  tableBytes: number;
  hnswBytes: number;
  /** `chunks` with every index, and `documents` with every index. */
  chunksTotalBytes: number;
  documentsTotalBytes: number;
}

/** Fills `store` (empty) with `size` chunks in the tag SEARCH_TAG and builds its indexes (also bench/search-plan.ts). */
export async function seedSearchStore(store: Store, size: number, buildMemory = "256MB"): Promise<Seeding> {
  const { name } = resolveDefaultEmbedder();
  const space = await embedderSpace(name);
  const real = Math.min(size, REAL_SEED_CHUNKS);
  const docs = searchChunkDocuments(readCorpus(), real);
  const texts = docs.flatMap((doc) => doc.pieces);
  const cache = await cachedVectors({ ...space, texts, embed: vectorSource(name) });
  const vectorOf = new Map(texts.map((t, i) => [t, cache.vectors[i] as Float32Array]));
  const blended = size - real;
  const started = performance.now();
  const recreate = await deferChunkIndexes(store.db);
  const model = { name: space.model, dimension: space.dimension };
  await bulkLoad(store.db, {
    docs,
    tag: SEARCH_TAG,
    model,
    vectorOf: (t) => vectorOf.get(t) as Float32Array,
    label: `seeding ${texts.length} chunks`,
  });
  if (blended > 0) {
    await bulkLoad(store.db, {
      docs: blendedDocuments({ texts, vectors: cache.vectors }, blended),
      chunks: blended,
      tag: SEARCH_TAG,
      model,
      vectorOf: (_t, doc, position) => (doc as DocumentWithVectors).vectors[position] as Float32Array,
      label: `seeding ${blended} blended chunks`,
    });
  }
  const loadMs = performance.now() - started;
  const secondaryStarted = performance.now();
  await recreate();
  const secondaryIndexMs = performance.now() - secondaryStarted;
  const hnswStarted = performance.now();
  await ensureVectorIndexes(store.db, space, { buildMemory });
  const hnswMs = performance.now() - hnswStarted;
  log(
    `seeding: HNSW index over ${size} chunks built in ${fixed(hnswMs / 1000)} s (maintenance_work_mem ${buildMemory})`,
  );
  const analyzeStarted = performance.now();
  await store.db.execute(sql`ANALYZE`);
  const analyzeMs = performance.now() - analyzeStarted;
  const seedMs = performance.now() - started;
  const [sizes] = await queryRows<{ table: string; hnsw: string; chunks: string; documents: string }>(
    store.db,
    sql`SELECT pg_table_size('chunks') AS "table",
               (SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                 JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = 'chunks'::regclass AND a.amname = 'hnsw') AS hnsw,
               pg_total_relation_size('chunks') AS chunks, pg_total_relation_size('documents') AS documents`,
  );
  return {
    chunks: size,
    blended,
    seedMs,
    loadMs,
    secondaryIndexMs,
    hnswMs,
    analyzeMs,
    buildMemory,
    tableBytes: Number(sizes?.table),
    hnswBytes: Number(sizes?.hnsw),
    chunksTotalBytes: Number(sizes?.chunks),
    documentsTotalBytes: Number(sizes?.documents),
  };
}

/** Concurrent `/v3/search` calls with rotating queries; latencies of every response are kept. */
async function searchLoad(o: {
  label: string;
  urls: string[];
  key: string;
  connections: number;
  durationS: number;
  queries: string[];
}): Promise<LoadRun> {
  const latencies: number[] = [];
  let next = 0;
  const body = () =>
    JSON.stringify({ q: o.queries[next++ % o.queries.length], containerTags: [SEARCH_TAG], limit: 10 });
  const load0 = load();
  const perApi = Math.max(1, Math.round(o.connections / o.urls.length));
  const results = await Promise.all(
    o.urls.map((url) => {
      return new Promise<autocannon.Result>((resolve, reject) => {
        const instance = autocannon(
          {
            url,
            connections: perApi,
            duration: o.durationS,
            requests: [
              {
                method: "POST",
                path: "/v3/search",
                headers: { authorization: `Bearer ${o.key}`, "content-type": "application/json" },
                setupRequest: (req) => ({ ...req, body: body() }),
              },
            ],
          },
          (error, result) => (error ? reject(error) : resolve(result)),
        );
        instance.on("response", (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
      });
    }),
  );
  const requests = results.reduce((s, r) => s + r.requests.total, 0);
  const sorted = [...latencies].sort((a, b) => a - b);
  const run: LoadRun = {
    label: o.label,
    apis: o.urls.length,
    connections: perApi * o.urls.length,
    durationS: o.durationS,
    requests,
    perSecond: requests / o.durationS,
    latency: { ...summarize(latencies), p99: percentile(sorted, 0.99) },
    errors: results.reduce((s, r) => s + r.errors + r.timeouts, 0),
    non2xx: results.reduce((s, r) => s + r.non2xx, 0),
    load: [load0, load()],
  };
  log(
    `${o.label}: ${requests} searches, ${fixed(run.perSecond)}/s, p50 ${fixed(run.latency.p50)} ms, p95 ${fixed(run.latency.p95)} ms, ${run.errors} errors, ${run.non2xx} non-2xx`,
  );
  return run;
}

async function runSearchLoad(o: {
  cleanup: Cleanup;
  serverUrl: string;
  temporalAddress: string;
  chunks: number;
  buildMemory: string;
  connections: number[];
  durationS: number;
  warmupS: number;
  queries: string[];
}): Promise<NonNullable<ScaleResult["search"]>> {
  const databaseUrl = await createDatabase(o.serverUrl, "scale_search");
  const data = tempDir(o.cleanup, "memory-bench-scale-search-");
  const store = await openStore({ databaseUrl, dataDir: data.dir });
  const seeding = await seedSearchStore(store, o.chunks, o.buildMemory);
  const { seedMs } = seeding;
  await store.close();
  log(`search load: ${o.chunks} chunks seeded in PostgreSQL in ${fixed(seedMs / 1000)} s`);

  const d = deployment(o.cleanup, { databaseUrl, temporalAddress: o.temporalAddress, dataDir: data.dir });
  const first = await d.start("api");
  const runs: LoadRun[] = [];
  // Warm-up: query embedder, plan cache, connection pool.
  await searchLoad({
    label: "warm-up",
    urls: [first.url],
    key: d.adminKey,
    connections: 2,
    durationS: o.warmupS,
    queries: o.queries,
  });
  for (const c of o.connections) {
    runs.push(
      await searchLoad({
        label: `1 API, ${c} connection(s)`,
        urls: [first.url],
        key: d.adminKey,
        connections: c,
        durationS: o.durationS,
        queries: o.queries,
      }),
    );
  }
  const second = await d.start("api");
  await searchLoad({
    label: "warm-up",
    urls: [second.url],
    key: d.adminKey,
    connections: 2,
    durationS: o.warmupS,
    queries: o.queries,
  });
  const most = Math.max(...o.connections);
  runs.push(
    await searchLoad({
      label: `2 APIs, ${most} connections`,
      urls: [first.url, second.url],
      key: d.adminKey,
      connections: most,
      durationS: o.durationS,
      queries: o.queries,
    }),
  );
  await second.stop("SIGTERM");
  await first.stop("SIGTERM");
  return { chunks: o.chunks, seedMs, seeding, runs };
}

async function runDaemonMemory(o: {
  cleanup: Cleanup;
  chunks: number;
  durationS: number;
  queries: string[];
}): Promise<MemoryRun> {
  const data = tempDir(o.cleanup, "memory-bench-daemon-");
  const store = await openStore({ dataDir: data.dir });
  const { seedMs } = await seedSearchStore(store, o.chunks);
  await store.close();
  log(`daemon memory: ${o.chunks} chunks seeded in PGlite in ${fixed(seedMs / 1000)} s`);

  const port = await findFreePort();
  const adminKey = `sm_bench_${randomBytes(16).toString("hex")}`;
  const env: Record<string, string> = {
    DATA_DIR: data.dir,
    PORT: String(port),
    MEMORY_ADMIN_KEY: adminKey,
    TEMPORAL_DEV_PORT: String(await findFreePort()),
    TEMPORAL_UI_PORT: String(await findFreePort()),
    TEMPORAL_ADDRESS: "",
    DATABASE_URL: "",
    LOG_LEVEL: "info",
  };
  const started = performance.now();
  const daemon = spawnEntry("main.ts", env);
  o.cleanup.add(`embedded daemon ${daemon.child.pid}`, () => daemon.stop("SIGTERM").then(() => undefined));
  await daemon.waitFor(/memory service running \(api \+ worker\)/, 300_000);
  const startMs = performance.now() - started;
  const pid = daemon.child.pid as number;
  await new Promise((r) => setTimeout(r, 10_000));
  const idle = memoryOf(pid);
  log(`daemon memory: idle ${mib(idle.serviceRss)} (+ Temporal ${mib(idle.temporalRss)})`);

  let peakServiceRss = idle.serviceRss;
  let last = idle;
  const sampler = setInterval(() => {
    last = memoryOf(pid);
    peakServiceRss = Math.max(peakServiceRss, last.serviceRss);
  }, 250);
  const search = await searchLoad({
    label: `embedded daemon at ${o.chunks} chunks, 4 connections`,
    urls: [`http://127.0.0.1:${port}`],
    key: adminKey,
    connections: 4,
    durationS: o.durationS,
    queries: o.queries,
  });
  clearInterval(sampler);
  await daemon.stop("SIGTERM");
  return { chunks: o.chunks, seedMs, startMs, idle, underLoad: { ...last, peakServiceRss }, search };
}

/** Runs the parts of the scale benchmark that `o` does not skip, with a Temporal server from the caller. */
export async function runScale(
  o: ScaleOptions,
  ctx: { cleanup: Cleanup; corpus: Abstract[]; queries: string[]; temporalAddress: () => Promise<string> },
): Promise<ScaleResult> {
  const t0 = performance.now();
  const { cleanup, corpus, queries } = ctx;
  const embedder = createEmbedder(resolveDefaultEmbedder().name, { threads: 1 });
  const embedderName = embedder.model;
  await embedder.close();

  const temporalAddress = await ctx.temporalAddress();
  const postgres = await startNativePostgres({ settings: o.serverSettings });
  cleanup.add("native PostgreSQL", () => postgres.stop());
  const serverUrl = new URL(postgres.url);
  serverUrl.pathname = "/postgres";

  const texts: string[] = [];
  // Distinct documents: consecutive abstracts cut to WORDS_PER_DOCUMENT words.
  for (const a of corpus) {
    const words = `${a.title} ${a.text}`.split(/\s+/);
    if (words.length >= WORDS_PER_DOCUMENT) texts.push(words.slice(0, WORDS_PER_DOCUMENT).join(" "));
    if (texts.length === o.docs + Math.max(...o.workers)) break;
  }
  const ingest: IngestRun[] = [];
  if (!o.skipIngest) {
    for (const workers of o.workers) {
      ingest.push(
        await runIngest({
          cleanup,
          serverUrl: serverUrl.toString(),
          temporalAddress,
          workers,
          texts: texts.slice(-o.docs),
        }),
      );
    }
  }
  const search = o.skipSearch
    ? undefined
    : await runSearchLoad({
        cleanup,
        serverUrl: serverUrl.toString(),
        temporalAddress,
        chunks: o.searchChunks,
        buildMemory: o.buildMemory,
        connections: o.connections,
        durationS: o.durationS,
        warmupS: o.warmupS ?? 5,
        queries,
      });
  const memory = o.skipMemory
    ? undefined
    : await runDaemonMemory({ cleanup, chunks: o.memoryChunks, durationS: o.durationS, queries });
  return { embedder: embedderName, ingest, search, memory, totalMs: performance.now() - t0 };
}
