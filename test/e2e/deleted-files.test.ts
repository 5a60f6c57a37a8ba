import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client, Connection } from "@temporalio/client";
import Supermemory, { PermissionDeniedError, toFile } from "supermemory";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { fileSweepScheduleId } from "../../temporal/schedules.ts";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";
import { storedCopies } from "../support/stored-files.ts";

// "Delete means gone": a document's stored file leaves DATA_DIR with the document (single, bulk by ids, bulk
// by tag, forget, replaced by a new upload under the same customId), a refused upload stores nothing, and the
// scheduled sweep removes orphans that earlier versions or a crash left behind. Through the official SDK.
describe("deleted documents leave no stored file behind", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "memory-deleted-files-"));
  let service: TestService;
  let client: Supermemory;
  let temporal: Connection;
  const call = caller(() => service.url);
  const copies = (bytes: Buffer) => storedCopies(dataDir, bytes).length;
  /** A text file no other test uploads (its bytes name its stored file). */
  const uniqueFile = (label: string) =>
    Buffer.from(`${label}: the archivist keeps ${randomBytes(8).toString("hex")} ledgers in the vault.\n`);

  const upload = async (
    bytes: Buffer,
    opts: { containerTag?: string; customId?: string; apiKey?: string } = {},
  ) => {
    const sdk = opts.apiKey
      ? new Supermemory({ apiKey: opts.apiKey, baseURL: service.url, maxRetries: 0 })
      : client;
    const { id } = await sdk.documents.uploadFile({
      file: await toFile(bytes, "ledger.txt"),
      containerTag: opts.containerTag ?? "files-a",
      ...(opts.customId ? { customId: opts.customId } : {}),
    });
    const doc = await untilProcessed((i) => client.documents.get(i), id, 120_000);
    expect(doc.status, doc.errorReason ?? "").toBe("done");
    return id;
  };

  beforeAll(async () => {
    // A sweep interval of its own, so the test sees the schedule made with it.
    service = await startTestService({ dataDir, env: { FILE_SWEEP_INTERVAL: "6h", FILE_SWEEP_GRACE: "1h" } });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    temporal = await Connection.connect({ address: inject("TEST_TEMPORAL_ADDRESS") });
  }, 180_000);
  afterAll(async () => {
    await temporal?.close();
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("deletes the file with a single delete", async () => {
    const bytes = uniqueFile("single");
    const id = await upload(bytes);
    expect(copies(bytes)).toBe(1);
    await client.documents.delete(id);
    expect(copies(bytes)).toBe(0);
    expect((await call("GET", `/v3/documents/${id}`)).status).toBe(404);
  });

  it("deletes the files with a bulk delete by ids and by tag", async () => {
    const byId = [uniqueFile("bulk 1"), uniqueFile("bulk 2")];
    const ids = await Promise.all(byId.map((b) => upload(b)));
    const byTag = uniqueFile("by tag");
    await upload(byTag, { containerTag: "files-b" });
    expect(byId.map(copies)).toEqual([1, 1]);
    expect(await client.documents.deleteBulk({ ids })).toMatchObject({ success: true, deletedCount: 2 });
    expect(byId.map(copies)).toEqual([0, 0]);
    expect(copies(byTag)).toBe(1);
    expect(await client.documents.deleteBulk({ containerTags: ["files-b"] })).toMatchObject({
      deletedCount: 1,
    });
    expect(copies(byTag)).toBe(0);
  });

  it("keeps one file per document: identical bytes in two documents go one at a time", async () => {
    const bytes = uniqueFile("twice");
    const first = await upload(bytes, { containerTag: "files-a" });
    const second = await upload(bytes, { containerTag: "files-c" });
    expect(copies(bytes)).toBe(2);
    await client.documents.delete(first);
    expect(copies(bytes)).toBe(1);
    expect((await client.documents.get(second)).status).toBe("done");
    await client.documents.delete(second);
    expect(copies(bytes)).toBe(0);
  });

  it("replaces the file when a customId is uploaded again with new bytes, and deletes it when the text replaces it", async () => {
    const before = uniqueFile("version 1");
    const after = uniqueFile("version 2");
    const id = await upload(before, { customId: "ledger-versions" });
    expect(await upload(after, { customId: "ledger-versions" })).toBe(id);
    expect(copies(before)).toBe(0);
    expect(copies(after)).toBe(1);
    // The same bytes once more: still one copy, and the document still reads it.
    expect(await upload(after, { customId: "ledger-versions" })).toBe(id);
    expect(copies(after)).toBe(1);
    // Plain text through PATCH: the document is no longer a file.
    const res = await call("PATCH", `/v3/documents/${id}`, { content: "The ledgers moved to the new wing." });
    expect(res.status, res.text).toBe(200);
    expect(copies(after)).toBe(0);
  });

  it("stores nothing for a refused upload", async () => {
    const scoped = (await call("POST", "/v3/auth/scoped-key", { containerTag: "files-scoped" })).json
      .key as string;
    const foreign = uniqueFile("foreign tag");
    await expect(upload(foreign, { containerTag: "files-a", apiKey: scoped })).rejects.toBeInstanceOf(
      PermissionDeniedError,
    );
    expect(copies(foreign)).toBe(0);
    // A document the key shares with another tenant, named by its customId: the key may not replace its content,
    // which is found only after the bytes arrived; they are removed.
    const holder = await call("POST", "/v3/documents", {
      content: "shared between two tenants",
      customId: "held-elsewhere",
      containerTags: ["files-scoped", "files-a"],
    });
    expect(holder.status).toBe(200);
    const taken = uniqueFile("taken customId");
    const res = await fetch(`${service.url}/v3/documents/file`, {
      method: "POST",
      headers: { authorization: `Bearer ${scoped}` },
      body: (() => {
        const form = new FormData();
        form.set("file", new Blob([taken]), "ledger.txt");
        form.set("customId", "held-elsewhere");
        return form;
      })(),
    });
    expect(res.status).toBe(403);
    expect(copies(taken)).toBe(0);
  });

  it("deletes the file of a forgotten document", async () => {
    const text = `The vault code is ${randomBytes(4).toString("hex")}.`;
    const bytes = Buffer.from(text);
    const { id } = await client.documents.uploadFile({
      file: await toFile(bytes, "code.txt"),
      containerTag: "files-forget",
    });
    expect((await untilProcessed((i) => client.documents.get(i), id, 120_000)).status).toBe("done");
    expect(copies(bytes)).toBe(1);
    await client.memories.forget({ containerTag: "files-forget", content: text });
    expect((await call("GET", `/v3/documents/${id}`)).status).toBe(404);
    expect(copies(bytes)).toBe(0);
  });

  it("sweeps orphaned files on a schedule, leaving referenced and recent ones", async () => {
    const schedule = new Client({ connection: temporal }).schedule.getHandle(
      fileSweepScheduleId(service.taskQueue),
    );
    const described = await schedule.describe();
    expect(described.spec.intervals?.[0]?.every).toBe(6 * 3600_000);
    // What an earlier version left: an old file no document references, in the old key form, and a temp file.
    const orphanDir = path.join(dataDir, "files", "files", "ab");
    mkdirSync(orphanDir, { recursive: true });
    const old = new Date(Date.now() - 3 * 3600_000);
    const orphan = path.join(orphanDir, `ab${"0".repeat(62)}`);
    const recent = path.join(orphanDir, `ab${"1".repeat(62)}`);
    writeFileSync(orphan, "left behind");
    writeFileSync(recent, "an upload about to save its document");
    utimesSync(orphan, old, old);
    // A live document's file, old too: it stays.
    const live = uniqueFile("live");
    await upload(live);
    for (const file of storedCopies(dataDir, live)) utimesSync(file, old, old);

    const result = await new Client({ connection: temporal }).workflow.execute("fileSweep", {
      taskQueue: service.taskQueue,
      workflowId: `file-sweep-test-${randomBytes(4).toString("hex")}`,
      args: [{ graceMs: 3600_000 }],
    });
    expect(result).toMatchObject({ deleted: 1, tooRecent: 1 });
    expect(await exists(orphan)).toBe(0);
    expect(await exists(recent)).toBe(1);
    expect(copies(live)).toBe(1);
  });
});

async function exists(file: string): Promise<number> {
  const { access } = await import("node:fs/promises");
  return access(file).then(
    () => 1,
    () => 0,
  );
}
