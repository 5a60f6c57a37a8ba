import { type SQL, sql } from "drizzle-orm";
import { type Database, queryRows } from "../db.ts";
import { keywordRankSql, searchTuning } from "./tuning.ts";

/** Terms in more rows than this share are left out of the keyword query (tuned: store/search/tuning.ts). */
const maxTermFrequency = () => searchTuning().maxTermFrequency;
/**
 * How many rows the keyword side may rank at most (as estimated from the planner statistics). A share of
 * rows grows with the table, so the share cut (maxTermFrequency) alone let the work grow with it: at 100,000 chunks a
 * query's terms matched 4,500 chunks (p50; up to 9,600), and fetching, joining and ranking them was most
 * of the search's time. The query's terms are kept rarest first while their estimated matches add up to
 * no more than this; a term too rare to be in the statistics counts as none, which is why the text columns keep
 * 10,000 lexemes of statistics (migration 0015: with the default 1,000, a million chunks had many terms outside
 * the list matching thousands each; docs/decisions/README.md#0009-keyword-statistics-target). 4,000 loses little of an
 * unbounded keyword side's ranking while bounding its work (`bench/search-plan.ts --judged 300`
 * measures it). Below ~130,000 rows the 3 % rule binds first for short queries.
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
 * The keyword query as tsquery text, or null when the text has no lexeme: the text's English lexemes, OR-ed,
 * without the very common ones (above the tuned maxTermFrequency) and, rarest first, only as many as keep the
 * estimated matches within MATCH_BUDGET (the rarest term is kept if nothing else is left). Built from lexemes
 * directly (tsquery input), so no query text is ever parsed as tsquery syntax. The database only turns the
 * text into lexemes (to_tsvector: the stemmer); the weighing against the common terms runs here. Done in SQL,
 * with the ~1,000 common lexemes and their frequencies sent as array parameters to be parsed and joined, it
 * took 3.9 ms of the database's time per search at 100,000 chunks, against 0.6 ms for the lexemes alone.
 */
export async function keywordTsquery(
  db: Database,
  text: string,
  common: CommonTerms,
): Promise<string | null> {
  const [row] = await queryRows<{ lexemes: string[] | null }>(
    db,
    sql`SELECT tsvector_to_array(to_tsvector('english', ${text})) AS lexemes`,
  );
  return budgetedTsquery(row?.lexemes ?? [], common);
}

/** The common lexemes by frequency, made once per loaded CommonTerms (they are cached a minute), not per search. */
const frequencyMaps = new WeakMap<CommonTerms, Map<string, number>>();
function frequencyMap(common: CommonTerms): Map<string, number> {
  let map = frequencyMaps.get(common);
  if (!map) {
    map = new Map(common.lexemes.map((lexeme, i) => [lexeme, common.frequencies[i] ?? 0]));
    frequencyMaps.set(common, map);
  }
  return map;
}

/** The rule of keywordTsquery over lexemes already made (to_tsvector's output). */
export function budgetedTsquery(lexemes: readonly string[], common: CommonTerms): string | null {
  const kept = budgetedLexemes(lexemes, common);
  // Quotes and backslashes were filtered out by budgetedLexemes: inside '...' nothing else is tsquery syntax.
  return kept.length ? kept.map((lexeme) => `'${lexeme}'`).join(" | ") : null;
}

/** The lexemes keywordTsquery's rule keeps, in code-unit order (none when the text has no usable lexeme). */
export function budgetedLexemes(lexemes: readonly string[], common: CommonTerms): string[] {
  const frequencyOf = frequencyMap(common);
  // Rarest first; ties in code-unit order, so the same text always gives the same query.
  const weighted = lexemes
    .filter((lexeme) => lexeme !== "" && !/['\\]/.test(lexeme))
    .map((lexeme) => ({ lexeme, frequency: frequencyOf.get(lexeme) ?? 0 }))
    .sort((a, b) => a.frequency - b.frequency || (a.lexeme < b.lexeme ? -1 : a.lexeme > b.lexeme ? 1 : 0));
  const rarest = weighted[0];
  if (!rarest) return [];
  const rows = common.rows ?? 0;
  const kept = new Set([rarest.lexeme]);
  let share = 0;
  for (const { lexeme, frequency } of weighted) {
    if (frequency > maxTermFrequency()) continue;
    share += frequency;
    // A term too rare to be in the statistics counts as no match; rows 0 (unknown) means no budget.
    if (frequency === 0 || share * rows <= MATCH_BUDGET) kept.add(lexeme);
  }
  return [...kept].sort();
}

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

/**
 * The best `limit` keyword matches of `from` (aliased `alias`) under `where`, as rows (id, rank, score): rank 1 is
 * the best. Each match's rank is computed once and only the top rows are kept (a top-N heapsort of id and score),
 * then those are numbered. Numbered with row_number() over every match, as before, the statement sorted all the
 * matches with their tsvector carried along and ran the window over each of them: at 100,000 imported chunks
 * (3,300 matches) that was 2 ms of the keyword side's 16.5 (p50, PGlite; bench/search-imported.ts store).
 * Ties go by id, so one query always gives the same rows.
 */
export function topKeywordMatches(o: {
  from: SQL;
  alias: "c" | "m";
  where: SQL;
  tsq: string | null;
  limit: number;
}): SQL {
  const a = sql.raw(o.alias);
  const rank = keywordRankSql(searchTuning().keywordRank, o.alias, sql`${o.tsq}::tsquery`);
  return sql`SELECT top.id, row_number() OVER (ORDER BY top.score DESC, top.id) AS rank, top.score
      FROM (SELECT ${a}.id, ${rank}::float8 AS score
            FROM ${o.from}
            WHERE ${a}.tsv @@ ${o.tsq}::tsquery AND ${o.where}
            ORDER BY score DESC, ${a}.id
            LIMIT ${o.limit}) top`;
}
