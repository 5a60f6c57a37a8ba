import { sql } from "drizzle-orm";
import type { Database } from "../../store/db.ts";

/**
 * Makes the table counters (pg_stat_user_tables) show every statement run so far on PGlite. A backend publishes
 * its pending counters when it goes idle, at most once a second, so a test that waited a fixed time and read them
 * could still find the last writes missing (a CI run read a heap's deleted rows as live). pg_stat_force_next_flush()
 * makes the idle moment right after it publish them, whatever the time since the last one.
 */
export async function publishTableCounters(db: Database): Promise<void> {
  await db.execute(sql`SELECT pg_stat_force_next_flush()`);
}
