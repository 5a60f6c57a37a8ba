// Search latency on data a tenant imported, not on a bulk-loaded table (issue #25): the store is filled through the
// service's own store path (bench/lib/churn.ts: save → admit → extracting → chunks with vectors and index updates,
// one document at a time, in batches as a batch import admits them), then a share of the documents is deleted and
// another share updated the way the API does, then the statistics and maintenance passes the service's schedules
// would have run meanwhile. The same store is then served by the real service (HTTP, auth, query embedding, SQL).
//
// One fill serves both layouts the issue asks for: every document carries the tag `all` (so a search in `all` covers
// every chunk, as one big tenant) and one of `--tags` small tags (so a search scoped to one of them is a small
// tenant's search among everybody's rows). Chunk texts and vectors come from the search benchmark's cache (no model
// runs for the documents; queries are embedded by the service as always).

import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import { type Database, openPglite } from "../store/db.ts";
import { type MaintenanceResult, runMaintenance } from "../store/maintenance.ts";
import { analyzeIfGrown } from "../store/search/keyword.ts";
import { ensureVectorIndexes } from "../store/search/vector-index.ts";
import {
  addDocuments,
  CHURN_SPACE,
  deleteDocuments,
  loadTextPool,
  type PlannedDocument,
  plannedDocuments,
  tableSizes,
  updateDocuments,
} from "./lib/churn.ts";
import { INDEXED_SCOPE } from "./lib/indexed-scope.ts";
import { log } from "./lib/progress.ts";
import {
  type ConcurrentLatency,
  concurrentLatency,
  type LoadRoute,
  type RouteLatency,
  sequentialLatency,
} from "./lib/route-latency.ts";
import { type Cleanup, startBenchService, tempDir } from "./lib/service.ts";

export const BIG_TAG = "all";
/**
 * Every document's metadata: one of PROJECTS projects and one of TEAMS teams, so that a metadata filter in the big
 * tag keeps a small share of it (a project: 0.5 %) or a large one (a team: 10 %).
 */
export const PROJECTS = 200;
const TEAMS = 10;
/**
 * A tag no document carries: searches in it find nothing, so the store has next to nothing to rank, and what
 * 8 clients get there is the floor the rest of a search (HTTP, the key, the query's embedding) sets on this machine.
 */
const EMPTY_TAG = "no-documents";
const metadataOf = (i: number) => ({
  project: `p${i % PROJECTS}`,
  team: `t${Math.floor(i / PROJECTS) % TEAMS}`,
});
/** Names the metadata layout in a kept store's fill record: a store filled before it had none. */
const METADATA_LAYOUT = `project:${PROJECTS},team:${TEAMS}`;

export interface ImportedSearchOptions {
  /** Live chunks wanted after the deletes. */
  chunks: number;
  /** Small tags the documents are spread over (each document also carries BIG_TAG). */
  tags: number;
  chunksPerDoc: number;
  /** Share of the imported documents deleted, and another share updated with new content, after the import. */
  churn: number;
  searches: number;
  /** Concurrent clients of the concurrency measurement. */
  clients: number;
  threads: number;
  /**
   * Keep the filled store in this directory and reuse it when it was filled with the same options (for
   * experiments on one imported store: an index, a setting, a plan); unset, a temporary store is filled and removed.
   */
  store?: string;
  /** The service's PGLITE_SHARED_BUFFERS when the run set one (PGLITE_SHARED_BUFFERS=1GB npm run bench ...). */
  sharedBuffers?: string;
  /** The service's EMBEDDING_QUERY_PRECISION when the run set one (EMBEDDING_QUERY_PRECISION=int8 npm run bench ...). */
  queryPrecision?: string;
}

/** What filling the store did: kept beside a reusable store (fill.json) so a reuse reports the same figures. */
interface FillRecord {
  options: Pick<ImportedSearchOptions, "chunks" | "tags" | "chunksPerDoc" | "churn"> & { metadata: string };
  documents: ImportedSearchResult["documents"];
  fillMs: number;
  fillRate: number;
  maintenance: ImportedSearchResult["maintenance"];
}

export type { ConcurrentLatency, RouteLatency };

export interface ImportedSearchResult {
  embedder: { name: string; model: string };
  documents: { imported: number; deleted: number; updated: number; live: number };
  liveChunks: number;
  fillMs: number;
  /** Documents per second through the store path (no model). */
  fillRate: number;
  maintenance: { statisticsMs: number; passMs: number; steps: string[] };
  sizes: {
    table: string;
    heapMb: number;
    indexes: { name: string; mb: number }[];
    live: number;
    dead: number;
  }[];
  sequential: RouteLatency[];
  concurrent: ConcurrentLatency[];
  /** Set when the run reused a kept store (--imported-store) instead of filling one. */
  reusedStore?: string;
  /** The buffer pool the service's store started with (the default `auto` resolved, or PGLITE_SHARED_BUFFERS). */
  servicePool?: string;
  /**
   * The same store served again with SEARCH_INDEX=memory (store/search/chunk-index): how long the index took to build
   * once the service was up, and the resident memory of the benchmark's process before and after. Its rows are in
   * `sequential` and `concurrent`, their scope ending in INDEXED_SCOPE.
   */
  searchIndex?: { chunks: number; buildMs: number; rssBeforeMb: number; rssAfterMb: number };
  /** The SQL rows' start named SEARCH_INDEX=sql (runs since the in-memory index became the default). */
  sqlNamed?: boolean;
}

const mb = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

export async function runImportedSearch(
  o: ImportedSearchOptions & { cleanup: Cleanup; temporalAddress: string; queries: string[] },
): Promise<ImportedSearchResult> {
  const embedderName = resolveDefaultEmbedder().name;
  // The cached vectors are bge-small's: a service with another model would search another vector space.
  if (embedderName !== "bge-small")
    throw new Error(
      `search-imported needs the bge-small model (the cached vectors); the default here is ${embedderName}`,
    );
  const docsWanted = Math.ceil(o.chunks / o.chunksPerDoc / (1 - o.churn));
  const pool = await loadTextPool(Math.min(100_000, docsWanted * o.chunksPerDoc));
  const planned: PlannedDocument[] = plannedDocuments({
    count: docsWanted,
    tags: o.tags,
    chunksPerDoc: o.chunksPerDoc,
    poolSize: pool.texts.length,
  }).map((d, i) => ({ ...d, extraTags: [BIG_TAG], metadata: metadataOf(i) }));

  const fillOptions = {
    chunks: o.chunks,
    tags: o.tags,
    chunksPerDoc: o.chunksPerDoc,
    churn: o.churn,
    metadata: METADATA_LAYOUT,
  };
  const kept = o.store ? keptDir(o.store) : undefined;
  const temp = kept ? undefined : tempDir(o.cleanup, "memory-bench-imported-");
  const dataDir = kept?.dir ?? temp?.dir ?? "";
  let fill = o.store ? readFill(o.store, fillOptions) : undefined;
  // Only a store filled by an earlier run is "reused": one this run filled (and keeps) is a fresh fill.
  const reused = Boolean(fill);
  if (fill) log(`search-imported: reusing the store filled in ${o.store} (${fill.documents.live} documents)`);
  else {
    kept?.reset();
    fill = await fillStore(dataDir, { ...fillOptions, options: fillOptions, docsWanted, pool, planned });
    if (o.store) writeFileSync(path.join(o.store, FILL_RECORD), `${JSON.stringify(fill, null, 2)}\n`);
  }

  const store = await openPglite(dataDir);
  let closed = false;
  o.cleanup.add("imported store", async () => {
    if (!closed) await store.close();
  });
  const sizes = [];
  for (const table of ["chunks", "documents", "memories"]) {
    const s = await tableSizes(store.db, table, { countLive: true });
    sizes.push({
      table,
      heapMb: mb(s.heap + s.toast),
      indexes: Object.entries(s.indexes).map(([name, bytes]) => ({ name, mb: mb(bytes) })),
      live: s.live,
      dead: s.dead,
    });
  }
  const liveChunks = sizes.find((s) => s.table === "chunks")?.live ?? 0;
  closed = true;
  await store.close();

  // SQL first, named (the default is the in-memory index): its rows are the baseline of the index's below.
  const service = await startBenchService(o.cleanup, {
    dataDir,
    temporalAddress: o.temporalAddress,
    threads: o.threads,
    embeddingModel: embedderName,
    searchIndex: "sql",
  });
  log(`search-imported: service up at ${service.url}`);
  const queries = o.queries;
  const smallTag = (i: number) => planned[(i * 7919) % planned.length]?.tag as string;
  type Route = LoadRoute;
  // `/v3/search` in the big tag with one metadata condition, another value for each search.
  const filteredInBigTag = (filtered: string, condition: (i: number) => Record<string, unknown>): Route => ({
    route: "POST /v3/search",
    scope: `"${BIG_TAG}", filtered to ${filtered}`,
    request: (i) => ({
      method: "POST",
      path: "/v3/search",
      body: {
        q: queries[i % queries.length],
        containerTags: [BIG_TAG],
        filters: { AND: [condition(i)] },
        limit: 10,
      },
    }),
  });
  const routes: Route[] = [
    {
      route: "POST /v3/search",
      scope: `"${BIG_TAG}" (every chunk)`,
      request: (i) => ({
        method: "POST",
        path: "/v3/search",
        body: {
          q: queries[i % queries.length],
          containerTags: [BIG_TAG],
          limit: 10,
        },
      }),
    },
    {
      route: "POST /v4/search (searchMode hybrid)",
      scope: `"${BIG_TAG}" (every chunk)`,
      request: (i) => ({
        method: "POST",
        path: "/v4/search",
        body: {
          q: queries[i % queries.length],
          containerTag: BIG_TAG,
          searchMode: "hybrid",
          limit: 10,
        },
      }),
    },
    filteredInBigTag(
      `one of ${PROJECTS} projects (metadata: ${(100 / PROJECTS).toFixed(1)} % of the documents)`,
      (i) => ({ key: "project", value: `p${(i * 37) % PROJECTS}` }),
    ),
    filteredInBigTag(
      `one of ${PROJECTS} projects with ignoreCase (its own index: lower-cased metadata)`,
      (i) => ({
        key: "project",
        value: `P${(i * 37) % PROJECTS}`,
        ignoreCase: true,
      }),
    ),
    filteredInBigTag(
      `one of ${TEAMS} teams (metadata: ${(100 / TEAMS).toFixed(0)} % of the documents)`,
      (i) => ({
        key: "team",
        value: `t${i % TEAMS}`,
      }),
    ),
    {
      route: "POST /v3/search",
      scope: `one of ${o.tags} small tags`,
      request: (i) => ({
        method: "POST",
        path: "/v3/search",
        body: {
          q: queries[i % queries.length],
          containerTags: [smallTag(i)],
          limit: 10,
        },
      }),
    },
    {
      route: "POST /v4/search (searchMode hybrid)",
      scope: `one of ${o.tags} small tags`,
      request: (i) => ({
        method: "POST",
        path: "/v4/search",
        body: {
          q: queries[i % queries.length],
          containerTag: smallTag(i),
          searchMode: "hybrid",
          limit: 10,
        },
      }),
    },
  ];
  const sequential = await sequentialLatency(service, routes, o.searches, "search-imported");
  const floor: Route = {
    route: "POST /v3/search",
    scope: `a tag with no documents (the floor: nothing to rank)`,
    request: (i) => ({
      method: "POST",
      path: "/v3/search",
      body: {
        q: queries[i % queries.length],
        containerTags: [EMPTY_TAG],
        limit: 10,
      },
    }),
  };
  const concurrent: ConcurrentLatency[] = [];
  const smallTags = routes.find((x) => x.scope.startsWith("one of"));
  for (const r of [routes[0], smallTags, floor])
    if (r) concurrent.push(await concurrentLatency(service, r, o.clients, o.searches * 2, "search-imported"));
  await service.stop();

  // The same store, the same searches, served through the in-memory index: the rows above are its baseline.
  const rssBeforeMb = Math.round(process.memoryUsage().rss / 2 ** 20);
  const indexed = await startBenchService(o.cleanup, {
    dataDir,
    temporalAddress: o.temporalAddress,
    threads: o.threads,
    embeddingModel: embedderName,
    searchIndex: "memory",
  });
  const built = await indexed.searchIndexBuilt;
  if (!built) throw new Error("search-imported: the in-memory search index did not build");
  log(
    `search-imported: in-memory index of ${built.chunks} chunks built in ${(built.ms / 1000).toFixed(1)} s`,
  );
  const searchIndex = {
    chunks: built.chunks,
    buildMs: built.ms,
    rssBeforeMb,
    rssAfterMb: Math.round(process.memoryUsage().rss / 2 ** 20),
  };
  const throughIndex = (r: Route): Route => ({ ...r, scope: `${r.scope}${INDEXED_SCOPE}` });
  const indexedRoutes = [routes[0], routes[1], smallTags]
    .filter((r): r is Route => Boolean(r))
    .map(throughIndex);
  sequential.push(...(await sequentialLatency(indexed, indexedRoutes, o.searches, "search-imported")));
  for (const r of [routes[0], smallTags].filter((x): x is Route => Boolean(x)).map(throughIndex))
    concurrent.push(await concurrentLatency(indexed, r, o.clients, o.searches * 2, "search-imported"));
  await indexed.stop();
  await temp?.remove();
  return {
    embedder: { name: embedderName, model: CHURN_SPACE.name },
    documents: fill.documents,
    liveChunks,
    fillMs: fill.fillMs,
    fillRate: fill.fillRate,
    maintenance: fill.maintenance,
    sizes,
    sequential,
    concurrent,
    ...(o.store && reused ? { reusedStore: o.store } : {}),
    ...(service.sharedBuffers ? { servicePool: service.sharedBuffers } : {}),
    searchIndex,
    sqlNamed: true,
  };
}

/** The file beside a kept store that records its fill (bench/search-plan.ts --imported reads it too). */
export const FILL_RECORD = "fill.json";

/** A directory that outlives the run (--imported-store); reset() empties it for a new fill. */
function keptDir(dir: string) {
  mkdirSync(dir, { recursive: true });
  return {
    dir,
    reset: () => {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
    },
  };
}

/** The record of a finished fill in `dir` with the same options, or undefined (no fill, or another one). */
function readFill(dir: string, options: FillRecord["options"]): FillRecord | undefined {
  const file = path.join(dir, FILL_RECORD);
  if (!existsSync(file)) return undefined;
  const record = JSON.parse(readFileSync(file, "utf8")) as FillRecord;
  return JSON.stringify(record.options) === JSON.stringify(options) ? record : undefined;
}

/** Imports, deletes and updates through the store path, then the passes the service's schedules would run. */
async function fillStore(
  dir: string,
  o: FillRecord["options"] & {
    options: FillRecord["options"];
    docsWanted: number;
    pool: Awaited<ReturnType<typeof loadTextPool>>;
    planned: PlannedDocument[];
  },
): Promise<FillRecord> {
  const { docsWanted, pool, planned } = o;
  const store = await openPglite(dir);
  const db: Database = store.db;
  try {
    await ensureVectorIndexes(db, { model: CHURN_SPACE.name, dimension: CHURN_SPACE.dimension });
    log(
      `search-imported: ${docsWanted} documents of ${o.chunksPerDoc} chunk(s) over ${o.tags} tags (+ "${BIG_TAG}"), then ${Math.round(o.churn * 100)} % deleted and ${Math.round(o.churn * 100)} % updated`,
    );
    const fillStarted = performance.now();
    const ids = await addDocuments(db, pool, planned, { label: "import" });
    const churned = Math.floor(docsWanted * o.churn);
    // Every other document of the first 2 × churned is deleted; the ones between are updated with later texts.
    const deleted = ids.filter((_, i) => i < 2 * churned && i % 2 === 0);
    const updated = ids
      .map((id, i) => ({ id, i }))
      .filter(({ i }) => i < 2 * churned && i % 2 === 1)
      .map(({ id, i }) => ({
        id,
        doc: {
          ...(planned[i] as PlannedDocument),
          pieces: (planned[i] as PlannedDocument).pieces.map(
            (p) => (p + pool.texts.length / 2) % pool.texts.length,
          ),
        },
      }));
    await deleteDocuments(db, deleted);
    await updateDocuments(db, pool, updated);
    const fillMs = performance.now() - fillStarted;

    // What the service's schedules do meanwhile: statistics every 2 minutes, the maintenance pass every 15.
    const statsStarted = performance.now();
    for (const table of ["chunks", "documents", "memories"] as const) await analyzeIfGrown(db, table);
    const statisticsMs = performance.now() - statsStarted;
    const passStarted = performance.now();
    const pass = await runMaintenance(store.background, { driver: "pglite" });
    const passMs = performance.now() - passStarted;
    return {
      options: o.options,
      documents: {
        imported: docsWanted,
        deleted: deleted.length,
        updated: updated.length,
        live: docsWanted - deleted.length,
      },
      fillMs,
      fillRate: ((docsWanted + updated.length) / fillMs) * 1000,
      maintenance: { statisticsMs, passMs, steps: describePass(pass) },
    };
  } finally {
    await store.close();
  }
}

function describePass(pass: MaintenanceResult): string[] {
  return pass.steps.map((s) => `${s.step} ${s.target} ${Math.round(s.ms)} ms`);
}
