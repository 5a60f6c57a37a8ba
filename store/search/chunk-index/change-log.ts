import { sql } from "drizzle-orm";
import { type Database, queryRows } from "../../db.ts";

// The chunks an in-memory index must read again: every statement that inserts, updates or deletes chunks appends
// their ids here (statement-level triggers with transition tables: one INSERT ... SELECT per statement, not one
// per row). Created by the index when it starts (embedded store only) and dropped when the service runs without
// it, so a store that no index reads never grows a log.

const CREATE = [
  `CREATE TABLE IF NOT EXISTS chunk_changes (seq bigserial PRIMARY KEY, chunk_id text NOT NULL)`,
  `CREATE OR REPLACE FUNCTION chunk_changes_log() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'DELETE' THEN
       INSERT INTO chunk_changes (chunk_id) SELECT id FROM changed_old;
     ELSE
       INSERT INTO chunk_changes (chunk_id) SELECT id FROM changed_new;
     END IF;
     RETURN NULL;
   END $$`,
  `CREATE OR REPLACE TRIGGER chunk_changes_insert AFTER INSERT ON chunks
     REFERENCING NEW TABLE AS changed_new FOR EACH STATEMENT EXECUTE FUNCTION chunk_changes_log()`,
  `CREATE OR REPLACE TRIGGER chunk_changes_update AFTER UPDATE ON chunks
     REFERENCING NEW TABLE AS changed_new FOR EACH STATEMENT EXECUTE FUNCTION chunk_changes_log()`,
  `CREATE OR REPLACE TRIGGER chunk_changes_delete AFTER DELETE ON chunks
     REFERENCING OLD TABLE AS changed_old FOR EACH STATEMENT EXECUTE FUNCTION chunk_changes_log()`,
];

/**
 * Creates the log and its triggers (idempotent); returns the number of the last change logged so far, read from
 * the log's sequence: an emptied log (every change applied and forgotten, as a stopped service leaves it) still
 * numbers its next change after the last one, and an index starting at 0 would see a backlog that is not there.
 */
export async function startChangeLog(db: Database): Promise<number> {
  await db.transaction(async (tx) => {
    for (const statement of CREATE) await tx.execute(sql.raw(statement));
  });
  const [row] = await queryRows<{ seq: string | number | null }>(
    db,
    sql`SELECT pg_sequence_last_value(pg_get_serial_sequence('chunk_changes', 'seq')) AS seq`,
  );
  // NULL until the sequence's first use: nothing was ever logged.
  return Number(row?.seq ?? 0);
}

/** Removes the triggers and the log, for a store searched without an in-memory index. */
export async function dropChangeLog(db: Database): Promise<void> {
  await db.transaction(async (tx) => {
    for (const op of ["insert", "update", "delete"])
      await tx.execute(sql.raw(`DROP TRIGGER IF EXISTS chunk_changes_${op} ON chunks`));
    await tx.execute(sql.raw("DROP FUNCTION IF EXISTS chunk_changes_log()"));
    await tx.execute(sql.raw("DROP TABLE IF EXISTS chunk_changes"));
  });
}

/** The newest change's number (0: none yet). One backward step of the primary key. */
export async function lastChange(db: Database): Promise<number> {
  const [row] = await queryRows<{ seq: string | number | null }>(
    db,
    sql`SELECT seq FROM chunk_changes ORDER BY seq DESC LIMIT 1`,
  );
  return Number(row?.seq ?? 0);
}

/** The chunks changed after `after`, up to `limit` changes, and the number of the last one read. */
export async function changesAfter(
  db: Database,
  after: number,
  limit: number,
): Promise<{ ids: string[]; upTo: number }> {
  const rows = await queryRows<{ seq: string | number; chunk_id: string }>(
    db,
    sql`SELECT seq, chunk_id FROM chunk_changes WHERE seq > ${after} ORDER BY seq LIMIT ${limit}`,
  );
  const last = rows[rows.length - 1];
  return { ids: [...new Set(rows.map((r) => r.chunk_id))], upTo: last ? Number(last.seq) : after };
}

/** Forgets the changes an index has applied (the only reader of the log). */
export async function forgetChanges(db: Database, upTo: number): Promise<void> {
  await db.execute(sql`DELETE FROM chunk_changes WHERE seq <= ${upTo}`);
}

/**
 * The newest change's number and a text's English lexemes (to_tsvector, the stemmer the keyword side uses), in one
 * statement: an indexed search needs both from the store before it ranks.
 */
export async function lastChangeAndLexemes(
  db: Database,
  text: string | null,
): Promise<{ newest: number; lexemes: string[] }> {
  const [row] = await queryRows<{ seq: string | number | null; lexemes: string[] | null }>(
    db,
    sql`SELECT (SELECT seq FROM chunk_changes ORDER BY seq DESC LIMIT 1) AS seq,
               CASE WHEN ${text}::text IS NULL THEN NULL ELSE tsvector_to_array(to_tsvector('english', ${text}::text)) END AS lexemes`,
  );
  return { newest: Number(row?.seq ?? 0), lexemes: row?.lexemes ?? [] };
}
