import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createDiskBlobStore } from "../../blobs/disk.ts";
import type { BlobStore } from "../../blobs/index.ts";
import { createLogger } from "../../config/logger.ts";
import { DOCUMENT_FILES_PREFIX } from "../../services/document-files.ts";
import {
  type DocumentSaveDeps,
  type ProcessingQueue,
  requeueForProcessing,
  saveDocumentForProcessing,
  saveImportedDocuments,
  updateDocumentForProcessing,
} from "../../services/documents.ts";
import { openMemoryPglite, type Store } from "../../store/db.ts";
import { findDocument, SharedDocumentError } from "../../store/documents.ts";
import { markDone, markFailed } from "../../store/processing.ts";
import { DOCUMENT_PRIORITY, type NewDocumentRow } from "../../store/schema/index.ts";

/**
 * Admission itself is not what these tests are about (test/durability/admission.test.ts and the e2e tests run
 * the real processing client): this one records what a save asks of it, which is what the service decides.
 */
class RecordingProcessing implements ProcessingQueue {
  readonly submits: (number | undefined)[] = [];
  readonly stops: { documentId: string; run: number; reason: string }[] = [];
  submit(afterMs?: number): void {
    this.submits.push(afterMs);
  }
  async stop(run: { documentId: string; run: number }, reason: string): Promise<void> {
    this.stops.push({ ...run, reason });
  }
}

async function storedKeys(blobs: BlobStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const file of blobs.list(DOCUMENT_FILES_PREFIX)) keys.push(file.key);
  return keys.sort();
}

describe("saving a document for processing", () => {
  let store: Store;
  let blobRoot: string;
  let processing: RecordingProcessing;
  let deps: DocumentSaveDeps;

  beforeAll(async () => {
    store = await openMemoryPglite();
  });
  afterAll(async () => {
    await store?.close();
  });
  beforeEach(() => {
    // A store of its own per test: each counts the files it leaves.
    blobRoot = mkdtempSync(path.join(tmpdir(), "memory-save-"));
    processing = new RecordingProcessing();
    deps = {
      db: store.db,
      blobs: createDiskBlobStore(blobRoot),
      processing,
      log: createLogger("silent"),
    };
  });
  afterEach(() => {
    rmSync(blobRoot, { recursive: true, force: true });
  });

  const text = (source: string, customId: string, tags = ["notes"]) => ({
    source,
    customId,
    containerTags: tags,
    metadata: {},
  });
  const file = (bytes: string, customId: string, tags = ["files"]) => ({
    file: { bytes: Buffer.from(bytes), name: "note.txt", contentType: "text/plain" },
    customId,
    containerTags: tags,
    metadata: {},
  });

  it("saves a new document queued and asks admission for a slot", async () => {
    const saved = await saveDocumentForProcessing(deps, {
      ...text("first words", "new-doc"),
      priority: DOCUMENT_PRIORITY.interactive,
    });
    expect(saved.process).toBe(true);
    expect(saved.document).toMatchObject({
      status: "queued",
      processingRun: 1,
      priority: DOCUMENT_PRIORITY.interactive,
      fairnessKey: "tag:notes",
    });
    expect((await findDocument(store.db, "new-doc"))?.id).toBe(saved.document.id);
    expect(processing.submits).toEqual([undefined]);
    expect(processing.stops).toEqual([]);
  });

  it("does not submit the same content again", async () => {
    const first = await saveDocumentForProcessing(deps, text("same words", "same-doc"));
    const again = await saveDocumentForProcessing(deps, text("same words", "same-doc"));
    expect(again.process).toBe(false);
    expect(again.document.id).toBe(first.document.id);
    expect(again.document.processingRun).toBe(1);
    expect(processing.submits).toHaveLength(1);
  });

  it("stops the run a changed version replaces and submits the new one", async () => {
    const first = await saveDocumentForProcessing(deps, text("version one", "changing-doc"));
    const changed = await saveDocumentForProcessing(deps, text("version two", "changing-doc"));
    expect(changed.process).toBe(true);
    expect(changed.document.processingRun).toBe(2);
    expect(processing.stops).toEqual([
      { documentId: first.document.id, run: 1, reason: "superseded by a newer version" },
    ]);
    expect(processing.submits).toHaveLength(2);
  });

  it("stops nothing when the replaced run had finished", async () => {
    const first = await saveDocumentForProcessing(deps, text("finished once", "finished-doc"));
    await markDone(store.db, { documentId: first.document.id, run: 1 }, "test-model");
    const changed = await saveDocumentForProcessing(deps, text("finished twice", "finished-doc"));
    expect(changed.process).toBe(true);

    // A failed document is tried again with the same content, and there is no run of it to stop either.
    await markFailed(store.db, { documentId: first.document.id, run: 2 }, "boom");
    const retried = await saveDocumentForProcessing(deps, text("finished twice", "finished-doc"));
    expect(retried.process).toBe(true);
    expect(retried.document.processingRun).toBe(3);
    expect(processing.stops).toEqual([]);
    expect(processing.submits).toHaveLength(3);
  });

  it("lets a burst of saves share one later admission pass", async () => {
    await saveDocumentForProcessing(deps, text("one of a page", "page-item"), { submitAfterMs: 200 });
    expect(processing.submits).toEqual([200]);
  });

  it("releases the bytes it stored when the save is refused", async () => {
    // A document two tenants share: tenant b's key may not replace its content (store.SharedDocumentError).
    await saveDocumentForProcessing(deps, text("shared text", "shared-by-a-and-b", ["tenant-a", "tenant-b"]));
    await expect(
      saveDocumentForProcessing(deps, file("tenant b's bytes", "shared-by-a-and-b", ["tenant-b"]), {
        scope: ["tenant-b"],
      }),
    ).rejects.toBeInstanceOf(SharedDocumentError);
    expect(await storedKeys(deps.blobs)).toEqual([]);
    expect(processing.submits).toHaveLength(1);
  });

  it("keeps one stored copy of a file whose bytes the document has already", async () => {
    const first = await saveDocumentForProcessing(deps, file("the same bytes", "same-file"));
    const key = first.document.fileKey;
    expect(key).toMatch(/^files\//);
    expect(first.document.source).toMatch(/^file:[0-9a-f]{64}$/);
    expect(first.document).toMatchObject({ mimeType: "text/plain", fileName: "note.txt", fileSize: 14 });

    const again = await saveDocumentForProcessing(deps, file("the same bytes", "same-file"));
    expect(again.process).toBe(false);
    expect(again.document.fileKey).toBe(key);
    expect(await storedKeys(deps.blobs)).toEqual([key]);
    expect((await deps.blobs.get(key as string)).toString()).toBe("the same bytes");
    expect(processing.submits).toHaveLength(1);
  });

  it("releases the file that new bytes replace", async () => {
    const first = await saveDocumentForProcessing(deps, file("old bytes", "replaced-file"));
    const replaced = await saveDocumentForProcessing(deps, {
      ...file("new bytes", "replaced-file"),
      file: { bytes: Buffer.from("new bytes"), name: "page", contentType: null, mimeType: "text/html" },
    });
    expect(replaced.process).toBe(true);
    expect(replaced.document.fileKey).not.toBe(first.document.fileKey);
    // The hint is what the document records; the stored bytes keep their declared type.
    expect(replaced.document.mimeType).toBe("text/html");
    expect(await storedKeys(deps.blobs)).toEqual([replaced.document.fileKey]);
  });

  it("updates content through the same steps: old file released, old run stopped, new run submitted", async () => {
    const first = await saveDocumentForProcessing(deps, file("a file to edit", "edited-doc"));
    const updated = await updateDocumentForProcessing(deps, "edited-doc", { content: "now plain text" });
    expect(updated?.process).toBe(true);
    expect(updated?.document).toMatchObject({ source: "now plain text", fileKey: null, processingRun: 2 });
    expect(await storedKeys(deps.blobs)).toEqual([]);
    expect(processing.stops).toEqual([
      { documentId: first.document.id, run: 1, reason: "superseded by a newer version" },
    ]);
    expect(processing.submits).toHaveLength(2);

    const metadataOnly = await updateDocumentForProcessing(deps, "edited-doc", { metadata: { seen: true } });
    expect(metadataOnly?.process).toBe(false);
    expect(processing.submits).toHaveLength(2);
    expect(await updateDocumentForProcessing(deps, "no-such-doc", { content: "x" })).toBeUndefined();
  });

  it("requeues a document as it is, stopping its unfinished run", async () => {
    const first = await saveDocumentForProcessing(deps, text("to reprocess", "reprocessed-doc"));
    const requeued = await requeueForProcessing(deps, "reprocessed-doc");
    expect(requeued).toMatchObject({ id: first.document.id, processingRun: 2, status: "queued" });
    expect(processing.stops).toEqual([
      { documentId: first.document.id, run: 1, reason: "superseded by a newer version" },
    ]);
    expect(processing.submits).toHaveLength(2);
    // Outside the caller's scope it is not found.
    expect(await requeueForProcessing(deps, "reprocessed-doc", { scope: ["elsewhere"] })).toBeUndefined();
    expect(processing.submits).toHaveLength(2);
  });

  describe("imports", () => {
    const importedRow = (id: string, customId: string | null = null): NewDocumentRow => ({
      id,
      customId,
      source: `file:${id}`,
      status: "queued",
      containerTags: ["imported"],
      metadata: {},
      processingRun: 1,
      fairnessKey: "tag:imported",
      statusHistory: [{ status: "queued", at: new Date().toISOString(), run: 1 }],
    });

    it("stores each file's bytes, saves the rows and submits them together", async () => {
      const inserted = await saveImportedDocuments(deps, [
        {
          row: importedRow("imported-with-file"),
          file: { bytes: Buffer.from("exported"), contentType: null },
        },
        { row: importedRow("imported-text") },
      ]);
      expect(inserted.map((d) => d.id).sort()).toEqual(["imported-text", "imported-with-file"]);
      const withFile = await findDocument(store.db, "imported-with-file");
      expect(withFile?.fileSize).toBe(8);
      expect(await storedKeys(deps.blobs)).toEqual([withFile?.fileKey]);
      expect(processing.submits).toEqual([undefined]);

      // The same export again: nothing new, and the bytes stored for the skipped row are not kept.
      const again = await saveImportedDocuments(deps, [
        {
          row: importedRow("imported-with-file"),
          file: { bytes: Buffer.from("exported"), contentType: null },
        },
      ]);
      expect(again).toEqual([]);
      expect(await storedKeys(deps.blobs)).toEqual([withFile?.fileKey]);
      expect(processing.submits).toHaveLength(1);
    });

    it("releases the bytes it stored when the rows cannot be saved", async () => {
      await saveDocumentForProcessing(deps, text("holds the customId", "import-clash"));
      await expect(
        saveImportedDocuments(deps, [
          {
            row: importedRow("imported-clash", "import-clash"),
            file: { bytes: Buffer.from("clashing"), contentType: null },
          },
        ]),
      ).rejects.toThrow();
      expect(await storedKeys(deps.blobs)).toEqual([]);
      expect(processing.submits).toHaveLength(1);
    });
  });
});
