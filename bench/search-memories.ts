// Memory search at scale (issue #25): `POST /v4/search` in its default mode, memories, which is what the SDK's
// `client.search.memories` sends. The store is filled through the store path the API's memory add takes
// (store/memories.ts insertMemories: one row at a time, the HNSW and GIN indexes updated as it goes, 100 memories a
// call as a batch add sends them), with the statistics refresh the service's schedule runs as the table grows.
// No model runs for the memories: their texts and vectors are the search benchmark's cached ones (SciFact
// sentences, pairs and triples). Queries are embedded by the service as always.
//
// One store holds both layouts the issue asks for: the same memories once in one big container (`all`, one
// tenant holding every memory) and once spread over `--memories-tags` small containers, so a small container's
// search runs among everybody's rows. Beside the service's figures, the same searches through the store alone
// (query vectors embedded beforehand) show what the SQL costs and what the request adds.

import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createEmbedder, resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import { openPglite } from "../store/db.ts";
import { insertMemories, searchMemories } from "../store/memories.ts";
import { analyzeIfGrown } from "../store/search/keyword.ts";
import { ensureVectorIndexes } from "../store/search/vector-index.ts";
import { CHURN_SPACE, loadTextPool, tableSizes } from "./lib/churn.ts";
import { log, progress } from "./lib/progress.ts";
import {
  type ConcurrentLatency,
  concurrentLatency,
  type LoadRoute,
  type RouteLatency,
  sequentialLatency,
} from "./lib/route-latency.ts";
import { type Cleanup, serviceQueryPrecision, startBenchService, tempDir } from "./lib/service.ts";
import { type Summary, summarize } from "./lib/stats.ts";

const BIG_CONTAINER = "all";
const PROJECTS = 200;
const IGNORE_CASE_SCOPE = `"${BIG_CONTAINER}", filtered to one of ${PROJECTS} projects with ignoreCase`;
const BATCH = 100;
const smallContainer = (i: number, tags: number) => `m-${String(i % tags).padStart(4, "0")}`;

export interface MemorySearchOptions {
  /** Memories in the big container; as many again are spread over the small ones. */
  memories: number;
  /** Small containers. */
  tags: number;
  searches: number;
  clients: number;
  threads: number;
  /** Keep the filled store here and reuse it (experiments; not for the page). */
  store?: string;
}

interface StoreLatency {
  scope: string;
  latency: Summary;
  meanResults: number;
}

export interface MemorySearchResult {
  embedder: { name: string; model: string };
  memories: number;
  fillMs: number;
  /** Memories per second through the store path (no model). */
  fillRate: number;
  sizes: { heapMb: number; indexes: { name: string; mb: number }[]; live: number };
  /** The same searches through the store alone, query vectors ready (what the SQL costs). */
  store: StoreLatency[];
  sequential: RouteLatency[];
  concurrent: ConcurrentLatency[];
  reusedStore?: string;
  /** The buffer pool the service's store started with (the default `auto` resolved, or PGLITE_SHARED_BUFFERS). */
  servicePool?: string;
}

interface FillRecord {
  options: Pick<MemorySearchOptions, "memories" | "tags">;
  fillMs: number;
  fillRate: number;
}

const FILL_RECORD = "fill.json";
const mb = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

export async function runMemorySearch(
  o: MemorySearchOptions & { cleanup: Cleanup; temporalAddress: string; queries: string[] },
): Promise<MemorySearchResult> {
  const embedderName = resolveDefaultEmbedder().name;
  if (embedderName !== "bge-small")
    throw new Error(
      `search-memories needs the bge-small model (the cached vectors); the default here is ${embedderName}`,
    );
  const space = { model: CHURN_SPACE.name, dimension: CHURN_SPACE.dimension };
  const temp = o.store ? undefined : tempDir(o.cleanup, "memory-bench-memories-");
  const dataDir = o.store ?? temp?.dir ?? "";
  const options = { memories: o.memories, tags: o.tags };
  let fill = o.store ? readFill(o.store, options) : undefined;
  if (fill) log(`search-memories: reusing the store filled in ${o.store}`);
  else {
    if (o.store) {
      rmSync(o.store, { recursive: true, force: true });
      mkdirSync(o.store, { recursive: true });
    }
    fill = await fillStore(dataDir, options);
    if (o.store) writeFileSync(path.join(o.store, FILL_RECORD), `${JSON.stringify(fill, null, 2)}\n`);
  }

  const queries = o.queries;
  const small = (i: number) => smallContainer((i * 7919) % o.tags, o.tags);
  const project = (i: number) => `p${(i * 37) % PROJECTS}`;
  // The same projects spelt in capitals, matched with ignoreCase (the folded metadata's index, migration 0020).
  const projectIgnoringCase = (i: number) => ({
    AND: [{ key: "project", value: project(i).toUpperCase(), ignoreCase: true }],
  });

  // The store alone: the same searches with the query vectors embedded beforehand.
  const storeRows: StoreLatency[] = [];
  let sizeRecord: MemorySearchResult["sizes"];
  const store = await openPglite(dataDir);
  try {
    const sizes = await tableSizes(store.db, "memories", { countLive: true });
    const embedder = createEmbedder(embedderName, {
      threads: o.threads,
      queryPrecision: serviceQueryPrecision(embedderName),
    });
    const vectors = await embedder
      .embed(queries.slice(0, o.searches), "query")
      .finally(() => embedder.close());
    const scopes: { scope: string; tag: (i: number) => string; filters?: (i: number) => unknown }[] = [
      { scope: `"${BIG_CONTAINER}" (every memory)`, tag: () => BIG_CONTAINER },
      {
        scope: `"${BIG_CONTAINER}", filtered to one of ${PROJECTS} projects`,
        tag: () => BIG_CONTAINER,
        filters: (i) => ({ AND: [{ key: "project", value: project(i) }] }),
      },
      { scope: IGNORE_CASE_SCOPE, tag: () => BIG_CONTAINER, filters: projectIgnoringCase },
      { scope: `one of ${o.tags} small containers`, tag: small },
    ];
    for (const s of scopes) {
      const times: number[] = [];
      let results = 0;
      for (let i = -10; i < o.searches; i++) {
        const k = Math.max(0, i);
        const started = performance.now();
        const hits = await searchMemories(store.db, {
          text: queries[k % queries.length] as string,
          embedding: vectors[k % vectors.length] as number[],
          space,
          containerTags: [s.tag(k)],
          scope: null,
          includeForgotten: false,
          ...(s.filters ? { filters: s.filters(k) as never } : {}),
          candidates: 50,
        });
        if (i >= 0) {
          times.push(performance.now() - started);
          results += Math.min(10, hits.length);
        }
      }
      storeRows.push({ scope: s.scope, latency: summarize(times), meanResults: results / o.searches });
      log(`search-memories: store alone in ${s.scope}: p95 ${summarize(times).p95.toFixed(1)} ms`);
    }
    sizeRecord = {
      heapMb: mb(sizes.heap + sizes.toast),
      indexes: Object.entries(sizes.indexes).map(([name, bytes]) => ({ name, mb: mb(bytes) })),
      live: sizes.live,
    };
  } finally {
    await store.close();
  }

  const service = await startBenchService(o.cleanup, {
    dataDir,
    temporalAddress: o.temporalAddress,
    threads: o.threads,
    embeddingModel: embedderName,
  });
  log(`search-memories: service up at ${service.url}`);
  const route = (scope: string, body: (i: number) => Record<string, unknown>): LoadRoute => ({
    route: "POST /v4/search (memories)",
    scope,
    request: (i) => ({
      method: "POST",
      path: "/v4/search",
      body: { q: queries[i % queries.length], limit: 10, ...body(i) },
    }),
  });
  const routes = [
    route(`"${BIG_CONTAINER}" (every memory)`, () => ({ containerTag: BIG_CONTAINER })),
    route(`"${BIG_CONTAINER}", filtered to one of ${PROJECTS} projects`, (i) => ({
      containerTag: BIG_CONTAINER,
      filters: { AND: [{ key: "project", value: project(i) }] },
    })),
    route(IGNORE_CASE_SCOPE, (i) => ({ containerTag: BIG_CONTAINER, filters: projectIgnoringCase(i) })),
    route(`one of ${o.tags} small containers`, (i) => ({ containerTag: small(i) })),
  ];
  const sequential = await sequentialLatency(service, routes, o.searches, "search-memories");
  const concurrent: ConcurrentLatency[] = [];
  for (const r of [routes[0], routes.at(-1)])
    if (r) concurrent.push(await concurrentLatency(service, r, o.clients, o.searches * 2, "search-memories"));
  await service.stop();
  await temp?.remove();
  return {
    embedder: { name: embedderName, model: CHURN_SPACE.name },
    memories: o.memories,
    fillMs: fill.fillMs,
    fillRate: fill.fillRate,
    sizes: sizeRecord,
    store: storeRows,
    sequential,
    concurrent,
    ...(o.store ? { reusedStore: o.store } : {}),
    ...(service.sharedBuffers ? { servicePool: service.sharedBuffers } : {}),
  };
}

function readFill(dir: string, options: FillRecord["options"]): FillRecord | undefined {
  const file = path.join(dir, FILL_RECORD);
  if (!existsSync(file)) return undefined;
  const record = JSON.parse(readFileSync(file, "utf8")) as FillRecord;
  return JSON.stringify(record.options) === JSON.stringify(options) ? record : undefined;
}

/**
 * `memories` memories into the big container and as many over the small ones, a batch of each in turn (so the
 * HNSW graph grows with both, as a service's does with everybody's adds), each with a project in its metadata.
 */
async function fillStore(dataDir: string, options: FillRecord["options"]): Promise<FillRecord> {
  const pool = await loadTextPool(Math.min(100_000, options.memories));
  const store = await openPglite(dataDir);
  try {
    const space = { model: CHURN_SPACE.name, dimension: CHURN_SPACE.dimension };
    await ensureVectorIndexes(store.db, space);
    const started = performance.now();
    const batches = Math.ceil(options.memories / BATCH);
    const bar = progress("search-memories: filling", batches * 2 * BATCH);
    for (let b = 0; b < batches; b++) {
      const items = Array.from({ length: Math.min(BATCH, options.memories - b * BATCH) }, (_, j) => {
        const i = (b * BATCH + j) % pool.texts.length;
        return {
          content: pool.texts[i] as string,
          embedding: Array.from(pool.vectors[i] as Float32Array),
          metadata: { project: `p${(b * BATCH + j) % PROJECTS}` },
        };
      });
      await insertMemories(store.db, BIG_CONTAINER, space, items);
      await insertMemories(store.db, smallContainer(b, options.tags), space, items);
      // What the service's statistics schedule does as a table grows (store/search/keyword.ts).
      if (b % 50 === 49) await analyzeIfGrown(store.db, "memories");
      bar.update((b + 1) * 2 * BATCH);
    }
    await analyzeIfGrown(store.db, "memories");
    bar.finish();
    const fillMs = performance.now() - started;
    return { options, fillMs, fillRate: (options.memories * 2 * 1000) / fillMs };
  } finally {
    await store.close();
  }
}
