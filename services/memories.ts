// Memories written directly through the API (POST/PATCH/DELETE /v4/memories): one implementation for
// REST and MCP. Contents are embedded at once, so a memory is searchable when the call returns.

import type { BlobStore } from "../blobs/index.ts";
import type { Logger } from "../config/logger.ts";
import type { Embedder } from "../pipeline/embedder/types.ts";
import type { Database } from "../store/db.ts";
import { type DeletedDocument, deletedOnly, forgetDocumentText } from "../store/documents.ts";
import * as store from "../store/memories.ts";
import type { MemoryRow, Metadata } from "../store/schema/index.ts";
import type { TagScope } from "../store/tag-scope.ts";
import { SHORT_TEXT_MEMORY_KEY, SHORT_TEXT_MEMORY_SOURCE } from "../store/vocabulary.ts";
import { releaseFiles } from "./document-files.ts";

export interface MemoryDeps {
  db: Database;
  embedder: Embedder;
  /** Where the stored files of forgotten documents are deleted. */
  blobs: BlobStore;
  log: Logger;
  /** Stops the runs of documents that forgetting deleted while they were still being processed. */
  processing?: { stopDeleted(rows: readonly DeletedDocument[], reason: string): Promise<void> };
}

export interface MemoryInput {
  content: string;
  isStatic?: boolean;
  metadata?: Metadata;
  forgetAfter?: Date | null;
  forgetReason?: string | null;
  endUserId?: string;
}

/** Refusals the API reports with their own status codes. */
export class MemoryNotFoundError extends Error {}
export class MemoryAlreadyForgottenError extends Error {}

const spaceOf = (embedder: Embedder) => ({ model: embedder.model, dimension: embedder.dimension });

export async function createMemories(
  deps: MemoryDeps,
  containerTag: string,
  items: MemoryInput[],
): Promise<MemoryRow[]> {
  const vectors = await deps.embedder.embed(
    items.map((m) => m.content),
    "document",
    { priority: "interactive" },
  );
  return store.insertMemories(
    deps.db,
    containerTag,
    spaceOf(deps.embedder),
    items.map((m, i) => ({ ...m, embedding: vectors[i] as number[] })),
  );
}

/**
 * "Forget that". By id: that memory (its latest version). By content: the latest memory of the container
 * with exactly that text (surrounding whitespace aside) and, whichever path saved the text, the container's
 * documents whose whole text it is, so neither their chunks nor memories drawn from them are found again.
 * A memory kept word for word from a short document takes that document with it, by id too. With both id
 * and content, the id decides and content is not used.
 */
export async function forgetMemory(
  deps: MemoryDeps,
  containerTag: string,
  target: { id?: string; content?: string },
  reason: string | null,
  scope: TagScope = null,
): Promise<{ id: string; content: string }> {
  const by = target.id ? { id: target.id } : { content: target.content?.trim() };
  const memory = await store.findLatestMemory(deps.db, containerTag, by);
  const forgotten =
    memory && !memory.isForgotten ? await store.forgetMemory(deps.db, memory.id, reason) : false;
  const copyOf =
    memory?.sourceDocumentId && memory.metadata[SHORT_TEXT_MEMORY_KEY] === SHORT_TEXT_MEMORY_SOURCE
      ? memory.sourceDocumentId
      : undefined;
  const removed = await forgetDocumentText(
    deps.db,
    containerTag,
    { documentIds: copyOf ? [copyOf] : [], content: by.content },
    reason,
    scope,
  );
  const gone = deletedOnly(removed);
  if (gone.length) await deps.processing?.stopDeleted(gone, "document forgotten");
  await releaseFiles(
    deps,
    gone.map((d) => d.fileKey),
  );
  if (memory && (forgotten || removed.length)) return { id: memory.id, content: memory.content };
  const [document] = removed;
  if (document) return { id: document.id, content: by.content ?? "" };
  if (memory) throw new MemoryAlreadyForgottenError("this memory is already forgotten");
  throw new MemoryNotFoundError("no such memory in this container");
}

export async function updateMemory(
  deps: MemoryDeps,
  containerTag: string,
  target: { id?: string; content?: string },
  change: {
    newContent: string;
    metadata?: Metadata;
    forgetAfter?: Date | null;
    forgetReason?: string | null;
  },
): Promise<MemoryRow> {
  const memory = await store.findLatestMemory(deps.db, containerTag, target);
  if (!memory) throw new MemoryNotFoundError("no such memory in this container");
  const [embedding] = await deps.embedder.embed([change.newContent], "document", {
    priority: "interactive",
  });
  const updated = await store.updateMemory(deps.db, memory.id, spaceOf(deps.embedder), {
    content: change.newContent,
    embedding: embedding as number[],
    metadata: change.metadata,
    forgetAfter: change.forgetAfter,
    forgetReason: change.forgetReason,
  });
  // Another update won the race for this version; the caller may retry against the new latest.
  if (!updated) throw new MemoryNotFoundError("the memory changed while updating; try again");
  return updated;
}
