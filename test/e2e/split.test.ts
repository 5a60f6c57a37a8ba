import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Supermemory from "supermemory";
import { afterAll, describe, expect, inject, it } from "vitest";
import { findFreePort } from "../../runtime/temporal-dev-server.ts";
import { type Spawned, spawnEntry } from "../support/processes.ts";
import { freshDatabase, waitFor } from "../support/service.ts";

// Scale-out mode: the API and the worker as separate processes on PostgreSQL + an external Temporal.
describe("separate API and worker processes", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "memory-split-"));
  const running: Spawned[] = [];
  afterAll(async () => {
    for (const p of running) await p.stop("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("processes a document added through the API process in the worker process", async () => {
    const adminKey = `sm_split_${randomBytes(16).toString("hex")}`;
    const port = await findFreePort();
    const env = {
      DATABASE_URL: await freshDatabase(),
      TEMPORAL_ADDRESS: inject("TEST_TEMPORAL_ADDRESS"),
      TEMPORAL_TASK_QUEUE: `split-${randomBytes(4).toString("hex")}`,
      MEMORY_ADMIN_KEY: adminKey,
      DATA_DIR: dataDir,
      PORT: String(port),
    };
    const worker = spawnEntry("bin/worker.ts", env);
    running.push(worker);
    await worker.waitFor(/memory service running \(worker\)/);
    const api = spawnEntry("bin/api.ts", env);
    running.push(api);
    await api.waitFor(/memory service running \(api\)/);

    const client = new Supermemory({ apiKey: adminKey, baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 });
    const { id } = await client.documents.add({
      content: "Workers and APIs scale independently.",
      containerTag: "split",
    });
    const doc = await waitFor(async () => {
      const d = await client.documents.get(id);
      return d.status === "done" ? d : undefined;
    }, "split-mode processing");
    expect(doc.content).toBe("Workers and APIs scale independently.");
    const found = await client.search.documents({ q: "scale independently", containerTags: ["split"] });
    expect(found.results[0]?.documentId).toBe(id);

    expect(await api.stop("SIGTERM")).toBe(0);
    expect(await worker.stop("SIGTERM")).toBe(0);
  });
});
