import { expect, it } from "vitest";
import * as conn from "../../../store/connections.ts";
import type { Database } from "../../../store/db.ts";
import { findDocument } from "../../../store/documents.ts";
import { addDocument, type StoreOf } from "./support.ts";

const newConnection = (db: Database, provider: string, containerTags: string[]) =>
  conn.createConnection(db, {
    provider,
    containerTags,
    metadata: {},
    sealedSecrets: null,
    syncIntervalMinutes: 60,
  });

export function connectionCases(store: StoreOf) {
  it("lists connections by provider, tags and scope, and lets one writer at a time change a connection", async () => {
    const { db } = store();
    const notion = await newConnection(db, "notion", ["cn-a"]);
    const s3 = await newConnection(db, "s3", ["cn-b"]);
    const ids = async (
      filter: { provider?: string; containerTags?: string[] },
      scope: string[] | null = null,
    ) => (await conn.listConnections(db, filter, scope)).map((c) => c.id);
    // Newest first; two made within one clock tick may come either way.
    expect((await ids({ containerTags: ["cn-a", "cn-b"] })).sort()).toEqual([s3.id, notion.id].sort());
    expect(await ids({ provider: "notion", containerTags: ["cn-a", "cn-b"] })).toEqual([notion.id]);
    expect(await ids({ containerTags: ["cn-a", "cn-b"] }, ["cn-b"])).toEqual([s3.id]);
    expect(await conn.findConnection(db, s3.id, ["cn-a"])).toBeUndefined();
    expect((await conn.findConnection(db, s3.id, ["cn-b"]))?.provider).toBe("s3");

    // Read, then write through the lock: two at once take turns, so neither increment is lost.
    const increment = () =>
      conn.withConnectionLocked(db, notion.id, async (row, tx) => {
        const count = Number(row?.metadata.refreshes ?? 0);
        await conn.updateConnection(tx, notion.id, { metadata: { refreshes: count + 1 } });
      });
    await Promise.all([increment(), increment()]);
    await conn.updateConnection(db, notion.id, { status: "paused", cursor: { page: 3 } });
    expect(await conn.findConnection(db, notion.id)).toMatchObject({
      metadata: { refreshes: 2 },
      status: "paused",
      cursor: { page: 3 },
    });
    expect((await conn.deleteConnection(db, s3.id))?.id).toBe(s3.id);
    expect(await conn.deleteConnection(db, s3.id)).toBeUndefined();
  });

  it("keeps the runs of each connection and tells the latest one", async () => {
    const { db } = store();
    const a = await newConnection(db, "s3", ["cn-runs"]);
    const b = await newConnection(db, "s3", ["cn-runs"]);
    const first = await conn.startSyncRun(db, { connectionId: a.id, trigger: "create", workflowId: "wf-1" });
    await conn.finishSyncRun(db, first.id, {
      status: "failed",
      counts: conn.emptyCounts(),
      errorCode: "auth",
      error: "x".repeat(3000),
    });
    // PGlite's clock counts milliseconds: a run started in the same millisecond as the last one would tie on
    // started_at. Runs of one connection never come that close (one sync workflow at a time, started by a
    // schedule or a request), so the test waits for the clock as they do.
    await new Promise((resolve) => setTimeout(resolve, 3));
    const second = await conn.startSyncRun(db, {
      connectionId: a.id,
      trigger: "schedule",
      workflowId: "wf-2",
    });
    const latest = await conn.latestSyncRuns(db, [a.id, b.id]);
    expect([...latest.keys()]).toEqual([a.id]);
    expect(latest.get(a.id)).toMatchObject({ id: second.id, status: "running" });
    const recent = await conn.recentSyncRuns(db, a.id, 10);
    expect(recent.map((r) => r.id)).toEqual([second.id, first.id]);
    expect(recent[1]).toMatchObject({ status: "failed", errorCode: "auth" });
    expect(recent[1]?.error).toHaveLength(2000);
    expect(await conn.latestSyncRuns(db, [])).toEqual(new Map());
  });

  it("notes why a running run waits, and a failed run keeps that reason over the generic one", async () => {
    const { db } = store();
    const c = await newConnection(db, "s3", ["cn-waits"]);
    const start = (workflowId: string) =>
      conn.startSyncRun(db, { connectionId: c.id, trigger: "schedule", workflowId });
    const codeOf = async (id: string) =>
      (await conn.recentSyncRuns(db, c.id, 10)).find((r) => r.id === id)?.errorCode;

    const limited = await start("wf-limited");
    await conn.noteSyncRunWait(db, limited.id, "rate_limited");
    expect(await codeOf(limited.id)).toBe("rate_limited");
    await conn.finishSyncRun(db, limited.id, {
      status: "failed",
      counts: conn.emptyCounts(),
      errorCode: "error",
    });
    expect(await codeOf(limited.id)).toBe("rate_limited");
    // A finished run is not changed by a late note.
    await conn.noteSyncRunWait(db, limited.id, null);
    expect(await codeOf(limited.id)).toBe("rate_limited");

    const cleared = await start("wf-cleared");
    await conn.noteSyncRunWait(db, cleared.id, "provider_unavailable");
    await conn.noteSyncRunWait(db, cleared.id, null);
    await conn.finishSyncRun(db, cleared.id, {
      status: "failed",
      counts: conn.emptyCounts(),
      errorCode: "error",
    });
    expect(await codeOf(cleared.id)).toBe("error");

    const recovered = await start("wf-recovered");
    await conn.noteSyncRunWait(db, recovered.id, "rate_limited");
    await conn.finishSyncRun(db, recovered.id, { status: "done", counts: conn.emptyCounts() });
    expect(await codeOf(recovered.id)).toBeNull();

    const expired = await start("wf-expired");
    await conn.noteSyncRunWait(db, expired.id, "provider_unavailable");
    await conn.finishSyncRun(db, expired.id, {
      status: "auth_expired",
      counts: conn.emptyCounts(),
      errorCode: "auth_expired",
    });
    expect(await codeOf(expired.id)).toBe("auth_expired");
  });

  it("lists the items a complete pass missed, in pages, and remembers when a listing first missed one", async () => {
    const { db } = store();
    const c = await newConnection(db, "notion", ["cn-missed"]);
    for (const itemId of ["a", "b", "c", "d"])
      await conn.saveItem(db, {
        connectionId: c.id,
        itemId,
        version: "v1",
        documentId: null,
        seenRun: "run-1",
      });
    await conn.saveItem(db, {
      connectionId: c.id,
      itemId: "d#inner",
      parentItemId: "d",
      version: "v1",
      documentId: null,
      seenRun: "run-1",
    });
    await conn.markItemsSeen(db, c.id, ["a"], "run-2");
    // Items inside another are not counted or listed: they go with their parent.
    expect(await conn.missedItemCounts(db, c.id, "run-2")).toEqual({ missed: 3, total: 4 });
    const first = await conn.itemsMissedBy(db, c.id, "run-2", { after: "", limit: 2 });
    expect(first.map((i) => i.itemId)).toEqual(["b", "c"]);
    const rest = await conn.itemsMissedBy(db, c.id, "run-2", { after: "c", limit: 2 });
    expect(rest.map((i) => i.itemId)).toEqual(["d"]);
    expect(first.every((i) => i.missedAt === null)).toBe(true);

    const at = new Date("2026-01-02T03:04:05Z");
    await conn.markItemsMissed(db, c.id, ["b", "c"], at);
    // A later miss keeps the first one's time.
    await conn.markItemsMissed(db, c.id, ["b"], new Date("2026-02-01T00:00:00Z"));
    const marked = await conn.itemsMissedBy(db, c.id, "run-2", { after: "", limit: 10 });
    expect(marked.map((i) => [i.itemId, i.missedAt?.toISOString() ?? null])).toEqual([
      ["b", at.toISOString()],
      ["c", at.toISOString()],
      ["d", null],
    ]);
    // Seen again (listed, or saved), an item's miss is forgotten.
    await conn.markItemsSeen(db, c.id, ["b"], "run-3");
    await conn.saveItem(db, {
      connectionId: c.id,
      itemId: "c",
      version: "v2",
      documentId: null,
      seenRun: "run-3",
    });
    const after = await conn.itemsMissedBy(db, c.id, "run-4", { after: "", limit: 10 });
    expect(after.map((i) => [i.itemId, i.missedAt])).toEqual([
      ["a", null],
      ["b", null],
      ["c", null],
      ["d", null],
    ]);
  });

  it("tracks a connection's items across passes and removes what a complete pass no longer lists", async () => {
    const { db } = store();
    const c = await newConnection(db, "imap", ["cn-items"]);
    const synced = async (itemId: string) =>
      (
        await addDocument(db, {
          source: `item ${itemId}`,
          customId: conn.itemCustomId("imap", c.id, itemId),
          containerTags: ["cn-items"],
          connectionId: c.id,
        })
      ).document.id;
    const kept = await synced("inbox/1");
    const unchanged = await synced("inbox/2");
    const gone = await synced("inbox/3");
    const attachment = await synced("inbox/3#a");
    for (const [itemId, documentId] of [
      ["inbox/1", kept],
      ["inbox/2", unchanged],
      ["inbox/3", gone],
    ] as const)
      await conn.saveItem(db, { connectionId: c.id, itemId, version: "v1", documentId, seenRun: "run-1" });
    await conn.saveItem(db, {
      connectionId: c.id,
      itemId: "inbox/3#a",
      parentItemId: "inbox/3",
      version: "v1",
      documentId: attachment,
      seenRun: "run-1",
    });
    expect(await conn.connectionDocumentCount(db, c.id)).toBe(4);
    const known = await conn.knownItems(db, c.id, ["inbox/1", "inbox/9"]);
    expect([...known.keys()]).toEqual(["inbox/1"]);

    // A second pass lists inbox/1, and the source says the folder is otherwise unchanged, except inbox/3 is gone.
    await conn.markItemsSeen(db, c.id, ["inbox/1"], "run-2");
    expect(await conn.markPrefixesSeen(db, c.id, ["inbox/2"], "run-2", ["inbox/1"])).toBe(1);
    const removed = await conn.removeItems(db, c.id, { notSeenIn: "run-2" });
    // A mail with its attachment is one item, with two documents.
    expect(removed.items).toBe(1);
    expect(removed.documentIds.sort()).toEqual([gone, attachment].sort());
    expect(await findDocument(db, gone)).toBeUndefined();
    expect(await conn.connectionDocumentCount(db, c.id)).toBe(2);
    expect((await conn.connectionsDocuments(db, [c.id], 10)).map((d) => d.id).sort()).toEqual(
      [kept, unchanged].sort(),
    );

    expect(await conn.removeItems(db, c.id, { itemIds: ["inbox/2"] })).toMatchObject({
      items: 1,
      documentIds: [unchanged],
    });
    expect((await conn.deleteConnectionDocuments(db, c.id)).map((d) => d.id)).toEqual([kept]);
    expect(await conn.connectionDocumentCount(db, c.id)).toBe(0);
    // An id too long for a customId keeps a readable head and a digest of the whole.
    const long = conn.itemCustomId("imap", c.id, "x".repeat(400));
    expect(long.length).toBeLessThanOrEqual(255);
    expect(long).not.toBe(conn.itemCustomId("imap", c.id, `${"x".repeat(399)}y`));
  });
}
