// The benchmark's scenarios: what `npm run bench` can run, and how each one's result becomes its section of
// docs/benchmarks.md. bench/main.ts runs them and stores one result file per run (bench/results/); bench/lib/page.ts
// renders the page from such a file.
//
// Adding a scenario is one entry in SCENARIOS:
//   1. a run function that returns a JSON-serialisable result (numbers, strings, arrays, plain objects; NaN is
//      fine, Dates are not: store ISO strings). Load its module inside `run` (`await import(...)`), so rendering a
//      page never loads the service;
//   2. its options: the command-line flags it reads (`args`, prefixed with the scenario's name), documented in
//      `help`, and `options()` turning them into the object stored with the result;
//   3. `render(result, options, header)`: the markdown lines of its section(s), starting with a `## ` heading
//      listed in `sections`. Conclusions in the text are chosen by comparing the figures, never fixed sentences;
//   4. optionally `headline` (a few figures for the History table) and `terminal` (lines printed after the run).
// Then `npm run bench -- --with <name>` runs it, and the page lists it as "not run" in runs without it.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { AttackOptions, AttackResult } from "./attack.ts";
import type { BulkOptions, BulkResult, BulkScenario } from "./bulk.ts";
import type { ChurnOptions, ChurnResult } from "./churn.ts";
import type { ConnectionsOptions, ConnectionsResult } from "./connections.ts";
import type { ExtractionResult } from "./extraction.ts";
import type { IngestResult } from "./ingest.ts";
import { ATTACK_HEADING, attackChecks, renderAttackSection } from "./lib/attack-report.ts";
import { BULK_HEADING, bulkSummaryLines, renderBulkSection } from "./lib/bulk-report.ts";
import { CHURN_HEADING, churnComparisons, renderChurnSection, withinGoal } from "./lib/churn-report.ts";
import { CONNECTIONS_HEADING, renderConnectionsSection } from "./lib/connections-report.ts";
import type { Abstract } from "./lib/corpus.ts";
import type { EvalResult } from "./lib/eval-report.ts";
import { EXTRACTION_HEADING, renderExtraction } from "./lib/extraction-report.ts";
import { IMPORTED_HEADING, renderImportedSection } from "./lib/imported-report.ts";
import { INGEST_HEADING, renderIngestSection } from "./lib/ingest-report.ts";
import { MEMORY_SEARCH_HEADING, renderMemorySearchSection } from "./lib/memory-search-report.ts";
import { log } from "./lib/progress.ts";
import { summaryLines } from "./lib/report.ts";
import { ROOT, type RunFile, type RunHeader } from "./lib/results.ts";
import { revisionLabel } from "./lib/revision.ts";
import { gib, renderScaleSection, SCALE_HEADING } from "./lib/scale-report.ts";
import { SCIFACT_HEADING } from "./lib/scifact.ts";
import type { Spread } from "./lib/score-distribution.ts";
import { SCORES_HEADING } from "./lib/score-distribution.ts";
import { renderSearchSection, SEARCH_HEADING } from "./lib/search-report.ts";
import type { Cleanup } from "./lib/service.ts";
import { ms, rate } from "./lib/stats.ts";
import type { ScaleOptions, ScaleResult } from "./scale.ts";
import type { SearchResult } from "./search.ts";
import type { ImportedSearchOptions, ImportedSearchResult } from "./search-imported.ts";
import type { MemorySearchOptions, MemorySearchResult } from "./search-memories.ts";

/** A node:util parseArgs option. */
export interface ArgSpec {
  type: "string" | "boolean";
  multiple?: boolean;
  short?: string;
}

export type ArgValues = Record<string, string | boolean | string[] | undefined>;

/** What every scenario may use; main.ts makes one per run. */
export interface ScenarioContext {
  cleanup: Cleanup;
  /** EMBEDDING_THREADS for the service and the embedder baselines (`--threads`). */
  threads: number;
  corpus(): Abstract[];
  queries(): string[];
  /** One Temporal dev server shared by the in-process scenarios, started on first use. */
  temporal(): Promise<{ address: string; pid: number }>;
}

export interface Scenario<O = unknown, R = unknown> {
  name: string;
  /** Runs with a plain `npm run bench`; the others need `--with <name>` or `--all`. */
  inDefault: boolean;
  /** What it measures and roughly how long it takes, one line. */
  about: string;
  /** The `## ` sections it writes; a run without the scenario keeps these headings with a "not run" note. */
  sections: { heading: string; flags: string }[];
  /** Its command-line options (node:util parseArgs descriptors). */
  args: Record<string, ArgSpec>;
  /** `--help` lines for those options. */
  help: string[];
  options(values: ArgValues, ctx: { threads: number }): O;
  run(options: O, ctx: ScenarioContext): Promise<R>;
  /** `run` is the whole run, for a section that sets its figures beside another scenario's of the same run. */
  render(result: R, options: O, header: RunHeader, run?: RunFile): string[] | Promise<string[]>;
  /** A few figures for the History table: column label → cell. */
  headline?(result: R): Record<string, string | undefined>;
  /** Lines printed to the terminal after the run. */
  terminal?(result: R): string[];
}

// --- option helpers -------------------------------------------------------------------------------------------

function positive(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${value}"`);
  return n;
}

function nonNegative(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number ≥ 0, got "${value}"`);
  return n;
}

function positiveList(name: string, value: unknown, fallback: number[]): number[] {
  if (value === undefined) return fallback;
  return String(value)
    .split(",")
    .map((v) => positive(name, v.trim(), 1));
}

function keyValues(name: string, value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of (value as string[] | undefined) ?? []) {
    const eq = kv.indexOf("=");
    if (eq < 1) throw new Error(`--${name} takes KEY=VALUE, got "${kv}"`);
    out[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  return out;
}

const str = { type: "string" } as const;
const flag = { type: "boolean" } as const;
const n = (v: number) => v.toLocaleString("en-US");
const runMeta = (h: RunHeader) => ({
  started: new Date(h.started),
  command: h.command,
  revision: revisionLabel(h.revision),
});

// --- the scenarios --------------------------------------------------------------------------------------------

const ingest: Scenario<{ docs: number; threads: number }, IngestResult> = {
  name: "ingest",
  inDefault: true,
  about:
    "documents through the whole pipeline (API → Temporal → extract, chunk, embed, index) next to the embedder alone; a few minutes",
  sections: [{ heading: INGEST_HEADING, flags: "--with ingest" }],
  args: { docs: str },
  help: ["--docs 200                 documents to ingest"],
  options: (v, ctx) => ({ docs: positive("docs", v.docs, 200), threads: ctx.threads }),
  async run(o, ctx) {
    const { runIngest } = await import("./ingest.ts");
    const temporal = await ctx.temporal();
    return runIngest({
      cleanup: ctx.cleanup,
      temporalAddress: temporal.address,
      temporalPid: temporal.pid,
      corpus: ctx.corpus(),
      docs: o.docs,
      threads: o.threads,
    });
  },
  render: (r) => renderIngestSection(r),
  headline: (r) => ({ "ingest documents/s": rate(r.docsPerSecond) }),
  terminal: (r) => summaryLines({ ingest: r }),
};

interface SearchOptions {
  chunks: number[];
  searches: number;
  threads: number;
  embedder?: string;
}

const search: Scenario<SearchOptions, SearchResult> = {
  name: "search",
  inDefault: true,
  about:
    "search latency piece by piece (query embedding, hybrid/vector/keyword SQL, HTTP) on stores of --chunks chunks; minutes (the first 100,000-chunk run embeds for most of an hour)",
  sections: [{ heading: SEARCH_HEADING, flags: "--with search" }],
  args: { chunks: str, searches: str, embedder: str },
  help: [
    "--chunks 10000[,100000]    one search store per size",
    "--searches 200             queries per measurement",
    "--embedder bge-small|use-lite   (default: the service's default)",
  ],
  options: (v, ctx) => ({
    chunks: positiveList("chunks", v.chunks, [10_000]),
    searches: positive("searches", v.searches, 200),
    threads: ctx.threads,
    ...(typeof v.embedder === "string" ? { embedder: v.embedder } : {}),
  }),
  async run(o, ctx) {
    const { runSearch } = await import("./search.ts");
    const temporal = await ctx.temporal();
    return runSearch({
      cleanup: ctx.cleanup,
      temporalAddress: temporal.address,
      temporalPid: temporal.pid,
      corpus: ctx.corpus(),
      queries: ctx.queries(),
      chunks: o.chunks,
      embedder: o.embedder,
      searches: o.searches,
      threads: o.threads,
    });
  },
  render: (r, _o, h) => renderSearchSection(r, runMeta(h)),
  headline: (r) => {
    const first = r.sizes[0];
    return first ? { "search HTTP p50": `${ms(first.http.p50)} at ${n(first.chunks)}` } : {};
  },
  terminal: (r) => summaryLines({ search: r }),
};

const extraction: Scenario<{ repeats: number }, ExtractionResult> = {
  name: "extraction",
  inDefault: true,
  about: "every fixture file through its extractor; OCR and transcription accuracy; about a minute",
  sections: [{ heading: EXTRACTION_HEADING, flags: "--with extraction" }],
  args: { "extraction-repeats": str },
  help: ["--extraction-repeats 3     runs per file (audio and video once)"],
  options: (v) => ({ repeats: positive("extraction-repeats", v["extraction-repeats"], 3) }),
  async run(o) {
    const { runExtractionBench } = await import("./extraction.ts");
    log("extraction: every fixture file");
    return runExtractionBench(o);
  },
  render: (r) => renderExtraction(r),
  headline: (r) => {
    const pdf = r.byType.find((t) => t.type === "pdf");
    return pdf ? { "extraction pdf p50": ms(pdf.ms.p50) } : {};
  },
};

const BULK_SCENARIOS: readonly BulkScenario[] = ["rates", "singles", "load", "tenant", "backlog"];

const bulk: Scenario<Omit<BulkOptions, "temporalPid">, BulkResult> = {
  name: "bulk",
  inDefault: false,
  about:
    "big imports through the service as a child process: rate by size, single adds, interactive load and a small tenant during an import, a backlog; hours at the default sizes",
  sections: [{ heading: BULK_HEADING, flags: "--with bulk" }],
  args: {
    "bulk-sizes": str,
    "bulk-scenarios": str,
    "bulk-load-size": str,
    "bulk-load-every": str,
    "bulk-tenant-docs": str,
    "bulk-tenant-after": str,
    "bulk-backlog": str,
    "bulk-backlog-watch": str,
    "bulk-drain": str,
    "bulk-embedder-docs": str,
    "bulk-in-flight": str,
    "bulk-singles-size": str,
    "bulk-singles-in-flight": str,
    "bulk-timeout": str,
    "bulk-stall": str,
    "bulk-log-level": str,
    "bulk-env": { type: "string", multiple: true },
  },
  help: [
    "The service runs as a child process (main.ts) with its own Temporal dev server, a fresh pair per import.",
    "--bulk-scenarios rates,singles,load,tenant,backlog   which parts (default: all)",
    "     rates   : one import per --bulk-sizes, timed to the last done, next to the embedder alone",
    "     singles : --bulk-singles-size documents, each its own POST /v3/documents, --bulk-singles-in-flight at once",
    "     load    : /v3/search, /v4/search and a memory add every --bulk-load-every s during the --bulk-load-size import",
    "     tenant  : a --bulk-tenant-docs import by another tag --bulk-tenant-after s into that import",
    "     backlog : --bulk-backlog documents submitted at once, RSS watched --bulk-backlog-watch s, then deleted",
    "--bulk-sizes 200,2000,5000        import sizes (20000 works too: the corpus repeats with a suffix)",
    "--bulk-load-size N                the import with interactive load and the tenant (default 2000 if in the sizes, else the largest)",
    "--bulk-load-every 2               seconds between requests of each interactive kind",
    "--bulk-tenant-docs 20  --bulk-tenant-after 30 (s)",
    "--bulk-backlog 20000  --bulk-backlog-watch 180 (s)  --bulk-drain 300 (s to wait for workflows to end after the delete)",
    "--bulk-embedder-docs 2000         the embedder alone is timed on the chunks of the first N documents",
    "--bulk-in-flight 3                batch requests (500 documents each) in flight",
    "--bulk-singles-size 1000  --bulk-singles-in-flight 4",
    "--bulk-timeout 180 (min per import)  --bulk-stall 5 (min without a finished document ends an import, marked)",
    "--bulk-log-level warn             the service's LOG_LEVEL",
    "--bulk-env KEY=VALUE              more service settings (repeatable), e.g. --bulk-env WORKER_CONCURRENCY=8",
    'BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (environment): node flags for the service process',
  ],
  options(v, ctx) {
    const sizes = positiveList("bulk-sizes", v["bulk-sizes"], [200, 2000, 5000]);
    const scenarios = String(v["bulk-scenarios"] ?? BULK_SCENARIOS.join(","))
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    for (const sc of scenarios)
      if (!(BULK_SCENARIOS as readonly string[]).includes(sc))
        throw new Error(`--bulk-scenarios: unknown "${sc}" (known: ${BULK_SCENARIOS.join(", ")})`);
    const backlog = nonNegative("bulk-backlog", v["bulk-backlog"], 20_000);
    const loadEveryMs = 1000 * nonNegative("bulk-load-every", v["bulk-load-every"], 2);
    if (loadEveryMs <= 0) throw new Error("--bulk-load-every must be above 0");
    return {
      scenarios: scenarios.filter((sc) => sc !== "backlog" || backlog > 0) as BulkScenario[],
      sizes,
      loadSize: positive(
        "bulk-load-size",
        v["bulk-load-size"],
        sizes.includes(2000) ? 2000 : Math.max(...sizes),
      ),
      loadEveryMs,
      tenantDocs: positive("bulk-tenant-docs", v["bulk-tenant-docs"], 20),
      tenantAfterMs: 1000 * nonNegative("bulk-tenant-after", v["bulk-tenant-after"], 30),
      backlog,
      backlogWatchMs: 1000 * nonNegative("bulk-backlog-watch", v["bulk-backlog-watch"], 180),
      drainMs: 1000 * nonNegative("bulk-drain", v["bulk-drain"], 300),
      embedderDocs: positive("bulk-embedder-docs", v["bulk-embedder-docs"], 2000),
      batch: 500,
      inFlight: positive("bulk-in-flight", v["bulk-in-flight"], 3),
      singlesSize: positive("bulk-singles-size", v["bulk-singles-size"], 1000),
      singlesInFlight: positive("bulk-singles-in-flight", v["bulk-singles-in-flight"], 4),
      timeoutMs: 60_000 * nonNegative("bulk-timeout", v["bulk-timeout"], 180),
      stallMs: 60_000 * nonNegative("bulk-stall", v["bulk-stall"], 5),
      threads: ctx.threads,
      // Filled in by run() when left to the default (the embedder name is resolved on this machine).
      embeddingModel: typeof v.embedder === "string" ? v.embedder : "",
      logLevel: typeof v["bulk-log-level"] === "string" ? v["bulk-log-level"] : "warn",
      extraEnv: keyValues("bulk-env", v["bulk-env"]),
    };
  },
  async run(o, ctx) {
    const { runBulk } = await import("./bulk.ts");
    const { resolveDefaultEmbedder } = await import("../pipeline/embedder/index.ts");
    if (!o.embeddingModel) o.embeddingModel = resolveDefaultEmbedder().name;
    return runBulk(ctx.cleanup, o, ctx.corpus(), ctx.queries());
  },
  render: (r, _o, h) => renderBulkSection(r, runMeta(h)).split("\n"),
  headline: (r) => {
    const largest = [...r.imports].sort((a, b) => b.size - a.size)[0];
    return largest ? { "bulk documents/s": `${rate(largest.docsPerSecond)} at ${n(largest.size)}` } : {};
  },
  terminal: (r) => bulkSummaryLines(r),
};

const scale: Scenario<ScaleOptions, ScaleResult> = {
  name: "scale",
  inDefault: false,
  about:
    "separate API and worker processes on native PostgreSQL: ingestion by worker count, search under concurrent load, the embedded daemon's memory at 100,000 chunks; about an hour (needs `node scripts/setup.mjs --test`)",
  sections: [{ heading: SCALE_HEADING, flags: "--with scale" }],
  args: {
    "scale-docs": str,
    "scale-workers": str,
    "scale-search-chunks": str,
    "scale-build-memory": str,
    "scale-connections": str,
    "scale-duration": str,
    "scale-warmup": str,
    "scale-pg": { type: "string", multiple: true },
    "scale-memory-chunks": str,
    "scale-skip-ingest": flag,
    "scale-skip-search": flag,
    "scale-skip-memory": flag,
  },
  help: [
    "--scale-docs 200  --scale-workers 1,2          ingestion by number of worker processes",
    "--scale-search-chunks 10000  --scale-connections 1,4,16  --scale-duration 15 (s per row)",
    "     past 100,000 search chunks the rest are blends of two real ones (bench/lib/blended-chunks.ts): 1000000 works",
    "--scale-build-memory SIZE      maintenance_work_mem of that store's HNSW build (default: 3 kB per chunk, at least 256MB)",
    "--scale-warmup 5 (s of searches before the rows)  --scale-pg NAME=VALUE (repeatable: a PostgreSQL server setting, e.g. shared_buffers=6GB)",
    "--scale-memory-chunks 100000                   the embedded daemon's memory on a store this big",
    "--scale-skip-ingest | --scale-skip-search | --scale-skip-memory   leave a part out (the page says so)",
  ],
  options: (v) => ({
    docs: positive("scale-docs", v["scale-docs"], 200),
    workers: positiveList("scale-workers", v["scale-workers"], [1, 2]),
    searchChunks: positive("scale-search-chunks", v["scale-search-chunks"], 10_000),
    buildMemory:
      v["scale-build-memory"] !== undefined
        ? String(v["scale-build-memory"])
        : // pgvector's graph of 384-d vectors takes about 2 kB per element: the whole of it fits with room.
          `${Math.max(256, Math.ceil((positive("scale-search-chunks", v["scale-search-chunks"], 10_000) * 3) / 1024))}MB`,
    connections: positiveList("scale-connections", v["scale-connections"], [1, 4, 16]),
    durationS: positive("scale-duration", v["scale-duration"], 15),
    warmupS: positive("scale-warmup", v["scale-warmup"], 5),
    serverSettings: keyValues("scale-pg", v["scale-pg"]),
    memoryChunks: positive("scale-memory-chunks", v["scale-memory-chunks"], 100_000),
    skipIngest: v["scale-skip-ingest"] === true,
    skipSearch: v["scale-skip-search"] === true,
    skipMemory: v["scale-skip-memory"] === true,
  }),
  async run(o, ctx) {
    const { runScale } = await import("./scale.ts");
    return runScale(o, {
      cleanup: ctx.cleanup,
      corpus: ctx.corpus(),
      queries: ctx.queries(),
      temporalAddress: async () => (await ctx.temporal()).address,
    });
  },
  render: (r, o) => renderScaleSection(r, o),
  headline: (r) => {
    const [one, ...more] = r.ingest;
    const best = [...more].sort((a, b) => b.docsPerSecond - a.docsPerSecond)[0];
    const figures: Record<string, string> = {};
    if (one && best)
      figures["scale workers"] = `${best.workers}: ${(best.docsPerSecond / one.docsPerSecond).toFixed(2)}×`;
    // The single-connection row is the latency one user sees; the seeding figures size a deployment.
    const single = r.search?.runs.find((run) => run.apis === 1 && run.connections === 1);
    if (r.search && single)
      figures["scale search p95, 1 connection"] = `${ms(single.latency.p95)} at ${n(r.search.chunks)}`;
    const seeding = r.search?.seeding;
    if (seeding)
      figures["scale HNSW build"] = `${(seeding.hnswMs / 1000).toFixed(0)} s, ${gib(seeding.hnswBytes)}`;
    return figures;
  },
};

const connections: Scenario<ConnectionsOptions, ConnectionsResult> = {
  name: "connections",
  inDefault: false,
  about:
    "a big connection's first sync (10,000 files on a local S3 server) beside a small connection's incremental sync and single adds; tens of minutes",
  sections: [{ heading: CONNECTIONS_HEADING, flags: "--with connections" }],
  args: {
    "connections-big": str,
    "connections-small": str,
    "connections-changes": str,
    "connections-adds": str,
    "connections-backlog": str,
    "connections-in-flight": str,
    "connections-env": { type: "string", multiple: true },
  },
  help: [
    "--connections-big 10000  --connections-small 20   files in the two buckets",
    "--connections-changes 5  --connections-adds 5     the small connection's new files; single adds timed",
    "--connections-backlog 2000                        archive documents saved before the busy phase is timed",
    "--connections-in-flight <MAX_DOCUMENTS_IN_FLIGHT>  --connections-env KEY=VALUE (repeatable)",
  ],
  options(v, ctx) {
    return {
      big: positive("connections-big", v["connections-big"], 10_000),
      small: positive("connections-small", v["connections-small"], 20),
      changes: positive("connections-changes", v["connections-changes"], 5),
      adds: positive("connections-adds", v["connections-adds"], 5),
      backlog: positive("connections-backlog", v["connections-backlog"], 2_000),
      threads: ctx.threads,
      // 0: the service's MAX_DOCUMENTS_IN_FLIGHT default, resolved in run().
      inFlight:
        v["connections-in-flight"] === undefined
          ? 0
          : positive("connections-in-flight", v["connections-in-flight"], 1),
      env: keyValues("connections-env", v["connections-env"]),
    };
  },
  async run(o, ctx) {
    const { runConnections } = await import("./connections.ts");
    const { loadConfig } = await import("../config/env.ts");
    if (!o.inFlight) o.inFlight = loadConfig({}).MAX_DOCUMENTS_IN_FLIGHT;
    return runConnections(o, ctx.cleanup);
  },
  render: (r) => renderConnectionsSection(r),
  headline: (r) => ({
    "connections sync busy/idle":
      r.idle.syncMs > 0 ? `${(r.during.syncMs / r.idle.syncMs).toFixed(2)}×` : "n/a",
  }),
};

interface EvalOptions {
  embedder?: string;
  queries?: number;
  modes?: string;
  threads: number;
  reset: boolean;
  scores: boolean;
  /** More arguments for bench/eval.ts, passed as they are. */
  extra: string[];
}

/** What bench/eval.ts writes with --result-json. */
interface EvalRun {
  report: EvalResult;
  spreads?: Spread[];
}

const evalScenario: Scenario<EvalOptions, EvalRun> = {
  name: "eval",
  inDefault: false,
  about:
    "retrieval quality on SciFact (nDCG@10, recall@100 per retrieval mode) through the API, with --eval-scores the score spreads; the first run ingests 5,183 abstracts (an hour or more), later ones reuse the store",
  sections: [
    { heading: SCIFACT_HEADING, flags: "--with eval" },
    { heading: SCORES_HEADING, flags: "--with eval --eval-scores" },
  ],
  args: {
    "eval-embedder": str,
    "eval-queries": str,
    "eval-modes": str,
    "eval-reset": flag,
    "eval-scores": flag,
    "eval-arg": { type: "string", multiple: true },
  },
  help: [
    "--eval-embedder use-lite  --eval-queries 300  --eval-modes keyword,vector,hybrid,rrf,rerank",
    "--eval-reset               ingest the corpus again (the store is cached per model)",
    "--eval-scores              also how the scores of relevant and irrelevant results spread",
    "--eval-arg ARG             one more argument for bench/eval.ts as it is (repeatable), e.g. --eval-arg=--sweep",
  ],
  options: (v, ctx) => ({
    ...(typeof v["eval-embedder"] === "string" ? { embedder: v["eval-embedder"] } : {}),
    ...(v["eval-queries"] !== undefined ? { queries: positive("eval-queries", v["eval-queries"], 300) } : {}),
    ...(typeof v["eval-modes"] === "string" ? { modes: v["eval-modes"] } : {}),
    threads: ctx.threads,
    reset: v["eval-reset"] === true,
    scores: v["eval-scores"] === true,
    extra: (v["eval-arg"] as string[] | undefined) ?? [],
  }),
  async run(o, ctx) {
    // bench/eval.ts runs as its own process (its own service and Temporal server) and hands its figures back as JSON.
    const dir = mkdtempSync(path.join(tmpdir(), "memory-bench-eval-"));
    ctx.cleanup.add("eval result directory", () => rmSync(dir, { recursive: true, force: true }));
    const out = path.join(dir, "eval.json");
    const args = [
      path.join(ROOT, "bench", "eval.ts"),
      "--result-json",
      out,
      "--threads",
      String(o.threads),
      ...(o.embedder ? ["--embedder", o.embedder] : []),
      ...(o.queries ? ["--queries", String(o.queries)] : []),
      ...(o.modes ? ["--modes", o.modes] : []),
      ...(o.reset ? ["--reset"] : []),
      ...(o.scores ? ["--scores"] : []),
      ...o.extra,
    ];
    const child = spawn(path.join(ROOT, "node_modules", ".bin", "tsx"), args, {
      cwd: ROOT,
      stdio: "inherit",
    });
    const stop = ctx.cleanup.add("bench/eval.ts", () => {
      if (child.exitCode === null) child.kill("SIGTERM");
    });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (c) => resolve(c));
    });
    await stop();
    if (code !== 0) throw new Error(`bench/eval.ts exited with ${code}`);
    return JSON.parse(readFileSync(out, "utf8")) as EvalRun;
  },
  async render(r, _o, h) {
    // The run's command and commit, not those of the child process that measured.
    const report: EvalResult = { ...r.report, command: h.command, revision: revisionLabel(h.revision) };
    const { renderScores, SCORE_THRESHOLDS } = await import("./eval.ts");
    const { renderEvalSection } = await import("./lib/eval-report.ts");
    const { spreadTable } = await import("./lib/score-distribution.ts");
    const out: string[] = [];
    if (report.modes?.length || report.sweep) out.push(...renderEvalSection(report).split("\n"));
    if (r.spreads?.length)
      out.push(...renderScores(report, r.spreads, spreadTable(r.spreads, SCORE_THRESHOLDS)).split("\n"));
    return out;
  },
  headline: (r) => {
    const hybrid = r.report.modes?.find((m) => m.mode === "hybrid" && !m.unavailable);
    const test = hybrid?.figures?.test.ndcg10;
    return test != null ? { "SciFact nDCG@10 (hybrid, held-out test half)": Number(test).toFixed(3) } : {};
  },
  terminal: (r) =>
    (r.report.modes ?? []).map((m) => {
      if (m.unavailable || !m.figures)
        return `SciFact ${m.mode}: not available (${m.unavailable ?? "no figures"})`;
      const f = (v: number | null) => (v == null ? "n/a" : v.toFixed(3));
      return `SciFact ${m.mode}: nDCG@10 dev ${f(m.figures.dev.ndcg10)} / test ${f(m.figures.test.ndcg10)}, recall@100 test ${f(m.figures.test.recall100)}`;
    }),
};

const searchImported: Scenario<ImportedSearchOptions, ImportedSearchResult> = {
  name: "search-imported",
  inDefault: false,
  about:
    "search latency on a store filled through the service's store path (imports, deletes, updates, the scheduled passes), in one big tag and in small tags, one client and --imported-clients at once; about half an hour at 100,000 chunks (no model for the documents)",
  sections: [{ heading: IMPORTED_HEADING, flags: "--with search-imported" }],
  args: {
    "imported-chunks": str,
    "imported-tags": str,
    "imported-chunks-per-doc": str,
    "imported-churn": str,
    "imported-searches": str,
    "imported-clients": str,
    "imported-store": str,
  },
  help: [
    "--imported-chunks 100000   live chunks after the deletes",
    "--imported-tags 1000       small tags the documents are spread over (each also carries the tag `all`)",
    "--imported-chunks-per-doc 2  --imported-churn 0.05 (share deleted, and another share updated)",
    "--imported-searches 200    requests per row  --imported-clients 8 (the concurrency rows)",
    "--imported-store DIR       keep the filled store in DIR and reuse it next time (experiments; not for the page)",
  ],
  options: (v, ctx) => {
    const churn = nonNegative("imported-churn", v["imported-churn"], 0.05);
    if (churn >= 0.5) throw new Error("--imported-churn must be below 0.5");
    return {
      chunks: positive("imported-chunks", v["imported-chunks"], 100_000),
      tags: positive("imported-tags", v["imported-tags"], 1000),
      chunksPerDoc: positive("imported-chunks-per-doc", v["imported-chunks-per-doc"], 2),
      churn,
      searches: positive("imported-searches", v["imported-searches"], 200),
      clients: positive("imported-clients", v["imported-clients"], 8),
      threads: ctx.threads,
      ...(typeof v["imported-store"] === "string" ? { store: v["imported-store"] } : {}),
      // The service reads it from the environment (bench/lib/service.ts); recorded so a run with another pool says so.
      ...(process.env.PGLITE_SHARED_BUFFERS ? { sharedBuffers: process.env.PGLITE_SHARED_BUFFERS } : {}),
      ...(process.env.EMBEDDING_QUERY_PRECISION
        ? { queryPrecision: process.env.EMBEDDING_QUERY_PRECISION }
        : {}),
    };
  },
  async run(o, ctx) {
    const { runImportedSearch } = await import("./search-imported.ts");
    const temporal = await ctx.temporal();
    return runImportedSearch({
      ...o,
      cleanup: ctx.cleanup,
      temporalAddress: temporal.address,
      queries: ctx.queries(),
    });
  },
  render: (r, o, _h, run) =>
    renderImportedSection(r, o, run?.results.search?.result as SearchResult | undefined),
  headline: (r) => {
    const v3 = r.sequential.find((s) => s.route === "POST /v3/search");
    return v3 ? { "imported search p95": `${ms(v3.client.p95)} at ${n(r.liveChunks)}` } : {};
  },
  terminal: (r) => [
    ...r.sequential.map(
      (s) =>
        `imported ${s.route} in ${s.scope}: p50 ${ms(s.client.p50)}, p95 ${ms(s.client.p95)}, ${s.errors} errors`,
    ),
    ...r.concurrent.map(
      (c) =>
        `imported ${c.clients} clients ${c.route} in ${c.scope}: p95 ${ms(c.latency.p95)}, ${c.errors} errors`,
    ),
  ],
};

const searchMemories: Scenario<MemorySearchOptions, MemorySearchResult> = {
  name: "search-memories",
  inDefault: false,
  about:
    "memory search (/v4/search, mode memories) on a store of memories added through the store path, in one big container and in small ones, one client and --memories-clients at once; about 25 min at 100,000 memories (no model for the memories)",
  sections: [{ heading: MEMORY_SEARCH_HEADING, flags: "--with search-memories" }],
  args: {
    "memories-count": str,
    "memories-tags": str,
    "memories-searches": str,
    "memories-clients": str,
    "memories-store": str,
  },
  help: [
    "--memories-count 100000    memories in the big container (as many again over the small ones)",
    "--memories-tags 1000       small containers  --memories-searches 200  --memories-clients 8",
    "--memories-store DIR       keep the filled store in DIR and reuse it next time (experiments; not for the page)",
  ],
  options: (v, ctx) => ({
    memories: positive("memories-count", v["memories-count"], 100_000),
    tags: positive("memories-tags", v["memories-tags"], 1000),
    searches: positive("memories-searches", v["memories-searches"], 200),
    clients: positive("memories-clients", v["memories-clients"], 8),
    threads: ctx.threads,
    ...(typeof v["memories-store"] === "string" ? { store: v["memories-store"] } : {}),
  }),
  async run(o, ctx) {
    const { runMemorySearch } = await import("./search-memories.ts");
    const temporal = await ctx.temporal();
    return runMemorySearch({
      ...o,
      cleanup: ctx.cleanup,
      temporalAddress: temporal.address,
      queries: ctx.queries(),
    });
  },
  render: (r, o) => renderMemorySearchSection(r, o),
  headline: (r) => {
    const big = r.sequential[0];
    return big ? { "memory search p95": `${ms(big.client.p95)} at ${n(r.memories)} in one container` } : {};
  },
  terminal: (r) => [
    ...r.sequential.map(
      (s) =>
        `memories ${s.route} in ${s.scope}: p50 ${ms(s.client.p50)}, p95 ${ms(s.client.p95)}, ${s.errors} errors`,
    ),
    ...r.concurrent.map(
      (c) => `memories ${c.clients} clients in ${c.scope}: p95 ${ms(c.latency.p95)}, ${c.errors} errors`,
    ),
  ],
};

const churn: Scenario<ChurnOptions, ChurnResult> = {
  name: "churn",
  inDefault: false,
  about:
    "the embedded store after months of adds, deletes and updates with the maintenance schedule's passes, against a fresh load of the same rows: sizes and search; about 75 min at 100,000 adds (no model)",
  sections: [{ heading: CHURN_HEADING, flags: "--with churn" }],
  args: {
    "churn-adds": str,
    "churn-deletes": str,
    "churn-updates": str,
    "churn-tags": str,
    "churn-chunks-per-doc": str,
    "churn-rounds": str,
    "churn-maintain": str,
    "churn-searches": str,
    "churn-steps": flag,
  },
  help: [
    "--churn-adds 100000 --churn-deletes 50000 --churn-updates 50000   documents added, deleted, updated",
    "--churn-tags 1  --churn-chunks-per-doc 1  --churn-rounds 10  --churn-searches 300",
    "--churn-maintain rounds    the schedule's pass after each round (rounds) or only after the last (end)",
    "--churn-steps              then VACUUM, ANALYZE, REINDEX, VACUUM FULL by hand, a snapshot after each",
  ],
  options: (v) => {
    const maintain = (v["churn-maintain"] as string | undefined) ?? "rounds";
    if (maintain !== "rounds" && maintain !== "end") throw new Error("--churn-maintain is rounds or end");
    const o: ChurnOptions = {
      adds: positive("churn-adds", v["churn-adds"], 100_000),
      deletes: nonNegative("churn-deletes", v["churn-deletes"], 50_000),
      updates: nonNegative("churn-updates", v["churn-updates"], 50_000),
      tags: positive("churn-tags", v["churn-tags"], 1),
      chunksPerDoc: positive("churn-chunks-per-doc", v["churn-chunks-per-doc"], 1),
      rounds: positive("churn-rounds", v["churn-rounds"], 10),
      maintain,
      searches: positive("churn-searches", v["churn-searches"], 300),
      seed: 25,
      steps: v["churn-steps"] === true,
    };
    if (o.deletes > o.adds) throw new Error("--churn-deletes cannot exceed --churn-adds");
    return o;
  },
  async run(o) {
    const { runChurn } = await import("./churn.ts");
    return runChurn(o);
  },
  render: (r, o) => renderChurnSection(r, o),
  headline: (r) => {
    const compared = churnComparisons(r);
    const p95 = compared.find((c) => c.what === "search p95");
    const sizes = compared.filter((c) => c.unit === "bytes" && c.fresh >= 8192);
    const worst = sizes.reduce<(typeof sizes)[0] | undefined>(
      (a, b) => (a === undefined || b.after / b.fresh > a.after / a.fresh ? b : a),
      undefined,
    );
    return {
      "months: worst size, p95 vs fresh":
        worst && p95
          ? `${(worst.after / worst.fresh).toFixed(2)}× (${worst.what}), ${(p95.after / p95.fresh).toFixed(2)}×`
          : undefined,
    };
  },
  terminal: (r) =>
    churnComparisons(r).map(
      (c) =>
        `churn ${c.what}: fresh ${c.fresh.toFixed(c.unit === "ms" ? 1 : 0)}, after ${c.after.toFixed(c.unit === "ms" ? 1 : 0)}${withinGoal(c) ? "" : " (over 1.2×)"}`,
    ),
};

const attack: Scenario<AttackOptions, AttackResult> = {
  name: "attack",
  inDefault: true,
  about:
    "clients of two tenants searching and adding, alone and then beside an attacker from their address (huge chunked bodies, made-up keys, sign-in floods): errors, p95, the service's memory, lost adds; about 2 × --attack-phase plus a few minutes",
  sections: [{ heading: ATTACK_HEADING, flags: "--with attack" }],
  args: {
    "attack-phase": str,
    "attack-clients": str,
    "attack-add-share": str,
    "attack-think": str,
    "attack-body-mib": str,
    "attack-bodies": str,
    "attack-body-rate": str,
    "attack-key-rate": str,
    "attack-sign-in-rate": str,
    "attack-guard-mib": str,
    "attack-env": { type: "string", multiple: true },
  },
  help: [
    "--attack-phase 120         seconds of each phase (clients alone, then with the attacker)",
    "--attack-clients 8  --attack-add-share 0.2  --attack-think 100 (ms between an answer and the next request)",
    "--attack-body-mib 300  --attack-body-rate 5 (chunked bodies started per second)  --attack-bodies 2 (in flight)",
    "--attack-key-rate 50  --attack-sign-in-rate 10   made-up bearer keys and console sign-ins per second",
    "     (each rate: 0 = as fast as the answers come)",
    "--attack-guard-mib 2048    stop the attacker if the service's RSS rises this far above idle (a shared machine)",
    "--attack-env KEY=VALUE     more service settings (repeatable)",
  ],
  options: (v, ctx) => {
    const share = nonNegative("attack-add-share", v["attack-add-share"], 0.2);
    if (share > 1) throw new Error("--attack-add-share is a share from 0 to 1");
    return {
      phaseS: positive("attack-phase", v["attack-phase"], 120),
      clients: positive("attack-clients", v["attack-clients"], 8),
      tenants: 2,
      addShare: share,
      thinkMs: nonNegative("attack-think", v["attack-think"], 100),
      seedDocs: 20,
      bodyMiB: positive("attack-body-mib", v["attack-body-mib"], 300),
      bodyRate: nonNegative("attack-body-rate", v["attack-body-rate"], 5),
      bodiesInFlight: positive("attack-bodies", v["attack-bodies"], 2),
      keyRate: nonNegative("attack-key-rate", v["attack-key-rate"], 50),
      signInRate: nonNegative("attack-sign-in-rate", v["attack-sign-in-rate"], 10),
      guardMiB: positive("attack-guard-mib", v["attack-guard-mib"], 2048),
      threads: ctx.threads,
      env: keyValues("attack-env", v["attack-env"]),
    };
  },
  async run(o, ctx) {
    const { runAttack } = await import("./attack.ts");
    return runAttack(o, ctx.cleanup);
  },
  render: (r) => renderAttackSection(r),
  headline: (r) => {
    const c = attackChecks(r);
    return {
      "attack: client errors, p95 ratio, RSS rise": `${c.errors}, ${Number.isFinite(c.ratio) ? `${c.ratio.toFixed(2)}×` : "n/a"}, ${Math.round(c.rise / 2 ** 20)} MiB`,
    };
  },
  terminal: (r) => {
    const c = attackChecks(r);
    return [
      `attack: client errors ${r.baseline.errors} alone, ${r.attack.errors} with the attacker ${JSON.stringify(r.attack.errorsBy)}`,
      `attack: p95 ${r.baseline.latency.p95.toFixed(1)} ms alone, ${r.attack.latency.p95.toFixed(1)} ms with the attacker (${c.ratio.toFixed(2)}×)`,
      `attack: service RSS idle ${Math.round(r.rssIdleBytes / 2 ** 20)} MiB, peak ${Math.round(r.baseline.rssPeakBytes / 2 ** 20)} / ${Math.round(r.attack.rssPeakBytes / 2 ** 20)} MiB${r.guardTripped ? " (guard tripped)" : ""}`,
      `attack: after the flood ${r.afterFlood.map((a) => `${a.who} ${a.status ?? a.error}`).join(", ")}; missing adds ${c.missing}`,
      ...Object.entries(r.attacker.kinds).map(
        ([k, s]) =>
          `attack: ${k} sent ${s.sent}, answers ${JSON.stringify(s.statuses)}, no answer ${JSON.stringify(s.noAnswer)}`,
      ),
    ];
  },
};

/** Every scenario, in the order a run takes them and the page shows them. */
export const SCENARIOS: Scenario[] = [
  ingest,
  search,
  searchImported,
  searchMemories,
  churn,
  extraction,
  evalScenario,
  scale,
  bulk,
  connections,
  attack,
] as Scenario[];

export function scenario(name: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.name === name);
}

const list = (v: unknown) =>
  typeof v === "string"
    ? v
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean)
    : [];

/** The scenario names a command line selects, in registry order. */
export function selectScenarios(v: ArgValues): string[] {
  const known = new Set(SCENARIOS.map((s) => s.name));
  for (const name of [...list(v.with), ...list(v.only), ...list(v.skip)])
    if (!known.has(name)) throw new Error(`unknown scenario "${name}" (known: ${[...known].join(", ")})`);
  let chosen: Set<string>;
  if (v.only !== undefined) chosen = new Set(list(v.only));
  else if (v.all) chosen = new Set(known);
  else chosen = new Set([...SCENARIOS.filter((s) => s.inDefault).map((s) => s.name), ...list(v.with)]);
  for (const name of list(v.skip)) chosen.delete(name);
  return SCENARIOS.map((s) => s.name).filter((name) => chosen.has(name));
}
