// Memories written directly through the API (POST/PATCH/DELETE /v4/memories): one implementation for
// REST and MCP. Contents are embedded at once, so a memory is searchable when the call returns.

import type { Embedder } from "../pipeline/embedder/types.ts";
import type { Database } from "../store/db.ts";
import * as store from "../store/memories.ts";
import type { MemoryRow, Metadata } from "../store/schema/index.ts";

export interface MemoryDeps {
  db: Database;
  embedder: Embedder;
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

export async function forgetMemory(
  deps: MemoryDeps,
  containerTag: string,
  target: { id?: string; content?: string },
  reason: string | null,
): Promise<MemoryRow> {
  const memory = await store.findLatestMemory(deps.db, containerTag, target);
  if (!memory) throw new MemoryNotFoundError("no such memory in this container");
  if (memory.isForgotten || !(await store.forgetMemory(deps.db, memory.id, reason)))
    throw new MemoryAlreadyForgottenError("this memory is already forgotten");
  return memory;
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
