import { sql } from "drizzle-orm";
import { type Database, queryRows } from "../db.ts";

/** The embedding model whose vectors a query compares against: its name and vector length. */
export interface VectorSpace {
  model: string;
  dimension: number;
}

const TABLES = ["chunks", "memories"] as const;

/**
 * Model names and dimensions are spliced into SQL (a partial index predicate must be a literal for
 * the planner to match it), so they are checked here; they come from code, never from requests.
 */
export function checkedSpace(space: VectorSpace): VectorSpace {
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(space.model))
    throw new Error(`unsafe embedding model name "${space.model}"`);
  if (!Number.isInteger(space.dimension) || space.dimension < 1 || space.dimension > 4096)
    throw new Error(`bad embedding dimension ${space.dimension}`);
  return space;
}

/** Integers whose largest magnitude is just under this: below 2^24, where they are also exact as float4. */
const QUERY_VECTOR_SCALE_BITS = 23;

/**
 * A query vector as pgvector text, for comparing by cosine distance only (the `<=>` of every search and of the
 * HNSW indexes). PGlite parses decimal fractions slowly (strtof in WebAssembly: ~0.85 ms for 384 of them,
 * measured, a statement's worth of time per search) and whole numbers below 2^24 at the speed of plain text,
 * so the vector goes as integers: scaled by a power of two so its largest component is at most 2^23, then
 * rounded. Cosine ignores the scale; the rounding moves the direction by at most 0.5 / 2^23 per component
 * (for a unit vector of 384 components, under 1.2e-6 in similarity). Never for vectors that are stored.
 */
export function queryVectorText(embedding: readonly number[]): string {
  let largest = 0;
  for (const x of embedding) largest = Math.max(largest, Math.abs(x));
  if (!(largest > 0) || !Number.isFinite(largest)) return `[${embedding.join(",")}]`;
  const scale = 2 ** (QUERY_VECTOR_SCALE_BITS - Math.ceil(Math.log2(largest)));
  return `[${embedding.map((x) => Math.round(x * scale)).join(",")}]`;
}

/**
 * The HNSW scan's settings for one search, as one statement to run first in its transaction (set_config with
 * is_local true is SET LOCAL; one round trip, not one per setting). HNSW returns at most ef_search rows (40 by
 * default), fewer than the candidates a fusion asks for, so it is raised to them; and with a selective filter (a
 * small container among large ones) the ef_search nearest rows may all be filtered out, so an iterative scan
 * keeps walking the graph until enough rows pass (pgvector >= 0.8). The value is a checked integer.
 */
export function hnswScanSettings(candidates: number): string {
  const efSearch = Math.min(1000, Math.max(40, Math.floor(candidates)));
  return `SELECT set_config('hnsw.ef_search', '${efSearch}', true), set_config('hnsw.iterative_scan', 'relaxed_order', true)`;
}

/** `alias.embedding::vector(N)`, the indexed expression of the space, and the predicate that selects its rows. */
export function vectorTerms(alias: string, space: VectorSpace) {
  const { model, dimension } = checkedSpace(space);
  return {
    column: sql.raw(`${alias}.embedding::vector(${dimension})`),
    inSpace: sql.raw(`${alias}.embedding_model = '${model}'`),
    cast: sql.raw(`::vector(${dimension})`),
  };
}

function indexName(table: string, model: string) {
  return `${table}_hnsw_${model.replace(/[^A-Za-z0-9]/g, "_").toLowerCase()}`.slice(0, 63);
}

/**
 * One HNSW index per table and model, over the rows of that model only. Created when a model is
 * first used; a later model gets its own index while the old one serves until its rows are migrated.
 * An advisory lock keeps two processes starting together from racing on the same CREATE INDEX.
 */
export async function ensureVectorIndexes(
  db: Database,
  space: VectorSpace,
  options: {
    /**
     * maintenance_work_mem for the build. The service creates these indexes when a model is first used, over
     * few rows, and 256MB is plenty; a build over a loaded table (benchmarks, a migration) is many times faster
     * when the whole graph fits (pgvector: about 2 KB per 384-d vector), e.g. '4GB' for a million chunks.
     */
    buildMemory?: string;
  } = {},
): Promise<void> {
  const { model, dimension } = checkedSpace(space);
  const memory = options.buildMemory ?? "256MB";
  if (!/^[1-9][0-9]{0,6}(kB|MB|GB)$/.test(memory))
    throw new Error(`bad index build memory "${memory}" (a size such as 256MB or 4GB)`);
  await db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext('memory-service:vector-index'))`);
    await tx.execute(sql.raw(`SET LOCAL maintenance_work_mem = '${memory}'`));
    for (const table of TABLES) {
      await tx.execute(
        sql.raw(
          `CREATE INDEX IF NOT EXISTS ${indexName(table, model)} ON ${table} ` +
            `USING hnsw ((embedding::vector(${dimension})) vector_cosine_ops) WHERE embedding_model = '${model}'`,
        ),
      );
    }
  });
}

/** Drops the per-model indexes of models no row uses any more (after a migration finished). */
export async function dropUnusedVectorIndexes(db: Database, current: VectorSpace): Promise<string[]> {
  const keep = new Set(TABLES.map((t) => indexName(t, checkedSpace(current).model)));
  const rows = await queryRows<{ indexname: string }>(
    db,
    sql`SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname ~ '^(chunks|memories)_hnsw_'`,
  );
  const dropped: string[] = [];
  for (const { indexname } of rows) {
    if (keep.has(indexname)) continue;
    await db.execute(sql.raw(`DROP INDEX IF EXISTS ${indexname}`));
    dropped.push(indexname);
  }
  return dropped;
}
