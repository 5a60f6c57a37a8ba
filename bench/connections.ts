// Connections side by side (issue #20, "fair shares"): one connection's first sync of 10,000 files must not
// hold back another connection's incremental sync or the API's own adds. A real S3-compatible server (the
// tests' s3rver) holds a big bucket and a small one; the service runs as `npm start` runs it (main.ts, a child
// process with its own Temporal dev server and PGlite). The small connection's incremental sync and a few
// single adds are timed first on the idle service, then while the big connection's first sync is queued
// ahead of them; then the big connection is deleted with its documents, and that is timed too.
// Writes the "Connections side by side" section of docs/benchmarks.md.
// Usage: npm run bench:connections -- [--big 10000] [--small 20] [--changes 5] [--adds 5] [--backlog 2000]
//        [--in-flight <MAX_DOCUMENTS_IN_FLIGHT>] [--env KEY=VALUE ...] [--out FILE]

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { loadConfig } from "../config/env.ts";
import { resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import { type S3TestServer, startS3Server } from "../test/support/s3-server.ts";
import { bulkDocuments, tenantDocuments } from "./lib/bulk-docs.ts";
import { readCorpus } from "./lib/corpus.ts";
import { startServiceProcess } from "./lib/daemon.ts";
import { type JsonClient, jsonClient } from "./lib/http.ts";
import { rssSampler } from "./lib/proc.ts";
import { log } from "./lib/progress.ts";
import { machine } from "./lib/report.ts";
import { revision } from "./lib/revision.ts";
import { CONNECTIONS_HEADING, findSection, replaceSection } from "./lib/sections.ts";
import { Cleanup } from "./lib/service.ts";
import { ms, type Summary, summarize } from "./lib/stats.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
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

interface ConnectionsResult {
  options: Options;
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

interface Options {
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

async function run(options: Options, cleanup: Cleanup): Promise<ConnectionsResult> {
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

function render(r: ConnectionsResult, meta: { started: Date; command: string; revision: string }): string {
  const o = r.options;
  const row = (what: string, idle: string, during: string, ratio: string) =>
    `| ${what} | ${idle} | ${during} | ${ratio} |`;
  const x = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}×` : "—");
  const m = machine();
  return [
    CONNECTIONS_HEADING,
    "",
    `Measured ${meta.started.toISOString().slice(0, 10)} on ${m.cpu} (${m.cores} cores, ${m.memory}, Node ${m.node}), revision ${meta.revision}, with \`${meta.command}\`.`,
    `The embedded default (\`main.ts\` as a child process, PGlite, its own Temporal dev server), \`MAX_DOCUMENTS_IN_FLIGHT=${o.inFlight}\`,`,
    `\`EMBEDDING_THREADS=${o.threads}\`${Object.entries(o.env)
      .map(([k, v]) => `, \`${k}=${v}\``)
      .join(
        "",
      )}; a real S3-compatible server (s3rver) on loopback. Connection "archive" holds ${o.big.toLocaleString("en")}`,
    `200-word texts, connection "desk" ${o.small}. The desk's incremental sync (${o.changes} new files, then \`POST /v3/connections/:id/sync\`)`,
    `and ${o.adds} single \`POST /v3/documents\` adds are timed on the idle service, then again once the archive's first sync`,
    `has saved ${o.backlog.toLocaleString("en")} documents that wait for a slot.`,
    "",
    "| | idle | during the archive's first sync | ratio |",
    "|---|---|---|---|",
    row(
      `desk incremental sync, ${o.changes} files: request → all done`,
      ms(r.idle.syncMs),
      ms(r.during.syncMs),
      x(r.during.syncMs, r.idle.syncMs),
    ),
    row(
      `single add, queued → done: p50 / max of ${o.adds}`,
      `${ms(r.idle.addToDone.p50)} / ${ms(r.idle.addToDone.max)}`,
      `${ms(r.during.addToDone.p50)} / ${ms(r.during.addToDone.max)}`,
      x(r.during.addToDone.p50, r.idle.addToDone.p50),
    ),
    row("archive documents waiting ahead of them", "0", r.during.bigWaiting.toLocaleString("en"), ""),
    "",
    `- The desk's first sync of ${o.small} files took ${ms(r.firstSmallSyncMs)} on the idle service.`,
    `- When the phases ended, ${ms(r.bigElapsedMs)} into its first sync, the archive had saved ${r.bigSaved.toLocaleString("en")} of`,
    `  ${o.big.toLocaleString("en")} files and finished (done or failed) ${r.bigDone.toLocaleString("en")}.`,
    `- Deleting the archive connection with its documents: ${ms(r.deleteMs)}; ${r.leftAfterDelete} of its documents left 5 s later.`,
    `- The daemon's peak RSS over the run: ${Math.round(r.peakRssMiB)} MiB.`,
    "",
  ].join("\n");
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const { values } = parseArgs({
    args: argv,
    options: {
      big: { type: "string" },
      small: { type: "string" },
      changes: { type: "string" },
      adds: { type: "string" },
      backlog: { type: "string" },
      "in-flight": { type: "string" },
      env: { type: "string", multiple: true },
      out: { type: "string" },
    },
    strict: true,
  });
  const int = (v: string | undefined, fallback: number) => {
    const n = v === undefined ? fallback : Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`expected a positive integer, got "${v}"`);
    return n;
  };
  const config = loadConfig({});
  const options: Options = {
    big: int(values.big, 10_000),
    small: int(values.small, 20),
    changes: int(values.changes, 5),
    adds: int(values.adds, 5),
    backlog: int(values.backlog, 2_000),
    threads: config.EMBEDDING_THREADS,
    inFlight: int(values["in-flight"], config.MAX_DOCUMENTS_IN_FLIGHT),
    env: Object.fromEntries(
      (values.env ?? []).map((kv) => {
        const eq = kv.indexOf("=");
        if (eq < 1) throw new Error(`--env takes KEY=VALUE, got "${kv}"`);
        return [kv.slice(0, eq), kv.slice(eq + 1)];
      }),
    ),
  };
  const out = path.resolve(root, values.out ?? "docs/benchmarks.md");
  const cleanup = new Cleanup();
  cleanup.exitOnSignals(log);
  const started = new Date();
  const rev = revision();
  let result: ConnectionsResult;
  try {
    result = await run(options, cleanup);
  } finally {
    await cleanup.runAll();
  }
  const section = render(result, {
    started,
    command: `npm run bench:connections${argv.length ? ` -- ${argv.join(" ")}` : ""}`,
    revision: rev,
  });
  process.stdout.write(`\n${section}\n`);
  const previous = existsSync(out) ? readFileSync(out, "utf8") : "# Benchmarks\n";
  writeFileSync(
    out,
    findSection(previous, CONNECTIONS_HEADING)
      ? replaceSection(previous, CONNECTIONS_HEADING, section)
      : `${previous.trimEnd()}\n\n${section}`,
  );
  log(`wrote the "${CONNECTIONS_HEADING.slice(3)}" section of ${path.relative(process.cwd(), out) || out}`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`bench:connections failed: ${(error as Error).stack ?? error}\n`);
    process.exit(1);
  },
);
