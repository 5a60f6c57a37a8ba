import { sql } from "drizzle-orm";
import { type Database, queryRows } from "../db.ts";

export interface TermStatistics {
  /** Rows in the table (the planner's estimate, exact enough for IDF). */
  total: number;
  /** Rows containing each query lexeme. */
  documentFrequency: Map<string, number>;
  /** Per candidate: how often each query lexeme occurs, and its length in lexeme occurrences. */
  candidates: Map<string, { termFrequency: Map<string, number>; length: number }>;
}

/**
 * What BM25 needs for a query over a few candidate rows: the query's English lexemes, how many rows
 * of the table contain each (counted with the GIN index), and term frequencies and lengths of the
 * candidates (from their stored tsvector positions).
 */
export async function termStatistics(
  db: Database,
  table: "chunks" | "memories",
  text: string,
  ids: string[],
): Promise<TermStatistics> {
  const t = sql.identifier(table);
  const frequencies = await queryRows<{ lexeme: string; df: number; total: number }>(
    db,
    sql`WITH q AS (
          SELECT DISTINCT lexeme FROM unnest(tsvector_to_array(to_tsvector('english', ${text}))) AS lexeme
          WHERE lexeme !~ '[''\\\\]'
        )
        SELECT q.lexeme,
               (SELECT count(*) FROM ${t} x WHERE x.tsv @@ quote_literal(q.lexeme)::tsquery)::float8 AS df,
               (SELECT greatest(reltuples, (SELECT count(*) FROM ${t}))::float8 FROM pg_class WHERE oid = to_regclass(${table})) AS total
        FROM q`,
  );
  const documentFrequency = new Map(frequencies.map((f) => [f.lexeme, Number(f.df)]));
  const total = Number(frequencies[0]?.total ?? 0);
  const rows = ids.length
    ? await queryRows<{ id: string; lexeme: string | null; tf: number | null; length: number }>(
        db,
        sql`SELECT x.id, e.lexeme, cardinality(e.positions)::int AS tf,
                   (SELECT coalesce(sum(cardinality(a.positions)), 0) FROM unnest(x.tsv) a)::int AS length
            FROM ${t} x
            LEFT JOIN LATERAL unnest(x.tsv) e ON e.lexeme = ANY(${`{${[...documentFrequency.keys()].map((l) => `"${l.replace(/"/g, '\\"')}"`).join(",")}}`}::text[])
            WHERE x.id = ANY(${`{${ids.map((i) => `"${i}"`).join(",")}}`}::text[])`,
      )
    : [];
  const candidates = new Map<string, { termFrequency: Map<string, number>; length: number }>();
  for (const r of rows) {
    const entry = candidates.get(r.id) ?? { termFrequency: new Map(), length: Number(r.length) };
    if (r.lexeme) entry.termFrequency.set(r.lexeme, Number(r.tf ?? 0));
    candidates.set(r.id, entry);
  }
  return { total, documentFrequency, candidates };
}

/** Okapi BM25 with Anserini's defaults (k1 0.9, b 0.4); average length over the candidates. */
export function bm25(stats: TermStatistics, k1 = 0.9, b = 0.4): Map<string, number> {
  const lengths = [...stats.candidates.values()].map((c) => c.length);
  const averageLength = lengths.length ? lengths.reduce((a, x) => a + x, 0) / lengths.length : 1;
  const scores = new Map<string, number>();
  for (const [id, candidate] of stats.candidates) {
    let score = 0;
    for (const [lexeme, tf] of candidate.termFrequency) {
      const df = stats.documentFrequency.get(lexeme) ?? 0;
      const idf = Math.log(1 + (stats.total - df + 0.5) / (df + 0.5));
      score +=
        (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * candidate.length) / Math.max(1, averageLength)));
    }
    scores.set(id, score);
  }
  return scores;
}
