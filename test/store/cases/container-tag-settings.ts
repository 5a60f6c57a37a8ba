import { expect, it } from "vitest";
import {
  containerTagOverview,
  listContainerTagOverviews,
  readTagSettings,
  saveTagSettings,
} from "../../../store/container-tag-settings.ts";
import * as tags from "../../../store/container-tags.ts";
import { forgetMemory, insertMemories } from "../../../store/memories.ts";
import { addDocument, axis, type StoreOf, space } from "./support.ts";

export function containerTagSettingsCases(store: StoreOf) {
  it("saves only the fields given and keeps the others", async () => {
    const { db } = store();
    const first = await saveTagSettings(db, "cts-a", {
      name: "Research",
      entityContext: "Papers about soil",
      profileBuckets: [{ key: "work", description: "jobs" }],
    });
    expect(first).toMatchObject({
      name: "Research",
      entityContext: "Papers about soil",
      memoryFilesystemPaths: null,
    });
    const second = await saveTagSettings(db, "cts-a", {
      entityContext: null,
      memoryFilesystemPaths: ["/memory/"],
    });
    expect(second).toMatchObject({
      containerTag: "cts-a",
      name: "Research",
      entityContext: null,
      memoryFilesystemPaths: ["/memory/"],
      profileBuckets: [{ key: "work", description: "jobs" }],
    });
    expect(second.createdAt.getTime()).toBe(first.createdAt.getTime());
    expect(second.updatedAt.getTime()).toBeGreaterThanOrEqual(first.updatedAt.getTime());
    expect(await readTagSettings(db, "cts-none")).toBeUndefined();
  });

  it("counts a tag's documents and live memories, and knows a tag that has only settings", async () => {
    const { db } = store();
    await addDocument(db, { source: "one", containerTags: ["cts-b"] });
    await addDocument(db, { source: "two", containerTags: ["cts-b", "cts-c"] });
    const [kept, gone] = await insertMemories(db, "cts-b", space, [
      { content: "kept", embedding: axis(0) },
      { content: "forgotten", embedding: axis(1) },
    ]);
    expect(kept).toBeDefined();
    await forgetMemory(db, (gone as { id: string }).id, "test");
    const b = await containerTagOverview(db, "cts-b");
    expect(b).toMatchObject({ containerTag: "cts-b", documents: 2, memories: 1, settings: null });
    expect(b?.lastActivityAt).toBeInstanceOf(Date);

    expect(await containerTagOverview(db, "cts-empty")).toBeUndefined();
    await saveTagSettings(db, "cts-empty", { name: "Later" });
    expect(await containerTagOverview(db, "cts-empty")).toMatchObject({
      documents: 0,
      memories: 0,
      lastActivityAt: null,
      settings: { name: "Later" },
    });

    const scoped = await listContainerTagOverviews(db, ["cts-b", "cts-c", "cts-empty"]);
    expect(scoped.map((t) => [t.containerTag, t.documents, t.memories, t.settings?.name ?? null])).toEqual([
      ["cts-b", 2, 1, null],
      ["cts-c", 1, 0, null],
      ["cts-empty", 0, 0, "Later"],
    ]);
    const all = await listContainerTagOverviews(db, null);
    expect(all.map((t) => t.containerTag)).toEqual(expect.arrayContaining(["cts-b", "cts-c", "cts-empty"]));
  });

  it("deletes a tag's settings with the tag, also when nothing else carried it", async () => {
    const { db } = store();
    await saveTagSettings(db, "cts-d", { name: "Doomed" });
    const deletion = await tags.deleteContainerTag(db, "cts-d");
    expect(deletion).toMatchObject({ deletedSettings: true, deletedMemories: 0, untaggedDocuments: 0 });
    expect(await readTagSettings(db, "cts-d")).toBeUndefined();
    expect((await tags.deleteContainerTag(db, "cts-d")).deletedSettings).toBe(false);
  });
}
