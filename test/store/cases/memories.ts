import { sql } from "drizzle-orm";
import { expect, it } from "vitest";
import { FilterError } from "../../../store/filters.ts";
import * as mem from "../../../store/memories.ts";
import { findMemory, listMemories } from "../../../store/memory-list.ts";
import { SupersededRunError } from "../../../store/processing.ts";
import { fewIds } from "../../../store/search/exact-rank.ts";
import { ensureVectorIndexes } from "../../../store/search/vector-index.ts";
import { addDocument, axis, type StoreOf, space } from "./support.ts";

const search = (store: StoreOf, q: Partial<mem.MemorySearchQuery> & { embedding: number[] }) =>
  mem.searchMemories(store().db, {
    text: "",
    space,
    scope: null,
    includeForgotten: false,
    candidates: 10,
    ...q,
  });

export function memoryCases(store: StoreOf) {
  it("versions memories, and searches only the latest live ones of the asked containers", async () => {
    const { db } = store();
    await ensureVectorIndexes(db, space);
    const [tea, job] = await mem.insertMemories(db, "mem-alice", space, [
      { content: "Alice likes green tea", embedding: axis(1), metadata: { kind: "taste" } },
      { content: "Alice works at Acme", embedding: axis(2), isStatic: true, metadata: { kind: "job" } },
    ]);
    const [bobTea] = await mem.insertMemories(db, "mem-bob", space, [
      { content: "Bob likes green tea", embedding: axis(1) },
    ]);
    if (!tea || !job || !bobTea) throw new Error("insertMemories returned fewer rows than it was given");
    expect(tea).toMatchObject({ containerTag: "mem-alice", version: 1, isLatest: true, rootId: tea.id });

    const aliceTea = await search(store, {
      text: "green tea",
      embedding: axis(1),
      containerTags: ["mem-alice"],
    });
    expect(aliceTea[0]?.row.id).toBe(tea.id);
    expect(aliceTea[0]?.similarity).toBeGreaterThan(0.9);
    expect(aliceTea.every((h) => h.row.containerTag === "mem-alice")).toBe(true);
    // A key's scope narrows like the asked tags do.
    const inBobsScope = await search(store, { text: "green tea", embedding: axis(1), scope: ["mem-bob"] });
    expect(inBobsScope.map((h) => h.row.id)).toEqual([bobTea.id]);
    const jobsOnly = await search(store, {
      embedding: axis(1),
      containerTags: ["mem-alice"],
      filters: { key: "kind", value: "job" },
    });
    expect(jobsOnly.map((h) => h.row.id)).toEqual([job.id]);
    // ignoreCase by the folded metadata beside the memories (migration 0020); filters no index answers are run
    // on the memories first, and the few they keep ranked by id.
    for (const filters of [
      { key: "kind", value: "JOB", ignoreCase: true },
      { key: "kind", value: "ob", filterType: "string_contains" as const },
      { key: "kind", value: "taste", negate: true },
    ])
      expect(
        (await search(store, { embedding: axis(1), containerTags: ["mem-alice"], filters })).map(
          (h) => h.row.id,
        ),
      ).toEqual([job.id]);
    expect(
      await search(store, {
        embedding: axis(1),
        containerTags: ["mem-alice"],
        filters: { key: "kind", value: "NONE", ignoreCase: true },
      }),
    ).toEqual([]);
    const alices = sql`SELECT m.id FROM memories m WHERE m.container_tag = 'mem-alice'`;
    expect((await fewIds(db, alices, 10))?.sort()).toEqual([tea.id, job.id].sort());
    expect(await fewIds(db, alices, 1)).toBeNull();
    await expect(
      search(store, { embedding: axis(1), filters: { key: "n", value: "x", filterType: "numeric" } }),
    ).rejects.toThrow(FilterError);

    const black = await mem.updateMemory(db, tea.id, space, {
      content: "Alice likes black tea",
      embedding: axis(1),
    });
    expect(black).toMatchObject({ version: 2, parentId: tea.id, rootId: tea.id, relation: "updates" });
    expect(black?.metadata).toEqual({ kind: "taste" });
    // Only the latest version can be updated: the old one is history now.
    expect(await mem.updateMemory(db, tea.id, space, { content: "x", embedding: axis(1) })).toBeUndefined();
    expect((await mem.memoryVersions(db, [tea.id])).map((m) => m.content)).toEqual([
      "Alice likes green tea",
      "Alice likes black tea",
    ]);
    expect((await mem.findLatestMemory(db, "mem-alice", { id: tea.id }))?.id).toBe(black?.id);
    expect((await mem.findLatestMemory(db, "mem-alice", { content: "  Alice works at Acme " }))?.id).toBe(
      job.id,
    );
    expect(await mem.findLatestMemory(db, "mem-bob", { id: tea.id })).toBeUndefined();
    const afterUpdate = await search(store, {
      text: "tea",
      embedding: axis(1),
      containerTags: ["mem-alice"],
    });
    expect(afterUpdate.map((h) => h.row.id)).not.toContain(tea.id);
    expect(afterUpdate[0]?.row.id).toBe(black?.id);

    expect(await mem.forgetMemory(db, black?.id as string, "moved on")).toBe(true);
    expect(await mem.forgetMemory(db, black?.id as string, "again")).toBe(false);
    const live = await search(store, { embedding: axis(1), containerTags: ["mem-alice"] });
    expect(live.map((h) => h.row.id)).toEqual([job.id]);
    const withForgotten = await search(store, {
      embedding: axis(1),
      containerTags: ["mem-alice"],
      includeForgotten: true,
    });
    expect(withForgotten.find((h) => h.row.id === black?.id)?.row.forgetReason).toBe("moved on");
  });

  it("lists, profiles and finds neighbours among live memories only, a container at a time", async () => {
    const { db } = store();
    await ensureVectorIndexes(db, space);
    const [fact, recent, expired] = await mem.insertMemories(db, "mem-profile", space, [
      { content: "Lives in Lyon", embedding: axis(4), isStatic: true, metadata: { topic: "home" } },
      { content: "Reading a novel", embedding: axis(5), metadata: { topic: "hobby" } },
      { content: "Has a cold", embedding: axis(6), forgetAfter: new Date(Date.now() - 60_000) },
    ]);
    await mem.insertMemories(db, "mem-profile-other", space, [
      { content: "Lives in Oslo", embedding: axis(4) },
    ]);

    expect(
      await mem.profileFacts(db, { containerTag: "mem-profile", staticLimit: 10, dynamicLimit: 10 }),
    ).toEqual({ static: ["Lives in Lyon"], dynamic: ["Reading a novel"] });
    expect(
      await mem.profileFacts(db, {
        containerTag: "mem-profile",
        filters: { key: "topic", value: "hobby" },
        staticLimit: 10,
        dynamicLimit: 10,
      }),
    ).toEqual({ static: [], dynamic: ["Reading a novel"] });
    await expect(
      mem.profileFacts(db, {
        containerTag: "mem-profile",
        filters: { key: "n", value: "many", filterType: "numeric" },
        staticLimit: 10,
        dynamicLimit: 10,
      }),
    ).rejects.toThrow(FilterError);

    const latest = await mem.latestMemories(db, "mem-profile");
    expect(latest.map((m) => m.id).sort()).toEqual([fact?.id, recent?.id].sort());
    expect(await mem.latestMemories(db, "mem-profile", { includeForgotten: true })).toHaveLength(3);
    const near = await mem.memoriesNear(db, "mem-profile", space, axis(5), 5);
    expect(near.map((m) => m.content)).toEqual(["Reading a novel", "Lives in Lyon"]);

    // One per page, each live latest memory once (their creation times tie within one insert).
    const page = (n: number) =>
      listMemories(db, {
        containerTags: ["mem-profile"],
        scope: null,
        includeHistory: false,
        includeForgotten: false,
        sort: "createdAt",
        order: "asc",
        limit: 1,
        page: n,
      });
    const [first, second] = [await page(1), await page(2)];
    expect(first.total).toBe(2);
    expect([...first.rows, ...second.rows].map((m) => m.id).sort()).toEqual([fact?.id, recent?.id].sort());
    const everything = await listMemories(db, {
      containerTags: ["mem-profile", "mem-profile-other"],
      scope: ["mem-profile-other"],
      includeHistory: true,
      includeForgotten: true,
      sort: "updatedAt",
      order: "desc",
      limit: 10,
      page: 1,
    });
    expect(everything.rows.map((m) => m.content)).toEqual(["Lives in Oslo"]);
    expect((await findMemory(db, expired?.id as string, ["mem-profile"]))?.content).toBe("Has a cold");
    expect(await findMemory(db, expired?.id as string, ["mem-profile-other"])).toBeUndefined();
  });

  it("writes what a run extracted once, links related memories, and refuses a superseded run", async () => {
    const { db } = store();
    const [base] = await mem.insertMemories(db, "mem-extract", space, [
      { content: "Plays the cello", embedding: axis(7) },
    ]);
    const { document } = await addDocument(db, { source: "concert notes", containerTags: ["mem-extract"] });
    const ref = { documentId: document.id, run: document.processingRun };
    const found: mem.ExtractedForTag[] = [
      {
        containerTag: "mem-extract",
        items: [
          { content: "Plays the cello", isStatic: false, embedding: axis(7) },
          {
            content: "Plays cello in an orchestra",
            isStatic: false,
            embedding: axis(7),
            relation: { type: "extends", memoryId: base?.id as string },
          },
        ],
      },
    ];
    // The first item is already a live memory of the container: not written again.
    expect(await mem.saveExtractedMemories(db, ref, space, found, { status: "done" })).toEqual({
      written: 1,
      alreadyDone: false,
    });
    expect(await mem.saveExtractedMemories(db, ref, space, found, { status: "done" })).toEqual({
      written: 1,
      alreadyDone: true,
    });
    await expect(
      mem.saveExtractedMemories(db, { ...ref, run: ref.run + 1 }, space, found, { status: "done" }),
    ).rejects.toThrow(SupersededRunError);

    const extension = (await mem.latestMemories(db, "mem-extract")).find(
      (m) => m.content === "Plays cello in an orchestra",
    );
    expect(extension).toMatchObject({
      relation: "extends",
      relatedTo: base?.id,
      sourceDocumentId: document.id,
    });
    // Both ways: what extends the given memory, and what the given memory points at.
    expect((await mem.relatedMemories(db, [base?.id as string])).map((m) => m.id)).toEqual([extension?.id]);
    expect((await mem.relatedMemories(db, [extension?.id as string])).map((m) => m.id)).toEqual([base?.id]);
    expect(await mem.relatedMemories(db, [])).toEqual([]);
  });

  it("finds live latest memories by id for forget-matching and forgets them in one statement", async () => {
    const { db } = store();
    const [one, two, gone] = await mem.insertMemories(db, "fm-ids", space, [
      { content: "first", embedding: axis(3) },
      { content: "second", embedding: axis(4) },
      { content: "already gone", embedding: axis(5) },
    ]);
    const [elsewhere] = await mem.insertMemories(db, "fm-other", space, [
      { content: "other", embedding: axis(3) },
    ]);
    if (!one || !two || !gone || !elsewhere)
      throw new Error("insertMemories returned fewer rows than it was given");
    await mem.forgetMemory(db, gone.id, null);
    const newer = await mem.updateMemory(db, one.id, space, { content: "first, edited", embedding: axis(3) });
    if (!newer) throw new Error("update refused");

    // In the order first named; an old version's id names the latest; unknown, forgotten and foreign ids drop.
    const named = [two.id, "nope", elsewhere.id, gone.id, one.id, newer.id];
    const found = await mem.liveMemoriesByIds(db, "fm-ids", named);
    expect(found.map((m) => m.id)).toEqual([two.id, newer.id]);
    expect(await mem.liveMemoriesByIds(db, "fm-ids", named, ["fm-other"])).toEqual([]);
    expect((await mem.liveMemoriesByIds(db, "fm-ids", named, ["fm-ids"])).map((m) => m.id)).toEqual([
      two.id,
      newer.id,
    ]);
    expect(await mem.liveMemoriesByIds(db, "fm-ids", [])).toEqual([]);

    // Only latest, live rows change: the old version and the forgotten one are left as they are.
    const changed = await mem.forgetMemories(db, [two.id, one.id, gone.id, newer.id], "tidy up");
    expect(changed.sort()).toEqual([two.id, newer.id].sort());
    expect(await findMemory(db, two.id, null)).toMatchObject({ isForgotten: true, forgetReason: "tidy up" });
    expect(await findMemory(db, gone.id, null)).toMatchObject({ isForgotten: true, forgetReason: null });
    expect(await mem.forgetMemories(db, [two.id], "again")).toEqual([]);
    expect(await mem.liveMemoriesByIds(db, "fm-ids", named)).toEqual([]);
  });
}
