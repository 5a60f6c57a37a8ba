import { sql } from "drizzle-orm";
import { expect, it } from "vitest";
import { queryRows } from "../../../store/db.ts";
import { documentChunks, findDocument } from "../../../store/documents.ts";
import { latestMemories } from "../../../store/memories.ts";
import * as processing from "../../../store/processing.ts";
import { addDocument, axis, type StoreOf, space } from "./support.ts";

export function processingCases(store: StoreOf) {
  it("enters each stage once, never moves a finished run back, and fences a replaced run", async () => {
    const { db } = store();
    const { document } = await addDocument(db, {
      source: "stages",
      customId: "proc-stages",
      containerTags: ["proc-stages"],
    });
    const ref = { documentId: document.id, run: document.processingRun };
    expect((await processing.enterStage(db, ref, "extracting")).status).toBe("extracting");
    // A retried activity enters the same stage again: recorded once.
    await processing.enterStage(db, ref, "extracting");
    await processing.saveIdentified(db, ref, {
      type: "pdf",
      mimeType: "application/pdf",
      stored: { key: "proc-file", size: 3, name: "a.pdf" },
    });
    expect(await processing.loadRun(db, ref)).toMatchObject({
      type: "pdf",
      fileKey: "proc-file",
      fileName: "a.pdf",
    });
    await processing.markDone(db, ref, space.model);
    // A step that runs again after its run was marked done leaves the run done.
    expect((await processing.enterStage(db, ref, "chunking")).status).toBe("done");
    const history = (await processing.loadRun(db, ref)).statusHistory.filter((e) => e.run === ref.run);
    expect(history.filter((e) => e.status === "extracting")).toHaveLength(1);
    expect(history.map((e) => e.status)).not.toContain("chunking");

    // The document is edited: a new run replaces this one, whose writes are refused from now on.
    const edited = await addDocument(db, {
      source: "stages, edited",
      customId: "proc-stages",
      containerTags: ["proc-stages"],
    });
    expect(edited.document.processingRun).toBe(ref.run + 1);
    const stale = ref;
    await expect(processing.loadRun(db, stale)).rejects.toBeInstanceOf(processing.SupersededRunError);
    await expect(processing.enterStage(db, stale, "extracting")).rejects.toBeInstanceOf(
      processing.SupersededRunError,
    );
    await expect(
      processing.saveIdentified(db, stale, { type: "text", mimeType: "text/plain" }),
    ).rejects.toBeInstanceOf(processing.SupersededRunError);
  });

  it("saves a processed text in one go: row, stages, embedded chunks, and its word-for-word memory once", async () => {
    const { db } = store();
    const { document } = await addDocument(db, {
      source: "Short note.",
      title: "Given title",
      containerTags: ["proc-short"],
    });
    const ref = { documentId: document.id, run: document.processingRun };
    const result = {
      identified: { type: "text", mimeType: "text/plain" },
      extracted: { content: "Short note.", title: "Extracted title", type: "text", contentHash: "hash-1" },
      pieces: [{ content: "Short note.", position: 0, embedding: axis(13) }],
      model: { name: space.model, dimension: space.dimension },
      stages: [
        { status: "chunking" as const, at: new Date() },
        { status: "embedding" as const, at: new Date() },
        { status: "done" as const, at: new Date() },
      ],
      memory: {
        content: "Short note.",
        isStatic: false,
        containerTags: ["proc-short"],
        endUserId: null,
        metadata: {},
      },
    };
    await processing.saveProcessedText(db, ref, result);
    // Saved again (a retried activity): the chunks and the memory are replaced, not doubled.
    await processing.saveProcessedText(db, ref, result);
    const saved = await findDocument(db, document.id);
    // A title the caller gave wins over the extracted one.
    expect(saved).toMatchObject({
      status: "done",
      title: "Given title",
      contentHash: "hash-1",
      embeddingModel: space.model,
    });
    expect(saved?.memoryExtraction).toMatchObject({ run: ref.run, status: "done", memories: 1 });
    expect(saved?.statusHistory.map((e) => e.status)).toEqual(
      expect.arrayContaining(["chunking", "embedding", "done"]),
    );
    expect(
      (await documentChunks(db, document.id)).map((c) => [c.position, c.content, c.embeddingModel]),
    ).toEqual([[0, "Short note.", space.model]]);
    expect((await latestMemories(db, "proc-short")).map((m) => [m.content, m.sourceDocumentId])).toEqual([
      ["Short note.", document.id],
    ]);
    await expect(
      processing.saveProcessedText(db, { ...ref, run: ref.run + 1 }, result),
    ).rejects.toBeInstanceOf(processing.SupersededRunError);
  });

  it("saves chunks with any text, their metadata and vectors as given; a superseded save changes nothing", async () => {
    const { db } = store();
    const { document } = await addDocument(db, { source: "awkward", containerTags: ["proc-awkward"] });
    const ref = { documentId: document.id, run: document.processingRun };
    // Text that array literals and JSON both have to escape: quotes, backslashes, braces, commas, newlines.
    const texts = [
      'He said "{a,b}" \\ and left,',
      "line one\nline two\ttab 'single' \\N NULL",
      "Ünïcödé 🌊 {}[]",
    ];
    const save = (run: number, contents: string[]) =>
      processing.saveProcessedText(
        db,
        { ...ref, run },
        {
          identified: { type: "text", mimeType: "text/plain" },
          extracted: { content: contents.join(" "), title: null, type: "text", contentHash: `hash-${run}` },
          pieces: contents.map((content, i) => ({
            content,
            position: i,
            metadata: { section: `s"${i}`, page: i + 1 },
            embedding: axis(3 + i),
          })),
          model: { name: space.model, dimension: space.dimension },
          stages: [{ status: "done" as const, at: new Date() }],
        },
      );
    await save(ref.run, texts);
    const saved = await documentChunks(db, document.id);
    expect(saved.map((c) => [c.position, c.content, c.metadata, c.embeddingModel])).toEqual(
      texts.map((t, i) => [i, t, { section: `s"${i}`, page: i + 1 }, space.model]),
    );
    // Each vector landed on its own chunk: the chunk nearest to axis(3 + i) is chunk i.
    for (const i of [0, 1, 2]) {
      const [nearest] = await queryRows<{ position: number }>(
        db,
        sql`SELECT position FROM chunks WHERE document_id = ${document.id}
             ORDER BY embedding::vector(${sql.raw(String(space.dimension))}) <=> ${`[${axis(3 + i).join(",")}]`}::vector LIMIT 1`,
      );
      expect(nearest?.position).toBe(i);
    }
    await expect(save(ref.run + 1, ["replaced"])).rejects.toBeInstanceOf(processing.SupersededRunError);
    expect((await documentChunks(db, document.id)).map((c) => c.content)).toEqual(texts);
    expect((await findDocument(db, document.id))?.contentHash).toBe(`hash-${ref.run}`);
  });
}
