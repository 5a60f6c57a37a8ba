import { randomBytes } from "node:crypto";
import type Supermemory from "supermemory";
import { afterAll, describe, expect, it } from "vitest";
import { type Deployment, deployment, stopDeployments } from "../support/deployment.ts";
import { type NativePostgres, startNativePostgres } from "../support/postgres.ts";
import { waitFor } from "../support/service.ts";

// The faults, with real processes: a worker SIGKILLed in the middle of 500 documents, an API
// SIGKILLed during writes, PostgreSQL stopped during processing, and two APIs plus two workers under a
// concurrent load. Nothing may be lost, duplicated or stuck.

afterAll(stopDeployments);

const statusCounts = async (sql: Deployment["sql"]) =>
  Object.fromEntries(
    (
      await sql<{ status: string; n: number }>(
        "SELECT status, count(*)::int AS n FROM documents GROUP BY status",
      )
    ).map((r) => [r.status, r.n]),
  ) as Record<string, number>;

describe("durability under faults", () => {
  it("finishes 500 documents exactly once after the worker is SIGKILLed mid-way", async () => {
    const d = await deployment("kill500");
    const api = await d.start("api");
    const first = await d.start("worker");
    const client = d.client(api.url);
    const batch = await client.documents.batchAdd({
      documents: Array.from({ length: 500 }, (_, i) => ({
        content: `Durability note ${i}: the ${i % 2 ? "red" : "blue"} lighthouse keeps watch ${randomBytes(4).toString("hex")}.`,
        customId: `note-${i}`,
      })),
      containerTag: "kill500",
    });
    expect(batch.results).toHaveLength(500);
    expect(batch.failed).toBe(0);
    await waitFor(
      async () => (((await statusCounts(d.sql)).done ?? 0) >= 60 ? true : undefined),
      "60 done",
      300_000,
    );
    first.child.kill("SIGKILL");
    await first.exited;
    const atKill = (await statusCounts(d.sql)).done ?? 0;
    expect(atKill).toBeLessThan(500);

    const second = await d.start("worker");
    await waitFor(
      async () => ((await statusCounts(d.sql)).done === 500 ? true : undefined),
      "all 500 documents done",
      600_000,
    );
    expect(await statusCounts(d.sql)).toEqual({ done: 500 });
    // Exactly once: one processing run and one `done` per document, one set of chunks, no duplicates.
    const runs = await d.sql<{ n: number }>(
      "SELECT count(*)::int AS n FROM documents WHERE processing_run <> 1 OR (SELECT count(*) FROM jsonb_array_elements(status_history) e WHERE e->>'status' = 'done') <> 1",
    );
    expect(runs[0]?.n).toBe(0);
    const duplicates = await d.sql<{ n: number }>(
      "SELECT count(*)::int AS n FROM (SELECT document_id, position FROM chunks GROUP BY document_id, position HAVING count(*) > 1) x",
    );
    expect(duplicates[0]?.n).toBe(0);
    const chunkless = await d.sql<{ n: number }>(
      "SELECT count(*)::int AS n FROM documents d WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id AND c.embedding IS NOT NULL)",
    );
    expect(chunkless[0]?.n).toBe(0);
    await second.stop("SIGTERM");
    await api.stop("SIGTERM");
  }, 900_000);

  it("loses no acknowledged write and leaves no half-written document when the API is SIGKILLed", async () => {
    const d = await deployment("killapi");
    const worker = await d.start("worker");
    const api = await d.start("api");
    const client = d.client(api.url);
    const acknowledged: string[] = [];
    let refused = 0;
    // Writers keep adding until the API dies under them.
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; ; i++) {
        try {
          const { id } = await client.documents.add({
            content: `Writer ${w} note ${i} about tides.`,
            containerTag: "api",
          });
          acknowledged.push(id);
        } catch {
          refused++;
          return;
        }
      }
    });
    await waitFor(async () => (acknowledged.length >= 40 ? true : undefined), "40 acknowledged writes");
    api.child.kill("SIGKILL");
    await api.exited;
    await Promise.all(writers);
    expect(refused).toBeGreaterThan(0);

    const again = await d.start("api");
    const after = d.client(again.url);
    // Every document in the store (acknowledged or not) is whole and reaches done; none is stuck.
    await waitFor(
      async () => {
        const counts = await statusCounts(d.sql);
        return Object.keys(counts).every((s) => s === "done") ? counts : undefined;
      },
      "every stored document done",
      300_000,
    );
    const stored = await d.sql<{ id: string; source: string; tags: string[] }>(
      "SELECT id, source, container_tags AS tags FROM documents",
    );
    expect(stored.length).toBeGreaterThanOrEqual(acknowledged.length);
    for (const row of stored) {
      expect(row.source).toMatch(/^Writer \d note \d+ about tides\.$/);
      expect(row.tags).toEqual(["api"]);
    }
    for (const id of acknowledged) expect((await after.documents.get(id)).status).toBe("done");
    await worker.stop("SIGTERM");
    await again.stop("SIGTERM");
  }, 600_000);

  it("rides out PostgreSQL being stopped for a few seconds during processing", async () => {
    let postgres: NativePostgres | undefined;
    try {
      postgres = await startNativePostgres();
      const d = await deployment("pgdown", postgres.url);
      const api = await d.start("api");
      const worker = await d.start("worker");
      const client = d.client(api.url);
      await client.documents.batchAdd({
        documents: Array.from({ length: 60 }, (_, i) => ({ content: `Outage note ${i} on harbour cranes.` })),
        containerTag: "pgdown",
      });
      await waitFor(async () => (((await statusCounts(d.sql)).done ?? 0) >= 5 ? true : undefined), "5 done");
      const pausedAt = new Date();
      await postgres.pause();
      await new Promise((r) => setTimeout(r, 5000));
      await postgres.resume();
      let last: Record<string, number> = {};
      await waitFor(
        async () => {
          last = await statusCounts(d.sql);
          return last.done === 60 ? true : undefined;
        },
        "all 60 done after the outage",
        300_000,
      ).catch(async (error: Error) => {
        const reasons = await d.sql("SELECT DISTINCT error_reason FROM documents WHERE status = 'failed'");
        throw new Error(
          `${error.message}: ${JSON.stringify(last)} ${JSON.stringify(reasons)}\n--- worker ---\n${worker.output().slice(-3000)}\n--- api ---\n${api.output().slice(-1500)}`,
        );
      });
      expect(await statusCounts(d.sql)).toEqual({ done: 60 });
      // The outage hit documents in the middle of processing: some were done only after it began.
      const doneAfterOutage = await d.sql<{ n: number }>(
        "SELECT count(*)::int AS n FROM documents WHERE EXISTS (SELECT 1 FROM jsonb_array_elements(status_history) e WHERE e->>'status' = 'done' AND (e->>'at')::timestamptz > $1)",
        [pausedAt.toISOString()],
      );
      expect(doneAfterOutage[0]?.n).toBeGreaterThan(0);
      // The processes survived the outage and still answer.
      const found = await client.search.documents({ q: "harbour cranes outage", containerTags: ["pgdown"] });
      expect(found.results.length).toBeGreaterThan(0);
      expect(worker.child.exitCode).toBeNull();
      await worker.stop("SIGTERM");
      await api.stop("SIGTERM");
    } finally {
      await postgres?.stop();
    }
  }, 600_000);

  it("serves concurrent adds and searches with two APIs and two workers, without errors", async () => {
    const d = await deployment("twobytwo");
    const apis = [await d.start("api"), await d.start("api")];
    await d.start("worker");
    await d.start("worker");
    const clients = apis.map((a) => d.client(a.url));
    const errors: unknown[] = [];
    const added: string[] = [];
    const tasks = Array.from({ length: 8 }, async (_, t) => {
      const client = clients[t % 2] as Supermemory;
      for (let i = 0; i < 15; i++) {
        try {
          if (i % 3 === 2) await client.search.documents({ q: `note ${t} boats`, containerTags: ["load"] });
          else {
            const { id } = await client.documents.add({
              content: `Load note ${t}-${i} about boats and sails.`,
              containerTag: "load",
            });
            added.push(id);
          }
        } catch (error) {
          errors.push(error);
        }
      }
    });
    await Promise.all(tasks);
    expect(errors).toEqual([]);
    await waitFor(
      async () => ((await statusCounts(d.sql)).done === added.length ? true : undefined),
      "every added document done",
      300_000,
    );
    expect(await statusCounts(d.sql)).toEqual({ done: added.length });
    const found = await clients[1]?.search.documents({
      q: "boats and sails",
      containerTags: ["load"],
      limit: 5,
    });
    expect(found?.results.length).toBe(5);
  }, 600_000);
});
