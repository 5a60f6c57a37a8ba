import { and, asc, eq, isNull, sql } from "drizzle-orm";
import { type Database, queryRows } from "./db.ts";
import { newId } from "./ids.ts";
import {
  chunks,
  type DocumentRow,
  type DocumentStatus,
  documents,
  type MemoryExtractionRecord,
  type Metadata,
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

/**
 * Replaces the document's chunks in one transaction, so a retry never leaves duplicates; `fileMetadata`,
 * when given, replaces the document's in the same transaction (chunking that hit a cap says so there).
 */
export async function replaceChunks(
  db: Database,
  ref: RunRef,
  pieces: { content: string; position: number; metadata?: Record<string, string | number> }[],
  fileMetadata?: Record<string, string | number | boolean>,
): Promise<number> {
  return db.transaction(async (tx) => {
    await loadRun(tx as Database, ref);
    if (fileMetadata) await guardedUpdate(tx as Database, ref, { fileMetadata });
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
  // The run's last batch becomes searchable with it (chunks.search_tags, migration 0014): written here, these
  // rows are not written again when the document turns done; earlier batches are, by the trigger.
  const doneTags = opts.done
    ? sql`, search_tags = (SELECT container_tags FROM documents WHERE id = ${ref.documentId})`
    : sql``;
  await db.transaction(async (tx) => {
    await loadRun(tx as Database, ref);
    if (vectors.length) {
      await tx.execute(sql`
        UPDATE chunks SET embedding = v.embedding::vector, embedding_model = ${model.name},
               embedding_dimension = ${model.dimension}${doneTags}
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
  // One UPDATE of the document row, fenced by the run: the deletes and inserts below happen only if it matched.
  const run = db
    .update(documents)
    .set({
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
    } as never)
    .where(current(ref))
    .returning({ id: documents.id, containerTags: documents.containerTags });
  // Rows travel as one JSON parameter: no array-literal quoting of arbitrary text, the same on both drivers.
  const pieces = JSON.stringify(
    result.pieces.map((p) => ({
      id: newId(),
      position: p.position,
      content: p.content,
      metadata: p.metadata ?? {},
      embedding: `[${p.embedding.join(",")}]`,
    })),
  );
  // Searchable at once when this run is done (chunks.search_tags, migration 0014); otherwise NULL, and the
  // trigger sets it when the document turns done. Read from `run`: the tags as this statement leaves them.
  const searchTags = last?.status === "done" ? sql`(SELECT container_tags FROM run)` : sql`NULL::text[]`;
  const memory = result.memory;
  const vector = result.pieces[0]?.embedding;
  const keptMemories =
    memory && vector
      ? JSON.stringify(
          memory.containerTags.map((containerTag) => ({ id: newId(), container_tag: containerTag })),
        )
      : "[]";
  // One statement instead of a transaction of five (BEGIN, UPDATE, two DELETEs, INSERT, COMMIT): a statement is
  // atomic by itself. Every part sees the snapshot from before the statement, so the DELETEs remove only earlier rows.
  const [row] = await queryRows<{ matched: number }>(
    db,
    sql`WITH run AS (${run.getSQL()}),
      old_chunks AS (
        DELETE FROM chunks WHERE document_id = ${ref.documentId} AND EXISTS (SELECT 1 FROM run)),
      old_memories AS (
        DELETE FROM memories
         WHERE source_document_id = ${ref.documentId}
           AND metadata->>${SHORT_TEXT_MEMORY_KEY} = ${SHORT_TEXT_MEMORY_SOURCE}
           AND EXISTS (SELECT 1 FROM run)),
      new_memories AS (
        INSERT INTO memories (id, root_id, container_tag, content, is_static, metadata, end_user_id,
                              source_document_id, embedding, embedding_model)
        SELECT m.id, m.id, m.container_tag, ${memory?.content ?? ""}::text, ${memory?.isStatic ?? false}::boolean,
               ${JSON.stringify({ ...memory?.metadata, [SHORT_TEXT_MEMORY_KEY]: SHORT_TEXT_MEMORY_SOURCE })}::jsonb,
               ${memory?.endUserId ?? null}::text, ${ref.documentId}::text,
               ${memory && vector ? `[${vector.join(",")}]` : null}::vector, ${result.model.name}::text
          FROM jsonb_to_recordset(${keptMemories}::jsonb) AS m(id text, container_tag text)
         WHERE EXISTS (SELECT 1 FROM run)),
      new_chunks AS (
        INSERT INTO chunks (id, document_id, position, content, metadata, embedding, embedding_model,
                            embedding_dimension, search_tags)
        SELECT p.id, ${ref.documentId}::text, p.position, p.content, p.metadata, p.embedding::vector,
               ${result.model.name}::text, ${result.model.dimension}::int, ${searchTags}
          FROM jsonb_to_recordset(${pieces}::jsonb) AS p(id text, position int, content text, metadata jsonb,
                                                        embedding text)
         WHERE EXISTS (SELECT 1 FROM run))
    SELECT count(*)::int AS matched FROM run`,
  );
  if (!row?.matched) throw new SupersededRunError(ref.documentId, ref.run);
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
