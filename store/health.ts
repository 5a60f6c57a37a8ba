import { sql } from "drizzle-orm";
import { type Database, queryRows } from "./db.ts";
import type { StatusEvent } from "./schema/index.ts";

/** One round trip: resolves when the store answers. */
export async function pingStore(db: Database): Promise<void> {
  await db.execute(sql`SELECT 1`);
}

/** How many documents are in each status (statuses without documents are left out). */
export async function documentCountsByStatus(db: Database): Promise<Map<string, number>> {
  const rows = await queryRows<{ status: string; count: string | number }>(
    db,
    sql`SELECT status, count(*) AS count FROM documents GROUP BY status`,
  );
  return new Map(rows.map((row) => [row.status, Number(row.count)]));
}

/**
 * Status histories of the documents finished (done or failed) since `since`, newest first, at most `limit`.
 * updated_at also moves on metadata edits: callers narrow this superset by the terminal event's time.
 */
export async function recentlyFinishedHistories(
  db: Database,
  since: Date,
  limit: number,
): Promise<{ history: StatusEvent[]; run: number }[]> {
  const rows = await queryRows<{ history: StatusEvent[] | string; run: number }>(
    db,
    sql`SELECT status_history AS history, processing_run AS run FROM documents
        WHERE status IN ('done', 'failed') AND updated_at >= ${since.toISOString()}
        ORDER BY updated_at DESC LIMIT ${limit}`,
  );
  return rows.map((row) => ({
    history: typeof row.history === "string" ? (JSON.parse(row.history) as StatusEvent[]) : row.history,
    run: Number(row.run),
  }));
}
