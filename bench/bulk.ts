// Bulk imports ("Bulk imports at the embedder's speed"): N documents submitted at once through
// POST /v3/documents/batch, timed until every one is done or failed, for several N, next to the
// embedding model's own speed on the same chunks; interactive requests and a second, small tenant
// during one of the imports; and the daemon's memory with a large backlog, then deleting it.
//
// The service runs as a child process (`main.ts`, what `npm start` runs) against a Temporal dev server
// started here, a fresh pair with a fresh PGlite DATA_DIR for every import, so no import inherits
// another's rows, workflows or caches, and resident memory is the daemon's own.

import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "drizzle-orm";
import { loadConfig } from "../config/env.ts";
import { chunkText } from "../pipeline/chunker.ts";
import { openPglite, queryRows } from "../store/db.ts";
import { bulkDocuments, tenantDocuments } from "./lib/bulk-docs.ts";
import type { Abstract } from "./lib/corpus.ts";
import { type ServiceProcess, startServiceProcess } from "./lib/daemon.ts";
import { type EmbedderRate, embedderRate } from "./lib/embedder-rate.ts";
import { type JsonClient, jsonClient, type Outcome } from "./lib/http.ts";
import { type ProcessCpu, processCpuMeter, rssOf, rssSampler } from "./lib/proc.ts";
import { log } from "./lib/progress.ts";
import type { Cleanup } from "./lib/service.ts";
import { type Summary, summarize } from "./lib/stats.ts";

export const BULK_SCENARIOS = ["rates", "singles", "load", "tenant", "backlog"] as const;
export type BulkScenario = (typeof BULK_SCENARIOS)[number];

export interface BulkOptions {
  scenarios: BulkScenario[];
  /** Import sizes of the `rates` scenario. */
  sizes: number[];
  /** The `singles` import: this many documents, each its own `POST /v3/documents` (as the CLI and SDK loops send them). */
  singlesSize: number;
  /** Single adds in flight at once (the CLI's default upload concurrency). */
  singlesInFlight: number;
  /** The import during which the interactive load and the small tenant run. */
  loadSize: number;
  loadEveryMs: number;
  tenantDocs: number;
  tenantAfterMs: number;
  backlog: number;
  backlogWatchMs: number;
  drainMs: number;
  /** The embedder alone is timed on the chunks of the first this many documents. */
  embedderDocs: number;
  batch: number;
  inFlight: number;
  timeoutMs: number;
  stallMs: number;
  threads: number;
  embeddingModel: string;
  logLevel: string;
  extraEnv: Record<string, string>;
  /** Main's Temporal dev server, idle during the embedder timing (its CPU is reported). */
  temporalPid?: number;
}

const TAG = "bench-bulk";
const TENANT_TAG = "bench-bulk-tenant";
const MEMORY_TAG = "bench-bulk-interactive";
const POLL_MS = 2_000;
const ADD_TIMEOUT_MS = 15 * 60_000;
const INTERACTIVE_TIMEOUT_MS = 120_000;
const IDLE_SAMPLES = 5;

type ImportOutcome = "complete" | "stalled" | "timed out" | "service exited";

export interface LatencyKind {
  kind: "search /v3" | "search /v4" | "memory add /v4";
  requests: number;
  /** Latency of the 2xx answers. */
  latency: Summary;
  /** The same kind, one request after another on the idle service before the import. */
  idle: Summary;
  connectionErrors: number;
  serverErrors: number;
  otherNon2xx: number;
  /** Statuses and messages of the failures, first few. */
  failures: string[];
  /** Scheduled sends skipped because the previous request of the kind was still waiting. */
  missedSlots: number;
}

interface TenantRun {
  documents: number;
  /** When the tenant's batch was sent, after the big import's first add. */
  submittedAtMs: number;
  /** Unfinished documents of the big import at that moment (the backlog ahead of the tenant). */
  bigUnfinished: number;
  answerMs: number;
  /** From sending the batch to the last of its documents done/failed (statusHistory). */
  allDoneMs: number;
  addToDone: Summary;
  done: number;
  failed: number;
  /** True when the big import had already finished when the tenant submitted. */
  afterImport: boolean;
  outcome: ImportOutcome;
}

export interface ImportRun {
  size: number;
  /** Sent one document per request (the `singles` scenario) rather than in batches. */
  singles?: boolean;
  accepted: number;
  rejected: number;
  addFailures: string[];
  chunksExpected: number;
  storedChunks: number;
  embeddedChunks: number;
  done: number;
  failed: number;
  /** All add requests answered, after the first was sent. */
  acceptMs: number;
  addRequest: Summary;
  /** First add → last done/failed (statusHistory). */
  wallMs: number;
  docsPerSecond: number;
  chunksPerSecond: number;
  addToDone: Summary;
  outcome: ImportOutcome;
  /** Why the import ended early, or store read problems. */
  notes: string[];
  serviceStartMs: number;
  warmupMs: number;
  peakRss: { service: number; temporal: number };
  idleRss: { service: number; temporal: number };
  cpu?: ProcessCpu;
  load?: LatencyKind[];
  tenant?: TenantRun;
}

export interface BacklogRun {
  documents: number;
  accepted: number;
  acceptMs: number;
  watchMs: number;
  idleRss: { service: number; temporal: number };
  peakRss: { service: number; temporal: number };
  /** Resident memory at the end of the watch, just before the delete. */
  beforeDeleteRss: { service: number; temporal: number };
  finishedAtEnd: number;
  queuedAtEnd: number;
  inProgressAtEnd: number;
  workflowsBeforeDelete?: number;
  deleteMs: number;
  deleteStatus: string;
  deletedCount?: number;
  /** Right after the delete answered. */
  processingAfter?: number;
  workflowsAfter?: number;
  taggedLeft?: number;
  /** Until no processDocument workflow was running (undefined when it did not happen within drainMs). */
  drainMs?: number;
  workflowsAtEnd?: number;
  processingAtEnd?: number;
  afterDrainRss: { service: number; temporal: number };
  healthyAfter: boolean;
  cpuSubmitWatch?: ProcessCpu;
  cpuDelete?: ProcessCpu;
  notes: string[];
}

export interface BulkResult {
  options: BulkOptions;
  documentsPerSizeWords: number;
  chunking: { maxChars: number; overlapSentences: number };
  embedder?: EmbedderRate;
  imports: ImportRun[];
  backlog?: BacklogRun;
  serviceSettings: Record<string, string>;
  totalMs: number;
}

type Kind = LatencyKind["kind"];

async function mapLimit<T>(items: T[], limit: number, fn: (item: T, i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i] as T, i);
      }
    }),
  );
}

async function countDocs(api: JsonClient, tag: string, statuses?: string[]): Promise<number | undefined> {
  const o = await api.request<{ pagination: { totalItems: number } }>("POST", "/v3/documents/list", {
    containerTags: [tag],
    limit: 1,
    ...(statuses ? { statuses } : {}),
  });
  return o.ok ? o.body?.pagination.totalItems : undefined;
}

const FINISHED = ["done", "failed"];

async function warmUp(api: JsonClient, text: string): Promise<number> {
  const started = performance.now();
  const added = await api.must<{ id: string }>("POST", "/v3/documents", {
    content: text,
    containerTag: "bench-warmup",
  });
  const deadline = Date.now() + 300_000;
  for (;;) {
    const doc = await api.must<{ status: string; errorReason?: string }>("GET", `/v3/documents/${added.id}`);
    if (doc.status === "done") return performance.now() - started;
    if (doc.status === "failed") throw new Error(`the warm-up document failed: ${doc.errorReason}`);
    if (Date.now() > deadline) throw new Error("the warm-up document was not done within 5 minutes");
    await sleep(100);
  }
}

interface StoredDoc {
  tags: string[];
  status: string;
  history: { status: string; at: string; run: number }[];
  chunks: number;
  embedded: number;
}

/** The documents of the given tags, read from the stopped service's PGlite directory. */
async function readStore(dataDir: string, tags: string[]): Promise<StoredDoc[]> {
  let lastError: unknown;
  // A killed service leaves its lock until it is stale (15 s).
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      const store = await openPglite(dataDir);
      try {
        return await queryRows<StoredDoc>(
          store.db,
          sql`SELECT d.container_tags AS tags, d.status, d.status_history AS history,
                (SELECT count(*)::int FROM chunks c WHERE c.document_id = d.id) AS chunks,
                (SELECT count(c.embedding)::int FROM chunks c WHERE c.document_id = d.id) AS embedded
              FROM documents d WHERE d.container_tags && ${`{${tags.join(",")}}`}::text[]`,
        );
      } finally {
        await store.close();
      }
    } catch (error) {
      lastError = error;
      await sleep(6_000);
    }
  }
  throw lastError;
}

/** When the document last reached done/failed (ms since epoch), from its history. */
function finishedAt(doc: StoredDoc): number {
  const e = [...(doc.history ?? [])].reverse().find((h) => FINISHED.includes(h.status));
  return e ? Date.parse(e.at) : Number.NaN;
}

function queuedAt(doc: StoredDoc): number {
  const e = (doc.history ?? []).find((h) => h.status === "queued");
  return e ? Date.parse(e.at) : Number.NaN;
}

/** One kind of interactive request every `everyMs`, first at `offsetMs`, until `stop()` says so. */
async function interactiveLoop(o: {
  offsetMs: number;
  everyMs: number;
  startedAt: number;
  stopped: () => boolean;
  send: (i: number) => Promise<Outcome>;
}) {
  const samples: Outcome[] = [];
  let missed = 0;
  let slot = 0;
  for (;;) {
    const due = o.startedAt + o.offsetMs + slot * o.everyMs;
    while (!o.stopped() && performance.now() < due) await sleep(Math.min(200, due - performance.now()));
    if (o.stopped()) break;
    samples.push(await o.send(slot));
    // A request that outlasted its period: the slots it covered are skipped, not sent in a burst.
    const next = Math.max(slot + 1, Math.ceil((performance.now() - o.startedAt - o.offsetMs) / o.everyMs));
    missed += next - slot - 1;
    slot = next;
  }
  return { samples, missed };
}

function latencyKind(kind: Kind, samples: Outcome[], idle: Outcome[], missed: number): LatencyKind {
  const failures = samples.filter((s) => !s.ok);
  return {
    kind,
    requests: samples.length,
    latency: summarize(samples.filter((s) => s.ok).map((s) => s.ms)),
    idle: summarize(idle.filter((s) => s.ok).map((s) => s.ms)),
    connectionErrors: failures.filter((s) => s.status === undefined).length,
    serverErrors: failures.filter((s) => (s.status ?? 0) >= 500).length,
    otherNon2xx: failures.filter((s) => s.status !== undefined && s.status < 500).length,
    failures: failures
      .slice(0, 5)
      .map((s) => `${s.status ?? s.error} ${(s.text ?? "").slice(0, 120)}`.trim()),
    missedSlots: missed,
  };
}

type TenantLive = Pick<
  TenantRun,
  "submittedAtMs" | "afterImport" | "bigUnfinished" | "answerMs" | "outcome"
> & { sentAt: number };

interface ImportPlan {
  size: number;
  singles?: boolean;
  load: boolean;
  tenant: boolean;
}

export async function runBulk(
  cleanup: Cleanup,
  o: BulkOptions,
  corpus: Abstract[],
  queries: string[],
): Promise<BulkResult> {
  const t0 = performance.now();
  const scenarios = new Set(o.scenarios);
  const plans: ImportPlan[] = [];
  if (scenarios.has("rates")) {
    for (const size of o.sizes) {
      const during = size === o.loadSize;
      plans.push({ size, load: during && scenarios.has("load"), tenant: during && scenarios.has("tenant") });
    }
  }
  if (!plans.some((p) => p.load || p.tenant) && (scenarios.has("load") || scenarios.has("tenant"))) {
    plans.push({ size: o.loadSize, load: scenarios.has("load"), tenant: scenarios.has("tenant") });
  }
  if (scenarios.has("singles"))
    plans.push({ size: o.singlesSize, load: false, tenant: false, singles: true });
  const largest = Math.max(0, ...plans.map((p) => p.size));
  const texts = bulkDocuments(corpus, Math.max(largest, scenarios.has("backlog") ? o.backlog : 0) + 1);
  const warmText = texts.pop() as string;
  const config = loadConfig({ ...o.extraEnv });
  const chunking = { maxChars: config.CHUNK_MAX_CHARS, overlapSentences: config.CHUNK_OVERLAP_SENTENCES };
  const chunksOf = (n: number) => texts.slice(0, n).map((t) => chunkText(t, chunking).map((c) => c.content));
  const perDocument = chunksOf(largest);

  let embedder: EmbedderRate | undefined;
  if (scenarios.has("rates") && largest > 0) {
    const docs = Math.min(o.embedderDocs, largest);
    log(`bulk: timing the embedder alone on the chunks of the first ${docs} documents`);
    embedder = await embedderRate({
      model: o.embeddingModel,
      threads: o.threads,
      chunksPerDocument: perDocument.slice(0, docs),
      prefixes: plans.map((p) => p.size).filter((s) => s <= docs),
      temporalPid: o.temporalPid,
      documentPrecision: config.EMBEDDING_DOCUMENT_PRECISION,
    });
    log(
      `bulk: embedder alone ${embedder.chunksPerSecond.toFixed(2)} chunks/s over ${embedder.chunks} chunks`,
    );
  }

  const imports: ImportRun[] = [];
  let settings: Record<string, string> = {};
  for (const plan of plans) {
    const run = await runImport(cleanup, o, plan, {
      texts: texts.slice(0, plan.size),
      chunksExpected: perDocument.slice(0, plan.size).reduce((s, c) => s + c.length, 0),
      warmText,
      tenantTexts: plan.tenant ? tenantDocuments(corpus, o.tenantDocs) : [],
      queries,
      onSettings: (s) => {
        settings = s;
      },
    });
    imports.push(run);
  }
  const backlog = scenarios.has("backlog")
    ? await runBacklog(cleanup, o, texts.slice(0, o.backlog), warmText, (s) => {
        settings = s;
      })
    : undefined;
  return {
    options: o,
    documentsPerSizeWords: 200,
    chunking,
    embedder,
    imports,
    backlog,
    serviceSettings: settings,
    totalMs: performance.now() - t0,
  };
}

function publicSettings(svc: ServiceProcess): Record<string, string> {
  const { DATA_DIR: _d, PORT: _p, TEMPORAL_ADDRESS: _a, TEMPORAL_TASK_QUEUE: _q, ...rest } = svc.settings;
  return rest;
}

/**
 * Sends `texts` in batches with a few requests in flight (or, with `singles`, one `POST /v3/documents` per
 * text); returns when every request has answered.
 */
async function submit(
  api: JsonClient,
  texts: string[],
  o: { batch: number; inFlight: number; tag: string; singles?: boolean },
  onAccepted: (n: number) => void,
) {
  if (o.singles) return submitSingles(api, texts, o, onAccepted);
  const batches: string[][] = [];
  for (let i = 0; i < texts.length; i += o.batch) batches.push(texts.slice(i, i + o.batch));
  const requestMs: number[] = [];
  const failures: string[] = [];
  let accepted = 0;
  let rejected = 0;
  await mapLimit(batches, o.inFlight, async (batch) => {
    const r = await api.request<{ results: { id: string; error?: string }[] }>(
      "POST",
      "/v3/documents/batch",
      { documents: batch, containerTag: o.tag },
      ADD_TIMEOUT_MS,
    );
    requestMs.push(r.ms);
    if (!r.ok || !r.body) {
      // The request failed as a whole: its documents may or may not have been saved; they count as rejected.
      rejected += batch.length;
      failures.push(
        `batch of ${batch.length}: ${r.status ?? r.error} ${(r.text ?? "").slice(0, 200)}`.trim(),
      );
      return;
    }
    for (const item of r.body.results) {
      if (item.id && !item.error) accepted++;
      else {
        rejected++;
        if (failures.length < 10) failures.push(`item: ${item.error ?? "no id"}`);
      }
    }
    onAccepted(accepted);
  });
  return { accepted, rejected, failures, requestMs };
}

/** One document per request, `inFlight` requests at once: what `npm run cli -- add <folder>` and SDK loops send. */
async function submitSingles(
  api: JsonClient,
  texts: string[],
  o: { inFlight: number; tag: string },
  onAccepted: (n: number) => void,
) {
  const requestMs: number[] = [];
  const failures: string[] = [];
  let accepted = 0;
  let rejected = 0;
  await mapLimit(texts, o.inFlight, async (content) => {
    const r = await api.request<{ id: string }>("POST", "/v3/documents", { content, containerTag: o.tag });
    requestMs.push(r.ms);
    if (r.ok && r.body?.id) {
      accepted++;
      if (accepted % 100 === 0) onAccepted(accepted);
    } else {
      rejected++;
      if (failures.length < 10)
        failures.push(`${r.status ?? r.error} ${(r.text ?? "").slice(0, 200)}`.trim());
    }
  });
  onAccepted(accepted);
  return { accepted, rejected, failures, requestMs };
}

async function runImport(
  cleanup: Cleanup,
  o: BulkOptions,
  plan: ImportPlan,
  d: {
    texts: string[];
    chunksExpected: number;
    warmText: string;
    tenantTexts: string[];
    queries: string[];
    onSettings: (s: Record<string, string>) => void;
  },
): Promise<ImportRun> {
  const label = `bulk ${plan.size}${plan.singles ? " one at a time" : ""}`;
  log(`${label}: starting a Temporal dev server and the service (main.ts) as a child process`);
  const svc = await startServiceProcess(cleanup, {
    threads: o.threads,
    embeddingModel: o.embeddingModel,
    logLevel: o.logLevel,
    extraEnv: o.extraEnv,
  });
  d.onSettings(publicSettings(svc));
  const client = (connections: number, timeoutMs: number) =>
    jsonClient({ baseUrl: svc.url, apiKey: svc.apiKey, connections, timeoutMs });
  const inFlight = plan.singles ? o.singlesInFlight : o.inFlight;
  const adds = client(inFlight, ADD_TIMEOUT_MS);
  const poll = client(1, 60_000);
  const kinds: Record<Kind, JsonClient> = {
    "search /v3": client(1, INTERACTIVE_TIMEOUT_MS),
    "search /v4": client(1, INTERACTIVE_TIMEOUT_MS),
    "memory add /v4": client(1, INTERACTIVE_TIMEOUT_MS),
  };
  const tenantApi = client(1, ADD_TIMEOUT_MS);
  const notes: string[] = [];
  try {
    log(`${label}: service up at ${svc.url} (pid ${svc.pid}) in ${(svc.startMs / 1000).toFixed(1)} s`);
    const warmupMs = await warmUp(poll, d.warmText);
    log(`${label}: warm-up document done in ${(warmupMs / 1000).toFixed(1)} s`);

    const send: Record<Kind, (i: number) => Promise<Outcome>> = {
      "search /v3": (i) =>
        kinds["search /v3"].request("POST", "/v3/search", {
          q: d.queries[i % d.queries.length],
          containerTags: [TAG],
          limit: 10,
        }),
      "search /v4": (i) =>
        kinds["search /v4"].request("POST", "/v4/search", {
          q: d.queries[(i + 7) % d.queries.length],
          containerTag: MEMORY_TAG,
          limit: 10,
        }),
      "memory add /v4": (i) =>
        kinds["memory add /v4"].request("POST", "/v4/memories", {
          containerTag: MEMORY_TAG,
          memories: [
            { content: `Note ${i} taken during the bulk import: ${d.queries[(i + 13) % d.queries.length]}` },
          ],
        }),
    };
    const order: Kind[] = ["memory add /v4", "search /v3", "search /v4"];
    // Idle latency of each kind on the warm service (memory adds first, so memory search has something to find).
    const idle: Record<Kind, Outcome[]> = { "search /v3": [], "search /v4": [], "memory add /v4": [] };
    if (plan.load) {
      for (let i = 0; i < IDLE_SAMPLES; i++) {
        for (const kind of order) idle[kind].push(await send[kind](1_000_000 + i));
      }
    }
    const idleRss = { service: rssOf(svc.pid), temporal: rssOf(svc.temporalPid) };

    const rss = rssSampler({ service: svc.pid, temporal: svc.temporalPid });
    const meter = processCpuMeter({
      servicePid: svc.pid,
      temporalPid: svc.temporalPid,
      topThreads: o.threads,
    });
    const startedAt = Date.now();
    const p0 = performance.now();
    let accepted = 0;
    let submitted: Awaited<ReturnType<typeof submit>> | undefined;
    let acceptMs = Number.NaN;
    const adding = submit(
      adds,
      d.texts,
      { batch: o.batch, inFlight, tag: TAG, singles: plan.singles },
      (n) => {
        accepted = n;
      },
    ).then((r) => {
      submitted = r;
      acceptMs = performance.now() - p0;
      log(
        `${label}: all add requests answered after ${(acceptMs / 1000).toFixed(1)} s (${r.accepted} accepted, ${r.rejected} rejected)`,
      );
    });

    let importOver = false;
    const loops = plan.load
      ? order.map((kind, k) =>
          interactiveLoop({
            offsetMs: (k * o.loadEveryMs) / order.length,
            everyMs: o.loadEveryMs,
            startedAt: p0,
            stopped: () => importOver,
            send: send[kind],
          }),
        )
      : [];

    let finished = 0;
    let tenant: Promise<TenantLive> | undefined;
    if (plan.tenant) {
      tenant = (async (): Promise<TenantLive> => {
        while (!importOver && performance.now() - p0 < o.tenantAfterMs) await sleep(100);
        const submittedAtMs = performance.now() - p0;
        const afterImport = importOver;
        const bigUnfinished = (submitted?.accepted ?? accepted) - finished;
        log(
          `${label}: a second tenant submits ${d.tenantTexts.length} documents (${bigUnfinished} of the import unfinished)`,
        );
        const sentAt = Date.now();
        const r = await tenantApi.request("POST", "/v3/documents/batch", {
          documents: d.tenantTexts,
          containerTag: TENANT_TAG,
        });
        if (!r.ok) notes.push(`the tenant's batch failed: ${r.status ?? r.error} ${r.text ?? ""}`);
        let outcome: ImportOutcome = "complete";
        let lastChange = Date.now();
        let last = -1;
        while (r.ok) {
          const n = (await countDocs(tenantApi, TENANT_TAG, FINISHED)) ?? last;
          if (n !== last) lastChange = Date.now();
          last = n;
          if (n >= d.tenantTexts.length) break;
          if (!svc.alive()) outcome = "service exited";
          else if (Date.now() - lastChange > o.stallMs) outcome = "stalled";
          else if (Date.now() - sentAt > o.timeoutMs) outcome = "timed out";
          if (outcome !== "complete") break;
          await sleep(1_000);
        }
        log(
          `${label}: the tenant's documents finished ${((Date.now() - sentAt) / 1000).toFixed(1)} s after submission (${outcome})`,
        );
        return { sentAt, submittedAtMs, afterImport, bigUnfinished, answerMs: r.ms, outcome };
      })();
    }

    let outcome: ImportOutcome = "complete";
    let lastChange = Date.now();
    let lastSeen = -1;
    let lastLog = 0;
    for (;;) {
      await sleep(POLL_MS);
      const n = await countDocs(poll, TAG, FINISHED);
      if (n !== undefined) finished = n;
      const target = submitted ? submitted.accepted : d.texts.length;
      if (finished !== lastSeen || !submitted) {
        if (finished !== lastSeen) lastChange = Date.now();
        lastSeen = finished;
      }
      const elapsed = performance.now() - p0;
      if (elapsed - lastLog > 15_000) {
        lastLog = elapsed;
        log(
          `${label}: ${finished}/${target} finished after ${(elapsed / 1000).toFixed(0)} s (${((finished * 1000) / elapsed).toFixed(2)}/s), ${accepted} accepted so far, RSS ${(rss.last().service / 2 ** 20).toFixed(0)} MiB`,
        );
      }
      if (submitted && finished >= submitted.accepted) break;
      if (!svc.alive()) {
        outcome = "service exited";
        notes.push(`the service exited during the import: ${svc.outputTail().slice(-1500)}`);
        break;
      }
      if (Date.now() - lastChange > o.stallMs) {
        outcome = "stalled";
        notes.push(
          `no document finished for ${(o.stallMs / 60_000).toFixed(1)} min: the import was ended with ${finished} of ${target} finished`,
        );
        break;
      }
      if (elapsed > o.timeoutMs) {
        outcome = "timed out";
        notes.push(
          `the import was ended after ${(o.timeoutMs / 60_000).toFixed(0)} min with ${finished} of ${target} finished`,
        );
        break;
      }
    }
    importOver = true;
    const cpu = meter.stop();
    const loopResults = await Promise.all(loops);
    const tenantRun = tenant ? await tenant : undefined;
    if (outcome === "complete") await adding;
    else await Promise.race([adding, sleep(5_000)]);
    const peakRss = rss.stop();
    const sub = submitted ?? {
      accepted,
      rejected: 0,
      failures: ["add requests still open when the import ended"],
      requestMs: [],
    };
    log(`${label}: stopping the service and reading its store`);
    const stop = await svc.stop();
    if (stop.killed) notes.push("the service did not stop within 2 minutes of SIGTERM and was killed");

    let docs: StoredDoc[] = [];
    try {
      docs = await readStore(svc.dataDir, [TAG, TENANT_TAG]);
    } catch (error) {
      notes.push(`could not read the store afterwards: ${(error as Error).message}`);
    }
    const mine = docs.filter((x) => x.tags.includes(TAG));
    const ended = mine.filter((x) => FINISHED.includes(x.status));
    const lastFinished = Math.max(startedAt, ...ended.map(finishedAt).filter(Number.isFinite));
    const wallMs = ended.length > 0 ? lastFinished - startedAt : performance.now() - p0; // fallback: no store figures
    const doneDocs = mine.filter((x) => x.status === "done");
    const embeddedChunks = doneDocs.reduce((s, x) => s + x.embedded, 0);
    const run: ImportRun = {
      size: plan.size,
      singles: plan.singles,
      accepted: sub.accepted,
      rejected: sub.rejected,
      addFailures: sub.failures,
      chunksExpected: d.chunksExpected,
      storedChunks: mine.reduce((s, x) => s + x.chunks, 0),
      embeddedChunks,
      done: doneDocs.length,
      failed: mine.filter((x) => x.status === "failed").length,
      acceptMs,
      addRequest: summarize(sub.requestMs),
      wallMs,
      docsPerSecond: (ended.length * 1000) / wallMs,
      chunksPerSecond: (embeddedChunks * 1000) / wallMs,
      addToDone: summarize(ended.map((x) => finishedAt(x) - queuedAt(x)).filter(Number.isFinite)),
      outcome,
      notes,
      serviceStartMs: svc.startMs,
      warmupMs,
      peakRss: { service: peakRss.service, temporal: peakRss.temporal },
      idleRss,
      cpu,
      load: plan.load
        ? order.map((kind, k) => {
            const r = loopResults[k] as { samples: Outcome[]; missed: number };
            return latencyKind(kind, r.samples, idle[kind], r.missed);
          })
        : undefined,
    };
    if (tenantRun) {
      const theirs = docs.filter((x) => x.tags.includes(TENANT_TAG));
      const theirsEnded = theirs.filter((x) => FINISHED.includes(x.status));
      const last = Math.max(...theirsEnded.map(finishedAt).filter(Number.isFinite));
      const { sentAt, ...live } = tenantRun;
      run.tenant = {
        ...live,
        documents: d.tenantTexts.length,
        allDoneMs:
          theirs.length === d.tenantTexts.length && theirsEnded.length === theirs.length
            ? last - sentAt
            : Number.NaN,
        addToDone: summarize(theirsEnded.map((x) => finishedAt(x) - queuedAt(x)).filter(Number.isFinite)),
        done: theirs.filter((x) => x.status === "done").length,
        failed: theirs.filter((x) => x.status === "failed").length,
      };
    }
    log(
      `${label}: ${ended.length} finished (${run.failed} failed) in ${(wallMs / 1000).toFixed(1)} s → ${run.docsPerSecond.toFixed(2)} documents/s, ${run.chunksPerSecond.toFixed(2)} chunks/s (${outcome})`,
    );
    return run;
  } finally {
    for (const c of [adds, poll, tenantApi, ...Object.values(kinds)]) c.close();
    await svc.stop(30_000);
    await svc.removeData();
  }
}

async function runBacklog(
  cleanup: Cleanup,
  o: BulkOptions,
  texts: string[],
  warmText: string,
  onSettings: (s: Record<string, string>) => void,
): Promise<BacklogRun> {
  const label = `backlog ${texts.length}`;
  log(`${label}: starting a Temporal dev server and the service (main.ts) as a child process`);
  const svc = await startServiceProcess(cleanup, {
    threads: o.threads,
    embeddingModel: o.embeddingModel,
    logLevel: o.logLevel,
    extraEnv: o.extraEnv,
  });
  onSettings(publicSettings(svc));
  const adds = jsonClient({
    baseUrl: svc.url,
    apiKey: svc.apiKey,
    connections: o.inFlight,
    timeoutMs: ADD_TIMEOUT_MS,
  });
  const api = jsonClient({ baseUrl: svc.url, apiKey: svc.apiKey, connections: 1, timeoutMs: 60_000 });
  const notes: string[] = [];
  const now = () => ({ service: rssOf(svc.pid), temporal: rssOf(svc.temporalPid) });
  try {
    await warmUp(api, warmText);
    await sleep(5_000);
    const idleRss = now();
    const rss = rssSampler({ service: svc.pid, temporal: svc.temporalPid });
    const meter = processCpuMeter({
      servicePid: svc.pid,
      temporalPid: svc.temporalPid,
      topThreads: o.threads,
    });
    const p0 = performance.now();
    let lastLog = 0;
    const sub = await submit(adds, texts, { batch: o.batch, inFlight: o.inFlight, tag: TAG }, (n) => {
      if (performance.now() - lastLog > 15_000) {
        lastLog = performance.now();
        log(`${label}: ${n} accepted, RSS ${(rss.last().service / 2 ** 20).toFixed(0)} MiB`);
      }
    });
    const acceptMs = performance.now() - p0;
    if (sub.failures.length) notes.push(...sub.failures.slice(0, 5).map((f) => `add: ${f}`));
    log(
      `${label}: ${sub.accepted} accepted in ${(acceptMs / 1000).toFixed(1)} s; watching for ${(o.backlogWatchMs / 1000).toFixed(0)} s`,
    );
    const watchStart = performance.now();
    let finished = 0;
    while (performance.now() - watchStart < o.backlogWatchMs) {
      await sleep(Math.min(5_000, o.backlogWatchMs - (performance.now() - watchStart)));
      finished = (await countDocs(api, TAG, FINISHED)) ?? finished;
      if (!svc.alive()) {
        notes.push(`the service exited during the watch: ${svc.outputTail().slice(-1500)}`);
        break;
      }
      if (performance.now() - lastLog > 15_000) {
        lastLog = performance.now();
        log(
          `${label}: ${finished} finished, RSS ${(rss.last().service / 2 ** 20).toFixed(0)} MiB (peak ${(rss.peak().service / 2 ** 20).toFixed(0)})`,
        );
      }
    }
    const watchMs = performance.now() - watchStart;
    const cpuSubmitWatch = meter.stop();
    const peak = rss.stop();
    const beforeDeleteRss = now();
    finished = (await countDocs(api, TAG, FINISHED)) ?? finished;
    const queuedAtEnd = (await countDocs(api, TAG, ["queued"])) ?? Number.NaN;
    const inProgressAtEnd =
      (await countDocs(api, TAG, ["extracting", "chunking", "embedding"])) ?? Number.NaN;
    const workflowsBeforeDelete = await svc.runningWorkflows();

    log(
      `${label}: deleting the tag's documents (${finished} finished, ${queuedAtEnd} queued, ${workflowsBeforeDelete ?? "?"} workflows running)`,
    );
    const meter2 = processCpuMeter({
      servicePid: svc.pid,
      temporalPid: svc.temporalPid,
      topThreads: o.threads,
    });
    const del = await api.request<{ deletedCount?: number }>(
      "DELETE",
      "/v3/documents/bulk",
      { containerTags: [TAG] },
      o.timeoutMs,
    );
    const deleteMs = del.ms;
    log(`${label}: delete answered ${del.status ?? del.error} after ${(deleteMs / 1000).toFixed(1)} s`);
    const processing = async () =>
      (await api.request<{ totalCount: number }>("GET", "/v3/documents/processing")).body?.totalCount;
    const processingAfter = await processing();
    const workflowsAfter = await svc.runningWorkflows();
    const taggedLeft = await countDocs(api, TAG);
    let drainMs: number | undefined;
    let workflowsAtEnd = workflowsAfter;
    const drainStart = performance.now();
    if (workflowsAfter === 0) drainMs = 0;
    else if (workflowsAfter !== undefined) {
      while (performance.now() - drainStart < o.drainMs) {
        await sleep(2_000);
        workflowsAtEnd = await svc.runningWorkflows();
        if (workflowsAtEnd === 0) {
          drainMs = performance.now() - drainStart;
          break;
        }
      }
    }
    const processingAtEnd = await processing();
    const cpuDelete = meter2.stop();
    const healthy = (await api.request("GET", "/health")).ok;
    const afterDrainRss = now();
    return {
      documents: texts.length,
      accepted: sub.accepted,
      acceptMs,
      watchMs,
      idleRss,
      peakRss: { service: peak.service, temporal: peak.temporal },
      beforeDeleteRss,
      finishedAtEnd: finished,
      queuedAtEnd,
      inProgressAtEnd,
      workflowsBeforeDelete,
      deleteMs,
      deleteStatus: del.ok
        ? String(del.status)
        : `${del.status ?? del.error} ${(del.text ?? "").slice(0, 200)}`,
      deletedCount: del.body?.deletedCount,
      processingAfter,
      workflowsAfter,
      taggedLeft,
      drainMs,
      workflowsAtEnd,
      processingAtEnd,
      afterDrainRss,
      healthyAfter: healthy,
      cpuSubmitWatch,
      cpuDelete,
      notes,
    };
  } finally {
    adds.close();
    api.close();
    await svc.stop(30_000);
    await svc.removeData();
  }
}
