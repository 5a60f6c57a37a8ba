import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { expect, it } from "vitest";
import { createConnection, findConnection } from "../../../store/connections.ts";
import { listContainerTags } from "../../../store/container-tag-list.ts";
import {
  deleteAllTagSettings,
  readTagSettings,
  saveTagSettings,
} from "../../../store/container-tag-settings.ts";
import * as tags from "../../../store/container-tags.ts";
import { queryRows } from "../../../store/db.ts";
import { deleteDocumentsByIds, findDocument } from "../../../store/documents.ts";
import { documentCountsByStatus, pingStore, recentlyFinishedHistories } from "../../../store/health.ts";
import { forgetMemory, insertMemories } from "../../../store/memories.ts";
import * as processing from "../../../store/processing.ts";
import { SecretBox } from "../../../store/secrets.ts";
import { clearSettings, readSettings, updateSettings } from "../../../store/settings.ts";
import { addDocument, axis, type StoreOf, space } from "./support.ts";

const file = (key: string) => ({ key, name: `${key}.pdf`, mimeType: "application/pdf", size: 10 });

export function containerCases(store: StoreOf) {
  it("deletes a container tag: its own documents, memories and connections go, shared ones lose the tag", async () => {
    const { db } = store();
    const own = (
      await addDocument(db, { source: "only gone", containerTags: ["ct-gone"], file: file("ct-file-own") })
    ).document;
    const shared = (await addDocument(db, { source: "gone and kept", containerTags: ["ct-gone", "ct-keep"] }))
      .document;
    await addDocument(db, { source: "kept", containerTags: ["ct-keep"], file: file("ct-file-kept") });
    await insertMemories(db, "ct-gone", space, [{ content: "gone memory", embedding: axis(0) }]);
    await insertMemories(db, "ct-keep", space, [{ content: "kept memory", embedding: axis(0) }]);
    const connection = (tagsOf: string[]) =>
      createConnection(db, {
        provider: "s3",
        containerTags: tagsOf,
        metadata: {},
        sealedSecrets: null,
        syncIntervalMinutes: 60,
      });
    const onlyGone = await connection(["ct-gone"]);
    const both = await connection(["ct-gone", "ct-keep"]);
    expect(await tags.countTag(db, "ct-gone")).toEqual({ documents: 2, memories: 1 });

    const deletion = await tags.deleteContainerTag(db, "ct-gone");
    expect(deletion.deletedDocuments.map((d) => d.id)).toEqual([own.id]);
    expect(deletion).toMatchObject({
      untaggedDocuments: 1,
      deletedMemories: 1,
      unreferencedFileKeys: ["ct-file-own"],
      deletedConnectionIds: [onlyGone.id],
    });
    expect(await tags.countTag(db, "ct-gone")).toEqual({ documents: 0, memories: 0 });
    expect(await tags.countTag(db, "ct-keep")).toEqual({ documents: 2, memories: 1 });
    expect((await findDocument(db, shared.id))?.containerTags).toEqual(["ct-keep"]);
    expect((await findConnection(db, both.id))?.containerTags).toEqual(["ct-keep"]);
    expect(await findConnection(db, onlyGone.id)).toBeUndefined();
    expect(await tags.referencedFileKeys(db, ["ct-file-kept", "ct-file-own"])).toEqual(
      new Set(["ct-file-kept"]),
    );
  });

  it("pages a tag out for export and imports it back once, keeping only links that resolve", async () => {
    const { db } = store();
    const ids: string[] = [];
    for (const i of [1, 2, 3])
      ids.push(
        (
          await addDocument(db, {
            source: `export ${i}`,
            customId: `ct-export-${i}`,
            containerTags: ["ct-export"],
          })
        ).document.id,
      );
    ids.sort();
    const first = await tags.documentsPage(db, "ct-export", null, 2);
    const rest = await tags.documentsPage(db, "ct-export", first.at(-1)?.id ?? null, 2);
    expect([...first, ...rest].map((d) => d.id)).toEqual(ids);
    expect(first[0]).toMatchObject({ containerTags: ["ct-export"] });

    const [root] = await insertMemories(db, "ct-export", space, [{ content: "v1", embedding: axis(1) }]);
    const page = await tags.memoriesPage(db, "ct-export", null, 10);
    expect(page.map((m) => [m.chain, m.version, m.content])).toEqual([[root?.id, 1, "v1"]]);
    expect(page[0]).not.toHaveProperty("embedding");
    expect(
      await tags.memoriesPage(
        db,
        "ct-export",
        { root: root?.id as string, version: 1, id: root?.id as string },
        10,
      ),
    ).toEqual([]);

    expect(await tags.existingIds(db, "documents", [ids[0] as string, "ct-none"])).toEqual(new Set([ids[0]]));
    expect(await tags.customIdHolders(db, ["ct-export-1", "ct-export-none"])).toEqual(
      new Map([["ct-export-1", (await findDocument(db, "ct-export-1"))?.id]]),
    );

    // An import starts each document at a run of its own (services/export.ts); the store keeps the one given.
    const imported = [
      { id: "ct-imported-doc", source: "imported", containerTags: ["ct-import"], processingRun: 4 },
    ];
    expect(await tags.insertImportedDocuments(db, imported)).toEqual([
      { id: "ct-imported-doc", processingRun: 4 },
    ]);
    // Importing the same export again changes nothing.
    expect(await tags.insertImportedDocuments(db, imported)).toEqual([]);
    const memory = (id: string, sourceDocumentId: string) => ({
      id,
      containerTag: "ct-import",
      content: `imported ${id}`,
      rootId: id,
      sourceDocumentId,
    });
    expect(
      await tags.insertImportedMemories(db, [
        memory("ct-imp-m1", "ct-imported-doc"),
        memory("ct-imp-m2", "ct-missing-doc"),
      ]),
    ).toBe(2);
    expect(await tags.insertImportedMemories(db, [memory("ct-imp-m1", "ct-imported-doc")])).toBe(0);
    const links = (await tags.memoriesPage(db, "ct-import", null, 10)).map((m) => [m.id, m.sourceDocumentId]);
    expect(links).toEqual(
      expect.arrayContaining([
        ["ct-imp-m1", "ct-imported-doc"],
        ["ct-imp-m2", null],
      ]),
    );
  });

  it("lists the container tags a scope sees, counting documents and live latest memories", async () => {
    const { db } = store();
    await addDocument(db, { source: "space a 1", containerTags: ["sp-a"] });
    await addDocument(db, { source: "space a 2", containerTags: ["sp-a", "sp-b"] });
    const [live, gone] = await insertMemories(db, "sp-b", space, [
      { content: "live", embedding: axis(2) },
      { content: "gone", embedding: axis(2) },
    ]);
    await forgetMemory(db, gone?.id as string, null);
    expect(live).toBeDefined();
    expect(await listContainerTags(db, ["sp-a", "sp-b", "sp-empty"])).toEqual([
      { containerTag: "sp-a", documents: 2, memories: 0 },
      { containerTag: "sp-b", documents: 1, memories: 1 },
      { containerTag: "sp-empty", documents: 0, memories: 0 },
    ]);
    const all = await listContainerTags(db, null);
    expect(all).toContainEqual({ containerTag: "sp-a", documents: 2, memories: 0 });
    expect(all.map((s) => s.containerTag)).not.toContain("sp-empty");
  });

  it("answers health checks: counts by status and the histories of documents finished since a time", async () => {
    const { db } = store();
    await pingStore(db);
    const before = await documentCountsByStatus(db);
    const { document } = await addDocument(db, { source: "health", containerTags: ["health"] });
    const queued = await documentCountsByStatus(db);
    expect(queued.get("queued")).toBe((before.get("queued") ?? 0) + 1);

    const since = new Date();
    await processing.markFailed(db, { documentId: document.id, run: document.processingRun }, "unreadable");
    const finished = await recentlyFinishedHistories(db, since, 10);
    expect(finished).toHaveLength(1);
    expect(finished[0]?.run).toBe(document.processingRun);
    expect(finished[0]?.history.at(-1)).toMatchObject({ status: "failed", run: document.processingRun });
    expect((await documentCountsByStatus(db)).get("failed")).toBe((before.get("failed") ?? 0) + 1);
    expect(await recentlyFinishedHistories(db, new Date(Date.now() + 60_000), 10)).toEqual([]);
  });
}

/** Empties the whole store: registered last, after every other group of cases. */
export function resetCases(store: StoreOf) {
  it("counts and deletes every document, memory and setting, as an organisation reset does", async () => {
    const { db } = store();
    await addDocument(db, { source: "reset one", containerTags: ["rs-a"] });
    await addDocument(db, { source: "reset two", containerTags: ["rs-a", "rs-b"] });
    await insertMemories(db, "rs-c", space, [{ content: "reset memory", embedding: axis(0) }]);
    await updateSettings(db, SecretBox.fromKey(randomBytes(32)), { values: { chunkSize: 900 }, secrets: {} });
    const before = await tags.contentCounts(db);
    const [counted] = await queryRows<{ documents: number; tags: number; memories: number }>(
      db,
      sql`SELECT (SELECT count(*)::int FROM documents) AS documents,
                 (SELECT count(*)::int FROM memories) AS memories,
                 (SELECT count(DISTINCT t)::int FROM (SELECT unnest(container_tags) AS t FROM documents
                    UNION ALL SELECT container_tag FROM memories) x) AS tags`,
    );
    expect(before).toEqual({ documents: counted?.documents, tags: counted?.tags });
    expect(before.tags).toBeGreaterThanOrEqual(3);

    const page = await tags.someDocumentIds(db, 2);
    expect(page).toHaveLength(2);
    expect(page).toEqual([...page].sort());
    expect(await tags.deleteAllMemories(db)).toBe(counted?.memories);
    expect(await tags.deleteAllMemories(db)).toBe(0);
    for (let ids = page; ids.length; ids = await tags.someDocumentIds(db, 500))
      await deleteDocumentsByIds(db, ids);
    expect(await tags.contentCounts(db)).toEqual({ documents: 0, tags: 0 });
    expect(await clearSettings(db)).toBe(true);
    expect(await readSettings(db)).toEqual({ values: {}, secretsSet: [] });
    expect(await clearSettings(db)).toBe(false);
  });

  it("deletes every container tag's settings", async () => {
    const { db } = store();
    await saveTagSettings(db, "rs-settings-a", { name: "A" });
    await saveTagSettings(db, "rs-settings-b", { entityContext: "B's context" });
    expect(await deleteAllTagSettings(db)).toBeGreaterThanOrEqual(2);
    expect(await readTagSettings(db, "rs-settings-a")).toBeUndefined();
    expect(await deleteAllTagSettings(db)).toBe(0);
  });
}
