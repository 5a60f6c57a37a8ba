// Connections side by side (issue #20, "fair shares"): one connection's first sync of 10,000 files must not
// hold back another connection's incremental sync or the API's own adds. A real S3-compatible server (the
// tests' s3rver) holds a big bucket and a small one; the service runs as `npm start` runs it (main.ts, a child
// process with its own Temporal dev server and PGlite). The small connection's incremental sync and a few
// single adds are timed first on the idle service, then while the big connection's first sync is queued
// ahead of them; then the big connection is deleted with its documents, and that is timed too.
// The scenario `connections` of bench/main.ts (`npm run bench -- --with connections`, or `npm run bench:connections`);
// bench/lib/connections-report.ts renders it.

import { setTimeout as sleep } from "node:timers/promises";
import { resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import { type S3TestServer, startS3Server } from "../test/support/s3-server.ts";
import { bulkDocuments, tenantDocuments } from "./lib/bulk-docs.ts";
import { readCorpus } from "./lib/corpus.ts";
import { startServiceProcess } from "./lib/daemon.ts";
import { type JsonClient, jsonClient } from "./lib/http.ts";
import { rssSampler } from "./lib/proc.ts";
import { log } from "./lib/progress.ts";
import type { Cleanup } from "./lib/service.ts";
import { ms, type Summary, summarize } from "./lib/stats.ts";

const BIG_TAG = "bench-archive";
const SMALL_TAG = "bench-desk";
const ADD_TAG = "bench-api-adds";
const POLL_MS = 250;
const TIMEOUT_MS = 20 * 60_000;

interface DocumentStatus {
  id: string;
  status: string;
  statusHistory?: { status: string; at: string }[];
}

interface Phase {
  /** Trigger (a sync request, or the adds) until every new document is done. */
  syncMs: number;
  /** Each single add: queued → done, from its status history. */
  addToDone: Summary;
  /** The big connection's documents not yet done when the phase started (0 when idle). */
  bigWaiting: number;
}

export interface ConnectionsResult {
  options: ConnectionsOptions;
  firstSmallSyncMs: number;
  idle: Phase;
  during: Phase;
  /** The big connection's first sync: documents it had saved, and of those done, when the phases ended. */
  bigSaved: number;
  bigDone: number;
  bigElapsedMs: number;
  deleteMs: number;
  leftAfterDelete: number;
  peakRssMiB: number;
}

export interface ConnectionsOptions {
  big: number;
  small: number;
  changes: number;
  adds: number;
  backlog: number;
  threads: number;
  inFlight: number;
  /** More service settings (`--env KEY=VALUE`), applied last. */
  env: Record<string, string>;
}

async function putAll(s3: S3TestServer, bucket: string, texts: string[], prefix: string, at = 0) {
  // s3rver answers one at a time; eight in flight keep it busy without a queue of thousands of promises.
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < texts.length) {
        const i = next++;
        await s3.putObject(bucket, `${prefix}/${at + i}.txt`, texts[i] as string, "text/plain");
      }
    }),
  );
}

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = TIMEOUT_MS,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(POLL_MS);
  }
}

/** Documents of a tag, and how many are done (the list's totals; no page of 10,000 rows). */
async function counts(api: JsonClient, tag: string): Promise<{ total: number; done: number }> {
  const total = (statuses?: string[]) =>
    api
      .must<{ pagination: { totalItems: number } }>("POST", "/v3/documents/list", {
        containerTags: [tag],
        limit: 1,
        ...(statuses ? { statuses } : {}),
      })
      .then((page) => page.pagination.totalItems);
  const [all, done] = await Promise.all([total(), total(["done", "failed"])]);
  return { total: all, done };
}

async function singleAdds(api: JsonClient, texts: string[]): Promise<Summary> {
  const ids = await Promise.all(
    texts.map(
      async (content) =>
        (await api.must<{ id: string }>("POST", "/v3/documents", { content, containerTag: ADD_TAG })).id,
    ),
  );
  const finished = await Promise.all(
    ids.map((id) =>
      until(`add ${id} done`, async () => {
        const doc = await api.must<DocumentStatus>("GET", `/v3/documents/${id}`);
        return doc.status === "done" || doc.status === "failed" ? doc : undefined;
      }),
    ),
  );
  return summarize(
    finished.map((doc) => {
      const at = (s: string) => Date.parse(doc.statusHistory?.find((h) => h.status === s)?.at ?? "");
      return at(doc.status) - at("queued");
    }),
  );
}

export async function runConnections(
  options: ConnectionsOptions,
  cleanup: Cleanup,
): Promise<ConnectionsResult> {
  const corpus = readCorpus();
  log(`S3 server: ${options.big} objects in "archive", ${options.small} in "desk"`);
  const s3 = await startS3Server({ buckets: ["archive", "desk"] });
  cleanup.add("S3 server", () => s3.stop());
  await putAll(s3, "archive", bulkDocuments(corpus, options.big), "old");
  const deskTexts = tenantDocuments(corpus, options.small + 2 * options.changes + 2 * options.adds);
  await putAll(s3, "desk", deskTexts.slice(0, options.small), "now");

  const service = await startServiceProcess(cleanup, {
    threads: options.threads,
    embeddingModel: resolveDefaultEmbedder().name,
    logLevel: "warn",
    extraEnv: {
      ALLOW_PRIVATE_NETWORK: "true",
      MAX_DOCUMENTS_IN_FLIGHT: String(options.inFlight),
      ...options.env,
    },
  });
  const rss = rssSampler({ service: service.pid, temporal: service.temporalPid });
  const api = jsonClient({
    baseUrl: service.url,
    apiKey: service.apiKey,
    connections: 8,
    timeoutMs: 120_000,
  });
  cleanup.add("bench client", async () => api.close());
  const connect = async (bucket: string, containerTag: string) =>
    (
      await api.must<{ id: string }>("POST", "/v3/connections/s3", {
        containerTag,
        metadata: {
          bucket,
          endpoint: s3.endpoint,
          accessKeyId: s3.accessKeyId,
          secretAccessKey: s3.secretAccessKey,
        },
      })
    ).id;
  const allDone = (tag: string, total: number) =>
    until(`${total} documents of ${tag} done`, async () => {
      const c = await counts(api, tag);
      return c.total >= total && c.done >= total ? c : undefined;
    });

  // The small connection's first sync, and one incremental sync and a few adds on the idle service.
  let t = performance.now();
  const small = await connect("desk", SMALL_TAG);
  await allDone(SMALL_TAG, options.small);
  const firstSmallSyncMs = performance.now() - t;
  log(`first sync of ${options.small} alone: ${ms(firstSmallSyncMs)}`);

  const incremental = async (round: number): Promise<number> => {
    const from = options.small + round * options.changes;
    await putAll(s3, "desk", deskTexts.slice(from, from + options.changes), "now", from);
    const started = performance.now();
    await api.must("POST", `/v3/connections/${small}/sync`);
    await allDone(SMALL_TAG, from + options.changes);
    return performance.now() - started;
  };
  const addTexts = (round: number) =>
    deskTexts
      .slice(options.small + 2 * options.changes)
      .slice(round * options.adds, (round + 1) * options.adds)
      .map((text) => `${text} (added through the API)`);
  const idleSync = await incremental(0);
  const idleAdds = await singleAdds(api, addTexts(0));
  const idle: Phase = { syncMs: idleSync, addToDone: idleAdds, bigWaiting: 0 };
  log(`idle: incremental sync ${ms(idle.syncMs)}, single add p50 ${ms(idle.addToDone.p50)}`);

  // The big connection's first sync: its documents queue up behind the in-flight bound.
  const bigStarted = performance.now();
  const big = await connect("archive", BIG_TAG);
  const backlog = await until(`${options.backlog} documents of the big sync saved`, async () => {
    const c = await counts(api, BIG_TAG);
    return c.total >= Math.min(options.backlog, options.big) ? c : undefined;
  });
  log(`big sync: ${backlog.total} saved, ${backlog.done} done after ${ms(performance.now() - bigStarted)}`);
  const [duringSync, duringAdds] = await Promise.all([incremental(1), singleAdds(api, addTexts(1))]);
  const during: Phase = {
    syncMs: duringSync,
    addToDone: duringAdds,
    bigWaiting: backlog.total - backlog.done,
  };
  const bigNow = await counts(api, BIG_TAG);
  const bigElapsedMs = performance.now() - bigStarted;
  log(`during: incremental sync ${ms(during.syncMs)}, single add p50 ${ms(during.addToDone.p50)}`);

  // Deleting the big connection takes its documents, queued ones included, and leaves no work behind.
  t = performance.now();
  await api.must("DELETE", `/v3/connections/${big}`, undefined, 600_000);
  const deleteMs = performance.now() - t;
  await sleep(5_000);
  const left = await counts(api, BIG_TAG);
  log(`deleted the big connection in ${ms(deleteMs)}; ${left.total} of its documents left 5 s later`);
  const peak = rss.stop();
  await service.stop();
  return {
    options,
    firstSmallSyncMs,
    idle,
    during,
    bigSaved: bigNow.total,
    bigDone: bigNow.done,
    bigElapsedMs,
    deleteMs,
    leftAfterDelete: left.total,
    peakRssMiB: peak.service / 2 ** 20,
  };
}
