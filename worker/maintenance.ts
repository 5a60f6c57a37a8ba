import type { Logger } from "../config/logger.ts";
import type { Database } from "../store/db.ts";
import { analyzeIfGrown } from "../store/keyword.ts";

/**
 * Planner statistics decide whether vector search uses its HNSW index and which query terms keyword
 * search treats as too common; PGlite has no autovacuum to refresh them, so the worker does it
 * whenever a table grew or shrank by about a tenth.
 */
export function startMaintenanceLoop(db: Database, log: Logger, everyMs = 120_000): () => void {
  let running = false;
  const pass = async () => {
    if (running) return;
    running = true;
    try {
      for (const table of ["chunks", "memories"] as const) {
        const started = Date.now();
        if (await analyzeIfGrown(db, table)) log.debug({ table, ms: Date.now() - started }, "analyzed");
      }
    } catch (error) {
      log.warn({ err: error }, "statistics refresh failed; will try again");
    } finally {
      running = false;
    }
  };
  void pass();
  const timer = setInterval(pass, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
