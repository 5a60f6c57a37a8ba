import { type SQL, sql } from "drizzle-orm";
import { type Database, queryRows } from "../db.ts";
import { type FilterNode, filterIsIndexable, type MetadataColumns } from "../filters.ts";

/**
 * The most rows (documents, or memories) a search narrowed by a condition the planner cannot estimate ranks
 * exactly. Such a condition (ignoreCase, string_contains, a numeric range, a negation, a filepath prefix) is taken
 * for half the rows, so when it keeps few of a big tag the HNSW scan drops nearly every row it meets until
 * pgvector's scan limit (hnsw.max_scan_tuples) stops it: about half a second at 100,000 chunks, and short of the
 * candidates asked for. In process, in a 50,000-document tag on PGlite, reading a document's chunks and their
 * vectors costs ~70 µs a document, so 1,000 documents cost about what the walk does for a filter keeping 2 % of
 * the tag; the walk gets cheaper as the filter keeps more, and exact ranking dearer.
 */
export const EXACT_RANK_LIMIT = 1000;

/** Whether a metadata filter has a leaf the table's metadata indexes do not answer (see EXACT_RANK_LIMIT). */
export const opaqueFilter = (filters: FilterNode | undefined, columns: MetadataColumns): boolean =>
  filters !== undefined && !filterIsIndexable(filters, columns);

/**
 * The ids of the rows `select` (a statement returning `id`) yields, when they are at most `limit`: the
 * statement is read up to its `limit + 1`st row. Null when there are more: the narrowing then keeps enough of
 * the scope for the HNSW scan to meet its candidates soon. Costs a scan of the scope's rows when it keeps few
 * (~85 ms at 50,000 documents, against the ~450 ms HNSW scan it spares), and about `limit / share kept` rows
 * when it keeps more.
 */
export async function fewIds(db: Database, select: SQL, limit = EXACT_RANK_LIMIT): Promise<string[] | null> {
  const rows = await queryRows(db, sql`${select} LIMIT ${limit + 1}`);
  return rows.length > limit ? null : rows.map((r) => String(r.id));
}

/**
 * `column` among `ids`, as a semi-join over one array parameter: the planner counts the list and probes the
 * column's index once per id. (`= ANY(list)` costs as much to run but far more to plan: its selectivity is
 * estimated per element; and a parameter per id costs more to bind than to read.)
 */
export function inIdList(column: SQL, ids: readonly string[]): SQL {
  const literal = `{${ids.map((v) => `"${v.replace(/[\\"]/g, (m) => `\\${m}`)}"`).join(",")}}`;
  return sql`${column} IN (SELECT unnest(${literal}::text[]))`;
}
