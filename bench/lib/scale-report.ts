// The "At scale" section of docs/benchmarks.md (bench/scale.ts measures it). Every conclusion here is chosen by
// comparing the figures of the run, never written whatever they say.

import type { IngestRun, LoadRun, ScaleOptions, ScaleResult, Seeding } from "../scale.ts";
import { machine } from "./report.ts";

export const SCALE_HEADING = "## At scale: separate processes, concurrent load, daemon memory";
const INGEST_HEADING = "### Ingestion throughput by number of worker processes";
const SEARCH_HEADING = "### Search under concurrent load";
const MEMORY_HEADING = "### Memory of the embedded daemon";
const WORDS_PER_DOCUMENT = 200;

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MiB`;
const fixed = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : "n/a");
/** Within this share of each other, two rates count as the same (run-to-run noise on a shared machine). */
const SAME_WITHIN = 0.1;

/** What the worker-count rows show, from their own figures. */
function workersVerdict(runs: IngestRun[], cores: number): string {
  const base = runs[0];
  const more = runs.slice(1);
  if (!base || !more.length)
    return "Only one worker count was measured in this run, so there is nothing to compare.";
  const parts = more.map(
    (x) =>
      `${x.workers} workers ${fixed(x.docsPerSecond / base.docsPerSecond, 2)}× the documents/s of ${base.workers}`,
  );
  const best = Math.max(...more.map((x) => x.docsPerSecond / base.docsPerSecond));
  const verdict =
    best >= 1 + SAME_WITHIN
      ? `so on ${cores} cores the added worker processes raised the rate by more than ${100 * SAME_WITHIN} %`
      : best > 1 - SAME_WITHIN
        ? `so on ${cores} cores the added worker processes changed the rate by less than ${100 * SAME_WITHIN} %: no gain measured`
        : `so on ${cores} cores the added worker processes lowered the rate by more than ${100 * SAME_WITHIN} %`;
  const failed = runs.filter((x) => x.failed > 0);
  return `In this run: ${parts.join(", ")}, ${verdict}.${failed.length ? ` Documents failed with ${failed.map((x) => `${x.workers} worker(s) (${x.failed})`).join(", ")}.` : ""}`;
}

export const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(bytes < 10 * 1024 ** 3 ? 2 : 0)} GiB`;

/** Chunks a deployment is sized for below: the per-chunk figures of the run, times this. */
export const SIZING_CHUNKS = 10_000_000;

/**
 * How the search store was built and what it takes, then what SIZING_CHUNKS chunks would take by the same
 * per-chunk figures. Sizes scale linearly with rows; an HNSW build grows a little faster than linearly (each
 * insert searches a graph that deepens with log N), so its extrapolated time is a floor.
 */
export function seedingLines(x: Seeding, cores: number): string[] {
  const per = (bytes: number) => bytes / x.chunks;
  const scaled = (bytes: number) => gib(per(bytes) * SIZING_CHUNKS);
  const hours = (ms: number) => (ms * (SIZING_CHUNKS / x.chunks)) / 3_600_000;
  const real = x.chunks - x.blended;
  return [
    `The store: ${x.chunks.toLocaleString("en")} chunks${x.blended ? ` (${real.toLocaleString("en")} real SciFact chunks with their model vectors, then ${x.blended.toLocaleString("en")} blends of two of them: their texts joined, their vectors summed and normalised; bench/lib/blended-chunks.ts)` : " (real SciFact chunks with their model vectors)"}, loaded in bulk (multi-row INSERTs) with the secondary indexes dropped, then indexed.`,
    "",
    "| step | time | | relation | size | per chunk |",
    "| --- | --- | --- | --- | --- | --- |",
    `| load | ${fixed(x.loadMs / 1000)} s | | \`chunks\` (heap and TOAST) | ${gib(x.tableBytes)} | ${fixed(per(x.tableBytes) / 1024, 2)} kB |`,
    `| GIN and btree indexes | ${fixed(x.secondaryIndexMs / 1000)} s | | HNSW index | ${gib(x.hnswBytes)} | ${fixed(per(x.hnswBytes) / 1024, 2)} kB |`,
    `| HNSW build (maintenance_work_mem ${x.buildMemory}) | ${fixed(x.hnswMs / 1000)} s | | \`chunks\` with every index | ${gib(x.chunksTotalBytes)} | ${fixed(per(x.chunksTotalBytes) / 1024, 2)} kB |`,
    `| ANALYZE | ${fixed(x.analyzeMs / 1000)} s | | \`documents\` with every index | ${gib(x.documentsTotalBytes)} | ${fixed(per(x.documentsTotalBytes) / 1024, 2)} kB |`,
    "",
    `By these per-chunk figures, ${SIZING_CHUNKS.toLocaleString("en")} chunks of this kind (384-d vectors, chunks of a few sentences) take: ` +
      `${scaled(x.chunksTotalBytes + x.documentsTotalBytes)} of disk for chunks and documents with their indexes; ` +
      `an HNSW index of ${scaled(x.hnswBytes)}, which searches read at random, so the server's memory (shared_buffers plus the OS page cache) should hold it whole, with the hot part of the table beside it; ` +
      `a maintenance_work_mem of about ${scaled(x.hnswBytes * 1.5)} for a rebuild whose graph fits in memory (REINDEX after heavy churn; pgvector builds much more slowly once the graph outgrows it); ` +
      `and at least ${fixed(hours(x.hnswMs), 1)} h for that rebuild on ${cores} cores like these (this run's build time scaled by rows; builds grow a little faster than that).`,
    "",
  ];
}

/** What the API-process and connection rows show, from their own figures. */
function apisVerdict(runs: LoadRun[], cores: number): string {
  const out: string[] = [];
  const single = runs.filter((x) => x.apis === 1).sort((a, b) => a.connections - b.connections);
  const few = single[0];
  const most = single.at(-1);
  if (few && most && most.connections > few.connections) {
    const throughput = most.perSecond / few.perSecond;
    const latency = most.latency.p50 / few.latency.p50;
    const verdict =
      throughput >= 1 + SAME_WITHIN
        ? "more connections still raised the searches served"
        : latency >= 1 + SAME_WITHIN
          ? "the searches served stayed within 10 % while latency grew: the added connections queued"
          : "neither the searches served nor the latency moved by more than 10 %";
    out.push(
      `With one API process, going from ${few.connections} to ${most.connections} connections changed the searches/s ${fixed(throughput, 2)}× and the p50 latency ${fixed(latency, 2)}×: ${verdict}.`,
    );
  }
  for (const many of runs.filter((x) => x.apis > 1)) {
    const one = single.find((x) => x.connections === many.connections);
    if (!one) continue;
    const ratio = many.perSecond / one.perSecond;
    const verdict =
      ratio >= 1 + SAME_WITHIN
        ? "added capacity on this machine"
        : ratio > 1 - SAME_WITHIN
          ? "no added capacity on this machine (within 10 %)"
          : "fewer searches than one process on this machine";
    out.push(
      `With ${many.connections} connections, ${many.apis} API processes served ${fixed(ratio, 2)}× the searches/s of one on ${cores} cores (p95 ${fixed(many.latency.p95)} against ${fixed(one.latency.p95)} ms): ${verdict}.`,
    );
  }
  return out.join(" ");
}

/** Issue #25 point 4: search p95 at or under this with one API process and one connection, at this many chunks. */
export const SCALE_SEARCH_GOAL = { chunks: 1_000_000, p95Ms: 100 } as const;

/** The 1 API × 1 connection row against issue #25's goal, or nothing when the run is smaller than the goal's store. */
export function searchGoalVerdict(chunks: number, runs: LoadRun[]): string {
  const one = runs.find((x) => x.apis === 1 && x.connections === 1);
  if (!one || chunks < SCALE_SEARCH_GOAL.chunks) return "";
  const within = one.errors === 0 && one.non2xx === 0 && one.latency.p95 <= SCALE_SEARCH_GOAL.p95Ms;
  return `Issue #25 asks for a search p95 of ${SCALE_SEARCH_GOAL.p95Ms} ms or less at ${SCALE_SEARCH_GOAL.chunks.toLocaleString("en")} chunks: one API process, one connection, ${fixed(one.latency.p95)} ms with ${one.errors + one.non2xx} failed requests, **${within ? "within" : "over"}**.`;
}

/** The server settings a run chose (`--scale-pg`), beside the fixed ones every benchmark server runs with. */
function serverSettingsText(settings: Record<string, string> | undefined): string {
  const chosen = Object.entries(settings ?? {}).map(([name, value]) => `\`${name}=${value}\``);
  return `${chosen.length ? `${chosen.join(", ")}; otherwise ` : ""}initdb's defaults, with fsync, synchronous_commit and full_page_writes off`;
}

const skipped = (flag: string) => [`Not measured in this run (\`${flag}\`).`, ""];

export function renderScaleSection(r: ScaleResult, o: ScaleOptions): string[] {
  const m = machine();
  const lines = [
    SCALE_HEADING,
    "",
    "Real processes: `bin/api.ts` and `bin/worker.ts` children against one native PostgreSQL 16 + pgvector and one Temporal dev server, all on this machine; the load generator (autocannon) runs here too. " +
      `Embedder ${r.embedder}; ${fixed(r.totalMs / 60_000)} min for this scenario. The 1-minute load average before and after each measurement counts the benchmark's own processes too (API, workers, PostgreSQL, Temporal, the load generator), so it rises above the core count under load; a high value *before* a measurement means other work was running.`,
    "",
  ];
  lines.push(INGEST_HEADING, "");
  const base = r.ingest[0];
  if (!base) lines.push(...skipped("--scale-skip-ingest"));
  else {
    lines.push(
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
  if (!r.search) lines.push(SEARCH_HEADING, "", ...skipped("--scale-skip-search"));
  else {
    const first = r.search.runs[0] as LoadRun;
    lines.push(
      `${SEARCH_HEADING} (${r.search.chunks.toLocaleString("en")} chunks, PostgreSQL)`,
      "",
      `\`POST /v3/search\` (hybrid, limit 10, SciFact queries in rotation, each embedded by the API) for ${first?.durationS ?? o.durationS} s per row after a ${o.warmupS ?? 5} s warm-up, against API processes of the scale-out shape. Latency is per response as the client saw it. PostgreSQL settings: ${serverSettingsText(o.serverSettings)}. Seeding ${r.search.chunks} chunks (bulk insert, index builds, ANALYZE) took ${fixed(r.search.seedMs / 1000)} s.`,
      "",
      ...(r.search.seeding ? seedingLines(r.search.seeding, m.cores) : []),
      "| API processes | connections | searches | searches/s | p50 | p95 | p99 | max | p50 vs 1 connection | errors | non-2xx | load avg |",
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
      ...r.search.runs.map(
        (x) =>
          `| ${x.apis} | ${x.connections} | ${x.requests} | ${fixed(x.perSecond)} | ${fixed(x.latency.p50)} ms | ${fixed(x.latency.p95)} ms | ${fixed(x.latency.p99)} ms | ${fixed(x.latency.max)} ms | ${first ? fixed(x.latency.p50 / first.latency.p50, 2) : "n/a"}× | ${x.errors} | ${x.non2xx} | ${x.load[0]} → ${x.load[1]} |`,
      ),
      "",
      apisVerdict(r.search.runs, m.cores),
      "",
      ...[searchGoalVerdict(r.search.chunks, r.search.runs)].filter(Boolean).flatMap((line) => [line, ""]),
    );
  }
  if (!r.memory) lines.push(MEMORY_HEADING, "", ...skipped("--scale-skip-memory"));
  else {
    const x = r.memory;
    lines.push(
      `${MEMORY_HEADING} at ${x.chunks.toLocaleString("en")} chunks`,
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
  return lines;
}
