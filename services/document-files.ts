// A document's stored file (an upload, a synced file, a fetched page): written under a key of its own, the
// content hash plus a random suffix, so no two documents share one. Deleting or replacing a document can then
// delete its file at once, with no upload of the same bytes racing to reuse the key (and a tenant's file is
// never another tenant's). Files written before keys were per document may be shared by several documents:
// those go when the last document referencing them does. Whatever a crash leaves behind, the file sweep
// (workflows/file-sweep.ts) removes.

import { createHash, randomBytes } from "node:crypto";
import type { BlobStore } from "../blobs/index.ts";
import type { Logger } from "../config/logger.ts";
import { referencedFileKeys } from "../store/container-tags.ts";
import type { Database } from "../store/db.ts";

/** Where a document's bytes were stored. */
export interface StoredFile {
  key: string;
  sha256: string;
  size: number;
}

export interface FileDeps {
  db: Database;
  blobs: BlobStore;
  log: Logger;
}

/** Prefix of every document file key; the sweep lists only these. */
export const DOCUMENT_FILES_PREFIX = "files/";

/**
 * A key for these bytes: `files/<2 hex>/<sha256>.<suffix>` (older keys lack the suffix). The suffix is random,
 * or, for a document known already (a page fetched again), derived from its id: the same bytes fetched again
 * for the same document land on the same key instead of a copy.
 */
export function newFileKey(sha256: string, documentId?: string): string {
  const suffix = documentId
    ? createHash("sha256").update(`document:${documentId}`).digest("hex").slice(0, 16)
    : randomBytes(8).toString("hex");
  return `${DOCUMENT_FILES_PREFIX}${sha256.slice(0, 2)}/${sha256}.${suffix}`;
}

/** Stores one document's bytes under a key of its own (see newFileKey for `documentId`). */
export async function storeDocumentFile(
  blobs: BlobStore,
  bytes: Buffer,
  contentType?: string | null,
  documentId?: string,
): Promise<StoredFile> {
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const key = newFileKey(sha256, documentId);
  await blobs.put(key, bytes, contentType ?? undefined);
  return { key, sha256, size: bytes.length };
}

/**
 * Deletes the files of these keys that no document references (any more). Never throws: a file that cannot be
 * deleted now is logged and left to the sweep, never a document left without its file. Answers how many went.
 */
export async function releaseFiles(
  deps: FileDeps,
  keys: readonly (string | null | undefined)[],
): Promise<number> {
  const unique = [...new Set(keys.filter((k): k is string => typeof k === "string" && k.length > 0))];
  if (!unique.length) return 0;
  let used: Set<string>;
  try {
    used = await referencedFileKeys(deps.db, unique);
  } catch (err) {
    deps.log.warn(
      { err, keys: unique.length },
      "could not check stored files before deleting them; the sweep will",
    );
    return 0;
  }
  let deleted = 0;
  for (const key of unique) {
    if (used.has(key)) continue;
    try {
      await deps.blobs.delete(key);
      deleted++;
    } catch (err) {
      deps.log.warn({ err, key }, "could not delete a stored file; the sweep will");
    }
  }
  return deleted;
}

export interface SweepResult {
  /** Stored files looked at. */
  checked: number;
  /** Orphans deleted. */
  deleted: number;
  /** Orphans younger than the grace period, left for a later sweep (an upload may be about to save its row). */
  tooRecent: number;
}

/**
 * Deletes every stored document file that no document references and that was written before `olderThan`:
 * what a crash between storing bytes and saving their document, a failed delete, or a version before files
 * were deleted with their documents left behind. A batch at a time, so memory stays flat however many files.
 */
export async function sweepOrphanFiles(
  deps: FileDeps,
  opts: { olderThan: Date; heartbeat?: (progress: SweepResult) => void; batchSize?: number },
): Promise<SweepResult> {
  const result: SweepResult = { checked: 0, deleted: 0, tooRecent: 0 };
  const batchSize = opts.batchSize ?? 500;
  let batch: { key: string; modifiedAt: Date }[] = [];
  const flush = async () => {
    const used = await referencedFileKeys(
      deps.db,
      batch.map((f) => f.key),
    );
    for (const file of batch) {
      if (used.has(file.key)) continue;
      if (file.modifiedAt >= opts.olderThan) {
        result.tooRecent++;
        continue;
      }
      await deps.blobs.delete(file.key);
      result.deleted++;
    }
    result.checked += batch.length;
    batch = [];
    opts.heartbeat?.({ ...result });
  };
  for await (const file of deps.blobs.list(DOCUMENT_FILES_PREFIX)) {
    batch.push(file);
    if (batch.length >= batchSize) await flush();
  }
  if (batch.length) await flush();
  return result;
}
