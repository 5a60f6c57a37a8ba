import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Supermemory, { toFile } from "supermemory";
import { afterAll, describe, expect, inject, it } from "vitest";
import { findFreePort } from "../../runtime/temporal-dev-server.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { type Spawned, spawnEntry } from "../support/processes.ts";
import { freshDatabase, waitFor } from "../support/service.ts";

// Heavy extraction has its own task queue: with no worker serving it, a scanned PDF waits while text
// documents keep flowing; a heavy-only worker started later finishes the PDF.
describe("heavy extraction on its own task queue", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "memory-queues-"));
  const running: Spawned[] = [];
  afterAll(async () => {
    for (const p of running) await p.stop("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("keeps light work flowing while heavy work waits for its own workers", async () => {
    const adminKey = `sm_queues_${randomBytes(16).toString("hex")}`;
    const port = await findFreePort();
    const env = {
      DATABASE_URL: await freshDatabase(),
      TEMPORAL_ADDRESS: inject("TEST_TEMPORAL_ADDRESS"),
      TEMPORAL_TASK_QUEUE: `queues-${randomBytes(4).toString("hex")}`,
      MEMORY_ADMIN_KEY: adminKey,
      DATA_DIR: dataDir,
      PORT: String(port),
    };
    const api = spawnEntry("api/main.ts", env);
    running.push(api);
    await api.waitFor(/memory service running \(api\)/);
    const light = spawnEntry("worker/main.ts", { ...env, WORKER_QUEUES: "main" });
    running.push(light);
    await light.waitFor(/memory service running \(worker\)/);

    const client = new Supermemory({ apiKey: adminKey, baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 });
    const scan = await toFile(readFileSync(path.join(FIXTURES_DIR, "pdf", "DA-1p.pdf")), "DA-1p.pdf");
    const { id: pdfId } = await client.documents.uploadFile({
      file: scan,
      containerTags: JSON.stringify(["q"]),
    });
    const texts = await Promise.all(
      [1, 2, 3].map((n) =>
        client.documents.add({ content: `Light document number ${n}.`, containerTag: "q" }),
      ),
    );
    for (const { id } of texts) {
      await waitFor(
        async () => ((await client.documents.get(id)).status === "done" ? true : undefined),
        "text done",
      );
    }
    // The PDF was identified on the main queue and now waits for a heavy worker.
    expect((await client.documents.get(pdfId)).status).toBe("extracting");

    const heavy = spawnEntry("worker/main.ts", { ...env, WORKER_QUEUES: "heavy" });
    running.push(heavy);
    await heavy.waitFor(/memory service running \(worker\)/);
    const pdf = await waitFor(
      async () => {
        const d = await client.documents.get(pdfId);
        return d.status === "done" || d.status === "failed" ? d : undefined;
      },
      "the PDF on the heavy worker",
      180_000,
    );
    expect(pdf.status).toBe("done");

    expect(await heavy.stop("SIGTERM")).toBe(0);
    expect(await light.stop("SIGTERM")).toBe(0);
    expect(await api.stop("SIGTERM")).toBe(0);
  }, 300_000);
});
