import { Context } from "@temporalio/activity";
import type { Logger } from "../config/logger.ts";
import type { Database } from "../store/db.ts";
import { type MaintenanceResult, runMaintenance, serverKind } from "../store/maintenance.ts";
import { pruneRateLimits } from "../store/rate-limits.ts";
import { analyzeIfGrown } from "../store/search/keyword.ts";

/** The tables whose planner statistics search depends on (documents: the scope filter's selectivity). */
const SEARCHED_TABLES = ["chunks", "documents", "memories"] as const;

/** How often a maintenance pass reports it is alive while a statement runs (PostgreSQL; PGlite's block the thread). */
const HEARTBEAT_MS = 10_000;

/** Activities of the refreshStatistics and maintainTables workflows (started by their schedules, temporal/schedules.ts). */
export interface MaintenanceActivityDeps {
  db: Database;
  log: Logger;
  /** MAINTENANCE_MAX_HOLD: on PGlite, the longest a step may hold the connection (0: no bound). */
  maintenanceMaxHoldMs?: number;
  /** MAINTENANCE_QUIET_AFTER: after this long without API requests, longer steps run too (0: never). */
  maintenanceQuietAfterMs?: number;
  /** How long the API in this process has served no request; absent where no API shares the store. */
  quietForMs?: () => number;
}

export function createMaintenanceActivities(deps: MaintenanceActivityDeps) {
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

    /**
     * Space and speed over months (store/maintenance.ts runMaintenance): on PGlite, which has no autovacuum,
     * VACUUM (ANALYZE) of chunks, documents and memories once a tenth of a table's rows are dead; on both
     * drivers, REINDEX of an HNSW index grown past twice a fresh build's size (CONCURRENTLY on PostgreSQL); first,
     * the rate-limit counters whose window has ended are deleted (store/rate-limits.ts pruneRateLimits).
     * Statements go one at a time through the background class of PGlite's gate, so waiting searches go first.
     */
    async maintainTables(): Promise<MaintenanceResult> {
      const ctx = Context.current();
      const driver = await serverKind(deps.db);
      const beat = setInterval(() => ctx.heartbeat({ driver }), HEARTBEAT_MS);
      const quietAfterMs = deps.maintenanceQuietAfterMs ?? 0;
      const quietMs = deps.quietForMs?.();
      const quiet = quietAfterMs > 0 && quietMs !== undefined && quietMs >= quietAfterMs;
      try {
        // Counters whose window has ended count nothing; without this a row stays for every key and every client
        // address that ever made a request (hostile traffic from many addresses would grow the table for good).
        const prunedRateLimits = await pruneRateLimits(deps.db);
        if (prunedRateLimits)
          deps.log.info({ rows: prunedRateLimits, driver }, "ended rate-limit windows pruned");
        const result = await runMaintenance(deps.db, {
          driver,
          maxHoldMs: deps.maintenanceMaxHoldMs,
          quiet,
          onStep: (step) => {
            ctx.heartbeat(step);
            deps.log.info({ ...step, driver }, "table maintenance step");
          },
        });
        for (const d of result.deferred)
          deps.log.warn(
            {
              table: d.table,
              step: d.step,
              estimateMs: Math.round(d.estimateMs),
              maxHoldMs: deps.maintenanceMaxHoldMs,
              quietForMs: quietMs,
            },
            quietAfterMs > 0 && deps.quietForMs
              ? "table maintenance deferred: on PGlite it would stop the whole service for about this long; it runs in the first pass after MAINTENANCE_QUIET_AFTER without API requests (docs/operations.md#table-maintenance)"
              : "table maintenance deferred: on PGlite it would stop the whole service for about this long; run it at a quiet hour with MAINTENANCE_MAX_HOLD=off (docs/operations.md#table-maintenance)",
          );
        return result;
      } finally {
        clearInterval(beat);
      }
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
