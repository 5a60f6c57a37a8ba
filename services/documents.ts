// The one way a document is saved for processing. The API (add, batch, upload, update, reprocess), connector
// syncs and imports all come through here, so what a save involves is written once: the file's bytes stored
// (services/document-files.ts, the one content-addressed write), the row saved (store/), a file no longer
// referenced released, the bytes just stored released when the save fails, a run the new version replaces
// stopped, and admission asked for a slot. Priority and fairness are the caller's, carried by the input.

import type { BlobStore } from "../blobs/index.ts";
import type { Logger } from "../config/logger.ts";
import { insertImportedDocuments } from "../store/container-tags.ts";
import type { Database } from "../store/db.ts";
import * as store from "../store/documents.ts";
import type { DocumentRow, NewDocumentRow } from "../store/schema/index.ts";
import type { TagScope } from "../store/tag-scope.ts";
import { releaseFiles, type StoredFile, storeDocumentFile } from "./document-files.ts";

/**
 * What a save needs of the processing client (temporal/processing-client.ts, handed in so this service
 * knows no Temporal): asking admission for a pass, and stopping a run that a new version replaced.
 */
export interface ProcessingQueue {
  /** Asks for an admission pass, after `afterMs` when a burst of saves should share one. Never throws. */
  submit(afterMs?: number): void;
  stop(run: { documentId: string; run: number }, reason: string): Promise<void>;
}

export interface DocumentSaveDeps {
  db: Database;
  blobs: BlobStore;
  processing: ProcessingQueue;
  log: Logger;
}

/** A document's file as received: stored before the row is saved, its content hash standing for the content. */
export interface DocumentFileBytes {
  bytes: Buffer;
  name: string | null;
  /** The type the bytes were declared with; stored with them. */
  contentType: string | null;
  /** The type recorded on the document, when the caller knows better than the declaration (a hint). */
  mimeType?: string | null;
}

/** A document to save: its text (or URL) as `source`, or a file whose hash becomes the source. */
export type DocumentToSave = Omit<store.NewDocumentInput, "source" | "file"> &
  ({ source: string; file?: undefined } | { file: DocumentFileBytes; source?: undefined });

export interface SaveOptions {
  /** The caller's scope (a scoped API key's tags); null or absent for the service itself. */
  scope?: TagScope;
  /** Lets the admission pass wait this long, so the many saves of one sync page share it. */
  submitAfterMs?: number;
}

export interface SavedDocument {
  document: DocumentRow;
  /** Whether this save queued a new processing run (new document, new content, or a failed one again). */
  process: boolean;
}

/**
 * Creates a document, or updates the one holding its customId (store.saveDocument), and queues its
 * processing when the content is new or changed.
 */
export async function saveDocumentForProcessing(
  deps: DocumentSaveDeps,
  input: DocumentToSave,
  options: SaveOptions = {},
): Promise<SavedDocument> {
  if (input.file === undefined) {
    const saved = await store.saveDocument(deps.db, input, options.scope);
    return afterSave(deps, saved, options);
  }
  const { file, ...fields } = input;
  const stored = await storeDocumentFile(deps.blobs, file.bytes, file.contentType);
  const saved = await releasedIfThrows(deps, [stored.key], () =>
    store.saveDocument(
      deps.db,
      {
        ...fields,
        // The hash stands for the content: the same bytes again are not a change.
        source: `file:${stored.sha256}`,
        file: fileColumns(file, stored),
      },
      options.scope,
    ),
  );
  return afterSave(deps, saved, options);
}

/**
 * Changes a document by id or customId (store.updateDocument): new content queues processing, and replaces
 * its file. Undefined when no such document is in the scope.
 */
export async function updateDocumentForProcessing(
  deps: DocumentSaveDeps,
  idOrCustomId: string,
  patch: store.DocumentPatch,
  options: SaveOptions = {},
): Promise<SavedDocument | undefined> {
  const saved = await store.updateDocument(deps.db, idOrCustomId, patch, options.scope);
  return saved && afterSave(deps, saved, options);
}

/** Queues a new processing run of a document as it is (the "reprocess" action). Undefined when not found. */
export async function requeueForProcessing(
  deps: DocumentSaveDeps,
  idOrCustomId: string,
  options: SaveOptions = {},
): Promise<DocumentRow | undefined> {
  const before = await store.findDocument(deps.db, idOrCustomId, options.scope);
  if (!before) return undefined;
  const document = await store.requeueDocument(deps.db, before.id, options.scope);
  if (!document) return undefined;
  const running = !store.terminalStatuses.includes(before.status);
  await afterSave(
    deps,
    { document, process: true, ...(running ? { supersededRun: before.processingRun } : {}) },
    options,
  );
  return document;
}

/** An imported document: its row as exported (id, run, history kept), and its file's bytes when exported with them. */
export interface ImportedDocument {
  row: NewDocumentRow;
  /** The row names and types the file itself; the bytes get their key and size here. */
  file?: Pick<DocumentFileBytes, "bytes" | "contentType">;
}

/**
 * Saves imported documents in one transaction (store.insertImportedDocuments; an id that exists is skipped)
 * and queues them. Their bytes are stored first; if the insert fails, none of them stays.
 */
export async function saveImportedDocuments(
  deps: DocumentSaveDeps,
  documents: readonly ImportedDocument[],
): Promise<{ id: string; processingRun: number }[]> {
  const storedKeys: string[] = [];
  const inserted = await releasedIfThrows(deps, storedKeys, async () => {
    const rows: NewDocumentRow[] = [];
    for (const { row, file } of documents) {
      if (!file) {
        rows.push(row);
        continue;
      }
      const stored = await storeDocumentFile(deps.blobs, file.bytes, file.contentType);
      storedKeys.push(stored.key);
      rows.push({ ...row, fileKey: stored.key, fileSize: stored.size });
    }
    return insertImportedDocuments(deps.db, rows);
  });
  // A row another import inserted meanwhile was skipped: the bytes stored for it are nobody's.
  if (inserted.length < documents.length) await releaseFiles(deps, storedKeys);
  // They wait in the store as bulk work; admission starts their workflows as slots free up.
  if (inserted.length) deps.processing.submit();
  return inserted;
}

/** What every save does once its row is written: release, stop what it replaced, ask for a slot. */
async function afterSave(
  deps: DocumentSaveDeps,
  saved: store.SaveResult,
  options: SaveOptions,
): Promise<SavedDocument> {
  await releaseFiles(deps, [saved.unusedFileKey]);
  if (saved.process) {
    if (saved.supersededRun !== undefined) {
      await deps.processing
        .stop({ documentId: saved.document.id, run: saved.supersededRun }, "superseded by a newer version")
        .catch((err) => deps.log.debug({ err }, "previous run already finished"));
    }
    deps.processing.submit(options.submitAfterMs);
  }
  return { document: saved.document, process: saved.process };
}

/** Runs `save`; if it throws, the bytes stored for it are released (nothing refers to them), then it rethrows. */
async function releasedIfThrows<T>(
  deps: DocumentSaveDeps,
  storedKeys: readonly string[],
  save: () => Promise<T>,
): Promise<T> {
  try {
    return await save();
  } catch (error) {
    await releaseFiles(deps, storedKeys);
    throw error;
  }
}

function fileColumns(file: DocumentFileBytes, stored: StoredFile) {
  return {
    key: stored.key,
    name: file.name,
    mimeType: file.mimeType !== undefined ? file.mimeType : file.contentType,
    size: stored.size,
  };
}
