import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Supermemory, { toFile } from "supermemory";
import { afterAll, describe, expect, inject, it } from "vitest";
import { findFreePort } from "../../runtime/temporal-dev-server.ts";
import { type Spawned, spawnEntry, subprocessesOf } from "../support/processes.ts";
import { freshDatabase, untilProcessed, waitFor } from "../support/service.ts";

const fixtures = fileURLToPath(new URL("../fixtures/", import.meta.url));

// A worker killed in the middle of a transcription: the document is not lost and not stuck.
describe("worker killed mid-extraction", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "memory-crash-"));
  const running: Spawned[] = [];
  afterAll(async () => {
    for (const p of running) await p.stop("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("retries the extraction on a new worker and finishes the document", async () => {
    const adminKey = `sm_crash_${randomBytes(16).toString("hex")}`;
    const port = await findFreePort();
    const env = {
      DATABASE_URL: await freshDatabase(),
      TEMPORAL_ADDRESS: inject("TEST_TEMPORAL_ADDRESS"),
      TEMPORAL_TASK_QUEUE: `crash-${randomBytes(4).toString("hex")}`,
      MEMORY_ADMIN_KEY: adminKey,
      DATA_DIR: dataDir,
      PORT: String(port),
    };
    const api = spawnEntry("bin/api.ts", env);
    running.push(api);
    await api.waitFor(/memory service running \(api\)/);
    const first = spawnEntry("bin/worker.ts", env);
    running.push(first);
    await first.waitFor(/memory service running \(worker\)/);

    const client = new Supermemory({ apiKey: adminKey, baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 });
    const audio = await toFile(readFileSync(path.join(fixtures, "audio/jfk.mp3")), "jfk.mp3");
    const { id } = await client.documents.uploadFile({ file: audio });
    await waitFor(
      async () => ((await client.documents.get(id)).status === "extracting" ? true : undefined),
      "extracting",
    );
    // Killed without warning while ffprobe, ffmpeg or Whisper runs for it (seen in the process table), so the
    // extraction is really cut off half-way, however fast or slow this machine is.
    const workerPid = first.child.pid as number;
    const tools = await waitFor(async () => {
      const now = subprocessesOf(workerPid);
      return now.length ? now : undefined;
    }, "the worker's ffmpeg or Whisper subprocess");
    expect(tools.join(" ")).toMatch(/ffmpeg|ffprobe|python/);
    first.child.kill("SIGKILL");
    await first.exited;
    expect((await client.documents.get(id)).status).toBe("extracting");

    const second = spawnEntry("bin/worker.ts", env);
    running.push(second);
    await second.waitFor(/memory service running \(worker\)/);
    const doc = await untilProcessed((i) => client.documents.get(i), id, 180_000);
    expect(doc.status, (doc as { errorReason?: string }).errorReason ?? "").toBe("done");
    expect(doc.content).toMatch(/country/i);
    await second.stop("SIGTERM");
    await api.stop("SIGTERM");
  });
});
