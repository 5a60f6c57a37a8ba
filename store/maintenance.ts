// Table maintenance for the tables that churn (documents are updated at every stage of their runs, chunks
// and memories are deleted and rewritten by every reprocessing and delete). PostgreSQL's autovacuum does the
// VACUUM (and ANALYZE) itself; PGlite runs no autovacuum, so without this pass its dead rows are never
// reclaimed: the heap and the indexes grow with every update and delete and never reuse the space.
// bench/churn.ts measures what each step reclaims and costs (docs/operations.md#table-maintenance).

import { sql } from "drizzle-orm";
import { type Database, queryRows } from "./db.ts";

/** The tables whose rows are deleted and rewritten as documents are updated, reprocessed and deleted. */
export const MAINTAINED_TABLES = ["chunks", "documents", "memories"] as const;
export type MaintainedTable = (typeof MAINTAINED_TABLES)[number];

/**
 * A table is vacuumed once its dead rows reach this share of its live ones (or MIN_DEAD_ROWS, whichever is
 * more): autovacuum's own default is 0.2 of the table + 50 rows; a tenth keeps the HNSW graph's dead
 * elements (which every search still walks past) fewer, and a pass stays short.
 */
export const DEAD_ROW_SHARE = 0.1;
export const MIN_DEAD_ROWS = 1_000;

/**
 * An HNSW index is rebuilt once it takes this many times the space its live rows would take in a fresh
 * build (HNSW_BYTES_PER_DIMENSION × dimension + HNSW_BYTES_PER_ROW per row). VACUUM marks the dead elements
 * free and later inserts reuse them, so an index under steady churn stays near its peak size; only a table
 * that shrank for good (a tenant's mass delete) leaves an index much bigger than its rows, which only a
 * rebuild gives back.
 */
export const HNSW_BLOAT_FACTOR = 2;
/** Measured on fresh loads of 384-d vectors (bench/churn.ts): about 1.9 KB per row, i.e. ~4 rows per 8 KB page. */
export const HNSW_BYTES_PER_DIMENSION = 4;
export const HNSW_BYTES_PER_ROW = 400;

/** Which server answers: the embedded PGlite (no autovacuum, one connection) or a PostgreSQL server. */
export async function serverKind(db: Database): Promise<"pglite" | "postgres"> {
  const [row] = await queryRows<{ version: string }>(db, sql`SELECT version() AS version`);
  return /PGlite/i.test(row?.version ?? "") ? "pglite" : "postgres";
}

/**
 * On PGlite a table about to be vacuumed gets its HNSW indexes rebuilt first when its dead rows are at least
 * 1/REPAIR_COST_RATIO of its live ones: VACUUM repairs the graph around every dead element (pgvector's
 * RepairGraph, a neighbour search per affected element), which cost about 8× a rebuild's per-row work
 * (bench/churn.ts; 1,500 dead of 3,000 chunks: VACUUM 21.5 s, REINDEX then VACUUM 2.6 + 0.2 s). The rebuilt
 * index holds no dead element, so the VACUUM that follows only frees heap space and the other indexes' entries.
 */
export const REPAIR_COST_RATIO = 8;

/**
 * What a step holds PGlite's single connection for, per row, measured on the 2-core machine
 * (bench/results/20261126T111040Z-ff65202.json, docs/operations.md#table-maintenance): VACUUM repairing the HNSW
 * graph around 10,524 dead chunks took 113 s (10.7 ms each); building the HNSW index of 100,000 chunks took 84 s
 * (0.84 ms a row). A faster machine takes less, so on it these estimates defer more than needed, never less.
 */
export const REPAIR_MS_PER_DEAD_ROW = 10;
export const REBUILD_MS_PER_LIVE_ROW = 0.85;

export interface TableChurn {
  table: MaintainedTable;
  live: number;
  dead: number;
}

/** Live and dead row counts from the statistics collector (PGlite publishes them about a second late). */
export async function tableChurn(db: Database, table: MaintainedTable): Promise<TableChurn> {
  const [row] = await queryRows<{ live: string | number; dead: string | number }>(
    db,
    sql`SELECT coalesce(n_live_tup, 0) AS live, coalesce(n_dead_tup, 0) AS dead
          FROM pg_stat_user_tables WHERE relid = to_regclass(${table})`,
  );
  return { table, live: Number(row?.live ?? 0), dead: Number(row?.dead ?? 0) };
}

export function needsVacuum(churn: TableChurn): boolean {
  return churn.dead >= Math.max(MIN_DEAD_ROWS, churn.live * DEAD_ROW_SHARE);
}

/** Rebuilding the table's HNSW indexes costs less than VACUUM repairing them (see REPAIR_COST_RATIO). */
export function rebuildBeforeVacuum(churn: TableChurn): boolean {
  return churn.dead * REPAIR_COST_RATIO >= churn.live;
}

/** VACUUM (ANALYZE) of one table: dead rows and their index entries freed for reuse, statistics refreshed. */
export async function vacuumTable(db: Database, table: MaintainedTable): Promise<void> {
  await db.execute(sql.raw(`VACUUM (ANALYZE) ${table}`));
}

export interface HnswIndexSize {
  index: string;
  table: "chunks" | "memories";
  bytes: number;
  /** Rows of its table (all models; usually one). */
  rows: number;
  dimension: number;
  /** What a fresh build over those rows would take, about. */
  expectedBytes: number;
}

/** The HNSW indexes of chunks and memories (one per model, store/vector-index.ts) with their sizes. */
export async function hnswIndexSizes(db: Database): Promise<HnswIndexSize[]> {
  const rows = await queryRows<{ index: string; table: string; bytes: string; rows: string; def: string }>(
    db,
    sql`SELECT i.relname AS index, t.relname AS table, pg_relation_size(i.oid) AS bytes,
               coalesce(s.n_live_tup, 0) AS rows, pg_get_indexdef(i.oid) AS def
          FROM pg_index x
          JOIN pg_class i ON i.oid = x.indexrelid
          JOIN pg_class t ON t.oid = x.indrelid
          JOIN pg_am am ON am.oid = i.relam
          LEFT JOIN pg_stat_user_tables s ON s.relid = t.oid
         WHERE am.amname = 'hnsw' AND t.relname IN ('chunks', 'memories') AND x.indisvalid
           AND t.relnamespace = to_regnamespace(current_schema())`,
  );
  return rows.map((r) => {
    const dimension = Number(/::vector\((\d+)\)/.exec(r.def)?.[1] ?? 384);
    const live = Number(r.rows);
    return {
      index: r.index,
      table: r.table as "chunks" | "memories",
      bytes: Number(r.bytes),
      rows: live,
      dimension,
      expectedBytes: live * (dimension * HNSW_BYTES_PER_DIMENSION + HNSW_BYTES_PER_ROW),
    };
  });
}

/** Bigger than HNSW_BLOAT_FACTOR × a fresh build, and by more than a few pages (tiny tables are left alone). */
export function hnswBloated(size: HnswIndexSize): boolean {
  return size.bytes > 1_048_576 && size.bytes > HNSW_BLOAT_FACTOR * size.expectedBytes;
}

/**
 * Rebuilds an index. On PostgreSQL CONCURRENTLY: reads and writes go on meanwhile (a failed attempt leaves an
 * invalid `<name>_ccnew` copy, dropped by the next pass). On PGlite the single connection is held throughout.
 */
export async function reindex(db: Database, index: string, opts: { concurrently: boolean }): Promise<void> {
  if (!/^[a-z0-9_]{1,63}$/.test(index)) throw new Error(`unsafe index name "${index}"`);
  if (opts.concurrently) {
    await db.execute(sql.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${index}_ccnew`));
    await db.execute(sql.raw(`REINDEX INDEX CONCURRENTLY ${index}`));
  } else await db.execute(sql.raw(`REINDEX INDEX ${index}`));
}

export interface MaintenanceStep {
  step: "vacuum" | "reindex";
  target: string;
  ms: number;
}

export interface DeferredStep {
  table: MaintainedTable;
  /** About how long the cheaper way (repair, or rebuild then VACUUM) would hold the connection. */
  estimateMs: number;
}

export interface MaintenanceResult {
  vacuumed: string[];
  reindexed: string[];
  steps: MaintenanceStep[];
  /** PGlite tables left for later: their VACUUM would hold the connection longer than `maxHoldMs`. */
  deferred: DeferredStep[];
}

/** How long the cheaper of VACUUM's graph repair and a rebuild would hold PGlite's connection, about. */
export function estimatedHoldMs(churn: TableChurn, hasHnsw: boolean): number {
  if (!hasHnsw) return 0;
  return Math.min(churn.dead * REPAIR_MS_PER_DEAD_ROW, churn.live * REBUILD_MS_PER_LIVE_ROW);
}

/**
 * One pass: on PGlite, VACUUM (ANALYZE) of each churned table with enough dead rows (table by table, each a
 * separate statement at the caller's gate class, so searches waiting go first between them), its HNSW indexes
 * rebuilt first when that is cheaper than VACUUM's graph repair; on both drivers, REINDEX of an HNSW index
 * bloated beyond what VACUUM gives back (CONCURRENTLY on PostgreSQL). Tables and indexes that did not change
 * are left alone: a pass over a quiet store costs four small catalog reads.
 */
export async function runMaintenance(
  db: Database,
  opts: {
    driver: "pglite" | "postgres";
    onStep?: (step: MaintenanceStep) => void;
    /**
     * PGlite only: leave a table whose VACUUM (or rebuild) would hold the single connection longer than this,
     * about (estimatedHoldMs), for a pass run with a larger bound at a quiet hour. 0 or absent: no bound.
     */
    maxHoldMs?: number;
  },
): Promise<MaintenanceResult> {
  const result: MaintenanceResult = { vacuumed: [], reindexed: [], steps: [], deferred: [] };
  const record = (step: MaintenanceStep) => {
    result.steps.push(step);
    opts.onStep?.(step);
  };
  const rebuild = async (index: string) => {
    const started = Date.now();
    await reindex(db, index, { concurrently: opts.driver === "postgres" });
    result.reindexed.push(index);
    record({ step: "reindex", target: index, ms: Date.now() - started });
  };
  if (opts.driver === "pglite") {
    for (const table of MAINTAINED_TABLES) {
      const churn = await tableChurn(db, table);
      if (!needsVacuum(churn)) continue;
      const indexes = (await hnswIndexSizes(db)).filter((size) => size.table === table);
      const estimateMs = estimatedHoldMs(churn, indexes.length > 0);
      if (opts.maxHoldMs && estimateMs > opts.maxHoldMs) {
        result.deferred.push({ table, estimateMs });
        continue;
      }
      if (rebuildBeforeVacuum(churn)) for (const size of indexes) await rebuild(size.index);
      const started = Date.now();
      await vacuumTable(db, table);
      result.vacuumed.push(table);
      record({ step: "vacuum", target: table, ms: Date.now() - started });
    }
  }
  for (const size of await hnswIndexSizes(db)) {
    if (result.reindexed.includes(size.index) || !hnswBloated(size)) continue;
    const estimateMs = size.rows * REBUILD_MS_PER_LIVE_ROW;
    if (opts.driver === "pglite" && opts.maxHoldMs && estimateMs > opts.maxHoldMs) {
      if (!result.deferred.some((d) => d.table === size.table))
        result.deferred.push({ table: size.table, estimateMs });
      continue;
    }
    await rebuild(size.index);
  }
  return result;
}
