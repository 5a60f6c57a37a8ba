import { expect, it } from "vitest";
import { createKey } from "../../../store/api-keys.ts";
import { documentChunks, findDocument } from "../../../store/documents.ts";
import * as notices from "../../../store/key-notices.ts";
import * as reembed from "../../../store/reembed.ts";
import { bm25, termStatistics } from "../../../store/search/bm25.ts";
import { processedDocument, type StoreOf, space } from "./support.ts";

export function maintenanceCases(store: StoreOf) {
  it("finds vectors of another model, replaces them, and marks documents once all their chunks moved", async () => {
    const { db } = store();
    const next = { model: "reembed-next", dimension: 4 };
    const id = await processedDocument(
      db,
      { source: "re-embed me", containerTags: ["reembed"] },
      ["one", "two"],
      [1, 2],
    );
    const [first, second] = await documentChunks(db, id);
    if (!first || !second) throw new Error("the document was stored without its two chunks");
    const before = await reembed.staleVectorCounts(db, next.model);
    expect(before.chunks).toBeGreaterThanOrEqual(2);
    expect(await reembed.hasStaleVectors(db, next.model)).toBe(true);

    await reembed.replaceVectors(db, "chunks", next, [{ id: first.id, embedding: [1, 0, 0, 0] }]);
    expect((await reembed.staleVectorCounts(db, next.model)).chunks).toBe(before.chunks - 1);
    await reembed.markDocumentsModel(db, next.model);
    expect((await findDocument(db, id))?.embeddingModel).toBe(space.model);

    await reembed.replaceVectors(db, "chunks", next, [{ id: second.id, embedding: [0, 1, 0, 0] }]);
    await reembed.markDocumentsModel(db, next.model);
    expect((await findDocument(db, id))?.embeddingModel).toBe(next.model);
    // From the point of view of the old model, the two moved chunks are now the stale ones, in id order.
    const movedBack = await reembed.staleVectors(db, "chunks", space.model, "", 1000);
    const ours = [first.id, second.id].sort();
    expect(movedBack.filter((r) => ours.includes(r.id))).toEqual(
      ours.map((chunkId) => ({ id: chunkId, content: chunkId === first.id ? "one" : "two" })),
    );
    expect(await reembed.staleVectors(db, "chunks", space.model, ours[1] as string, 1000)).toEqual(
      movedBack.filter((r) => r.id > (ours[1] as string)),
    );
  });

  it("claims each key-expiry notice once, gives back failed ones, and records logged ones", async () => {
    const { db } = store();
    const { key } = await createKey(db, {
      name: "expiring",
      kind: "admin",
      expiresAt: new Date(Date.now() + 86_400_000),
    });
    const expiresAt = key.expiresAt as Date;
    const claim = {
      keyId: key.id,
      expiresAt,
      leadTimes: ["7d", "1d"],
      channel: "smtp" as const,
      recipient: "ops@example.org",
    };
    const [a, b] = await Promise.all([notices.claimNotices(db, claim), notices.claimNotices(db, claim)]);
    expect([...(a ?? []), ...(b ?? [])].sort()).toEqual(["1d", "7d"]);
    expect((await notices.recordedLeadTimes(db, key.id, expiresAt)).sort()).toEqual(["1d", "7d"]);

    await notices.releaseNotices(db, { keyId: key.id, expiresAt, leadTimes: ["1d"] });
    expect(await notices.recordedLeadTimes(db, key.id, expiresAt)).toEqual(["7d"]);
    expect(await notices.claimNotices(db, { ...claim, leadTimes: ["1d"] })).toEqual(["1d"]);
    await notices.markNoticesLogged(db, { keyId: key.id, expiresAt, leadTimes: ["7d"] });
    const ofKey = (await notices.noticesOfKeys(db, [key.id])).get(key.id) ?? [];
    expect(ofKey.map((n) => [n.leadTime, n.channel]).sort()).toEqual([
      ["1d", "smtp"],
      ["7d", "log"],
    ]);
    expect((await notices.listNotices(db)).filter((n) => n.keyId === key.id).map((n) => n.keyName)).toEqual([
      "expiring",
      "expiring",
    ]);
  });

  it("gathers BM25 statistics from the stored full-text index, and rarer terms score higher", async () => {
    const { db } = store();
    const id = await processedDocument(
      db,
      { source: "bm25", containerTags: ["bm25"] },
      ["zeppelin zeppelin over the harbour", "a harbour at dusk", "nothing relevant here"],
      [3, 4, 5],
    );
    const chunkIds = (await documentChunks(db, id)).map((c) => c.id);
    const stats = await termStatistics(db, "chunks", "zeppelin harbour", chunkIds);
    expect(stats.documentFrequency.get("zeppelin")).toBe(1);
    expect(stats.documentFrequency.get("harbour")).toBeGreaterThanOrEqual(2);
    expect(stats.total).toBeGreaterThanOrEqual(3);
    const [withBoth, harbourOnly, neither] = chunkIds;
    expect(stats.candidates.get(withBoth as string)?.termFrequency).toEqual(
      new Map([
        ["zeppelin", 2],
        ["harbour", 1],
      ]),
    );
    expect(stats.candidates.get(neither as string)?.termFrequency.size).toBe(0);
    const scores = bm25(stats);
    expect(scores.get(withBoth as string)).toBeGreaterThan(scores.get(harbourOnly as string) as number);
    expect(scores.get(harbourOnly as string)).toBeGreaterThan(0);
    expect(scores.get(neither as string)).toBe(0);
  });
}
