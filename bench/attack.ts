// A load test with an attacker beside it: clients of two tenants, each tenant with its own scoped key,
// search (/v3/search, /v4/search) and add (POST /v3/documents) for a phase alone, then for a phase of the same
// length while a third party from the same address (127.0.0.1) streams huge chunked bodies, floods made-up bearer
// keys and floods console sign-ins (bench/lib/attacker.ts). The service runs as `npm start` runs it (main.ts as a
// child process, PGlite, its own Temporal dev server), so its resident memory is its own.
//
// What it records, for the page and for test/security/attacker.test.ts: the clients' errors and latency in each
// phase; the service's RSS idle and at its peak in each phase; what the attacker sent and how each kind was
// answered; whether valid keys from the attacker's address still answer right after the flood (and, if not, how
// long the admin key was refused); and whether every add the clients made is there afterwards, counted through
// the API. The scenario `attack` of bench/main.ts; bench/lib/attack-report.ts renders it.

import { setTimeout as sleep } from "node:timers/promises";
import { resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import { type AttackerOptions, type AttackerResult, spawnAttacker } from "./lib/attacker.ts";
import { startServiceProcess } from "./lib/daemon.ts";
import { type JsonClient, jsonClient, type Outcome } from "./lib/http.ts";
import { rssOf, rssSampler } from "./lib/proc.ts";
import { log } from "./lib/progress.ts";
import { seededRandom } from "./lib/random.ts";
import type { Cleanup } from "./lib/service.ts";
import { type Summary, summarize } from "./lib/stats.ts";

export interface AttackOptions {
  /** Seconds of each phase: the clients alone, then the clients with the attacker. */
  phaseS: number;
  clients: number;
  tenants: number;
  /** Share of the clients' requests that are adds (the rest are searches, /v3 and /v4 in turn). */
  addShare: number;
  /** Each client's pause after an answer: clients with some slack, as people and apps are, not a saturating loop. */
  thinkMs: number;
  /** Documents each tenant holds before the phases (its searches find something). */
  seedDocs: number;
  /** Size of each chunked body, MiB; bodies started per second, at most `bodiesInFlight` at once. */
  bodyMiB: number;
  bodyRate: number;
  bodiesInFlight: number;
  /** Made-up bearer keys per second, and console sign-ins per second. */
  keyRate: number;
  signInRate: number;
  /** The attacker is stopped when the service's RSS rises this far (MiB) above idle (a shared machine's safety). */
  guardMiB: number;
  threads: number;
  /** More service settings (KEY=VALUE), applied last. */
  env: Record<string, string>;
}

type Route = "POST /v3/search" | "POST /v4/search" | "POST /v3/documents";

export interface AttackPhase {
  name: "baseline" | "attack";
  wallMs: number;
  requests: number;
  /** Requests that did not end 2xx, by status (or by connection error). */
  errors: number;
  errorsBy: Record<string, number>;
  /** The first few failures, as the service answered them. */
  errorSamples: string[];
  /** Latency of the answered (2xx) requests, and by route. */
  latency: Summary;
  byRoute: Partial<Record<Route, Summary>>;
  adds: number;
  /** The service's peak RSS over the phase. */
  rssPeakBytes: number;
  /** The attacker process's peak RSS (attack phase only). */
  attackerRssPeakBytes?: number;
}

export interface AttackResult {
  options: AttackOptions;
  settings: Record<string, string>;
  /** The service's RSS once seeded and warmed up, before the baseline phase. */
  rssIdleBytes: number;
  /** Its RSS once the attack phase ended and the adds were processed. */
  rssAfterBytes: number;
  baseline: AttackPhase;
  attack: AttackPhase;
  attacker: AttackerResult;
  /** The service's RSS passed idle + guardMiB during the attack: the attacker was stopped there. */
  guardTripped: boolean;
  /** Right after the flood, from the same address: one request per valid key. */
  afterFlood: { who: string; route: string; status?: number; error?: string }[];
  /** How long the admin key was refused (429) after the flood before it answered; 0 when it answered at once. */
  lockoutMs: number;
  /** Each tenant's documents: added (seed + the clients' answered adds), present afterwards, missing ids. */
  documents: {
    tag: string;
    added: number;
    present: number;
    missing: number;
    done: number;
    failed: number;
    pending: number;
  }[];
  /** Waits for the adds to be processed: between the phases, and at the end (each bounded by drainTimeoutMs). */
  drainMs: { between: number; end: number };
}

const DRAIN_TIMEOUT_MS = 10 * 60_000;
const CONSOLE_USER = { email: "attack-bench@example.com", password: "a long enough bench passphrase" };

const WORDS = {
  adjective: [
    "quarterly",
    "urgent",
    "shared",
    "archived",
    "draft",
    "final",
    "internal",
    "remote",
    "legacy",
    "new",
  ],
  noun: [
    "budget",
    "launch",
    "contract",
    "invoice",
    "roadmap",
    "meeting",
    "design",
    "server",
    "backup",
    "report",
    "customer",
    "release",
    "policy",
    "schedule",
    "migration",
  ],
  verb: ["delays", "approves", "replaces", "summarises", "blocks", "updates", "reviews", "moves"],
};

/** A short note from a small vocabulary (searches made of the same words find some of them). */
function sentence(rand: () => number, n: number): string {
  const pick = (list: string[]) => list[Math.floor(rand() * list.length)] as string;
  return `Note ${n}: the ${pick(WORDS.adjective)} ${pick(WORDS.noun)} ${pick(WORDS.verb)} the ${pick(WORDS.noun)} before the ${pick(WORDS.adjective)} ${pick(WORDS.noun)}.`;
}

function query(rand: () => number): string {
  const pick = (list: string[]) => list[Math.floor(rand() * list.length)] as string;
  return `${pick(WORDS.adjective)} ${pick(WORDS.noun)} ${pick(WORDS.noun)}`;
}

interface Tenant {
  tag: string;
  key: string;
  /** Ids of every add answered 2xx. */
  ids: string[];
}

interface Sample {
  route: Route;
  ms: number;
  ok: boolean;
  why?: string;
  text?: string;
}

/** The clients, each in a loop until `stopAt`: an add with `addShare`, else a search, /v3 and /v4 in turn. */
async function runClients(
  url: string,
  tenants: Tenant[],
  o: AttackOptions,
  stopAt: number,
  seed: number,
): Promise<Sample[]> {
  const samples: Sample[] = [];
  await Promise.all(
    Array.from({ length: o.clients }, async (_, c) => {
      const tenant = tenants[c % tenants.length] as Tenant;
      const rand = seededRandom(seed * 1000 + c);
      const api = jsonClient({ baseUrl: url, apiKey: tenant.key, connections: 1, timeoutMs: 60_000 });
      try {
        for (let i = 0; performance.now() < stopAt; i++) {
          let route: Route;
          let res: Outcome<{ id?: string }>;
          if (rand() < o.addShare) {
            route = "POST /v3/documents";
            res = await api.request("POST", "/v3/documents", {
              content: sentence(rand, seed * 1_000_000 + c * 10_000 + i),
              containerTag: tenant.tag,
            });
            if (res.ok && res.body?.id) tenant.ids.push(res.body.id);
          } else if (i % 2 === 0) {
            route = "POST /v3/search";
            res = await api.request("POST", "/v3/search", {
              q: query(rand),
              containerTags: [tenant.tag],
              limit: 5,
            });
          } else {
            route = "POST /v4/search";
            res = await api.request("POST", "/v4/search", {
              q: query(rand),
              containerTag: tenant.tag,
              limit: 5,
            });
          }
          samples.push({
            route,
            ms: res.ms,
            ok: res.ok,
            ...(res.ok ? {} : { why: res.status ? String(res.status) : (res.error ?? "no answer") }),
            ...(res.ok
              ? {}
              : { text: `${route}: ${res.status ?? res.error} ${res.text ?? ""}`.slice(0, 300) }),
          });
          if (o.thinkMs) await sleep(o.thinkMs);
        }
      } finally {
        api.close();
      }
    }),
  );
  return samples;
}

function phaseOf(
  name: AttackPhase["name"],
  samples: Sample[],
  wallMs: number,
  rssPeakBytes: number,
): AttackPhase {
  const ok = samples.filter((s) => s.ok);
  const failed = samples.filter((s) => !s.ok);
  const errorsBy: Record<string, number> = {};
  for (const s of failed) errorsBy[s.why ?? "?"] = (errorsBy[s.why ?? "?"] ?? 0) + 1;
  const byRoute: AttackPhase["byRoute"] = {};
  for (const route of ["POST /v3/search", "POST /v4/search", "POST /v3/documents"] as Route[]) {
    const times = ok.filter((s) => s.route === route).map((s) => s.ms);
    if (times.length) byRoute[route] = summarize(times);
  }
  return {
    name,
    wallMs,
    requests: samples.length,
    errors: failed.length,
    errorsBy,
    errorSamples: [...new Set(failed.map((s) => s.text ?? ""))].slice(0, 5),
    latency: summarize(ok.map((s) => s.ms)),
    byRoute,
    adds: ok.filter((s) => s.route === "POST /v3/documents").length,
    rssPeakBytes,
  };
}

/**
 * The admin's own calls (set-up, counting): a 429 is waited out as its Retry-After says, and the time refused is
 * added to `refused`. Never used for the clients, whose every failure counts.
 */
function patientAdmin(admin: JsonClient, refused: { ms: number }) {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const deadline = performance.now() + DRAIN_TIMEOUT_MS;
    for (;;) {
      const res = await admin.request<T>(method, path, body);
      if (res.ok) return res.body as T;
      if (res.status !== 429 || performance.now() > deadline)
        throw new Error(`${method} ${path}: ${res.status ?? res.error} ${res.text ?? ""}`.trim());
      const wait = Math.max(1, res.retryAfter ?? 1);
      const t = performance.now();
      await sleep(Math.min(wait, 5) * 1000);
      refused.ms += performance.now() - t;
    }
  };
}

export async function runAttack(o: AttackOptions, cleanup: Cleanup): Promise<AttackResult> {
  const service = await startServiceProcess(cleanup, {
    threads: o.threads,
    embeddingModel: resolveDefaultEmbedder().name,
    logLevel: "warn",
    extraEnv: o.env,
  });
  log(
    `attack: service pid ${service.pid} at ${service.url} (started in ${(service.startMs / 1000).toFixed(1)} s)`,
  );
  const admin = jsonClient({
    baseUrl: service.url,
    apiKey: service.apiKey,
    connections: 4,
    timeoutMs: 120_000,
  });
  cleanup.add("attack admin client", () => admin.close());
  const refused = { ms: 0 };
  const call = patientAdmin(admin, refused);

  // Two tenants, each with its own scoped key; a limit of its own high enough that the clients never meet it
  // (the point is the attacker, not the per-key rate limit).
  const tenants: Tenant[] = [];
  for (let t = 0; t < o.tenants; t++) {
    const tag = `attack-tenant-${t + 1}`;
    const created = await call<{ key: string }>("POST", "/v3/auth/scoped-key", {
      containerTag: tag,
      rateLimitMax: 10_000,
      rateLimitTimeWindow: 1_000,
    });
    tenants.push({ tag, key: created.key, ids: [] });
  }
  await call("POST", "/v3/console/users", CONSOLE_USER);

  // Seed each tenant through its own key, then wait until processed, and warm the searches up.
  const seedRand = seededRandom(68);
  for (const tenant of tenants) {
    const api = jsonClient({ baseUrl: service.url, apiKey: tenant.key, connections: 2, timeoutMs: 60_000 });
    for (let i = 0; i < o.seedDocs; i++) {
      const res = await api.must<{ id: string }>("POST", "/v3/documents", {
        content: sentence(seedRand, i),
        containerTag: tenant.tag,
      });
      tenant.ids.push(res.id);
    }
    api.close();
  }
  const count = async (tag: string) => {
    const total = async (statuses?: string[]) =>
      (
        await call<{ pagination: { totalItems: number } }>("POST", "/v3/documents/list", {
          containerTags: [tag],
          limit: 1,
          ...(statuses ? { statuses } : {}),
        })
      ).pagination.totalItems;
    const [all, done, failed] = await Promise.all([total(), total(["done"]), total(["failed"])]);
    return { all, done, failed };
  };
  const drain = async (): Promise<number> => {
    const t = performance.now();
    while (performance.now() - t < DRAIN_TIMEOUT_MS) {
      const counts = await Promise.all(tenants.map((x) => count(x.tag)));
      if (counts.every((c) => c.done + c.failed >= c.all)) break;
      await sleep(500);
    }
    return performance.now() - t;
  };
  await drain();
  await runClients(
    service.url,
    tenants,
    { ...o, addShare: 0, thinkMs: 0, clients: 2 },
    performance.now() + 3_000,
    0,
  );

  const idleSamples: number[] = [];
  for (let i = 0; i < 6; i++) {
    idleSamples.push(rssOf(service.pid));
    await sleep(500);
  }
  const rssIdleBytes = [...idleSamples].sort((a, b) => a - b)[Math.floor(idleSamples.length / 2)] as number;
  log(`attack: idle RSS ${(rssIdleBytes / 2 ** 20).toFixed(0)} MiB; baseline phase, ${o.phaseS} s`);

  // Phase 1: the clients alone.
  let rss = rssSampler({ service: service.pid }, 250);
  let t0 = performance.now();
  const baselineSamples = await runClients(service.url, tenants, o, t0 + o.phaseS * 1000, 1);
  const baseline = phaseOf("baseline", baselineSamples, performance.now() - t0, rss.stop().service);
  log(
    `attack: baseline ${baseline.requests} requests, ${baseline.errors} errors, p95 ${baseline.latency.p95.toFixed(1)} ms`,
  );
  const between = await drain();

  // Phase 2: the clients with the attacker beside them.
  log(`attack: attack phase, ${o.phaseS} s`);
  const attackerOptions: AttackerOptions = {
    url: service.url,
    durationMs: o.phaseS * 1000,
    bodyBytes: o.bodyMiB * 2 ** 20,
    bodyRate: o.bodyRate,
    bodiesInFlight: o.bodiesInFlight,
    keyRate: o.keyRate,
    keysInFlight: 32,
    signInRate: o.signInRate,
    signInsInFlight: 16,
    consoleEmail: CONSOLE_USER.email,
    requestTimeoutMs: 120_000,
    graceMs: 30_000,
  };
  rss = rssSampler({ service: service.pid }, 250);
  t0 = performance.now();
  const attacker = spawnAttacker(attackerOptions);
  const stopAttacker = cleanup.add("attacker process", () => attacker.stop());
  let attackerRssPeak = 0;
  let guardTripped = false;
  const watch = setInterval(() => {
    attackerRssPeak = Math.max(attackerRssPeak, rssOf(attacker.pid));
    if (!guardTripped && rssOf(service.pid) - rssIdleBytes > o.guardMiB * 2 ** 20) {
      guardTripped = true;
      log(`attack: the service's RSS rose past idle + ${o.guardMiB} MiB: stopping the attacker`);
      attacker.stop();
    }
  }, 250);
  const attackSamples = await runClients(service.url, tenants, o, t0 + o.phaseS * 1000, 2);
  const attackWall = performance.now() - t0;
  const attackerResult = await attacker.result;
  clearInterval(watch);
  await stopAttacker();

  // Right after the flood, from the same address: does each valid key answer?
  const afterFlood: AttackResult["afterFlood"] = [];
  for (const tenant of tenants) {
    const api = jsonClient({ baseUrl: service.url, apiKey: tenant.key, connections: 1, timeoutMs: 60_000 });
    const res = await api.request("POST", "/v3/search", { q: "budget", containerTags: [tenant.tag] });
    api.close();
    afterFlood.push({
      who: `${tenant.tag} key`,
      route: "POST /v3/search",
      status: res.status,
      error: res.error,
    });
  }
  const adminRes = await admin.request("POST", "/v3/documents/list", { limit: 1 });
  afterFlood.push({
    who: "admin key",
    route: "POST /v3/documents/list",
    status: adminRes.status,
    error: adminRes.error,
  });
  refused.ms = 0;
  await call("POST", "/v3/documents/list", { limit: 1 });
  const lockoutMs = refused.ms;
  const attack = {
    ...phaseOf("attack", attackSamples, attackWall, rss.stop().service),
    attackerRssPeakBytes: Math.max(attackerRssPeak, attackerResult.peakRssBytes),
  };
  log(
    `attack: with the attacker ${attack.requests} requests, ${attack.errors} errors, p95 ${attack.latency.p95.toFixed(1)} ms; peak RSS ${(attack.rssPeakBytes / 2 ** 20).toFixed(0)} MiB`,
  );

  // Nothing lost: every add answered 2xx is listed under its tenant's tag.
  const end = await drain();
  const documents: AttackResult["documents"] = [];
  for (const tenant of tenants) {
    const present = new Set<string>();
    for (let page = 1; ; page++) {
      const res = await call<{ memories: { id: string }[]; pagination: { totalPages: number } }>(
        "POST",
        "/v3/documents/list",
        { containerTags: [tenant.tag], limit: 200, page },
      );
      for (const m of res.memories) present.add(m.id);
      if (page >= res.pagination.totalPages) break;
    }
    const c = await count(tenant.tag);
    documents.push({
      tag: tenant.tag,
      added: tenant.ids.length,
      present: present.size,
      missing: tenant.ids.filter((id) => !present.has(id)).length,
      done: c.done,
      failed: c.failed,
      pending: c.all - c.done - c.failed,
    });
  }
  const rssAfterBytes = rssOf(service.pid);
  const settings = service.settings;
  await service.stop();
  return {
    options: o,
    settings,
    rssIdleBytes,
    rssAfterBytes,
    baseline,
    attack,
    attacker: attackerResult,
    guardTripped,
    afterFlood,
    lockoutMs,
    documents,
    drainMs: { between, end },
  };
}
