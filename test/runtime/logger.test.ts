import { MockActivityEnvironment } from "@temporalio/testing";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../config/logger.ts";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger("info", { write: (line: string) => lines.push(JSON.parse(line)) });
  return { log, lines };
}

describe("log lines", () => {
  it("name the workflow, run and activity when written inside an activity", async () => {
    const { log, lines } = capture();
    const env = new MockActivityEnvironment({
      activityType: "extractDocument",
      workflowExecution: { workflowId: "doc/abc/1", runId: "run-7" },
    });
    await env.run(async () => log.info({ documentId: "abc" }, "extracting"));
    expect(lines[0]).toMatchObject({
      msg: "extracting",
      documentId: "abc",
      workflowId: "doc/abc/1",
      runId: "run-7",
      activity: "extractDocument",
    });
  });

  it("carry no workflow fields outside activities", () => {
    const { log, lines } = capture();
    log.child({ requestId: "r1" }).info("request");
    expect(lines[0]).toMatchObject({ msg: "request", requestId: "r1", service: "memory" });
    expect(lines[0]).not.toHaveProperty("workflowId");
  });
});
