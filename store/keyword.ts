import { type SQL, sql } from "drizzle-orm";
import { type Database, queryRows } from "./db.ts";

/**
 * Query terms found in more than this share of rows are left out of the keyword query (unless no
 * other term is left): like stop words, they barely change the ranking, but ranking every row that
 * contains one is what made keyword search slow on large stores. Measured (docs/benchmarks.md): at 5 %
 * hybrid SciFact nDCG@10 was 0.737 and HTTP p95 at 100k chunks 105 ms; at 3 % 0.730 and 98 ms.
 */
export const MAX_TERM_FREQUENCY = 0.03;
const STATS_TTL_MS = 60_000;

type KeywordTable = "chunks" | "memories";

interface CommonTerms {
  lexemes: string[];
  frequencies: number[];
  loadedAt: number;
}

const cache = new WeakMap<Database, Map<KeywordTable, CommonTerms>>();

/**
 * The table's most common lexemes above MAX_TERM_FREQUENCY, from the planner statistics that ANALYZE
 * keeps (pg_stats.most_common_elems). Cached per process for a minute: reading pg_stats costs ~14 ms
 * in PGlite, too much for every query.
 */
export async function commonTerms(db: Database, table: KeywordTable): Promise<CommonTerms> {
  const tables = cache.get(db) ?? new Map<KeywordTable, CommonTerms>();
  cache.set(db, tables);
  const cached = tables.get(table);
  if (cached && Date.now() - cached.loadedAt < STATS_TTL_MS) return cached;
  const [row] = await queryRows<{ elems: string[] | null; freqs: number[] | null }>(
    db,
    sql`SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs
        FROM pg_stats WHERE schemaname = current_schema() AND tablename = ${table} AND attname = 'tsv'`,
  );
  const lexemes: string[] = [];
  const frequencies: number[] = [];
  (row?.elems ?? []).forEach((lexeme, i) => {
    const frequency = Number(row?.freqs?.[i] ?? 0);
    if (frequency > MAX_TERM_FREQUENCY) {
      lexemes.push(lexeme);
      frequencies.push(frequency);
    }
  });
  const loaded = { lexemes, frequencies, loadedAt: Date.now() };
  tables.set(table, loaded);
  return loaded;
}

/**
 * A one-column query (`tsq`) for the keyword side: the text's English lexemes, OR-ed, without the
 * very common ones (the rarest of those is kept if nothing else is left). Built from lexemes
 * directly (tsquery input), so no query text is ever parsed as tsquery syntax.
 */
export function keywordQuery(text: string, common: CommonTerms): SQL {
  return sql`
    WITH terms AS (
      SELECT lexeme FROM unnest(tsvector_to_array(to_tsvector('english', ${text}))) AS lexeme
      WHERE lexeme !~ '[''\\\\]'
    ),
    common AS (
      SELECT * FROM unnest(${`{${common.lexemes.map(arrayItem).join(",")}}`}::text[],
                           ${`{${common.frequencies.join(",")}}`}::float8[]) AS c(lexeme, freq)
    ),
    weighted AS (
      SELECT t.lexeme, coalesce(c.freq, 0) AS freq FROM terms t LEFT JOIN common c USING (lexeme)
    ),
    kept AS (
      SELECT lexeme FROM weighted WHERE freq = 0
      UNION
      SELECT lexeme FROM (SELECT lexeme FROM weighted ORDER BY freq LIMIT 1) AS rarest
    )
    SELECT (SELECT string_agg(quote_literal(lexeme), ' | ') FROM kept)::tsquery AS tsq`;
}

/** An element of a Postgres array literal, quoted so commas, braces and quotes stay inside it. */
const arrayItem = (value: string) => `"${value.replace(/[\\"]/g, (m) => `\\${m}`)}"`;

/**
 * Keeps planner statistics fresh where no autovacuum runs (PGlite): ANALYZE after ~10 % growth. `documents` too:
 * search joins it, and with no statistics the planner takes its scope filter for a handful of rows, walks the
 * documents and sorts all their chunks instead of using the HNSW index (bench/churn.ts, 2,000 imported
 * documents: p50 68 ms before ANALYZE documents, 27 ms after; 10,000: p50 907 ms on a fresh import).
 */
export async function analyzeIfGrown(db: Database, table: KeywordTable | "documents"): Promise<boolean> {
  const [row] = await queryRows<{ estimated: number; actual: number }>(
    db,
    sql`SELECT (SELECT reltuples FROM pg_class WHERE oid = to_regclass(${table}))::float8 AS estimated,
               (SELECT count(*) FROM ${sql.identifier(table)})::float8 AS actual`,
  );
  const estimated = Math.max(0, Number(row?.estimated ?? 0));
  const actual = Number(row?.actual ?? 0);
  if (Math.abs(actual - estimated) <= Math.max(200, estimated * 0.1)) return false;
  await db.execute(sql`ANALYZE ${sql.identifier(table)}`);
  if (table !== "documents") cache.get(db)?.delete(table);
  return true;
}
