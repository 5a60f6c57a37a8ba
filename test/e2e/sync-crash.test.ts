import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Supermemory from "supermemory";
import { afterAll, describe, expect, inject, it } from "vitest";
import { findFreePort } from "../../runtime/temporal-dev-server.ts";
import { type Spawned, spawnEntry } from "../support/processes.ts";
import { type S3TestServer, startS3Server } from "../support/s3-server.ts";
import { freshDatabase, waitFor } from "../support/service.ts";

// A worker killed in the middle of a connection sync: after a new worker starts, the sync goes on from
// its last finished page and every source item ends up as exactly one document.
describe("worker killed mid-sync", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "memory-sync-crash-"));
  const running: Spawned[] = [];
  let s3: S3TestServer | undefined;
  afterAll(async () => {
    for (const p of running) await p.stop("SIGKILL");
    await s3?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("finishes the sync from its checkpoint with every item exactly once", async () => {
    const OBJECTS = 60;
    s3 = await startS3Server({ buckets: ["crash-bucket"] });
    for (let i = 0; i < OBJECTS; i++)
      await s3.putObject(
        "crash-bucket",
        `items/${String(i).padStart(3, "0")}.txt`,
        `Item number ${i} of the crash test: ${randomBytes(8).toString("hex")}.`,
      );

    const adminKey = `sm_synccrash_${randomBytes(16).toString("hex")}`;
    const port = await findFreePort();
    const env = {
      DATABASE_URL: await freshDatabase(),
      TEMPORAL_ADDRESS: inject("TEST_TEMPORAL_ADDRESS"),
      TEMPORAL_TASK_QUEUE: `synccrash-${randomBytes(4).toString("hex")}`,
      MEMORY_ADMIN_KEY: adminKey,
      DATA_DIR: dataDir,
      PORT: String(port),
      ALLOW_PRIVATE_NETWORK: "true",
    };
    const api = spawnEntry("bin/api.ts", env);
    running.push(api);
    await api.waitFor(/memory service running \(api\)/);
    const first = spawnEntry("bin/worker.ts", env);
    running.push(first);
    await first.waitFor(/memory service running \(worker\)/);

    const client = new Supermemory({ apiKey: adminKey, baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 });
    const { id } = await client.connections.create("s3", {
      containerTag: "crash",
      // One object per page: many checkpoints, so the kill lands between and inside pages.
      metadata: {
        bucket: "crash-bucket",
        endpoint: s3.endpoint,
        pageSize: 1,
        accessKeyId: s3.accessKeyId,
        secretAccessKey: s3.secretAccessKey,
      },
    });
    const imported = () => client.connections.listDocuments("s3", { containerTags: ["crash"] });
    await waitFor(async () => ((await imported()).length >= 10 ? true : undefined), "10 items synced");
    first.child.kill("SIGKILL");
    await first.exited;
    const atCrash = (await imported()).length;
    const connection = await client.connections.getByID(id);
    expect((connection as unknown as { lastSync: { status: string } }).lastSync.status).toBe("running");
    expect(atCrash).toBeLessThan(OBJECTS);

    const second = spawnEntry("bin/worker.ts", env);
    running.push(second);
    await second.waitFor(/memory service running \(worker\)/);
    const finished = await waitFor(
      async () => {
        const c = (await client.connections.getByID(id)) as unknown as {
          lastSync: { status: string; counts: Record<string, number> };
        };
        return c.lastSync.status !== "running" ? c.lastSync : undefined;
      },
      "the sync to finish on the new worker",
      240_000,
    );
    expect(finished.status).toBe("done");
    // Pages finished before the kill are not redone; the interrupted page finds its saved items unchanged.
    expect((finished.counts.added ?? 0) + (finished.counts.unchanged ?? 0)).toBe(OBJECTS);
    expect(finished.counts.unchanged ?? 0).toBeLessThanOrEqual(1);

    const docs = await imported();
    expect(docs).toHaveLength(OBJECTS);
    expect(new Set(docs.map((d) => d.title)).size).toBe(OBJECTS);
    const all = await client.documents.list({ containerTags: ["crash"], limit: 200 });
    expect(all.pagination.totalItems).toBe(OBJECTS);
    await second.stop("SIGTERM");
    await api.stop("SIGTERM");
  }, 360_000);
});
