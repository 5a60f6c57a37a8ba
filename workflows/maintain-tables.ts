import { proxyActivities } from "@temporalio/workflow";
// Type-only: the workflow bundle never contains activity code.
import type { MaintenanceActivities } from "../activities/maintenance.ts";

/**
 * A pass is table by table and skips what did not change; a VACUUM of a large chunks table or a REINDEX of its
 * HNSW index can take minutes, and the activity heartbeats between statements (and on PostgreSQL during them).
 */
const maintenance = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: "2 hours",
  heartbeatTimeout: "15 minutes",
  retry: {
    initialInterval: "1 minute",
    backoffCoefficient: 2,
    maximumInterval: "10 minutes",
    maximumAttempts: 3,
  },
});

/** Started by the maintenance schedule: VACUUM (ANALYZE) of churned tables on PGlite, REINDEX of a bloated HNSW index. */
export async function maintainTables(): ReturnType<MaintenanceActivities["maintainTables"]> {
  return maintenance.maintainTables();
}
