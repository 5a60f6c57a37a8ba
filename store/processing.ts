import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { Database } from "./db.ts";
import { newId } from "./ids.ts";
import {
  chunks,
  type DocumentRow,
  type DocumentStatus,
  documents,
  type MemoryExtractionRecord,
  type Metadata,
  memories,
  SHORT_TEXT_MEMORY_KEY,
  SHORT_TEXT_MEMORY_SOURCE,
  type StoredSegment,
} from "./schema/index.ts";

/** Raised when a newer processing run has replaced the one doing the work: its results must be dropped. */
export class SupersededRunError extends Error {
  constructor(documentId: string, run: number) {
    super(`document ${documentId} run ${run} was superseded or the document was deleted`);
    this.name = "SupersededRunError";
  }
}

export interface RunRef {
  documentId: string;
  run: number;
}

function current(ref: RunRef) {
  return and(eq(documents.id, ref.documentId), eq(documents.processingRun, ref.run));
}

function historyEntry(status: DocumentStatus, run: number) {
  return sql`${documents.statusHistory} || ${JSON.stringify([{ status, at: new Date().toISOString(), run }])}::jsonb`;
}

async function guardedUpdate(
  db: Database,
  ref: RunRef,
  values: Partial<DocumentRow> | Record<string, unknown>,
) {
  const rows = await db
    .update(documents)
    .set(values as Partial<DocumentRow>)
    .where(current(ref))
    .returning({ id: documents.id });
  if (!rows.length) throw new SupersededRunError(ref.documentId, ref.run);
}

export async function loadRun(db: Database, ref: RunRef): Promise<DocumentRow> {
  const [row] = await db.select().from(documents).where(current(ref));
  if (!row) throw new SupersededRunError(ref.documentId, ref.run);
  return row;
}

export async function setStatus(db: Database, ref: RunRef, status: DocumentStatus): Promise<void> {
  await enterStage(db, ref, status);
}

/** setStatus, answering the run's row as it is afterwards (one statement instead of an update and a read). */
export async function enterStage(db: Database, ref: RunRef, status: DocumentStatus): Promise<DocumentRow> {
  // Retried activities call this again: only record a transition once, and never move a finished run back (a
  // step whose result Temporal did not record before a crash runs again after its run was marked done).
  const [row] = await db
    .update(documents)
    .set({ status, statusHistory: historyEntry(status, ref.run), updatedAt: new Date() } as never)
    .where(and(current(ref), sql`${documents.status} NOT IN (${status}, 'done', 'failed')`))
    .returning();
  return row ?? loadRun(db, ref);
}

export async function saveIdentified(
  db: Database,
  ref: RunRef,
  found: { type: string; mimeType: string; stored?: { key: string; size: number; name: string | null } },
): Promise<void> {
  await guardedUpdate(db, ref, identifiedColumns(found));
}

function identifiedColumns(found: Parameters<typeof saveIdentified>[2]) {
  return {
    type: found.type,
    mimeType: found.mimeType,
    ...(found.stored
      ? { fileKey: found.stored.key, fileSize: found.stored.size, fileName: found.stored.name }
      : {}),
  };
}

export async function saveExtraction(
  db: Database,
  ref: RunRef,
  extracted: {
    content: string;
    title: string | null;
    type: string;
    contentHash: string;
    segments?: StoredSegment[] | null;
    metadata?: Record<string, string | number | boolean>;
  },
): Promise<void> {
  await guardedUpdate(db, ref, extractionColumns(extracted));
}

function extractionColumns(extracted: Parameters<typeof saveExtraction>[2]) {
  return {
    content: extracted.content,
    segments: extracted.segments ?? null,
    title: sql`coalesce(${documents.title}, ${extracted.title})`,
    type: extracted.type,
    contentHash: extracted.contentHash,
    fileMetadata: extracted.metadata ?? null,
  };
}

/** Replaces the document's chunks in one transaction, so a retry never leaves duplicates. */
export async function replaceChunks(
  db: Database,
  ref: RunRef,
  pieces: { content: string; position: number; metadata?: Record<string, string | number> }[],
): Promise<number> {
  return db.transaction(async (tx) => {
    await loadRun(tx as Database, ref);
    await tx.delete(chunks).where(eq(chunks.documentId, ref.documentId));
    const batch = 500;
    for (let i = 0; i < pieces.length; i += batch) {
      await tx.insert(chunks).values(
        pieces.slice(i, i + batch).map((p) => ({
          id: newId(),
          documentId: ref.documentId,
          position: p.position,
          content: p.content,
          metadata: p.metadata ?? {},
        })),
      );
    }
    return pieces.length;
  });
}

export function chunksWithoutEmbedding(db: Database, documentId: string, limit: number) {
  return db
    .select({ id: chunks.id, content: chunks.content })
    .from(chunks)
    .where(and(eq(chunks.documentId, documentId), isNull(chunks.embedding)))
    .orderBy(asc(chunks.position))
    .limit(limit);
}

/** Vectors for stored chunks, one UPDATE for the lot; with `done`, the run is marked done in the same transaction. */
export async function saveEmbeddings(
  db: Database,
  ref: RunRef,
  model: { name: string; dimension: number },
  vectors: { id: string; embedding: number[] }[],
  opts: { done?: boolean } = {},
): Promise<void> {
  await db.transaction(async (tx) => {
    await loadRun(tx as Database, ref);
    if (vectors.length) {
      await tx.execute(sql`
        UPDATE chunks SET embedding = v.embedding::vector, embedding_model = ${model.name},
               embedding_dimension = ${model.dimension}
          FROM unnest(${sql.param(vectors.map((v) => v.id))}::text[],
                      ${sql.param(vectors.map((v) => `[${v.embedding.join(",")}]`))}::text[]) AS v(id, embedding)
         WHERE chunks.id = v.id AND chunks.document_id = ${ref.documentId}`);
    }
    if (opts.done) await markDone(tx as Database, ref, model.name);
  });
}

/**
 * Everything a short text's run produced, written at once: what it is, its text, its chunks with their
 * vectors, and the stages it went through (with the times they began); `done` marks the run done too.
 * One transaction instead of one per stage: each stage's write rewrote the document row and, for the
 * chunks, every index twice (inserted without a vector, then updated with it).
 */
export async function saveProcessedText(
  db: Database,
  ref: RunRef,
  result: {
    identified: {
      type: string;
      mimeType: string;
      stored?: { key: string; size: number; name: string | null };
    };
    extracted: Parameters<typeof saveExtraction>[2];
    pieces: {
      content: string;
      position: number;
      metadata?: Record<string, string | number>;
      embedding: number[];
    }[];
    model: { name: string; dimension: number };
    /** Stages reached after `extracting`, in order, with when each began. */
    stages: { status: DocumentStatus; at: Date }[];
    /**
     * A short text kept word for word as a memory of each of these container tags, with the first chunk's
     * vector (pipeline/short-text-memory.ts). Memories kept so by an earlier run are replaced either way.
     */
    memory?: {
      content: string;
      isStatic: boolean;
      containerTags: string[];
      endUserId: string | null;
      metadata: Metadata;
    };
  },
): Promise<void> {
  const last = result.stages[result.stages.length - 1];
  const entries = result.stages.map((s) => ({ status: s.status, at: s.at.toISOString(), run: ref.run }));
  await db.transaction(async (tx) => {
    const t = tx as Database;
    // One UPDATE of the document row, first, so a superseded run stops here (and rolls back) before any chunk.
    await guardedUpdate(t, ref, {
      ...identifiedColumns(result.identified),
      ...extractionColumns(result.extracted),
      ...(last
        ? {
            status: last.status,
            statusHistory: sql`${documents.statusHistory} || ${JSON.stringify(entries)}::jsonb`,
            updatedAt: new Date(),
            ...(last.status === "done" ? { embeddingModel: result.model.name, errorReason: null } : {}),
          }
        : {}),
      ...(result.memory
        ? {
            memoryExtraction: {
              run: ref.run,
              status: "done",
              memories: result.memory.containerTags.length,
              reason: "a short text, kept word for word (no LLM configured)",
              at: new Date().toISOString(),
            } satisfies MemoryExtractionRecord,
          }
        : {}),
    });
    await t.delete(chunks).where(eq(chunks.documentId, ref.documentId));
    await t
      .delete(memories)
      .where(
        and(
          eq(memories.sourceDocumentId, ref.documentId),
          sql`${memories.metadata}->>${SHORT_TEXT_MEMORY_KEY} = ${SHORT_TEXT_MEMORY_SOURCE}`,
        ),
      );
    const memory = result.memory;
    const vector = result.pieces[0]?.embedding;
    if (memory && vector) {
      await t.insert(memories).values(
        memory.containerTags.map((containerTag) => {
          const id = newId();
          return {
            id,
            rootId: id,
            containerTag,
            content: memory.content,
            isStatic: memory.isStatic,
            metadata: { ...memory.metadata, [SHORT_TEXT_MEMORY_KEY]: SHORT_TEXT_MEMORY_SOURCE },
            endUserId: memory.endUserId,
            sourceDocumentId: ref.documentId,
            embedding: vector,
            embeddingModel: result.model.name,
          };
        }),
      );
    }
    for (let i = 0; i < result.pieces.length; i += 500) {
      await t.insert(chunks).values(
        result.pieces.slice(i, i + 500).map((p) => ({
          id: newId(),
          documentId: ref.documentId,
          position: p.position,
          content: p.content,
          metadata: p.metadata ?? {},
          embedding: p.embedding,
          embeddingModel: result.model.name,
          embeddingDimension: result.model.dimension,
        })),
      );
    }
  });
}

export async function markDone(db: Database, ref: RunRef, embeddingModel: string): Promise<void> {
  await guardedUpdate(db, ref, {
    status: "done",
    embeddingModel,
    errorReason: null,
    statusHistory: historyEntry("done", ref.run),
    updatedAt: new Date(),
  });
}

export async function markFailed(db: Database, ref: RunRef, reason: string): Promise<void> {
  await guardedUpdate(db, ref, {
    status: "failed",
    errorReason: reason.slice(0, 2000),
    statusHistory: historyEntry("failed", ref.run),
    updatedAt: new Date(),
  });
}
