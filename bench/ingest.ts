// Ingestion throughput: documents added through the SDK as fast as the API takes them, timed until
// every one is `done`, next to the raw speed of the embedding model on the same texts.

import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "drizzle-orm";
import type Supermemory from "supermemory";
import { loadConfig } from "../config/env.ts";
import { chunkText } from "../pipeline/chunker.ts";
import { createEmbedder, resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import { openPglite, queryRows } from "../store/db.ts";
import type { Abstract } from "./lib/corpus.ts";
import { ingestDocuments } from "./lib/corpus.ts";
import { type CpuShares, cpuMeter } from "./lib/cpu.ts";
import { log, progress } from "./lib/progress.ts";
import { type Cleanup, startBenchService, tempDir } from "./lib/service.ts";
import { type Summary, summarize } from "./lib/stats.ts";

const BATCH = 50;
const CONCURRENT_BATCHES = 4;
const POLL_MS = 500;
const STALL_MS = 5 * 60_000;
const TAG = "bench-ingest";

interface EmbedderRun {
  /** The model timed (missing from results stored before it was recorded). */
  model?: string;
  texts: number;
  ms: number;
  perSecond: number;
  cpu?: CpuShares;
}

export interface IngestResult {
  docs: number;
  wordsPerDoc: number;
  threads: number;
  chunkMaxChars: number;
  /** Chunks the service's chunker makes of these documents (computed with the same function and settings). */
  expectedChunks: number;
  /** Chunks found in the store afterwards, and how many of them carry an embedding. */
  storedChunks: number;
  embeddedChunks: number;
  embedderOnDocs: EmbedderRun;
  embedderOnChunks: EmbedderRun;
  /** From just before the first add until every add request had answered. */
  acceptMs: number;
  /** From just before the first add to the last `done` in any statusHistory. */
  wallMs: number;
  docsPerSecond: number;
  chunksPerSecond: number;
  failed: number;
  /** Per document, queued → done, from statusHistory. */
  latency: Summary;
  /** Per document, time spent in each stage (from statusHistory). */
  stages: Record<"queued" | "extracting" | "chunking" | "embedding", Summary>;
  serviceStartMs: number;
  warmupDocMs: number;
  /** When documents reached each status, in ms after the first add: first, median and last document. */
  milestones: { status: string; first: number; p50: number; last: number }[];
  /** Share of the wall time during which no document was in the `embedding` stage (the model surely idle). */
  embedderIdleShare: number;
  /** CPU use while the documents were processed (until the poll that saw none unfinished). */
  cpu?: CpuShares;
}

/** Total length of the union of intervals. */
function covered(intervals: [number, number][]): number {
  const sorted = intervals.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  let total = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const [a, b] of sorted) {
    if (b <= end) continue;
    total += b - Math.max(a, end);
    end = b;
  }
  return total;
}

interface StatusEvent {
  status: string;
  at: string;
  run: number;
}

async function timeEmbedder(
  label: string,
  threads: number,
  texts: string[],
  temporalPid?: number,
): Promise<EmbedderRun> {
  // The model the service embeds with, in the lane an import's chunks take (the model's own threads only).
  const embedder = createEmbedder(resolveDefaultEmbedder().name, { threads });
  const bulk = { priority: "bulk" } as const;
  try {
    // Model load and the first inference (graph set-up) are not part of the throughput.
    await embedder.embed(texts.slice(0, Math.min(texts.length, 8 * threads)), "document", bulk);
    const bar = progress(label, texts.length);
    const meter = cpuMeter({ temporalPid, topThreads: threads });
    const started = performance.now();
    const step = 32;
    for (let i = 0; i < texts.length; i += step) {
      await embedder.embed(texts.slice(i, i + step), "document", bulk);
      bar.update(Math.min(texts.length, i + step));
    }
    const ms = performance.now() - started;
    const cpu = meter.stop();
    bar.finish();
    return { model: embedder.model, texts: texts.length, ms, perSecond: (texts.length * 1000) / ms, cpu };
  } finally {
    await embedder.close();
  }
}

async function waitDone(client: Supermemory, id: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const doc = await client.documents.get(id);
    if (doc.status === "done") return;
    if (doc.status === "failed") throw new Error(`warm-up document failed: ${JSON.stringify(doc)}`);
    if (Date.now() > deadline) throw new Error(`warm-up document not done after ${timeoutMs} ms`);
    await sleep(100);
  }
}

async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T, i);
    }
  });
  await Promise.all(workers);
  return out;
}

export async function runIngest(opts: {
  cleanup: Cleanup;
  temporalAddress: string;
  temporalPid?: number;
  corpus: Abstract[];
  docs: number;
  threads: number;
}): Promise<IngestResult> {
  const { cleanup, docs: count, threads } = opts;
  const texts = ingestDocuments(opts.corpus, count);
  const defaults = loadConfig({});
  const chunking = { maxChars: defaults.CHUNK_MAX_CHARS, overlapSentences: defaults.CHUNK_OVERLAP_SENTENCES };
  const chunkTexts = texts.flatMap((t) => chunkText(t, chunking).map((c) => c.content));
  log(
    `ingest: ${count} documents of 200 words → ${chunkTexts.length} chunks at CHUNK_MAX_CHARS=${chunking.maxChars}`,
  );

  // The model alone, with the service's thread count, on the same texts (the service is not running yet).
  const embedderOnDocs = await timeEmbedder(
    "embedder alone, whole documents",
    threads,
    texts,
    opts.temporalPid,
  );
  const embedderOnChunks = await timeEmbedder(
    "embedder alone, the pipeline's chunks",
    threads,
    chunkTexts,
    opts.temporalPid,
  );

  const data = tempDir(cleanup, "memory-bench-ingest-");
  const startedService = performance.now();
  const service = await startBenchService(cleanup, {
    dataDir: data.dir,
    temporalAddress: opts.temporalAddress,
    threads,
  });
  const serviceStartMs = performance.now() - startedService;
  const { client } = service;
  log(`ingest: service up at ${service.url} in ${(serviceStartMs / 1000).toFixed(1)} s`);

  // One document end to end first, so workflow bundle, model and store are warm before the clock runs.
  const warm = performance.now();
  const warmDoc = ingestDocuments(opts.corpus, count + 1)[count] as string;
  const added = await client.documents.add({ content: warmDoc, containerTag: "bench-warmup" });
  await waitDone(client, added.id);
  const warmupDocMs = performance.now() - warm;
  log(`ingest: warm-up document done in ${(warmupDocMs / 1000).toFixed(1)} s`);

  const batches: string[][] = [];
  for (let i = 0; i < texts.length; i += BATCH) batches.push(texts.slice(i, i + BATCH));
  const ids: string[] = [];
  let addError: unknown;
  let accepted = 0;
  const meter = cpuMeter({ temporalPid: opts.temporalPid, topThreads: threads });
  const t0 = Date.now();
  const p0 = performance.now();
  let acceptMs = Number.NaN;
  const adding = mapLimit(batches, CONCURRENT_BATCHES, async (batch) => {
    const res = await client.documents.batchAdd({ documents: batch, containerTag: TAG });
    for (const r of res.results) {
      if (r.id) ids.push(r.id);
      else throw new Error(`batch item rejected: ${JSON.stringify(r)}`);
    }
    accepted += batch.length;
  })
    .then(() => {
      acceptMs = performance.now() - p0;
    })
    .catch((error) => {
      addError = error;
    });

  const bar = progress(`ingest: documents done`, count);
  let lastChange = Date.now();
  let lastUnfinished = -1;
  for (;;) {
    await sleep(POLL_MS);
    if (addError) throw addError;
    const { totalCount } = await client.documents.listProcessing();
    const doneSoFar = accepted - totalCount;
    bar.update(Math.max(0, doneSoFar), `${totalCount} unfinished, ${accepted} accepted`);
    if (totalCount !== lastUnfinished || accepted < count) {
      lastUnfinished = totalCount;
      lastChange = Date.now();
    }
    if (accepted === count && Number.isFinite(acceptMs) && totalCount === 0) break;
    if (Date.now() - lastChange > STALL_MS)
      throw new Error(`no progress for ${STALL_MS / 1000} s (${totalCount} unfinished)`);
  }
  const cpu = meter.stop();
  await adding;
  bar.finish(`all ${count} finished processing`);

  const details = await mapLimit(ids, 8, (id) => client.documents.get(id));
  let failed = 0;
  let lastDone = t0;
  const latencies: number[] = [];
  const stageMs: Record<string, number[]> = { queued: [], extracting: [], chunking: [], embedding: [] };
  const order = ["queued", "extracting", "chunking", "embedding", "done"];
  const reached: Record<string, number[]> = Object.fromEntries(order.map((o) => [o, []]));
  const embedding: [number, number][] = [];
  for (const doc of details) {
    if (doc.status !== "done") {
      failed++;
      continue;
    }
    const history = (doc as unknown as { statusHistory?: StatusEvent[] }).statusHistory ?? [];
    const at = (status: string) => {
      const e = history.find((h) => h.status === status);
      return e ? Date.parse(e.at) : Number.NaN;
    };
    const queued = at("queued");
    const done = at("done");
    lastDone = Math.max(lastDone, done);
    latencies.push(done - queued);
    for (const status of order) (reached[status] as number[]).push(at(status) - t0);
    embedding.push([at("embedding"), done]);
    for (let i = 0; i < order.length - 1; i++) {
      (stageMs[order[i] as string] as number[]).push(at(order[i + 1] as string) - at(order[i] as string));
    }
  }
  const wallMs = lastDone - t0;
  const milestones = order.map((status) => {
    const times = summarize(reached[status] as number[]);
    const sorted = [...(reached[status] as number[])].sort((a, b) => a - b);
    return { status, first: sorted[0] ?? Number.NaN, p50: times.p50, last: times.max };
  });
  const embedderIdleShare = 1 - covered(embedding) / wallMs;
  await service.stop();

  // Count what was stored (the service is stopped, so its PGlite directory can be opened here).
  const store = await openPglite(data.dir);
  let storedChunks = 0;
  let embeddedChunks = 0;
  try {
    const [row] = await queryRows<{ total: number; embedded: number }>(
      store.db,
      sql`SELECT count(*)::int AS total, count(c.embedding)::int AS embedded
          FROM chunks c JOIN documents d ON d.id = c.document_id WHERE ${TAG} = ANY(d.container_tags)`,
    );
    storedChunks = row?.total ?? 0;
    embeddedChunks = row?.embedded ?? 0;
  } finally {
    await store.close();
  }
  await data.remove();

  return {
    docs: count,
    wordsPerDoc: 200,
    threads,
    chunkMaxChars: chunking.maxChars,
    expectedChunks: chunkTexts.length,
    storedChunks,
    embeddedChunks,
    embedderOnDocs,
    embedderOnChunks,
    acceptMs,
    wallMs,
    docsPerSecond: ((count - failed) * 1000) / wallMs,
    chunksPerSecond: (embeddedChunks * 1000) / wallMs,
    failed,
    latency: summarize(latencies),
    stages: {
      queued: summarize(stageMs.queued as number[]),
      extracting: summarize(stageMs.extracting as number[]),
      chunking: summarize(stageMs.chunking as number[]),
      embedding: summarize(stageMs.embedding as number[]),
    },
    serviceStartMs,
    warmupDocMs,
    milestones,
    embedderIdleShare,
    cpu,
  };
}
