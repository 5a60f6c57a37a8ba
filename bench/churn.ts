// Does search stay flat over months on the embedded store (PGlite runs no autovacuum)? Adds documents through
// the service's store path, deletes and updates some the way the API does, and compares table sizes, index
// sizes and search latency with a fresh load of the same final rows; then runs the maintenance steps one by one
// (VACUUM, ANALYZE, REINDEX) and records what each reclaims and how long it holds the single connection.
// No model runs: chunk vectors come from the search benchmark's cache (bench/lib/churn.ts).
//
//   npx tsx bench/churn.ts --adds 100000 --deletes 50000 --updates 50000 --tags 1 [--chunks-per-doc 1]
//        [--rounds 10] [--maintain end|rounds] [--searches 300] [--json FILE] [--skip-fresh]
//
// --rounds spreads the operations over rounds (each: its share of adds, then deletes, then updates), as a
// tenant's months would; --maintain rounds runs the maintenance schedule's own pass (store/maintenance.ts)
// after every round, --maintain end only after all of them (then step by step).

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { type Database, openPglite, type Store } from "../store/db.ts";
import { analyzeIfGrown } from "../store/keyword.ts";
import { runMaintenance } from "../store/maintenance.ts";
import { hybridChunkSearch } from "../store/search.ts";
import { ensureVectorIndexes } from "../store/vector-index.ts";
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

const { values } = parseArgs({
  options: {
    adds: { type: "string", default: "20000" },
    deletes: { type: "string", default: "10000" },
    updates: { type: "string", default: "10000" },
    tags: { type: "string", default: "1" },
    "chunks-per-doc": { type: "string", default: "1" },
    rounds: { type: "string", default: "10" },
    maintain: { type: "string", default: "end" },
    searches: { type: "string", default: "300" },
    seed: { type: "string", default: "25" },
    json: { type: "string" },
    "skip-fresh": { type: "boolean", default: false },
    "fresh-only": { type: "boolean", default: false },
  },
});
const adds = Number(values.adds);
const deletes = Number(values.deletes);
const updates = Number(values.updates);
const tags = Number(values.tags);
const chunksPerDoc = Number(values["chunks-per-doc"]);
const rounds = Math.max(1, Number(values.rounds));
const maintain = values.maintain as "end" | "rounds";
const searches = Number(values.searches);
/** Only the fresh load of the final rows (the plan is replayed without a store: it depends on the seed only). */
const freshOnly = values["fresh-only"];
if (deletes > adds) throw new Error("--deletes cannot exceed --adds");
if (maintain !== "end" && maintain !== "rounds") throw new Error("--maintain is end or rounds");

const SPACE = { model: CHURN_SPACE.name, dimension: CHURN_SPACE.dimension };

interface Snapshot {
  label: string;
  chunks: TableSizes;
  documents: TableSizes;
  memories: TableSizes;
  search: Summary;
}

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
): Promise<Snapshot> {
  // PGlite publishes its table counters about a second after the statements that changed them.
  await new Promise((r) => setTimeout(r, 1_200));
  await db.execute(sql`SELECT 1`);
  const s: Snapshot = {
    label,
    chunks: await tableSizes(db, "chunks"),
    documents: await tableSizes(db, "documents"),
    memories: await tableSizes(db, "memories"),
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

async function main() {
  const started = performance.now();
  const pool = await loadTextPool(Math.min(100_000, adds * chunksPerDoc));
  log(
    `churn: ${adds} adds, ${deletes} deletes, ${updates} updates in ${rounds} rounds over ${tags} tag(s), ${chunksPerDoc} chunk(s) per document, pool ${pool.texts.length} texts, maintenance ${maintain}`,
  );
  const rnd = seededRandom(Number(values.seed));
  const initial = plannedDocuments({ count: adds, tags, chunksPerDoc, poolSize: pool.texts.length });
  const half = Math.floor(pool.texts.length / 2);

  const { store, dir } = await openFresh("churned");
  const db = store.background;
  const result: Record<string, unknown> = {
    options: { adds, deletes, updates, tags, chunksPerDoc, rounds, maintain, searches },
  };
  /** Live documents: id → what it holds now. */
  const live = new Map<string, PlannedDocument>();
  const maintenancePasses: unknown[] = [];
  let version = 0;
  try {
    for (let r = 0; r < rounds; r++) {
      const share = (total: number) =>
        Math.floor((total * (r + 1)) / rounds) - Math.floor((total * r) / rounds);
      const start = Math.floor((adds * r) / rounds);
      const batch = initial.slice(start, start + share(adds));
      const ids = freshOnly
        ? batch.map((_, i) => `planned-${start + i}`)
        : await addDocuments(db, pool, batch, { label: `round ${r + 1} add` });
      ids.forEach((id, i) => {
        live.set(id, batch[i] as PlannedDocument);
      });
      const gone: string[] = [];
      const keys = [...live.keys()];
      for (let i = 0; i < share(deletes) && keys.length; i++) {
        const at = Math.floor(rnd() * keys.length);
        gone.push(keys[at] as string);
        keys[at] = keys[keys.length - 1] as string;
        keys.pop();
      }
      if (!freshOnly) await deleteDocuments(db, gone, `round ${r + 1} delete`);
      for (const id of gone) live.delete(id);
      // Updates: new content from the other half of the pool, a new stretch each time.
      // (each document at most once a round: an update with the content it already has reprocesses nothing)
      const picked = new Set<string>();
      while (picked.size < Math.min(share(updates), keys.length))
        picked.add(keys[Math.floor(rnd() * keys.length)] as string);
      const changed = [...picked].map((id) => {
        const before = live.get(id) as PlannedDocument;
        version++;
        return {
          id,
          doc: {
            tag: before.tag,
            pieces: before.pieces.map((p) => {
              const next = (p + half + version * 7) % pool.texts.length;
              return next === p ? (p + 1) % pool.texts.length : next;
            }),
          },
        };
      });
      for (const u of changed) live.set(u.id, u.doc);
      if (freshOnly) continue;
      await updateDocuments(db, pool, changed, { label: `round ${r + 1} update` });
      await refreshStatistics(db);
      if (maintain === "rounds") {
        await new Promise((res) => setTimeout(res, 1_200)); // counters are published about a second later
        const t0 = performance.now();
        const pass = await runMaintenance(db, { driver: "pglite" });
        const ms = performance.now() - t0;
        maintenancePasses.push({ round: r + 1, ms, pass });
        log(`round ${r + 1} maintenance (${(ms / 1000).toFixed(1)} s): ${JSON.stringify(pass)}`);
      }
    }
    const liveDocs = [...live.values()];
    if (freshOnly) {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
    if (!freshOnly) {
      result.fillSeconds = (performance.now() - started) / 1000;
      result.maintenancePasses = maintenancePasses;
      result.afterChurn = await snapshot("after churn", db, pool, liveDocs);

      const steps: { step: string; ms: number }[] = [];
      for (const table of ["chunks", "documents", "memories"])
        steps.push(await timed(`vacuum ${table}`, db, `VACUUM ${table}`));
      result.afterVacuum = await snapshot("after VACUUM", db, pool, liveDocs);
      for (const table of ["chunks", "documents", "memories"])
        steps.push(await timed(`analyze ${table}`, db, `ANALYZE ${table}`));
      result.afterAnalyze = await snapshot("after ANALYZE", db, pool, liveDocs);
      const churned = result.afterChurn as Snapshot;
      const hnsw = [...Object.keys(churned.chunks.indexes), ...Object.keys(churned.memories.indexes)].filter(
        (n) => n.includes("hnsw"),
      );
      for (const index of hnsw) steps.push(await timed(`reindex ${index}`, db, `REINDEX INDEX ${index}`));
      steps.push(await timed("reindex gin", db, "REINDEX INDEX chunks_tsv_gin"));
      result.afterReindex = await snapshot("after REINDEX", db, pool, liveDocs);
      steps.push(await timed("vacuum full chunks", db, "VACUUM FULL chunks"));
      steps.push(await timed("vacuum full documents", db, "VACUUM FULL documents"));
      steps.push(await timed("vacuum full memories", db, "VACUUM FULL memories"));
      result.afterVacuumFull = await snapshot("after VACUUM FULL", db, pool, liveDocs);
      result.steps = steps;
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }

    if (!values["skip-fresh"]) {
      const fresh = await openFresh("fresh");
      try {
        await addDocuments(fresh.store.background, pool, liveDocs, { label: "fresh load" });
        await refreshStatistics(fresh.store.background);
        result.fresh = await snapshot("fresh load", fresh.store.background, pool, liveDocs);
      } finally {
        await fresh.store.close();
        rmSync(fresh.dir, { recursive: true, force: true });
      }
    }
  } catch (error) {
    await store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  result.totalSeconds = (performance.now() - started) / 1000;
  if (values.json) writeFileSync(values.json, `${JSON.stringify(result, null, 2)}\n`);
  log(`churn: done in ${(result.totalSeconds as number).toFixed(0)} s`);
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    process.exit(1);
  },
);
