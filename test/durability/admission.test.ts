import { Client, Connection } from "@temporalio/client";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type Deployment, deployment, stopDeployments } from "../support/deployment.ts";
import { waitFor } from "../support/service.ts";

// Admission control with the scale-out shape: one API, two worker processes, one PostgreSQL, one
// Temporal task queue. A bulk backlog waits in the store; at most MAX_DOCUMENTS_IN_FLIGHT runs have a
// workflow at once, whichever process admitted them; interactive adds and a small tenant go first;
// deleted documents leave no work behind. Every check is on order and counts, never on time.

const BOUND = 4;
const BIG = 120;

afterAll(stopDeployments);

let temporal: Client;
let connection: Connection;
beforeAll(async () => {
  connection = await Connection.connect({ address: inject("TEST_TEMPORAL_ADDRESS") });
  temporal = new Client({ connection });
});
afterAll(async () => {
  await connection?.close();
});

const count = async (sql: Deployment["sql"], where: string, values: unknown[] = []) =>
  (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE ${where}`, values))[0]?.n ?? 0;
const inFlight = (sql: Deployment["sql"]) =>
  count(sql, "admitted_run = processing_run AND status NOT IN ('done', 'failed')");
const waiting = (sql: Deployment["sql"]) =>
  count(sql, "admitted_run < processing_run AND status NOT IN ('done', 'failed')");
const runningWorkflows = async (taskQueue: string) =>
  (
    await temporal.workflow.count(
      `WorkflowType = "processDocument" AND ExecutionStatus = "Running" AND TaskQueue = "${taskQueue}"`,
    )
  ).count;

describe("admission control across processes", () => {
  it("bounds runs in flight, serves interactive adds and a small tenant first, and shares one backlog between two workers exactly once", async () => {
    const d = await deployment("admission");
    const env = { MAX_DOCUMENTS_IN_FLIGHT: String(BOUND) };
    const api = await d.start("api", env);
    const workers = [await d.start("worker", env), await d.start("worker", env)];
    const client = d.client(api.url);

    const big = await client.documents.batchAdd({
      documents: Array.from({ length: BIG }, (_, i) => ({
        content: `Backlog note ${i}: the harbour master logs ship ${i} at the north pier.`,
        customId: `big-${i}`,
      })),
      containerTag: "big",
    });
    expect(big.failed).toBe(0);
    // Queued behind the big backlog by arrival, ahead of it by rule.
    const small = await client.documents.batchAdd({
      documents: Array.from({ length: 5 }, (_, i) => `Small tenant note ${i} about lighthouses.`),
      containerTag: "small",
    });
    const single = await client.documents.add({
      content: "One interactive note about tides.",
      containerTag: "big",
    });

    let maxSeen = 0;
    const sample = async () => {
      maxSeen = Math.max(maxSeen, await inFlight(d.sql));
    };
    const smallIds = small.results.map((r) => r.id);
    await waitFor(
      async () => {
        await sample();
        const done = await count(d.sql, "id = ANY($1) AND status = 'done'", [[...smallIds, single.id]]);
        return done === smallIds.length + 1 ? true : undefined;
      },
      "the small tenant's documents and the interactive add done",
      300_000,
    );
    // The big backlog is still far from drained: the newcomers did not wait for it.
    const bigLeft = await count(d.sql, "container_tags @> ARRAY['big'] AND status <> 'done'");
    expect(bigLeft).toBeGreaterThan(BIG / 2);

    await waitFor(
      async () => {
        await sample();
        return (await count(d.sql, "status = 'done'")) === BIG + 6 ? true : undefined;
      },
      "every document done",
      600_000,
    );
    expect(maxSeen).toBeGreaterThan(0);
    expect(maxSeen).toBeLessThanOrEqual(BOUND);
    // Exactly once: one run, one `done` and one set of chunks per document, one workflow per run.
    expect(
      await count(
        d.sql,
        "processing_run <> 1 OR (SELECT count(*) FROM jsonb_array_elements(status_history) e WHERE e->>'status' = 'done') <> 1",
      ),
    ).toBe(0);
    const duplicates = await d.sql<{ n: number }>(
      "SELECT count(*)::int AS n FROM (SELECT document_id, position FROM chunks GROUP BY document_id, position HAVING count(*) > 1) x",
    );
    expect(duplicates[0]?.n).toBe(0);
    const workflows = await temporal.workflow.count(
      `WorkflowType = "processDocument" AND TaskQueue = "${d.env.TEMPORAL_TASK_QUEUE}"`,
    );
    expect(workflows.count).toBe(BIG + 6);
    for (const w of workers) expect(await w.stop("SIGTERM")).toBe(0);
    expect(await api.stop("SIGTERM")).toBe(0);
  }, 900_000);

  it("leaves no work behind when queued and in-flight documents are deleted: one, by ids, by tag", async () => {
    const d = await deployment("admission-delete");
    const env = { MAX_DOCUMENTS_IN_FLIGHT: String(BOUND) };
    const api = await d.start("api", env);
    const worker = await d.start("worker", env);
    const client = d.client(api.url);
    const queue = d.env.TEMPORAL_TASK_QUEUE;

    const added = await client.documents.batchAdd({
      documents: Array.from({ length: 60 }, (_, i) => ({
        content: `Doomed note ${i} about the weather over the bay.`,
        customId: `doomed-${i}`,
      })),
      containerTag: "doomed",
    });
    expect(added.failed).toBe(0);
    await waitFor(async () => ((await inFlight(d.sql)) > 0 ? true : undefined), "runs in flight");
    expect(await waiting(d.sql)).toBeGreaterThan(0);

    // One document still waiting, and one in flight.
    const [waitingOne] = await d.sql<{ id: string }>(
      "SELECT id FROM documents WHERE admitted_run < processing_run ORDER BY created_at DESC LIMIT 1",
    );
    await client.documents.delete(waitingOne?.id as string);
    const [flying] = await d.sql<{ id: string }>(
      "SELECT id FROM documents WHERE admitted_run = processing_run AND status NOT IN ('done', 'failed') LIMIT 1",
    );
    if (flying) await client.documents.delete(flying.id);
    // Ten by ids (customIds), then the rest of the tag.
    const byIds = await client.documents.deleteBulk({
      ids: Array.from({ length: 10 }, (_, i) => `doomed-${40 + i}`),
    });
    expect(byIds.success).toBe(true);
    await client.documents.deleteBulk({ containerTags: ["doomed"] });

    expect(await count(d.sql, "true")).toBe(0);
    // Temporal's visibility trails by a moment: the stopped runs show as terminated once it catches up.
    await waitFor(
      async () => ((await runningWorkflows(queue)) === 0 ? true : undefined),
      "no running workflow",
    );

    // The engine is not wedged: a new document goes through.
    const after = await client.documents.add({ content: "Life after the purge.", containerTag: "doomed" });
    await waitFor(
      async () => ((await client.documents.get(after.id)).status === "done" ? true : undefined),
      "a new document done",
    );
    expect(await worker.stop("SIGTERM")).toBe(0);
    expect(await api.stop("SIGTERM")).toBe(0);
  }, 600_000);
});
