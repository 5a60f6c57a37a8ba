// Planner statistics are refreshed by a Temporal schedule (workflows/refresh-statistics.ts): the worker
// creates it at start with STATISTICS_INTERVAL, and each run ANALYZEs the searched tables (and documents, which
// search joins) that changed by
// about a tenth since their last statistics, and nothing else.

import { randomBytes } from "node:crypto";
import { Client, Connection } from "@temporalio/client";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { statisticsScheduleId } from "../../temporal/schedules.ts";
import { caller } from "../support/http.ts";
import { startTestService, type TestService } from "../support/service.ts";

describe("the statistics schedule", () => {
  let service: TestService;
  let temporal: Connection;
  const call = caller(() => service.url);

  beforeAll(async () => {
    service = await startTestService({ env: { STATISTICS_INTERVAL: "7m" } });
    temporal = await Connection.connect({ address: inject("TEST_TEMPORAL_ADDRESS") });
  }, 180_000);
  afterAll(async () => {
    await new Client({ connection: temporal }).schedule
      .getHandle(statisticsScheduleId(service.taskQueue))
      .delete()
      .catch(() => undefined);
    await temporal?.close();
    await service?.stop();
  });

  const refresh = () =>
    new Client({ connection: temporal }).workflow.execute("refreshStatistics", {
      taskQueue: service.taskQueue,
      workflowId: `refresh-statistics-test-${randomBytes(4).toString("hex")}`,
      args: [],
    }) as Promise<{ analyzed: string[] }>;

  it("is made with the configured interval, and analyzes a table only once it has grown", async () => {
    const described = await new Client({ connection: temporal }).schedule
      .getHandle(statisticsScheduleId(service.taskQueue))
      .describe();
    expect(described.spec.intervals?.[0]?.every).toBe(7 * 60_000);
    expect(described.action).toMatchObject({ type: "startWorkflow", workflowType: "refreshStatistics" });
    // The schedule's own runs (intervals are aligned to the epoch, so one may fall at any moment of the test)
    // would analyze the tables before this test's runs do: pause it, and run the workflow by hand.
    await new Client({ connection: temporal }).schedule
      .getHandle(statisticsScheduleId(service.taskQueue))
      .pause();

    // Whatever start-up left to analyze is analyzed once; then nothing changed, so nothing is analyzed.
    await refresh();
    expect(await refresh()).toEqual({ analyzed: [] });

    // 300 memories: more than the 200 rows a table must change by.
    for (let batch = 0; batch < 3; batch++) {
      const memories = Array.from({ length: 100 }, (_, i) => ({
        content: `Statistics fact ${batch * 100 + i}: the lighthouse keeper logs ${randomBytes(3).toString("hex")}.`,
      }));
      const res = await call("POST", "/v4/memories", { containerTag: "statistics", memories });
      expect(res.status, res.text).toBe(201);
    }
    expect(await refresh()).toEqual({ analyzed: ["memories"] });
    expect(await refresh()).toEqual({ analyzed: [] });

    // 250 documents: without statistics on `documents` the planner walked documents and sorted every chunk
    // instead of using the HNSW index, so that table is refreshed too.
    const added = await call("POST", "/v3/documents/batch", {
      documents: Array.from(
        { length: 250 },
        (_, i) => `Statistics note ${i}: the tide came in ${randomBytes(3).toString("hex")}.`,
      ),
      containerTag: "statistics-documents",
    });
    expect(added.status, added.text).toBe(200);
    expect((await refresh()).analyzed).toContain("documents");
  });
});
