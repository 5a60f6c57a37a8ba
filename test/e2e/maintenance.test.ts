// Table maintenance runs as a Temporal schedule (workflows/maintain-tables.ts): the worker creates it at start
// with MAINTENANCE_INTERVAL and removes it when the interval is `off`. A run on a store without churn does
// nothing, and search answers the same afterwards. What a run does when there is bloat (VACUUM, REINDEX, the
// counters before and after) is shown on both drivers by test/store/table-maintenance.test.ts.

import { randomBytes } from "node:crypto";
import { Client, Connection, ScheduleNotFoundError } from "@temporalio/client";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createLogger } from "../../config/logger.ts";
import { ensureMaintenanceSchedule, maintenanceScheduleId } from "../../temporal/schedules.ts";
import { caller } from "../support/http.ts";
import { startTestService, type TestService, waitFor } from "../support/service.ts";

describe("the table maintenance schedule", () => {
  let service: TestService;
  let temporal: Connection;
  const call = caller(() => service.url);

  beforeAll(async () => {
    service = await startTestService({ env: { MAINTENANCE_INTERVAL: "13m" } });
    temporal = await Connection.connect({ address: inject("TEST_TEMPORAL_ADDRESS") });
  }, 180_000);
  afterAll(async () => {
    await new Client({ connection: temporal }).schedule
      .getHandle(maintenanceScheduleId(service.taskQueue))
      .delete()
      .catch(() => undefined);
    await temporal?.close();
    await service?.stop();
  });

  const schedule = () =>
    new Client({ connection: temporal }).schedule.getHandle(maintenanceScheduleId(service.taskQueue));

  it("is made with the configured interval, to start maintainTables", async () => {
    const described = await schedule().describe();
    expect(described.spec.intervals?.[0]?.every).toBe(13 * 60_000);
    expect(described.action).toMatchObject({ type: "startWorkflow", workflowType: "maintainTables" });
  });

  it("does nothing on a store without churn, and search answers the same after a run", async () => {
    const ids: string[] = [];
    for (const content of [
      "The lighthouse keeper logs every passing ship in a leather-bound book.",
      "Granite cliffs shelter the harbour from the winter storms.",
      "Saffron is harvested by hand from the crocus flower.",
    ]) {
      const res = await call("POST", "/v3/documents", { containerTag: "maint", content });
      expect(res.status, res.text).toBe(200);
      ids.push(res.json.id);
    }
    for (const id of ids)
      await waitFor(async () => {
        const res = await call("GET", `/v3/documents/${id}`);
        return res.json?.status === "done" ? true : undefined;
      }, `document ${id} to be processed`);
    const search = async () => {
      const res = await call("POST", "/v3/search", { q: "harbour storms", containerTag: "maint" });
      expect(res.status, res.text).toBe(200);
      return (res.json.results as { documentId: string; score: number }[]).map((r) => r.documentId);
    };
    const before = await search();
    expect(before[0]).toBe(ids[1]);

    const result = await new Client({ connection: temporal }).workflow.execute("maintainTables", {
      taskQueue: service.taskQueue,
      workflowId: `maintain-tables-test-${randomBytes(4).toString("hex")}`,
      args: [],
    });
    expect(result).toEqual({ vacuumed: [], reindexed: [], compacted: [], steps: [], deferred: [] });
    expect(await search()).toEqual(before);
  });

  it("is removed when switched off", async () => {
    await ensureMaintenanceSchedule(new Client({ connection: temporal }), {
      taskQueue: service.taskQueue,
      everyMs: 0,
      log: createLogger("warn"),
    });
    await expect(schedule().describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
  });
});
