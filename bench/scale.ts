// Benchmark of the scale-out shape as real processes: `api/main.ts` and `worker/main.ts` children
// against one native PostgreSQL + pgvector and one Temporal dev server, and the embedded default
// (`main.ts`) holding a large PGlite store. Prints the figures and writes the "At scale" section of
// docs/benchmarks.md. Needs the test tools (`node scripts/setup.mjs --test` installs PostgreSQL).
// Usage: npm run bench:scale -- [--docs 200] [--workers 1,2] [--search-chunks 10000]
//        [--connections 1,4,16] [--duration 15] [--memory-chunks 100000] [--skip-memory] [--out FILE]

import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { sql } from "drizzle-orm";
import pg from "pg";
import { createEmbedder, resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import { findFreePort } from "../runtime/temporal-dev-server.ts";
import { openStore, type Store } from "../store/db.ts";
import { ensureVectorIndexes } from "../store/vector-index.ts";
import { startNativePostgres } from "../test/support/postgres.ts";
import { type Spawned, spawnEntry } from "../test/support/processes.ts";
import { readCorpus, readQueries } from "./lib/corpus.ts";
import { log } from "./lib/progress.ts";
import { machine } from "./lib/report.ts";
import { revision } from "./lib/revision.ts";
import { searchChunkDocuments } from "./lib/search-corpus.ts";
import { bulkLoad, deferChunkIndexes } from "./lib/search-load.ts";
import { embedderSpace, vectorSource } from "./lib/search-vectors.ts";
import { findSection, replaceSection } from "./lib/sections.ts";
import { Cleanup, startTemporal, tempDir } from "./lib/service.ts";
import { percentile, type Summary, summarize } from "./lib/stats.ts";
import { cachedVectors } from "./lib/vector-cache.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const HEADING = "## At scale: separate processes, concurrent load, daemon memory";
const INGEST_TAG = "bench-scale";
const SEARCH_TAG = "bench-search";
const WORDS_PER_DOCUMENT = 200;
const INGEST_HEADING = "### Ingestion throughput by number of worker processes";
const SEARCH_HEADING = "### Search under concurrent load";
const MEMORY_HEADING = "### Memory of the embedded daemon";

/** The `### ` subsection of `section` whose heading starts with `prefix`, kept when that part is skipped. */
function earlierPart(section: string | undefined, prefix: string): string[] {
  if (!section) return [];
  const lines = section.split("\n");
  const start = lines.findIndex((l) => l.startsWith(prefix));
  if (start === -1) return [];
  let end = lines.findIndex((l, i) => i > start && /^#{2,3} /.test(l));
  if (end === -1) end = lines.length;
  return [...lines.slice(start, end)];
}

interface IngestRun {
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

interface LoadRun {
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

function positiveList(name: string, value: string | undefined, fallback: number[]): number[] {
  if (value === undefined) return fallback;
  return value.split(",").map((v) => {
    const n = Number(v.trim());
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} takes positive integers, got "${v}"`);
    return n;
  });
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
    const child = spawnEntry(`${entry}/main.ts`, { ...env, PORT: String(port), LOG_LEVEL: "info" });
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
async function seedSearchStore(store: Store, size: number): Promise<number> {
  const { name } = resolveDefaultEmbedder();
  const space = await embedderSpace(name);
  const docs = searchChunkDocuments(readCorpus(), size);
  const texts = docs.flatMap((doc) => doc.pieces);
  const cache = await cachedVectors({ ...space, texts, embed: vectorSource(name) });
  const vectorOf = new Map(texts.map((t, i) => [t, cache.vectors[i] as Float32Array]));
  const started = performance.now();
  const recreate = await deferChunkIndexes(store.db);
  await bulkLoad(store.db, {
    docs,
    tag: SEARCH_TAG,
    model: { name: space.model, dimension: space.dimension },
    vectorOf: (t) => vectorOf.get(t) as Float32Array,
    label: `seeding ${texts.length} chunks`,
  });
  await recreate();
  await ensureVectorIndexes(store.db, space);
  await store.db.execute(sql`ANALYZE`);
  return performance.now() - started;
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
  connections: number[];
  durationS: number;
  queries: string[];
}): Promise<{ chunks: number; seedMs: number; runs: LoadRun[] }> {
  const databaseUrl = await createDatabase(o.serverUrl, "scale_search");
  const data = tempDir(o.cleanup, "memory-bench-scale-search-");
  const store = await openStore({ databaseUrl, dataDir: data.dir });
  const seedMs = await seedSearchStore(store, o.chunks);
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
    durationS: 5,
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
    durationS: 5,
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
  return { chunks: o.chunks, seedMs, runs };
}

async function runDaemonMemory(o: {
  cleanup: Cleanup;
  chunks: number;
  durationS: number;
  queries: string[];
}): Promise<MemoryRun> {
  const data = tempDir(o.cleanup, "memory-bench-daemon-");
  const store = await openStore({ dataDir: data.dir });
  const seedMs = await seedSearchStore(store, o.chunks);
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

/** What the worker-count rows show, from their own figures (nothing here is written whatever they say). */
function workersVerdict(runs: IngestRun[], cores: number): string {
  const base = runs[0] as IngestRun;
  const more = runs.slice(1);
  if (!more.length) return "Only one worker count was measured in this run.";
  const parts = more.map(
    (x) =>
      `${x.workers} workers ${fixed(x.docsPerSecond / base.docsPerSecond, 2)}× the documents/s of ${base.workers}`,
  );
  const best = Math.max(...more.map((x) => x.docsPerSecond / base.docsPerSecond));
  const verdict =
    best >= 1.1
      ? "so the added worker processes took work the first could not get to"
      : best > 0.9
        ? `so on ${cores} cores the added worker processes changed the rate by less than 10 %: the first worker's embedding already kept the cores busy, and more workers pay where they bring more cores`
        : `so on ${cores} cores the added worker processes slowed the import: they compete for the same cores`;
  return `In this run: ${parts.join(", ")}, ${verdict}. The heavy queue (\`WORKER_QUEUES=heavy\`) keeps OCR and transcription off the workers that embed.`;
}

/** What the API-process rows show, from their own figures. */
function apisVerdict(runs: LoadRun[], cores: number): string {
  const out = [
    "Each search embeds its query on the API process's CPU; past the point where the cores are busy, more connections only queue and latency grows with them.",
  ];
  for (const many of runs.filter((x) => x.apis > 1)) {
    const one = runs.find((x) => x.apis === 1 && x.connections === many.connections);
    if (!one) continue;
    const ratio = many.perSecond / one.perSecond;
    out.push(
      `With ${many.connections} connections, ${many.apis} API processes served ${fixed(ratio, 2)}× the searches/s of one on ${cores} cores (p95 ${fixed(many.latency.p95)} against ${fixed(one.latency.p95)} ms)${ratio < 1.1 ? ": no added capacity on this machine; more API processes pay on more cores" : ""}.`,
    );
  }
  return out.join(" ");
}

function render(r: {
  date: Date;
  rev: string;
  command: string;
  embedder: string;
  ingest: IngestRun[];
  search?: { chunks: number; seedMs: number; runs: LoadRun[] };
  memory?: MemoryRun;
  totalMs: number;
  previous?: string;
}): string {
  const m = machine();
  const lines = [
    HEADING,
    "",
    `Written by \`npm run bench:scale\` on ${m.cpu} (${m.cores} cores, ${m.memory}), Node ${m.node}, ${m.os}. Real processes: \`api/main.ts\` and \`worker/main.ts\` children against one native PostgreSQL 16 + pgvector and one Temporal dev server, all on this machine; the load generator (autocannon) runs here too. Each part says when it was measured (a part skipped with \`--skip-…\` keeps its earlier figures). The 1-minute load average before and after each measurement counts the benchmark's own processes too (API, workers, PostgreSQL, Temporal, the load generator), so it rises above the core count under load; a high value *before* a measurement means other work was running.`,
    "",
  ];
  const measured = `Measured ${r.date.toISOString()} at ${r.rev} with \`${r.command}\`, embedder ${r.embedder} (${fixed(r.totalMs / 60_000)} min for the whole run).`;
  if (!r.ingest.length) lines.push(...earlierPart(r.previous, INGEST_HEADING));
  else {
    const base = r.ingest[0] as IngestRun;
    lines.push(
      INGEST_HEADING,
      "",
      measured,
      "",
      `${base.documents} documents of ${WORDS_PER_DOCUMENT} words each, sent in batches of 25 through \`POST /v3/documents/batch\` to one API process; every worker process runs \`WORKER_CONCURRENCY=4\`, \`EMBEDDING_THREADS=1\`. Time runs from the first batch to the last document \`done\`, after a warm-up document per worker.`,
      "",
      "| workers | documents | chunks | wall | documents/s | chunks/s | vs 1 worker | add→done p50 | add→done p95 | failed | load avg |",
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
      ...r.ingest.map(
        (x) =>
          `| ${x.workers} | ${x.documents} | ${x.chunks} | ${fixed(x.wallMs / 1000)} s | ${fixed(x.docsPerSecond, 2)} | ${fixed(x.chunksPerSecond, 2)} | ${fixed(x.docsPerSecond / base.docsPerSecond, 2)}× | ${fixed(x.addToDone.p50 / 1000)} s | ${fixed(x.addToDone.p95 / 1000)} s | ${x.failed} | ${x.load[0]} → ${x.load[1]} |`,
      ),
      "",
      workersVerdict(r.ingest, m.cores),
      "",
    );
  }
  if (!r.search) lines.push(...earlierPart(r.previous, SEARCH_HEADING));
  else {
    const base = r.search.runs[0] as LoadRun;
    lines.push(
      `${SEARCH_HEADING} (${r.search.chunks.toLocaleString("en")} chunks, PostgreSQL)`,
      "",
      measured,
      "",
      `\`POST /v3/search\` (hybrid, limit 10, SciFact queries in rotation, each embedded by the API) for ${base.durationS} s per row after a 5 s warm-up, against API processes of the scale-out shape. Latency is per response as the client saw it. Seeding ${r.search.chunks} chunks (bulk insert, index builds, ANALYZE) took ${fixed(r.search.seedMs / 1000)} s.`,
      "",
      "| API processes | connections | searches | searches/s | p50 | p95 | p99 | max | p50 vs 1 connection | errors | non-2xx | load avg |",
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
      ...r.search.runs.map(
        (x) =>
          `| ${x.apis} | ${x.connections} | ${x.requests} | ${fixed(x.perSecond)} | ${fixed(x.latency.p50)} ms | ${fixed(x.latency.p95)} ms | ${fixed(x.latency.p99)} ms | ${fixed(x.latency.max)} ms | ${fixed(x.latency.p50 / base.latency.p50, 2)}× | ${x.errors} | ${x.non2xx} | ${x.load[0]} → ${x.load[1]} |`,
      ),
      "",
      apisVerdict(r.search.runs, m.cores),
      "",
    );
  }
  if (!r.memory) lines.push(...earlierPart(r.previous, MEMORY_HEADING));
  else {
    const x = r.memory;
    lines.push(
      `${MEMORY_HEADING} at ${x.chunks.toLocaleString("en")} chunks`,
      "",
      measured,
      "",
      `\`main.ts\` (what \`npm start\` runs: API, worker, embedding model and PGlite in one Node process, the Temporal dev server as its child) on a data directory holding ${x.chunks.toLocaleString("en")} chunks with their vectors and indexes (seeded in ${fixed(x.seedMs / 1000)} s). Started in ${fixed(x.startMs / 1000)} s. Resident memory (VmRSS) from /proc:`,
      "",
      "| when | service process | Temporal dev server |",
      "| --- | --- | --- |",
      `| idle, 10 s after start | ${mib(x.idle.serviceRss)} | ${mib(x.idle.temporalRss)} |`,
      `| after ${x.search.durationS} s of searches at 4 connections (peak of the service sampled every 250 ms) | ${mib(x.underLoad.serviceRss)} (peak ${mib(x.underLoad.peakServiceRss)}) | ${mib(x.underLoad.temporalRss)} |`,
      "",
      `Searches meanwhile: ${x.search.requests} in ${x.search.durationS} s (${fixed(x.search.perSecond)}/s), p50 ${fixed(x.search.latency.p50)} ms, p95 ${fixed(x.search.latency.p95)} ms, ${x.search.errors} errors, ${x.search.non2xx} non-2xx.`,
      "",
    );
  }
  return lines.join("\n");
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const { values } = parseArgs({
    args: argv,
    options: {
      docs: { type: "string" },
      workers: { type: "string" },
      "search-chunks": { type: "string" },
      connections: { type: "string" },
      duration: { type: "string" },
      "memory-chunks": { type: "string" },
      "skip-ingest": { type: "boolean", default: false },
      "skip-search": { type: "boolean", default: false },
      "skip-memory": { type: "boolean", default: false },
      out: { type: "string" },
    },
    strict: true,
  });
  const [docs] = positiveList("docs", values.docs, [200]) as [number];
  const workerCounts = positiveList("workers", values.workers, [1, 2]);
  const [searchChunks] = positiveList("search-chunks", values["search-chunks"], [10_000]) as [number];
  const connections = positiveList("connections", values.connections, [1, 4, 16]);
  const [durationS] = positiveList("duration", values.duration, [15]) as [number];
  const [memoryChunks] = positiveList("memory-chunks", values["memory-chunks"], [100_000]) as [number];
  const out = path.resolve(root, values.out ?? "docs/benchmarks.md");
  const command = `npm run bench:scale${argv.length ? ` -- ${argv.join(" ")}` : ""}`;

  const cleanup = new Cleanup();
  cleanup.exitOnSignals(log);
  const rev = revision();
  const date = new Date();
  const t0 = performance.now();
  try {
    const corpus = readCorpus();
    const queries = readQueries();
    const embedder = createEmbedder(resolveDefaultEmbedder().name, { threads: 1 });
    const embedderName = embedder.model;
    await embedder.close();

    const temporal = await startTemporal(cleanup);
    const postgres = await startNativePostgres();
    cleanup.add("native PostgreSQL", () => postgres.stop());
    const serverUrl = new URL(postgres.url);
    serverUrl.pathname = "/postgres";

    const texts: string[] = [];
    // Distinct documents: consecutive abstracts cut to WORDS_PER_DOCUMENT words.
    for (const a of corpus) {
      const words = `${a.title} ${a.text}`.split(/\s+/);
      if (words.length >= WORDS_PER_DOCUMENT) texts.push(words.slice(0, WORDS_PER_DOCUMENT).join(" "));
      if (texts.length === docs + Math.max(...workerCounts)) break;
    }
    const ingest: IngestRun[] = [];
    if (!values["skip-ingest"]) {
      for (const workers of workerCounts) {
        ingest.push(
          await runIngest({
            cleanup,
            serverUrl: serverUrl.toString(),
            temporalAddress: temporal.address,
            workers,
            texts: texts.slice(-docs),
          }),
        );
      }
    }
    const search = values["skip-search"]
      ? undefined
      : await runSearchLoad({
          cleanup,
          serverUrl: serverUrl.toString(),
          temporalAddress: temporal.address,
          chunks: searchChunks,
          connections,
          durationS,
          queries,
        });
    const memory = values["skip-memory"]
      ? undefined
      : await runDaemonMemory({ cleanup, chunks: memoryChunks, durationS, queries });

    const previous = existsSync(out) ? readFileSync(out, "utf8") : "# Benchmarks\n";
    const section = render({
      previous: findSection(previous, HEADING),
      date,
      rev,
      command,
      embedder: embedderName,
      ingest,
      search,
      memory,
      totalMs: performance.now() - t0,
    });
    process.stdout.write(`\n${section}\n`);
    writeFileSync(out, replaceSection(previous, HEADING, section));
    log(`written to ${path.relative(root, out)}`);
    return 0;
  } finally {
    await cleanup.runAll();
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    process.exit(1);
  },
);
