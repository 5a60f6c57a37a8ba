import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import type { Client } from "@temporalio/client";
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Logger } from "../config/logger.ts";
import { heavyQueueOf } from "../contracts/workflows.ts";
import { findActiveKey } from "../store/api-keys.ts";
import type { Database } from "../store/db.ts";
import { documentCountsByStatus, pingStore, recentlyFinishedHistories } from "../store/health.ts";
import type { StatusEvent } from "../store/schema/documents.ts";
import { type DocumentStatus, documentStatuses } from "../store/vocabulary.ts";
import { errorBody } from "./errors.ts";

export const REQUEST_ID_HEADER = "x-request-id";
/** Ids from callers end up in logs and headers: printable, no spaces or quotes, bounded. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
/**
 * Polled by probes and scrapers every few seconds: their successes would drown the request log at info, and
 * they do not make the service busy (ApiDeps.onRequest).
 */
export const PROBE_PATHS = new Set(["/health", "/ready", "/metrics"]);
const TERMINAL: ReadonlySet<DocumentStatus> = new Set(["done", "failed"]);
/** Stage durations describe documents that finished this recently (and at most this many of them). */
export const STAGE_WINDOW_MS = 15 * 60_000;
const STAGE_WINDOW_MAX_DOCUMENTS = 1000;
const STAGE_QUANTILES = [0.5, 0.95, 0.99] as const;
const TEMPORAL_TIMEOUT_MS = 3000;
const STORE_TIMEOUT_MS = 3000;
// Values of temporal.api.enums.v1.TaskQueueType/TaskQueueKind; @temporalio/proto is not a direct dependency.
const TASK_QUEUE_TYPES = {
  workflow: { type: "workflow", value: 1 },
  activity: { type: "activity", value: 2 },
} as const;
const TASK_QUEUE_KIND_NORMAL = 1;

export type ObservabilityEnv = { Variables: { requestId: string; log: Logger } };

export interface ObservabilityDeps {
  db: Database;
  log: Logger;
  config: {
    TEMPORAL_NAMESPACE: string;
    TEMPORAL_TASK_QUEUE: string;
    METRICS_TOKEN?: string;
    /** /metrics without any credentials (the operator's opt-out). */
    METRICS_PUBLIC?: boolean;
  };
  /** Checked by /ready and asked for the task queue backlog; without it both are skipped. */
  temporal?: Client;
}

export interface Observability {
  /** Request id, per-request logger, one log line and the request metrics; mount it first. */
  middleware: MiddlewareHandler<ObservabilityEnv>;
  /** GET /metrics and GET /ready. */
  routes: Hono;
  registry: Registry;
}

/** The request's id (set by the middleware). */
export function requestIdOf(c: Context): string | undefined {
  return (c.var as { requestId?: string }).requestId;
}

/** The logger carrying the request's id, for code that only has the context (error rendering). */
export function requestLog(c: Context, fallback: Logger): Logger {
  return (c.var as { log?: Logger }).log ?? fallback;
}

/**
 * The matched route pattern, never the raw path, so metric labels stay few. A request stopped by a
 * middleware (401, 429) is counted under the route it was heading for; one no route matched is "unmatched".
 */
export function routePattern(c: Context): string {
  let routes: ReturnType<typeof matchedRoutes>;
  try {
    routes = matchedRoutes(c);
  } catch {
    return "unmatched";
  }
  const current = routes[c.req.routeIndex];
  if (current && current.method !== "ALL") return current.path;
  return routes.find((r) => r.method !== "ALL")?.path ?? "unmatched";
}

export function createObservability(deps: ObservabilityDeps): Observability {
  // A registry per app: two apps in one process (tests) must not register the same names twice.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const labelNames = ["method", "route", "status"] as const;
  const requests = new Counter({
    name: "memory_http_requests_total",
    help: "HTTP requests answered, by method, matched route pattern and status",
    labelNames,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "memory_http_request_duration_seconds",
    help: "Time to answer HTTP requests, by method, matched route pattern and status",
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const documentsByStatus = new Gauge({
    name: "memory_documents",
    help: "Documents in the store by processing status (read from the store at scrape)",
    labelNames: ["status"] as const,
    registers: [registry],
  });
  const pending = new Gauge({
    name: "memory_documents_pending",
    help: "Documents not yet done or failed: the processing queue depth (read from the store at scrape)",
    registers: [registry],
  });
  const stageSeconds = new Gauge({
    name: "memory_document_stage_seconds",
    help: `Seconds documents spent in each processing stage (quantiles over documents that finished in the last ${STAGE_WINDOW_MS / 60_000} minutes, from their statusHistory at scrape)`,
    labelNames: ["stage", "quantile"] as const,
    registers: [registry],
  });
  const stageSamples = new Gauge({
    name: "memory_document_stage_samples",
    help: "How many finished documents memory_document_stage_seconds is computed from, per stage",
    labelNames: ["stage"] as const,
    registers: [registry],
  });
  const backlog = new Gauge({
    name: "memory_temporal_task_queue_backlog",
    help: "Approximate Temporal task queue backlog (tasks not yet picked up by a worker), by task type",
    labelNames: ["task_queue", "type"] as const,
    registers: [registry],
  });

  async function collectDocuments() {
    documentsByStatus.reset();
    pending.reset();
    const counts = new Map<string, number>(documentStatuses.map((s) => [s, 0]));
    for (const [status, count] of await documentCountsByStatus(deps.db)) counts.set(status, count);
    let notFinished = 0;
    for (const [status, count] of counts) {
      documentsByStatus.set({ status }, count);
      if (!TERMINAL.has(status as DocumentStatus)) notFinished += count;
    }
    pending.set(notFinished);
  }

  async function collectStages() {
    stageSeconds.reset();
    stageSamples.reset();
    const since = new Date(Date.now() - STAGE_WINDOW_MS);
    // A superset (see recentlyFinishedHistories), narrowed by the terminal event's time in stageDurations.
    const rows = await recentlyFinishedHistories(deps.db, since, STAGE_WINDOW_MAX_DOCUMENTS);
    const samples = new Map<string, number[]>();
    for (const { history, run } of rows) {
      const durations = stageDurations(history, run, since.getTime());
      for (const [stage, seconds] of Object.entries(durations)) {
        const list = samples.get(stage) ?? [];
        list.push(seconds);
        samples.set(stage, list);
      }
    }
    for (const [stage, values] of samples) {
      values.sort((a, b) => a - b);
      stageSamples.set({ stage }, values.length);
      for (const q of STAGE_QUANTILES) stageSeconds.set({ stage, quantile: String(q) }, quantile(values, q));
    }
  }

  async function collectBacklog() {
    backlog.reset();
    const temporal = deps.temporal;
    if (!temporal) return;
    const main = deps.config.TEMPORAL_TASK_QUEUE;
    // The heavy queue carries only activities (OCR, transcription); workflows all run on the main one.
    const queues = [
      { name: main, ...TASK_QUEUE_TYPES.workflow },
      { name: main, ...TASK_QUEUE_TYPES.activity },
      { name: heavyQueueOf(main), ...TASK_QUEUE_TYPES.activity },
    ];
    await temporal.connection.withDeadline(Date.now() + TEMPORAL_TIMEOUT_MS, async () => {
      for (const { name, type, value } of queues) {
        const answer = await temporal.workflowService.describeTaskQueue({
          namespace: deps.config.TEMPORAL_NAMESPACE,
          taskQueue: { name, kind: TASK_QUEUE_KIND_NORMAL },
          taskQueueType: value,
          reportStats: true,
        });
        const count = answer.stats?.approximateBacklogCount;
        if (count !== undefined && count !== null) backlog.set({ task_queue: name, type }, Number(count));
      }
    });
  }

  async function collect() {
    const parts = [
      ["documents", collectDocuments],
      ["stages", collectStages],
      ["backlog", collectBacklog],
    ] as const;
    // One part failing (Temporal down) must not hide the others; its gauges are left empty, not stale.
    await Promise.all(
      parts.map(([part, run]) =>
        run().catch((err: unknown) => deps.log.warn({ err, part }, "could not collect metrics")),
      ),
    );
  }

  const middleware: MiddlewareHandler<ObservabilityEnv> = async (c, next) => {
    const started = performance.now();
    const given = c.req.header(REQUEST_ID_HEADER);
    const requestId = given && SANE_REQUEST_ID.test(given) ? given : randomUUID();
    const log = deps.log.child({ requestId });
    c.set("requestId", requestId);
    c.set("log", log);
    await next();
    setHeader(c, "X-Request-Id", requestId);
    const seconds = (performance.now() - started) / 1000;
    const status = c.res.status;
    const labels = { method: c.req.method, route: routePattern(c), status: String(status) };
    requests.inc(labels);
    latency.observe(labels, seconds);
    const line = { ...labels, status, path: c.req.path, durationMs: Math.round(seconds * 100_000) / 100 };
    if (PROBE_PATHS.has(c.req.path) && status < 400) log.debug(line, "request");
    else log.info(line, "request");
  };

  /**
   * Metrics tell the service's load and what is being imported: not for anyone who can reach the port. A
   * scraper sends METRICS_TOKEN (no API key to hand out) or an admin key; METRICS_PUBLIC=true opts out.
   */
  const mayScrape = async (authorization: string): Promise<boolean> => {
    if (deps.config.METRICS_PUBLIC) return true;
    const token = deps.config.METRICS_TOKEN;
    if (token && sameSecret(authorization, `Bearer ${token}`)) return true;
    const bearer = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
    if (!bearer) return false;
    const key = await findActiveKey(deps.db, bearer);
    return key?.kind === "admin";
  };

  const routes = new Hono();
  routes.get("/metrics", async (c) => {
    if (!(await mayScrape(c.req.header("authorization") ?? ""))) {
      const what = deps.config.METRICS_TOKEN ? "<METRICS_TOKEN> or <admin API key>" : "<admin API key>";
      return c.json(
        errorBody(
          "unauthorized",
          `/metrics needs 'Authorization: Bearer ${what}' (METRICS_PUBLIC=true opens it)`,
        ),
        401,
      );
    }
    await collect();
    return c.body(await registry.metrics(), 200, { "Content-Type": registry.contentType });
  });
  routes.get("/ready", async (c) => {
    const readiness = await checkReadiness(deps);
    if (!readiness.ready) deps.log.warn({ readiness }, "not ready");
    return c.json(
      { status: readiness.ready ? "ready" : "not_ready", reason: readiness.reason, checks: readiness.checks },
      readiness.ready ? 200 : 503,
    );
  });

  return { middleware, routes, registry };
}

export interface Readiness {
  ready: boolean;
  /** Per dependency: "ok", "skipped" (no Temporal client given), or what is wrong. */
  checks: { store: string; temporal: string };
  /** The first problem, for people reading the probe's answer. */
  reason?: string;
}

/**
 * Ready when the store answers and Temporal answers for our namespace within a few seconds. Reasons are
 * coarse on purpose (the route is public); the underlying errors go to the log.
 */
export async function checkReadiness(
  deps: Pick<ObservabilityDeps, "db" | "temporal" | "log"> & {
    config: { TEMPORAL_NAMESPACE: string };
    timeoutMs?: number;
  },
): Promise<Readiness> {
  const timeoutMs = deps.timeoutMs ?? STORE_TIMEOUT_MS;
  const [store, temporal] = await Promise.all([
    withTimeout(pingStore(deps.db), timeoutMs)
      .then(() => "ok")
      .catch((err: unknown) => {
        deps.log.warn({ err }, "readiness: the store did not answer");
        return err instanceof TimeoutError ? "store timed out" : "store unavailable";
      }),
    temporalCheck(deps, timeoutMs),
  ]);
  const problems = [store, temporal].filter((s) => s !== "ok" && s !== "skipped");
  return { ready: problems.length === 0, checks: { store, temporal }, reason: problems[0] };
}

async function temporalCheck(
  deps: { temporal?: Client; log: Logger; config: { TEMPORAL_NAMESPACE: string } },
  timeoutMs: number,
): Promise<string> {
  const temporal = deps.temporal;
  if (!temporal) return "skipped";
  const namespace = deps.config.TEMPORAL_NAMESPACE;
  try {
    await temporal.connection.withDeadline(Date.now() + timeoutMs, () =>
      temporal.workflowService.describeNamespace({ namespace }),
    );
    return "ok";
  } catch (err) {
    deps.log.warn({ err }, "readiness: Temporal did not answer");
    // gRPC NOT_FOUND: the server answers but does not know the namespace.
    if ((err as { code?: number }).code === 5) return `temporal namespace ${namespace} not found`;
    return "temporal unreachable";
  }
}

/**
 * Seconds spent in each stage by the document's latest run (queued, extracting, chunking, embedding,
 * and total), when that run finished at or after `sinceMs`; `{}` otherwise. A stage entered twice
 * in a row (an activity retried) counts from its first entry.
 */
export function stageDurations(history: StatusEvent[], run: number, sinceMs: number): Record<string, number> {
  const events = history
    .filter((e) => e.run === run)
    .map((e) => ({ status: e.status, at: Date.parse(e.at) }))
    .filter((e) => Number.isFinite(e.at));
  const last = events.at(-1);
  if (!last || !TERMINAL.has(last.status) || last.at < sinceMs) return {};
  const out: Record<string, number> = {};
  let current = events[0];
  for (const event of events.slice(1)) {
    if (!current || event.status === current.status) continue;
    out[current.status] = (out[current.status] ?? 0) + (event.at - current.at) / 1000;
    current = event;
  }
  const first = events[0];
  if (first) out.total = (last.at - first.at) / 1000;
  return out;
}

function quantile(sorted: number[], q: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index] ?? 0;
}

class TimeoutError extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function setHeader(c: Context, name: string, value: string) {
  try {
    c.res.headers.set(name, value);
  } catch {
    // Responses passed through from fetch() have immutable headers.
    c.res = new Response(c.res.body, c.res);
    c.res.headers.set(name, value);
  }
}

/** Compares digests, so neither the length nor the content of the token leaks through timing. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string) => createHash("sha256").update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
