// Retrieval quality on SciFact through the real API and pipeline: the embedded default service
// (PGlite, a Temporal dev server started here, the worker and the API in this process) ingests the
// 5,183 abstracts over HTTP, then the 300 judged queries go to POST /v3/search in each retrieval mode;
// nDCG@10, recall@100 and MRR@10 against qrels/test.tsv, reported separately for the two halves of the
// committed split (bench/scifact-split.json): `dev`, the only half search defaults are tuned on, and
// `test`, held out. --sweep measures the candidates of each tuned default (store/search/tuning.ts) on
// both halves and picks by dev nDCG@10. The service's data dir is kept per embedding model under
// <cacheDir>/eval/, so a second run skips ingestion (and a partial one is resumed).
// Usage: npm run eval -- [--embedder use-lite] [--queries N] [--modes keyword,vector,hybrid,rrf,rerank]
// [--sweep] [--threads N] [--data-dir DIR] [--reset] [--scores] [--result-json FILE]
// The result object and its markdown: bench/lib/eval-report.ts (renderEvalSection, called by the page).

import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { loadConfig } from "../config/env.ts";
import { cacheDir } from "../config/paths.ts";
import { BGE_SMALL_MODEL } from "../pipeline/embedder/bge-small.ts";
import { resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import { USE_LITE_MODEL } from "../pipeline/embedder/use-lite.ts";
import { cosineOf } from "../services/similarity.ts";
import { type SearchTuning, searchTuning, setSearchTuning, TUNED_SEARCH } from "../store/search/tuning.ts";
import { type Abstract, readCorpus, SCIFACT_DIR } from "./lib/corpus.ts";
import {
  chooseOnDev,
  type EvalResult,
  fixed,
  type Half,
  MODE_LABELS,
  MODES,
  type Mode,
  type ModeResult,
  modeTableLines,
  PUBLISHED,
  type QueryScore,
  type SplitFigures,
  type SweepCandidate,
  type SweepResult,
  sameTuning,
  scoreRanking,
  splitFigures,
  sweepTableLines,
} from "./lib/eval-report.ts";
import { log, progress } from "./lib/progress.ts";
import { machine } from "./lib/report.ts";
import { revision } from "./lib/revision.ts";
import { type JudgedQuery, readJudgedQueries } from "./lib/scifact.ts";
import {
  memorySpread,
  SCORES_HEADING,
  type Spread,
  scifactSpreads,
  spreadTable,
} from "./lib/score-distribution.ts";
import { Cleanup, startBenchService, startTemporal } from "./lib/service.ts";
import { readSplit, SPLIT_FILE, splitOf } from "./lib/split.ts";
import { summarize } from "./lib/stats.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const TAG = "scifact";
const ADD_CONCURRENCY = 4;
const POLL_MS = 2_000;
/** Documents unfinished at once while adding (below the processing list's cap of 500, so its count is exact). */
const WINDOW = 200;
const STALL_MS = 10 * 60_000;

const customIdOf = (a: Abstract) => `scifact-${a.id}`;
const contentOf = (a: Abstract) => (a.title ? `${a.title}\n\n${a.text}` : a.text);

/** Plain HTTP against the service (fetch, no SDK): what the request sends is exactly what is written here. */
class Api {
  constructor(
    private readonly base: string,
    private readonly key: string,
  ) {}

  async call<T>(method: "GET" | "POST", route: string, body?: unknown): Promise<{ status: number; json: T }> {
    const res = await fetch(`${this.base}${route}`, {
      method,
      headers: { authorization: `Bearer ${this.key}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = text;
    }
    return { status: res.status, json: json as T };
  }

  async ok<T>(method: "GET" | "POST", route: string, body?: unknown): Promise<T> {
    const { status, json } = await this.call<T>(method, route, body);
    if (status !== 200) throw new Error(`${method} ${route} → ${status}: ${JSON.stringify(json)}`);
    return json;
  }
}

function errorMessage(json: unknown): string {
  const e = (json as { error?: { message?: string } } | undefined)?.error;
  return e?.message ?? (typeof json === "string" ? json : JSON.stringify(json));
}

async function mapLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Ingestion

interface DocState {
  status: string;
  errorReason: string | null;
}

interface ListPage {
  memories: { customId: string | null; status: string; errorReason: string | null }[];
  pagination: { totalPages: number; totalItems: number };
}

/** Every document under the scifact tag, by customId (26 pages of 200). */
async function listAll(api: Api): Promise<Map<string, DocState>> {
  const out = new Map<string, DocState>();
  for (let page = 1; ; page++) {
    const res = await api.ok<ListPage>("POST", "/v3/documents/list", {
      containerTags: [TAG],
      limit: 200,
      page,
      sort: "createdAt",
      order: "asc",
    });
    for (const d of res.memories) {
      if (d.customId) out.set(d.customId, { status: d.status, errorReason: d.errorReason });
    }
    if (page >= res.pagination.totalPages) break;
  }
  return out;
}

interface IngestMeta {
  model: string;
  docs: number;
  /** Wall time of the run that ingested the corpus from an empty store (absent when only resumed). */
  wallMs?: number;
  /** Sum of the wall times of every run that added or waited for documents. */
  totalMs: number;
  runs: number;
  finishedAt?: string;
}

interface IngestOutcome {
  /** Documents added (or re-added after a failure) in this run; 0 when the cache was complete. */
  added: number;
  /** Wall time of ingestion in this run (0 when skipped). */
  ms: number;
  done: number;
  failed: { customId: string; reason: string | null }[];
  meta: IngestMeta;
}

async function ensureIngested(
  api: Api,
  corpus: Abstract[],
  dataDir: string,
  model: string,
): Promise<IngestOutcome> {
  const metaFile = path.join(dataDir, "eval-ingest.json");
  const meta: IngestMeta = existsSync(metaFile)
    ? (JSON.parse(readFileSync(metaFile, "utf8")) as IngestMeta)
    : { model, docs: corpus.length, totalMs: 0, runs: 0 };
  const before = await listAll(api);
  const counts = (states: Map<string, DocState>) => {
    const c: Record<string, number> = {};
    for (const s of states.values()) c[s.status] = (c[s.status] ?? 0) + 1;
    return c;
  };
  log(`ingest: ${before.size} of ${corpus.length} documents in the store ${JSON.stringify(counts(before))}`);
  // Missing ones are added; failed ones are added again (the API reprocesses a failed document).
  const toAdd = corpus.filter((a) => {
    const s = before.get(customIdOf(a));
    return !s || s.status === "failed";
  });
  const unfinished = [...before.values()].filter((s) => s.status !== "done" && s.status !== "failed").length;
  if (!toAdd.length && !unfinished) {
    log("ingest: complete in the cache, skipping");
    return { added: 0, ms: 0, done: before.size, failed: [], meta };
  }
  const fresh = before.size === 0;
  log(
    `ingest: adding ${toAdd.length} documents (${ADD_CONCURRENCY} requests at a time, at most ${WINDOW} unfinished at once), ${unfinished} already queued`,
  );
  const t0 = performance.now();
  let added = 0;
  const bar = progress("ingest: documents finished", corpus.length, 15_000);
  let lastChange = Date.now();
  let lastSeen = -1;
  for (;;) {
    // The API's processing list is exact below its cap, and the window keeps the count below it.
    const processing = await api.ok<{ totalCount: number }>("GET", "/v3/documents/processing");
    const inStore = before.size + toAdd.slice(0, added).filter((a) => !before.has(customIdOf(a))).length;
    const finished = Math.max(0, inStore - processing.totalCount);
    bar.update(finished, `${processing.totalCount} unfinished, ${added}/${toAdd.length} added`);
    if (finished !== lastSeen) {
      lastSeen = finished;
      lastChange = Date.now();
    }
    if (added === toAdd.length && processing.totalCount === 0) break;
    if (Date.now() - lastChange > STALL_MS)
      throw new Error(`ingest: no progress for ${STALL_MS / 1000} s (${processing.totalCount} unfinished)`);
    // Feed the pipeline up to the window: a steady queue, not 5,000 workflows started at once.
    const room = Math.min(WINDOW - processing.totalCount, toAdd.length - added);
    if (room >= Math.min(WINDOW / 4, toAdd.length - added) && room > 0) {
      const next = toAdd.slice(added, added + room);
      await mapLimit(next, ADD_CONCURRENCY, async (a) => {
        await api.ok("POST", "/v3/documents", {
          content: contentOf(a),
          containerTag: TAG,
          customId: customIdOf(a),
          metadata: { scifactId: a.id },
        });
      });
      added += next.length;
      continue;
    }
    await sleep(POLL_MS);
  }
  const ms = performance.now() - t0;
  const after = await listAll(api);
  bar.finish(JSON.stringify(counts(after)));
  const failed = [...after.entries()]
    .filter(([, s]) => s.status === "failed")
    .map(([customId, s]) => ({ customId, reason: s.errorReason }));
  const missing = corpus.filter((a) => !after.has(customIdOf(a)));
  if (missing.length) throw new Error(`ingest: ${missing.length} documents missing after ingestion`);
  const done = [...after.values()].filter((s) => s.status === "done").length;
  meta.runs++;
  meta.totalMs += ms;
  if (fresh) meta.wallMs = ms;
  if (done === corpus.length) meta.finishedAt = new Date().toISOString();
  writeFileSync(metaFile, `${JSON.stringify(meta, null, 2)}\n`);
  log(`ingest: ${done} done, ${failed.length} failed in ${(ms / 1000).toFixed(0)} s`);
  return { added, ms, done, failed, meta };
}

// ---------------------------------------------------------------------------------------------
// Search

interface SearchPage {
  results: { metadata: Record<string, unknown> | null }[];
  /** True only when a reranker reordered the results (servers that know rerank: true). */
  reranked?: boolean;
  warnings?: string[];
}

function searchBody(mode: Mode, q: string): Record<string, unknown> {
  const body: Record<string, unknown> = { q, containerTag: TAG, limit: 100, onlyMatchingChunks: true };
  // hybrid is the product default: sent without `retrieval`, as a client that asks for nothing gets it.
  if (mode === "keyword" || mode === "vector") body.retrieval = mode;
  if (mode === "rerank") body.rerank = true;
  // The other fusion of the two rankings, measured to justify the default (score blend).
  if (mode === "rrf") body.fusion = "rrf";
  return body;
}

/** The judged queries, with the half of the split each one is in. */
interface SplitQuery extends JudgedQuery {
  half: Half;
}

/** Sends every query in `mode`; each query's scores and the latencies. Throws on any failed search. */
async function runQueries(
  api: Api,
  mode: Mode,
  queries: SplitQuery[],
  label: string,
): Promise<{ scores: QueryScore[]; latency: number[] }> {
  const scores: QueryScore[] = [];
  const latency: number[] = [];
  const bar = progress(label, queries.length, 15_000);
  for (const [i, query] of queries.entries()) {
    const t = performance.now();
    const res = await api.call<SearchPage>("POST", "/v3/search", searchBody(mode, query.text));
    latency.push(performance.now() - t);
    if (res.status !== 200)
      throw new Error(`${mode}: search for query ${query.id} → ${res.status}: ${JSON.stringify(res.json)}`);
    if (mode === "rerank" && res.json.reranked !== true)
      throw new Error(
        `rerank: query ${query.id} was not reranked (${res.json.warnings?.join("; ") ?? "no warning"})`,
      );
    const ranked = res.json.results
      .map((r) => r.metadata?.scifactId)
      .filter((id): id is string => typeof id === "string");
    scores.push(scoreRanking(query.id, ranked, query.qrels));
    bar.update(i + 1);
  }
  return { scores, latency };
}

const halfOfQuery = (queries: SplitQuery[]) => {
  const halves = new Map(queries.map((q) => [q.id, q.half]));
  return (id: string) => halves.get(id) as Half;
};

function figuresLine(f: SplitFigures): string {
  return `nDCG@10 dev ${fixed(f.dev.ndcg10)} / test ${fixed(f.test.ndcg10)}, recall@100 dev ${fixed(f.dev.recall100)} / test ${fixed(f.test.recall100)}`;
}

async function evaluateMode(api: Api, mode: Mode, queries: SplitQuery[]): Promise<ModeResult> {
  // An untimed first request: tells whether the server offers the mode, and warms what it needs.
  const first = await api.call<SearchPage>("POST", "/v3/search", searchBody(mode, queries[0]?.text ?? "x"));
  if (first.status === 400) {
    const unavailable = errorMessage(first.json);
    log(`${mode}: not available (${unavailable})`);
    return { mode, label: MODE_LABELS[mode], unavailable, figures: null, p50: null, p95: null };
  }
  if (first.status !== 200)
    throw new Error(`${mode}: search → ${first.status}: ${JSON.stringify(first.json)}`);
  const { scores, latency } = await runQueries(api, mode, queries, `search ${mode}`);
  const figures = splitFigures(scores, halfOfQuery(queries));
  const s = summarize(latency);
  log(`${mode}: ${figuresLine(figures)}`);
  return { mode, label: MODE_LABELS[mode], figures, p50: s.p50, p95: s.p95 };
}

// ---------------------------------------------------------------------------------------------
// Tuning sweep

/** The candidates of each tuned default; each is measured with the other parameters at their defaults. */
const SWEEP: { [K in keyof SearchTuning]: SearchTuning[K][] } = {
  fusion: ["blend", "rrf"],
  blendVectorWeight: [0.3, 0.4, 0.5, 0.6, 0.7],
  keywordRank: ["ts_rank/1", "ts_rank/0", "ts_rank_cd/0"],
  maxTermFrequency: [0.01, 0.03, 0.05, 1],
};

async function hybridWith(api: Api, queries: SplitQuery[], tuning: SearchTuning, label: string) {
  setSearchTuning(tuning);
  try {
    const { scores } = await runQueries(api, "hybrid", queries, label);
    return splitFigures(scores, halfOfQuery(queries));
  } finally {
    setSearchTuning();
  }
}

async function sweep(api: Api, queries: SplitQuery[]): Promise<SweepResult> {
  const defaults = { ...TUNED_SEARCH };
  const candidates: SweepCandidate[] = [];
  log("sweep: the defaults");
  const baseline = await hybridWith(api, queries, defaults, "sweep: defaults");
  log(`sweep: defaults ${JSON.stringify(defaults)}: ${figuresLine(baseline)}`);
  for (const parameter of Object.keys(SWEEP) as (keyof SearchTuning)[]) {
    for (const value of SWEEP[parameter]) {
      const tuning = { ...defaults, [parameter]: value } as SearchTuning;
      const isDefault = defaults[parameter] === value;
      const figures = isDefault
        ? baseline
        : await hybridWith(api, queries, tuning, `sweep: ${parameter} = ${value}`);
      if (!isDefault) log(`sweep: ${parameter} = ${value}: ${figuresLine(figures)}`);
      candidates.push({ parameter, value, isDefault, tuning, figures });
    }
  }
  const chosen = chooseOnDev(defaults, candidates);
  const result: SweepResult = { mode: "hybrid", chosenBy: "dev nDCG@10", defaults, candidates, chosen };
  if (!sameTuning(chosen, defaults)) {
    result.combined = { tuning: chosen, figures: await hybridWith(api, queries, chosen, "sweep: chosen") };
    log(`sweep: chosen ${JSON.stringify(chosen)}: ${figuresLine(result.combined.figures)}`);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Report

function ingestionLine(ingest: IngestOutcome, corpus: number): string {
  const minutes = (ms: number) => `${(ms / 60_000).toFixed(1)} min`;
  const from = ingest.meta.wallMs
    ? `ingested from an empty store in ${minutes(ingest.meta.wallMs)}`
    : `ingested over ${ingest.meta.runs} runs, ${minutes(ingest.meta.totalMs)} in all`;
  const now = ingest.added
    ? `this run added ${ingest.added} and waited ${minutes(ingest.ms)}`
    : "this run reused the cached store";
  const failed = ingest.failed.length
    ? `; **${ingest.failed.length} failed**: ${ingest.failed
        .slice(0, 10)
        .map((f) => `\`${f.customId}\` (${f.reason ?? "no reason"})`)
        .join(", ")}${ingest.failed.length > 10 ? ", …" : ""}`
    : "";
  return `${ingest.done} of ${corpus} documents \`done\` (${from}; ${now})${failed}`;
}

/** The machine in one phrase, as the other sections of the page name it. */
function machineLine(): string {
  const m = machine();
  return `${m.cpu} (${m.cores} cores, ${m.memory}), Node ${m.node}, ${m.os}`;
}

// ---------------------------------------------------------------------------------------------

function positive(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${value}"`);
  return n;
}

function parseModes(value: string | undefined): Mode[] {
  if (!value) return [...MODES];
  const modes = value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const m of modes) {
    if (!(MODES as readonly string[]).includes(m))
      throw new Error(`--modes: unknown mode "${m}" (known: ${MODES.join(", ")})`);
  }
  return [...new Set(modes)] as Mode[];
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const { values } = parseArgs({
    args: argv,
    options: {
      embedder: { type: "string" },
      queries: { type: "string" },
      modes: { type: "string" },
      threads: { type: "string" },
      reset: { type: "boolean", default: false },
      scores: { type: "boolean", default: false },
      sweep: { type: "boolean", default: false },
      "data-dir": { type: "string" },
      "result-json": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(
      "npm run eval -- [--embedder use-lite] [--queries 300] [--modes keyword,vector,hybrid,rrf,rerank]\n" +
        "                [--sweep] [--threads <EMBEDDING_THREADS default>] [--data-dir DIR] [--reset] [--scores]\n" +
        "                [--result-json FILE]\n" +
        "  Figures are reported per half of bench/scifact-split.json: dev (search defaults are tuned on it) and test (held out).\n" +
        "  --sweep    also each candidate of the tuned search defaults (store/search/tuning.ts) in hybrid mode, chosen by dev nDCG@10\n" +
        "  --data-dir the service's store (default <cacheDir>/eval/scifact-<model>, kept between runs)\n" +
        "  --result-json  write { report, spreads } to FILE (report: bench/lib/eval-report.ts, rendered by renderEvalSection)\n" +
        "  --scores   also how the similarity of relevant and irrelevant results spreads (its own section)\n",
    );
    return 0;
  }
  const defaults = loadConfig({});
  // "auto" is what the service resolves it to here, so the cached store is named after the real model.
  const configured = values.embedder ?? defaults.EMBEDDING_MODEL;
  const model = configured === "auto" ? resolveDefaultEmbedder().name : configured;
  if (!/^[\w.-]+$/.test(model)) throw new Error(`--embedder: "${model}" is not a model name`);
  const threads = positive("threads", values.threads, defaults.EMBEDDING_THREADS);
  const modes = parseModes(values.modes);
  const command = `npm run eval${argv.length ? ` -- ${argv.join(" ")}` : ""}`;
  const dataDir = values["data-dir"]
    ? path.resolve(values["data-dir"])
    : path.join(cacheDir(), "eval", `scifact-${model}`);

  const cleanup = new Cleanup();
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: cleaning up (the store in ${dataDir} is kept; the next run resumes)`);
    cleanup.runAll().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  const rev = revision();
  const started = new Date();
  try {
    log(`reading ${SCIFACT_DIR}`);
    const corpus = readCorpus();
    const judged = readJudgedQueries("test");
    const split = readSplit();
    const halfOf = splitOf(split);
    // Every judged query must be in the committed split and the other way round (else the judgements changed).
    if (judged.length !== split.dev.length + split.test.length)
      throw new Error(
        `${judged.length} judged queries but ${split.dev.length + split.test.length} in ${SPLIT_FILE}: the judgements changed`,
      );
    const queries: SplitQuery[] = judged
      .slice(0, positive("queries", values.queries, judged.length))
      .map((q) => ({ ...q, half: halfOf(q.id) }));
    const count = (half: Half) => queries.filter((q) => q.half === half).length;
    log(
      `split: ${count("dev")} dev queries (tuning) and ${count("test")} test queries (held out), ${SPLIT_FILE}`,
    );
    if (values.reset && existsSync(dataDir)) {
      log(`--reset: removing ${dataDir}`);
      rmSync(dataDir, { recursive: true, force: true });
    }
    mkdirSync(dataDir, { recursive: true });
    log("starting a Temporal dev server on free ports");
    const temporal = await startTemporal(cleanup);
    const service = await startBenchService(cleanup, {
      dataDir,
      temporalAddress: temporal.address,
      threads,
      embeddingModel: model,
    });
    log(`service up at ${service.url} (EMBEDDING_MODEL=${model}, data in ${dataDir})`);
    const api = new Api(service.url, service.apiKey);

    const ingest = await ensureIngested(api, corpus, dataDir, model);
    if (ingest.failed.length) {
      log(
        `ingest: ${ingest.failed.length} documents FAILED (they cannot be found; scores count them as misses):`,
      );
      for (const f of ingest.failed.slice(0, 20)) log(`  ${f.customId}: ${f.reason ?? "no reason"}`);
    }

    const results: ModeResult[] = [];
    // --scores alone measures only the score spread (the SciFact table keeps its figures).
    const evaluated = values.scores && values.modes === undefined ? [] : modes;
    for (const mode of evaluated) results.push(await evaluateMode(api, mode, queries));

    const swept = values.sweep ? await sweep(api, queries) : undefined;

    const report: EvalResult = {
      kind: "scifact-eval",
      started: started.toISOString(),
      command,
      revision: rev,
      machine: machineLine(),
      model,
      threads,
      corpus: corpus.length,
      split: {
        file: path.relative(root, SPLIT_FILE),
        method: split.method,
        tuning: split.tuning,
        dev: split.dev.length,
        test: split.test.length,
        note: "this copy of SciFact has judgements only for its test queries (no train qrels), so they are split in two,",
      },
      queries: { dev: count("dev"), test: count("test") },
      tuning: { ...searchTuning() },
      ingestion: ingestionLine(ingest, corpus.length),
      modes: results,
      ...(swept ? { sweep: swept } : {}),
      published: PUBLISHED,
    };
    process.stdout.write(
      `\nSciFact, ${count("dev")} dev + ${count("test")} test queries (defaults tuned on dev only; test held out), embedder ${model}; corpus: ${report.ingestion}\n\n${modeTableLines(report).join("\n")}\n`,
    );
    for (const u of results.filter((x) => x.unavailable))
      process.stdout.write(`${u.mode}: not available (${u.unavailable})\n`);
    if (swept)
      process.stdout.write(
        `\nsweep (hybrid; chosen by dev nDCG@10):\n${sweepTableLines(swept).join("\n")}\n`,
      );
    process.stdout.write(`\npublished nDCG@10 (all 300) for orientation: ${PUBLISHED}\n\n`);
    let spreads: Spread[] | undefined;
    if (values.scores) {
      log("scores: SciFact test queries on /v3/search and /v4/search, then short facts on /v4/search");
      spreads = await scifactSpreads(api, TAG, queries);
      const memoryTag = `scores-memories-${Date.now()}`;
      spreads.push(await memorySpread(api, memoryTag, (ids) => waitAllDone(api, ids)));
      // /v4 reports a calibrated cosine (services/similarity.ts): the raw cosines beside it show what it changed.
      for (const s of spreads.filter((x) => x.route.startsWith("/v4")))
        spreads.push(rawCosines(s, modelIdOf(report.model)));
      const table = spreadTable(spreads, SCORE_THRESHOLDS);
      process.stdout.write(`\n${table.join("\n")}\n\n`);
    }
    // The result object (bench/lib/eval-report.ts): what the page is rendered from (renderEvalSection).
    if (values["result-json"]) {
      writeFileSync(path.resolve(values["result-json"]), `${JSON.stringify({ report, spreads }, null, 2)}\n`);
      log(`wrote ${values["result-json"]}`);
    }
  } finally {
    await cleanup.runAll();
  }
  return 0;
}

/** What clients filter on: 0.6 from assistant toolkits, 0.5 as a looser choice, 0.7 as a stricter one. */
export const SCORE_THRESHOLDS = [0.5, 0.6, 0.7];

async function waitAllDone(api: Api, ids: string[]): Promise<void> {
  const started = performance.now();
  for (const id of ids) {
    for (;;) {
      const doc = await api.ok<{ status: string; errorReason?: string | null }>("GET", `/v3/documents/${id}`);
      if (doc.status === "done") break;
      if (doc.status === "failed") throw new Error(`scores: document ${id} failed: ${doc.errorReason}`);
      if (performance.now() - started > STALL_MS) throw new Error("scores: facts not processed in time");
      await sleep(500);
    }
  }
}

/** The model id an embedder reports (what the calibration is keyed by) for a configured embedder name. */
function modelIdOf(name: string): string {
  return name === "bge-small" ? BGE_SMALL_MODEL : name === "use-lite" ? USE_LITE_MODEL : name;
}

/** The same results on the raw cosine scale (before the calibration /v4/search applies). */
function rawCosines(s: Spread, model: string): Spread {
  const raw = (values: number[]) => values.map((v) => cosineOf(model, v));
  return {
    label: s.label,
    route: `${s.route}: raw cosine, before calibration`,
    relevant: raw(s.relevant),
    irrelevant: raw(s.irrelevant),
  };
}

export function renderScores(r: EvalResult, spreads: Spread[], table: string[]): string {
  const memories = spreads.find((s) => s.top1);
  return [
    SCORES_HEADING,
    "",
    `Written by \`${r.command}\` on ${machineLine()} at ${r.revision}, ${r.started.slice(0, 10)}, embedder ${r.model}. ` +
      "Each SciFact test query's top 10 results on each route, each marked relevant or not by the judgements " +
      "(an unjudged abstract counts as irrelevant, so the irrelevant side overstates a little); then short facts " +
      "saved with `POST /v3/documents` (kept as memories too, no LLM) and asked for in other words " +
      "(`bench/lib/memory-pairs.ts`): the result holding the asked-for fact is relevant, the other facts are not. " +
      "The score is what the route reports: `score` of a /v3 result, `similarity` of a /v4 one (a calibrated cosine, " +
      "`services/similarity.ts`; the rows marked *raw cosine* are the same results before that calibration).",
    "",
    ...table,
    "",
    ...(memories?.top1
      ? [`The asked-for fact came first for ${memories.top1.hits} of ${memories.top1.of} questions.`, ""]
      : []),
  ].join("\n");
}

// Run only as a command: the page imports renderScores without starting an evaluation.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  main().then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(`eval failed: ${(error as Error).stack ?? error}\n`);
      process.exit(1);
    },
  );
