import type { Logger } from "../config/logger.ts";
import type { Database } from "../store/db.ts";
import { analyzeIfGrown } from "../store/keyword.ts";

/** The tables whose planner statistics search depends on. */
const SEARCHED_TABLES = ["chunks", "memories"] as const;

/** Activities of the refreshStatistics workflow (started by its schedule, temporal/schedules.ts). */
export function createMaintenanceActivities(deps: { db: Database; log: Logger }) {
  return {
    /**
     * Planner statistics decide whether vector search uses its HNSW index and which query terms keyword
     * search treats as too common. PGlite has no autovacuum to refresh them, so this ANALYZEs a searched
     * table once it grew or shrank by about a tenth since its last statistics (a no-op otherwise).
     */
    async refreshStatistics(): Promise<{ analyzed: string[] }> {
      const analyzed: string[] = [];
      for (const table of SEARCHED_TABLES) {
        const started = Date.now();
        if (await analyzeIfGrown(deps.db, table)) {
          analyzed.push(table);
          deps.log.debug({ table, ms: Date.now() - started }, "analyzed");
        }
      }
      return { analyzed };
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
