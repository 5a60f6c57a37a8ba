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
 * On PGlite a table about to be vacuumed has its HNSW indexes rebuilt instead when its dead rows are at least
 * 1/REPAIR_COST_RATIO of its live ones: VACUUM repairs the graph around every dead element (pgvector's
 * RepairGraph, a neighbour search per affected element), which cost about 8× a rebuild's per-row work
 * (bench/churn.ts; 1,500 dead of 3,000 chunks: VACUUM 21.5 s, REINDEX then VACUUM 2.6 + 0.2 s). The rebuild is
 * a VACUUM FULL (runMaintenance): the heap packed and every index rebuilt, no dead element left.
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
  /** The catalog has a row count (the table was analyzed, vacuumed or indexed with rows in it at least once). */
  catalogKnown?: boolean;
}

/**
 * Live and dead row counts. The live rows are the statistics collector's count or the catalog's
 * (pg_class.reltuples, kept by VACUUM, ANALYZE and index builds), whichever is higher: PGlite does not keep the
 * collector's counts when it closes (measured: 4,001 live rows before a clean close, 0 after reopening), so
 * after every restart they count only what changed since. Read alone, a 100,000-chunk table was 0 live rows
 * after a restart, its heap looked bloated beyond measure and its compaction was estimated at no time at all:
 * the first pass ran VACUUM FULL with the HNSW rebuild while searches waited for minutes (bench/search-imported.ts
 * on a reused store). Dead rows counted before a restart are lost the same way (PGlite publishes new counts
 * about a second late); the heap and HNSW bloat checks still find the space they leave.
 */
export async function tableChurn(db: Database, table: MaintainedTable): Promise<TableChurn> {
  const [row] = await queryRows<{ live: string | number; dead: string | number; catalog: string | number }>(
    db,
    sql`SELECT greatest(coalesce(s.n_live_tup, 0), c.reltuples, 0) AS live, coalesce(s.n_dead_tup, 0) AS dead,
               c.reltuples AS catalog
          FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
         WHERE c.oid = to_regclass(${table})`,
  );
  return {
    table,
    live: Number(row?.live ?? 0),
    dead: Number(row?.dead ?? 0),
    catalogKnown: Number(row?.catalog ?? -1) >= 0,
  };
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

/**
 * VACUUM frees dead rows' space for reuse but never gives it back: a table that shrank for good (a tenant's
 * mass delete) keeps its peak size. On PGlite a table is compacted (VACUUM FULL: rewritten packed, every index
 * rebuilt) once its heap is this many times what its live rows take packed (heapBloat). Under steady churn the
 * pass's VACUUM keeps the free space below a tenth or so, which later inserts reuse, so this fires only after
 * a real shrink. PostgreSQL is left to the operator (VACUUM FULL locks the table; pg_repack does it online).
 */
export const HEAP_COMPACT_FACTOR = 1.25;
/** Smaller heaps are never compacted: a few pages of slack are not worth a rewrite. */
export const MIN_COMPACT_BYTES = 8 * 1_048_576;
/**
 * A VACUUM FULL rewrites the heap and rebuilds every index; per live row, on the 2-core machine, about the
 * HNSW rebuild (REBUILD_MS_PER_LIVE_ROW) plus this for the copy and the other indexes. An estimate for
 * MAINTENANCE_MAX_HOLD, like the others.
 */
export const REWRITE_MS_PER_LIVE_ROW = 0.1;
/** Bytes a heap tuple takes besides its data: the tuple header (23, aligned to 24) and its line pointer (4). */
const TUPLE_OVERHEAD = 28;
/** Pages a bloat estimate samples at least (TABLESAMPLE SYSTEM draws whole pages). */
const SAMPLE_PAGES = 40;
/** Usable bytes of an 8 KB heap page (the page header takes 24). */
const PAGE_PAYLOAD = 8_192 - 24;

export interface HeapBloat {
  table: MaintainedTable;
  /** The heap as it is (without indexes and TOAST). */
  heapBytes: number;
  /** What the live rows take packed: their sampled mean size times their number, in whole pages. */
  packedBytes: number;
}

/**
 * The heap's size against what its live rows need, their mean size taken from a sample of about 1 % of its
 * pages (TABLESAMPLE SYSTEM: whole pages, so the sample costs a hundredth of a scan; at least SAMPLE_PAGES).
 */
export async function heapBloat(
  db: Database,
  table: MaintainedTable,
  live: number,
  minBytes = MIN_COMPACT_BYTES,
): Promise<HeapBloat> {
  const [size] = await queryRows<{ bytes: string }>(
    db,
    sql`SELECT pg_relation_size(to_regclass(${table}), 'main') AS bytes`,
  );
  const heapBytes = Number(size?.bytes ?? 0);
  if (heapBytes < minBytes) return { table, heapBytes, packedBytes: heapBytes };
  if (live === 0) return { table, heapBytes, packedBytes: 0 };
  const meanRowBytes = async (sample: string) => {
    const [row] = await queryRows<{ mean: string | null }>(
      db,
      sql.raw(`SELECT avg(pg_column_size(t.*)) AS mean FROM ${table} t ${sample}`),
    );
    return row?.mean == null ? undefined : Number(row.mean);
  };
  // About 1 % of the pages, and at least SAMPLE_PAGES of them (a small heap gets a larger share); when every
  // page drawn was empty (a heap that is mostly holes), all of them.
  const percent = Math.min(100, Math.max(1, (SAMPLE_PAGES * 100 * 8_192) / heapBytes));
  const mean =
    (await meanRowBytes(`TABLESAMPLE SYSTEM (${percent.toFixed(3)}) REPEATABLE (7)`)) ??
    (await meanRowBytes("")) ??
    0;
  const perPage = Math.max(1, Math.floor(PAGE_PAYLOAD / (mean + TUPLE_OVERHEAD)));
  return { table, heapBytes, packedBytes: Math.ceil(live / perPage) * 8_192 };
}

export function heapBloated(bloat: HeapBloat, minBytes = MIN_COMPACT_BYTES): boolean {
  return bloat.heapBytes >= minBytes && bloat.heapBytes > HEAP_COMPACT_FACTOR * bloat.packedBytes;
}

/** VACUUM FULL (ANALYZE): the table rewritten packed, every index rebuilt, the space given back to the disk. */
export async function compactTable(db: Database, table: MaintainedTable, memoryMb?: number): Promise<void> {
  await withMaintenanceMemory(db, memoryMb, () => db.execute(sql.raw(`VACUUM (FULL, ANALYZE) ${table}`)));
  // A rewrite leaves the visibility map empty, and the document list counts and skips rows from its indexes alone
  // only on pages the map calls settled (migration 0017); until the next VACUUM, which on a table that grew
  // without churn could be far off, it read every document row again. A plain VACUUM of the packed table sets the
  // map: one read of the heap, nothing to clean. Only documents: no other table's reads are index-only.
  if (table === "documents") await db.execute(sql.raw("VACUUM documents"));
}

/**
 * The most maintenance_work_mem a rebuild on PGlite gets, in MB: the same as the first build of an index
 * (store/search/vector-index.ts). PGlite's default is 64MB, which holds the HNSW graph of about 30,000 384-d rows;
 * past that pgvector inserts the rest the slow way: a REINDEX of 50,000 chunks held the connection 99.5 s at
 * 64MB (bench/results/20261127T143817Z-b4effa3-dirty.json, round 10), where a build of 100,000 with the graph in
 * memory took 84 s. PGlite's WebAssembly memory keeps what it grew to, so the bound is also what a rebuild may
 * add to the process's resident memory.
 */
export const REBUILD_MEMORY_MAX_MB = 256;
const DEFAULT_PGLITE_MAINTENANCE_MB = 64;

/** maintenance_work_mem for rebuilding these HNSW indexes (what fresh builds would take, with a quarter spare). */
export function rebuildMemoryMb(indexes: readonly Pick<HnswIndexSize, "expectedBytes">[]): number {
  const bytes = indexes.reduce((sum, index) => sum + index.expectedBytes, 0) * 1.25;
  return Math.min(
    REBUILD_MEMORY_MAX_MB,
    Math.max(DEFAULT_PGLITE_MAINTENANCE_MB, Math.ceil(bytes / 1_048_576)),
  );
}

/**
 * Runs `work` with maintenance_work_mem set for the session, then resets it. PGlite only (one connection, so
 * the SET reaches the statement; VACUUM cannot run in a transaction, so SET LOCAL is no option). Statements of
 * other callers that run between are not affected: only index builds and VACUUM read the setting.
 */
async function withMaintenanceMemory<T>(db: Database, memoryMb: number | undefined, work: () => Promise<T>) {
  if (memoryMb === undefined) return work();
  if (!Number.isInteger(memoryMb) || memoryMb < 1) throw new Error(`bad maintenance memory ${memoryMb}`);
  await db.execute(sql.raw(`SET maintenance_work_mem = '${memoryMb}MB'`));
  try {
    return await work();
  } finally {
    await db.execute(sql.raw("RESET maintenance_work_mem"));
  }
}

export interface HnswIndexSize {
  index: string;
  table: "chunks" | "memories";
  bytes: number;
  /** Rows of its table (all models; usually one), counted as tableChurn counts live rows. */
  rows: number;
  dimension: number;
  /** What a fresh build over those rows would take, about. */
  expectedBytes: number;
}

/** The HNSW indexes of chunks and memories (one per model, store/search/vector-index.ts) with their sizes. */
export async function hnswIndexSizes(db: Database): Promise<HnswIndexSize[]> {
  const rows = await queryRows<{ index: string; table: string; bytes: string; rows: string; def: string }>(
    db,
    sql`SELECT i.relname AS index, t.relname AS table, pg_relation_size(i.oid) AS bytes,
               greatest(coalesce(s.n_live_tup, 0), t.reltuples, 0) AS rows, pg_get_indexdef(i.oid) AS def
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
export async function reindex(
  db: Database,
  index: string,
  opts: { concurrently: boolean; memoryMb?: number },
): Promise<void> {
  if (!/^[a-z0-9_]{1,63}$/.test(index)) throw new Error(`unsafe index name "${index}"`);
  if (opts.concurrently) {
    await db.execute(sql.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${index}_ccnew`));
    await db.execute(sql.raw(`REINDEX INDEX CONCURRENTLY ${index}`));
  } else await withMaintenanceMemory(db, opts.memoryMb, () => db.execute(sql.raw(`REINDEX INDEX ${index}`)));
}

export interface MaintenanceStep {
  /** analyze: a table with no row count anywhere, counted before it is judged. */
  step: "vacuum" | "reindex" | "compact" | "analyze";
  target: string;
  ms: number;
}

export interface DeferredStep {
  table: MaintainedTable;
  step: "vacuum" | "reindex" | "compact";
  /** About how long the cheaper way (repair, or rebuild then VACUUM) would hold the connection. */
  estimateMs: number;
}

export interface MaintenanceResult {
  vacuumed: string[];
  reindexed: string[];
  /** PGlite tables rewritten packed (VACUUM FULL), which also rebuilt their indexes. */
  compacted: string[];
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
 * One pass. On PGlite, table by table (each step a separate statement at the caller's gate class, so searches
 * waiting go first between them): a table whose heap is bloated past HEAP_COMPACT_FACTOR is compacted (VACUUM
 * FULL, which also drops its dead rows and rebuilds its indexes); otherwise one with enough dead rows gets
 * VACUUM (ANALYZE), or, when rebuilding its HNSW indexes is cheaper than VACUUM's graph repair, is compacted
 * (the rebuild with the heap packed and its other indexes rebuilt, for a tenth more). Rebuilds on PGlite get
 * maintenance_work_mem for their graph (rebuildMemoryMb). On both
 * drivers, REINDEX of an HNSW index bloated beyond what VACUUM gives back (CONCURRENTLY on PostgreSQL). What did
 * not change is left alone: a pass over a quiet store costs a few catalog reads and a 1 % sample of big heaps.
 */
export async function runMaintenance(
  db: Database,
  opts: {
    driver: "pglite" | "postgres";
    onStep?: (step: MaintenanceStep) => void;
    /**
     * PGlite only: leave a step that would hold the single connection longer than this, about (estimatedHoldMs
     * and the rewrite estimate), for a later pass. 0 or absent: no bound.
     */
    maxHoldMs?: number;
    /** The service has been quiet for a while (no API requests): steps over `maxHoldMs` run now. */
    quiet?: boolean;
    /** Heaps smaller than this are never compacted; default MIN_COMPACT_BYTES (tests use small tables). */
    minCompactBytes?: number;
  },
): Promise<MaintenanceResult> {
  const result: MaintenanceResult = { vacuumed: [], reindexed: [], compacted: [], steps: [], deferred: [] };
  const record = (step: MaintenanceStep) => {
    result.steps.push(step);
    opts.onStep?.(step);
  };
  const tooLong = (estimateMs: number) =>
    opts.driver === "pglite" && !opts.quiet && !!opts.maxHoldMs && estimateMs > opts.maxHoldMs;
  const timed = async (step: MaintenanceStep["step"], target: string, work: () => Promise<void>) => {
    const started = Date.now();
    await work();
    record({ step, target, ms: Date.now() - started });
  };
  const rebuild = async (size: HnswIndexSize) => {
    const concurrently = opts.driver === "postgres";
    // On PostgreSQL the server's own maintenance_work_mem (docs/operations.md); on PGlite sized to the graph.
    const memoryMb = concurrently ? undefined : rebuildMemoryMb([size]);
    await timed("reindex", size.index, () => reindex(db, size.index, { concurrently, memoryMb }));
    result.reindexed.push(size.index);
  };
  const compact = async (table: MaintainedTable, indexes: HnswIndexSize[]) => {
    await timed("compact", table, () => compactTable(db, table, rebuildMemoryMb(indexes)));
    result.compacted.push(table);
  };
  if (opts.driver === "pglite") {
    for (const table of MAINTAINED_TABLES) {
      let churn = await tableChurn(db, table);
      let bloat = await heapBloat(db, table, churn.live, opts.minCompactBytes);
      if (
        !churn.catalogKnown &&
        churn.live === 0 &&
        bloat.heapBytes >= (opts.minCompactBytes ?? MIN_COMPACT_BYTES)
      ) {
        // No count anywhere (never analyzed, and the collector's lost in a restart): without one the heap would
        // look all slack and a rewrite free. ANALYZE counts it (a sample: seconds at 100,000 chunks).
        await timed("analyze", table, async () => {
          await db.execute(sql.raw(`ANALYZE ${table}`));
        });
        churn = await tableChurn(db, table);
        bloat = await heapBloat(db, table, churn.live, opts.minCompactBytes);
      }
      const indexes = (await hnswIndexSizes(db)).filter((size) => size.table === table);
      const compactMs =
        churn.live * (REWRITE_MS_PER_LIVE_ROW + (indexes.length > 0 ? REBUILD_MS_PER_LIVE_ROW : 0));
      if (heapBloated(bloat, opts.minCompactBytes)) {
        if (!tooLong(compactMs)) {
          await compact(table, indexes);
          continue;
        }
        result.deferred.push({ table, step: "compact", estimateMs: compactMs });
      }
      if (!needsVacuum(churn)) continue;
      // With enough dead rows the HNSW graph is rebuilt rather than repaired. VACUUM FULL rebuilds it too, and
      // for about a tenth more (the rewrite) also packs the heap and rebuilds the other indexes, which VACUUM
      // leaves at their peak: in the churn scenario (100,000 adds, 50,000 deletes, 50,000 updates) rebuild then
      // VACUUM left the chunks heap at 1.25× a fresh load's and its btrees at up to 1.36×
      // (bench/results/20261127T143817Z-b4effa3-dirty.json).
      const rebuildFirst = indexes.length > 0 && rebuildBeforeVacuum(churn);
      const estimateMs = rebuildFirst ? compactMs : estimatedHoldMs(churn, indexes.length > 0);
      if (tooLong(estimateMs)) {
        if (!result.deferred.some((d) => d.table === table))
          result.deferred.push({ table, step: rebuildFirst ? "compact" : "vacuum", estimateMs });
        continue;
      }
      if (rebuildFirst) {
        await compact(table, indexes);
        continue;
      }
      await timed("vacuum", table, () => vacuumTable(db, table));
      result.vacuumed.push(table);
    }
  }
  for (const size of await hnswIndexSizes(db)) {
    if (result.reindexed.includes(size.index) || result.compacted.includes(size.table) || !hnswBloated(size))
      continue;
    const estimateMs = size.rows * REBUILD_MS_PER_LIVE_ROW;
    if (tooLong(estimateMs)) {
      if (!result.deferred.some((d) => d.table === size.table))
        result.deferred.push({ table: size.table, step: "reindex", estimateMs });
      continue;
    }
    await rebuild(size);
  }
  return result;
}
