// Entry point of the workflow bundle: every workflow type the worker runs.
export { webhookDelivery } from "./deliver-webhook.ts";
export { fileSweep } from "./file-sweep.ts";
export { keyExpiryNotices } from "./key-expiry-notices.ts";
export { maintainTables } from "./maintain-tables.ts";
export { processDocument } from "./process-document.ts";
export { reembedVectors } from "./reembed.ts";
export { refreshStatistics } from "./refresh-statistics.ts";
export { scheduledSync, syncConnection } from "./sync-connection.ts";
