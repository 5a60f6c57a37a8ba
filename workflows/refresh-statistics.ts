import { proxyActivities } from "@temporalio/workflow";
// Type-only: the workflow bundle never contains activity code.
import type { MaintenanceActivities } from "../activities/maintenance.ts";

/** ANALYZE of a table with a million chunks takes a minute or so; a failed pass is retried a few times. */
const maintenance = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: "30 minutes",
  retry: { initialInterval: "10s", backoffCoefficient: 2, maximumInterval: "5 minutes", maximumAttempts: 3 },
});

/** Started by the statistics schedule: refreshes the planner statistics of searched tables that changed. */
export async function refreshStatistics(): Promise<{ analyzed: string[] }> {
  return maintenance.refreshStatistics();
}
