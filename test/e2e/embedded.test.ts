import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Supermemory from "supermemory";
import { afterAll, describe, expect, it } from "vitest";
import { findFreePort } from "../../runtime/temporal-dev-server.ts";
import { type Spawned, spawnEntry } from "../support/processes.ts";
import { waitFor } from "../support/service.ts";

// `npm start` as a user runs it: one process, PGlite, and a Temporal dev server it owns.
describe("embedded single-machine mode (main.ts)", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "memory-embedded-"));
  const running: Spawned[] = [];
  afterAll(async () => {
    for (const p of running) await p.stop("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function start() {
    const [port, temporalPort, uiPort] = [await findFreePort(), await findFreePort(), await findFreePort()];
    const proc = spawnEntry("main.ts", {
      DATA_DIR: dataDir,
      PORT: String(port),
      TEMPORAL_DEV_PORT: String(temporalPort),
      TEMPORAL_UI_PORT: String(uiPort),
      TEMPORAL_ADDRESS: "",
      DATABASE_URL: "",
      MEMORY_ADMIN_KEY: "",
    });
    running.push(proc);
    await proc.waitFor(/memory service running/);
    return { proc, url: `http://127.0.0.1:${port}`, uiUrl: `http://127.0.0.1:${uiPort}` };
  }

  it("generates an admin key, processes a document, refuses a second owner, and keeps state across restarts", async () => {
    const first = await start();
    const key = readFileSync(path.join(dataDir, "admin-key"), "utf8").trim();
    expect(key).toMatch(/^sm_[A-Za-z0-9_-]{40,}$/);
    expect(statSync(path.join(dataDir, "admin-key")).mode & 0o777).toBe(0o600);
    expect(first.proc.output()).toContain(key);

    const ui = await fetch(first.uiUrl);
    expect(ui.status).toBe(200);

    const client = new Supermemory({ apiKey: key, baseURL: first.url, maxRetries: 0 });
    const { id } = await client.documents.add({
      content: "The embedded mode keeps everything in one process.",
    });
    await waitFor(
      async () => ((await client.documents.get(id)).status === "done" ? true : undefined),
      "done",
    );

    // A second process on the same data directory must not open PGlite.
    const second = spawnEntry("main.ts", {
      DATA_DIR: dataDir,
      PORT: String(await findFreePort()),
      TEMPORAL_DEV_PORT: String(await findFreePort()),
      TEMPORAL_UI_PORT: String(await findFreePort()),
    });
    running.push(second);
    expect(await second.exited).not.toBe(0);
    expect(second.output()).toMatch(/in use by another process/);

    expect(await first.proc.stop("SIGTERM")).toBe(0);

    const again = await start();
    expect(again.proc.output()).not.toContain(key);
    const reopened = new Supermemory({ apiKey: key, baseURL: again.url, maxRetries: 0 });
    const doc = await reopened.documents.get(id);
    expect(doc.status).toBe("done");
    // The default in-memory search index is built over what the store holds (its graph on a thread of its own),
    // and the search below is answered from it.
    await again.proc.waitFor(/in-memory search index ready/);
    expect(again.proc.output()).toMatch(/"chunks":1\b/);
    const found = await reopened.search.documents({ q: "one process" });
    expect(found.results[0]?.documentId).toBe(id);
    expect(await again.proc.stop("SIGTERM")).toBe(0);
  });
});
