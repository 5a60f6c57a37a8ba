// Scenario `churn` (issue #25 point 2): does the embedded store stay flat over months? PGlite runs no
// autovacuum, so a tenant's adds, deletes and updates leave dead rows, bloated HNSW graphs and holes in the
// heap unless the service's maintenance schedule takes them back. This adds documents through the service's
// store path, deletes and updates some the way the API does, in rounds, with the schedule's own pass
// (store/maintenance.ts `runMaintenance`) after each round, and then compares table sizes, index sizes and
// search latency with a fresh load of the same final rows. No model runs: chunk vectors come from the search
// benchmark's cache (bench/lib/churn.ts).
//
// `maintain: "end"` runs the pass only after the last round, and `steps` then adds VACUUM, ANALYZE, REINDEX
// and VACUUM FULL one by one with a snapshot after each: what each step reclaims and how long it holds the
// single connection (docs/operations.md#table-maintenance).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { type Database, openPglite, type Store } from "../store/db.ts";
import { type MaintenanceResult, runMaintenance } from "../store/maintenance.ts";
import { hybridChunkSearch } from "../store/search/chunk-search.ts";
import { analyzeIfGrown } from "../store/search/keyword.ts";
import { ensureVectorIndexes } from "../store/search/vector-index.ts";
import {
  addDocuments,
  CHURN_SPACE,
  deleteDocuments,
  loadTextPool,
  type PlannedDocument,
  plannedDocuments,
  type TableSizes,
  type TextPool,
  tableSizes,
  updateDocuments,
} from "./lib/churn.ts";
import { log } from "./lib/progress.ts";
import { seededRandom } from "./lib/random.ts";
import { type Summary, summarize } from "./lib/stats.ts";

export interface ChurnOptions {
  adds: number;
  deletes: number;
  updates: number;
  tags: number;
  chunksPerDoc: number;
  rounds: number;
  /** `rounds`: the schedule's pass after every round (what the service does); `end`: once, after the last. */
  maintain: "rounds" | "end";
  searches: number;
  seed: number;
  /** After the comparison, each maintenance step by hand with a snapshot after it (diagnostics). */
  steps: boolean;
}

export interface ChurnSnapshot {
  label: string;
  chunks: TableSizes;
  documents: TableSizes;
  memories: TableSizes;
  search: Summary;
}

interface ChurnPass {
  round: number;
  ms: number;
  pass: MaintenanceResult;
}

export interface ChurnResult {
  /** Documents live at the end (in both stores). */
  liveDocuments: number;
  /** Seconds from the first add to the end of the last round's pass. */
  churnSeconds: number;
  passes: ChurnPass[];
  /** The churned store as the schedule left it. */
  afterChurn: ChurnSnapshot;
  /** A new store loaded with the same final rows (the statistics refresh after it, as the service would). */
  fresh: ChurnSnapshot;
  freshLoadSeconds: number;
  /** `steps`: snapshots after each manual step, and how long each step held the connection. */
  diagnostics?: { snapshots: ChurnSnapshot[]; steps: { step: string; ms: number }[] };
  totalSeconds: number;
}

const SPACE = { model: CHURN_SPACE.name, dimension: CHURN_SPACE.dimension };
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Searches through the store's own hybrid search, each query a stored chunk's vector and its first words. */
async function measureSearch(
  db: Database,
  pool: TextPool,
  live: PlannedDocument[],
  n: number,
): Promise<Summary> {
  const rnd = seededRandom(7);
  const queries = Array.from({ length: n }, () => live[Math.floor(rnd() * live.length)] as PlannedDocument);
  const run = async (doc: PlannedDocument) => {
    const piece = doc.pieces[0] as number;
    const text = (pool.texts[piece] as string).split(/\s+/).slice(0, 6).join(" ");
    const started = performance.now();
    await hybridChunkSearch(db, {
      text,
      embedding: Array.from(pool.vectors[piece] as Float32Array),
      space: SPACE,
      containerTags: [doc.tag],
      tagMode: "any",
      candidates: 50,
    });
    return performance.now() - started;
  };
  for (const q of queries.slice(0, 20)) await run(q); // warm the buffers and the common-terms cache
  const times: number[] = [];
  for (const q of queries) times.push(await run(q));
  return summarize(times);
}

async function snapshot(
  label: string,
  db: Database,
  pool: TextPool,
  live: PlannedDocument[],
  searches: number,
): Promise<ChurnSnapshot> {
  // PGlite publishes its table counters about a second after the statements that changed them.
  await pause(1_200);
  await db.execute(sql`SELECT 1`);
  const s: ChurnSnapshot = {
    label,
    chunks: await tableSizes(db, "chunks", { countLive: true }),
    documents: await tableSizes(db, "documents", { countLive: true }),
    memories: await tableSizes(db, "memories", { countLive: true }),
    search: await measureSearch(db, pool, live, searches),
  };
  const mb = (b: number) => `${(b / 1048576).toFixed(1)} MB`;
  const idx = (t: TableSizes) =>
    Object.entries(t.indexes)
      .map(([k, v]) => `${k} ${mb(v)}`)
      .join(", ");
  log(
    `${label}: chunks heap ${mb(s.chunks.heap)} (live ${s.chunks.live}, dead ${s.chunks.dead}), documents heap ${mb(s.documents.heap)} (dead ${s.documents.dead}), memories heap ${mb(s.memories.heap)}; search p50 ${s.search.p50.toFixed(1)} ms p95 ${s.search.p95.toFixed(1)} ms`,
  );
  log(`  chunks indexes: ${idx(s.chunks)}`);
  log(`  documents indexes: ${idx(s.documents)}`);
  log(`  memories indexes: ${idx(s.memories)}`);
  return s;
}

async function timed(label: string, db: Database, statement: string): Promise<{ step: string; ms: number }> {
  const started = performance.now();
  await db.execute(sql.raw(statement));
  const ms = performance.now() - started;
  log(`  ${label}: ${statement} held the connection ${(ms / 1000).toFixed(2)} s`);
  return { step: statement, ms };
}

async function openFresh(label: string): Promise<{ store: Store; dir: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), `churn-${label}-`));
  const store = await openPglite(dir);
  await ensureVectorIndexes(store.db, SPACE);
  return { store, dir };
}

/** What the statistics schedule would have done meanwhile (the service runs it every 2 minutes). */
async function refreshStatistics(db: Database) {
  await analyzeIfGrown(db, "chunks");
  await analyzeIfGrown(db, "documents");
  await analyzeIfGrown(db, "memories");
}

/** The documents of each round, and which are deleted and updated with what: depends on the seed only. */
interface Round {
  add: PlannedDocument[];
  /** Indices into the documents added so far (in add order). */
  remove: number[];
  change: { index: number; doc: PlannedDocument }[];
}

function planRounds(
  o: ChurnOptions,
  poolSize: number,
): { rounds: Round[]; live: Map<number, PlannedDocument> } {
  const rnd = seededRandom(o.seed);
  const initial = plannedDocuments({ count: o.adds, tags: o.tags, chunksPerDoc: o.chunksPerDoc, poolSize });
  const half = Math.floor(poolSize / 2);
  const live = new Map<number, PlannedDocument>();
  const rounds: Round[] = [];
  let version = 0;
  for (let r = 0; r < o.rounds; r++) {
    const share = (total: number) =>
      Math.floor((total * (r + 1)) / o.rounds) - Math.floor((total * r) / o.rounds);
    const start = Math.floor((o.adds * r) / o.rounds);
    const add = initial.slice(start, start + share(o.adds));
    add.forEach((doc, i) => {
      live.set(start + i, doc);
    });
    const keys = [...live.keys()];
    const remove: number[] = [];
    for (let i = 0; i < share(o.deletes) && keys.length; i++) {
      const at = Math.floor(rnd() * keys.length);
      remove.push(keys[at] as number);
      keys[at] = keys[keys.length - 1] as number;
      keys.pop();
    }
    for (const k of remove) live.delete(k);
    // Updates: new content from the other half of the pool, a new stretch each time (each document at most once
    // a round: an update with the content it already has reprocesses nothing).
    const picked = new Set<number>();
    while (picked.size < Math.min(share(o.updates), keys.length))
      picked.add(keys[Math.floor(rnd() * keys.length)] as number);
    const change = [...picked].map((index) => {
      const before = live.get(index) as PlannedDocument;
      version++;
      const doc = {
        tag: before.tag,
        pieces: before.pieces.map((p) => {
          const next = (p + half + version * 7) % poolSize;
          return next === p ? (p + 1) % poolSize : next;
        }),
      };
      live.set(index, doc);
      return { index, doc };
    });
    rounds.push({ add, remove, change });
  }
  return { rounds, live };
}

export async function runChurn(o: ChurnOptions): Promise<ChurnResult> {
  if (o.deletes > o.adds) throw new Error("churn: deletes cannot exceed adds");
  const started = performance.now();
  const pool = await loadTextPool(Math.min(100_000, o.adds * o.chunksPerDoc));
  log(
    `churn: ${o.adds} adds, ${o.deletes} deletes, ${o.updates} updates in ${o.rounds} rounds over ${o.tags} tag(s), ${o.chunksPerDoc} chunk(s) per document, pool ${pool.texts.length} texts, maintenance ${o.maintain}`,
  );
  const plan = planRounds(o, pool.texts.length);
  const liveDocs = [...plan.live.values()];

  const churned = await openFresh("churned");
  const passes: ChurnPass[] = [];
  let afterChurn: ChurnSnapshot;
  let diagnostics: ChurnResult["diagnostics"];
  let churnSeconds: number;
  try {
    const db = churned.store.background;
    const ids: string[] = [];
    for (const [r, round] of plan.rounds.entries()) {
      ids.push(...(await addDocuments(db, pool, round.add, { label: `round ${r + 1} add` })));
      await deleteDocuments(
        db,
        round.remove.map((i) => ids[i] as string),
        `round ${r + 1} delete`,
      );
      await updateDocuments(
        db,
        pool,
        round.change.map((c) => ({ id: ids[c.index] as string, doc: c.doc })),
        { label: `round ${r + 1} update` },
      );
      await refreshStatistics(db);
      if (o.maintain === "rounds" || r === plan.rounds.length - 1) {
        await pause(1_200); // the counters the pass reads are published about a second later
        const t0 = performance.now();
        const pass = await runMaintenance(db, { driver: "pglite" });
        const ms = performance.now() - t0;
        passes.push({ round: r + 1, ms, pass });
        log(`round ${r + 1} maintenance (${(ms / 1000).toFixed(1)} s): ${JSON.stringify(pass)}`);
      }
    }
    churnSeconds = (performance.now() - started) / 1000;
    afterChurn = await snapshot("after churn and the schedule's passes", db, pool, liveDocs, o.searches);

    if (o.steps) {
      const snapshots: ChurnSnapshot[] = [];
      const steps: { step: string; ms: number }[] = [];
      for (const table of ["chunks", "documents", "memories"])
        steps.push(await timed(`vacuum ${table}`, db, `VACUUM ${table}`));
      snapshots.push(await snapshot("+ VACUUM", db, pool, liveDocs, o.searches));
      for (const table of ["chunks", "documents", "memories"])
        steps.push(await timed(`analyze ${table}`, db, `ANALYZE ${table}`));
      snapshots.push(await snapshot("+ ANALYZE", db, pool, liveDocs, o.searches));
      const hnsw = [
        ...Object.keys(afterChurn.chunks.indexes),
        ...Object.keys(afterChurn.memories.indexes),
      ].filter((name) => name.includes("hnsw"));
      for (const index of hnsw) steps.push(await timed(`reindex ${index}`, db, `REINDEX INDEX ${index}`));
      steps.push(await timed("reindex gin", db, "REINDEX INDEX chunks_tsv_gin"));
      snapshots.push(await snapshot("+ REINDEX", db, pool, liveDocs, o.searches));
      for (const table of ["chunks", "documents", "memories"])
        steps.push(await timed(`vacuum full ${table}`, db, `VACUUM FULL ${table}`));
      snapshots.push(await snapshot("+ VACUUM FULL", db, pool, liveDocs, o.searches));
      diagnostics = { snapshots, steps };
    }
  } finally {
    await churned.store.close().catch(() => undefined);
    rmSync(churned.dir, { recursive: true, force: true });
  }

  const fresh = await openFresh("fresh");
  let freshSnapshot: ChurnSnapshot;
  let freshLoadSeconds: number;
  try {
    const t0 = performance.now();
    await addDocuments(fresh.store.background, pool, liveDocs, { label: "fresh load" });
    await refreshStatistics(fresh.store.background);
    freshLoadSeconds = (performance.now() - t0) / 1000;
    freshSnapshot = await snapshot("fresh load", fresh.store.background, pool, liveDocs, o.searches);
  } finally {
    await fresh.store.close().catch(() => undefined);
    rmSync(fresh.dir, { recursive: true, force: true });
  }
  const totalSeconds = (performance.now() - started) / 1000;
  log(`churn: done in ${totalSeconds.toFixed(0)} s`);
  return {
    liveDocuments: liveDocs.length,
    churnSeconds,
    passes,
    afterChurn,
    fresh: freshSnapshot,
    freshLoadSeconds,
    ...(diagnostics ? { diagnostics } : {}),
    totalSeconds,
  };
}
