import { type SQL, sql } from "drizzle-orm";
import { type Database, queryRows } from "./db.ts";
import { searchTuning } from "./search-tuning.ts";

/** Terms in more rows than this share are left out of the keyword query (tuned: store/search-tuning.ts). */
const maxTermFrequency = () => searchTuning().maxTermFrequency;
/**
 * How many rows the keyword side may rank at most (as estimated from the planner statistics). A share of
 * rows grows with the table, so the share cut (maxTermFrequency) alone let the work grow with it: at 100,000 chunks a
 * query's terms matched 4,500 chunks (p50; up to 9,600), and fetching, joining and ranking them was most
 * of the search's time. The query's terms are kept rarest first while their estimated matches add up to
 * no more than this; a term too rare to be in the statistics counts as none. Measured on that store
 * (bench/search-plan.ts --judged 300, SciFact nDCG@10 by document): no budget 0.695, 8,000 0.693,
 * 4,000 0.690, 2,000 0.683, 1,000 0.677. Below ~130,000 rows the 3 % rule binds first for short queries.
 */
export const MATCH_BUDGET = 4000;
const STATS_TTL_MS = 60_000;

type KeywordTable = "chunks" | "memories";

export interface CommonTerms {
  /** The table's most common lexemes (pg_stats.most_common_elems) and the share of rows holding each. */
  lexemes: string[];
  frequencies: number[];
  /** Rows in the table (pg_class.reltuples), to turn shares into match counts; 0 when unknown (no budget). */
  rows?: number;
  loadedAt: number;
}

const cache = new WeakMap<Database, Map<KeywordTable, CommonTerms>>();

/**
 * The table's most common lexemes with their frequencies, and its row count, from the planner
 * statistics that ANALYZE keeps (pg_stats.most_common_elems, pg_class.reltuples). Cached per process
 * for a minute: reading pg_stats costs ~14 ms in PGlite, too much for every query.
 */
export async function commonTerms(db: Database, table: KeywordTable): Promise<CommonTerms> {
  const tables = cache.get(db) ?? new Map<KeywordTable, CommonTerms>();
  cache.set(db, tables);
  const cached = tables.get(table);
  if (cached && Date.now() - cached.loadedAt < STATS_TTL_MS) return cached;
  const [row] = await queryRows<{ elems: string[] | null; freqs: number[] | null; rows: number | null }>(
    db,
    sql`SELECT s.elems, s.freqs, (SELECT reltuples FROM pg_class WHERE oid = to_regclass(${table}))::float8 AS rows
        FROM (SELECT 1) AS one
        LEFT JOIN (SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs
                   FROM pg_stats WHERE schemaname = current_schema() AND tablename = ${table} AND attname = 'tsv') s
          ON true`,
  );
  const lexemes: string[] = [];
  const frequencies: number[] = [];
  (row?.elems ?? []).forEach((lexeme, i) => {
    lexemes.push(lexeme);
    frequencies.push(Number(row?.freqs?.[i] ?? 0));
  });
  const loaded = { lexemes, frequencies, rows: Math.max(0, Number(row?.rows ?? 0)), loadedAt: Date.now() };
  tables.set(table, loaded);
  return loaded;
}

/**
 * A one-column query (`tsq`) for the keyword side: the text's English lexemes, OR-ed, without the
 * very common ones (above the tuned maxTermFrequency) and, rarest first, only as many as keep the estimated
 * matches within MATCH_BUDGET (the rarest term is kept if nothing else is left). Built from lexemes
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
    budgeted AS (
      SELECT lexeme, freq, sum(freq) OVER (ORDER BY freq, lexeme) * ${common.rows ?? 0}::float8 AS matches
      FROM weighted WHERE freq <= ${maxTermFrequency()}::float8
    ),
    kept AS (
      SELECT lexeme FROM budgeted WHERE freq = 0 OR matches <= ${MATCH_BUDGET}
      UNION
      SELECT lexeme FROM (SELECT lexeme FROM weighted ORDER BY freq, lexeme LIMIT 1) AS rarest
    )
    SELECT (SELECT string_agg(quote_literal(lexeme), ' | ') FROM kept)::tsquery AS tsq`;
}

/** The keyword query as tsquery text (null when the text has no lexeme), for a statement to take as a value. */
export async function keywordTsquery(
  db: Database,
  text: string,
  common: CommonTerms,
): Promise<string | null> {
  const [row] = await queryRows<{ tsq: string | null }>(
    db,
    sql`SELECT tsq::text AS tsq FROM (${keywordQuery(text, common)}) AS q`,
  );
  return row?.tsq ?? null;
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
