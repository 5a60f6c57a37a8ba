// A store filled the way the service fills it, for the churn benchmark (bench/churn.ts) and for any
// measurement that needs "imported" data rather than a bulk-loaded table: each document goes through the
// store functions of the API and the worker in their order (saveDocument → admitRuns → markWorkflowsStarted
// → enterStage("extracting") → saveProcessedText with its chunks, vectors and short-text memory), updates
// through updateDocument + a new run, deletes through deleteDocument. Chunk texts and vectors come from the
// search benchmark's SciFact-derived corpus and its vector cache (bench/lib/vector-cache.ts), so no model runs:
// fill the cache first with `npx tsx bench/lib/search-vectors.ts --chunks N` if it holds fewer texts.

import { sql } from "drizzle-orm";
import { admitRuns } from "../../store/admission.ts";
import { type Database, queryRows } from "../../store/db.ts";
import { deleteDocument, markWorkflowsStarted, saveDocument, updateDocument } from "../../store/documents.ts";
import { enterStage, saveProcessedText } from "../../store/processing.ts";
import { readCorpus } from "./corpus.ts";
import { progress } from "./progress.ts";
import { searchChunkDocuments } from "./search-corpus.ts";
import { cachedVectors } from "./vector-cache.ts";

/** The model whose vectors the search benchmark caches (the service's default embedder). */
export const CHURN_SPACE = { name: "bge-small-en-v1.5", dimension: 384 } as const;

/** Chunk texts with their cached vectors; a document's pieces are indices into it. */
export interface TextPool {
  texts: string[];
  vectors: Float32Array[];
}

/** The first `size` chunk texts of the search corpus and their vectors, all from the cache. */
export async function loadTextPool(size: number, space = CHURN_SPACE): Promise<TextPool> {
  const texts = searchChunkDocuments(readCorpus(), size).flatMap((d) => d.pieces);
  const cached = await cachedVectors({
    model: space.name,
    dimension: space.dimension,
    texts,
    embed: () => {
      throw new Error(
        `the vector cache lacks some of the first ${size} corpus texts: run npx tsx bench/lib/search-vectors.ts --chunks ${size}`,
      );
    },
  });
  return { texts, vectors: cached.vectors };
}

/** One document: its container tag and its chunks (indices into the pool, in order). */
export interface PlannedDocument {
  tag: string;
  /** More container tags the document carries (bench/search-imported.ts: one tag shared by every document). */
  extraTags?: string[];
  /** The document's metadata (bench/search-imported.ts: a project and a team, for its filtered searches). */
  metadata?: Record<string, string>;
  pieces: number[];
}

export const tagName = (i: number, tags: number) =>
  tags <= 1 ? "churn" : `churn-${String(i % tags).padStart(4, "0")}`;

/** `count` documents of `chunksPerDoc` consecutive pool texts each (wrapping), spread round robin over `tags` tags. */
export function plannedDocuments(opts: {
  count: number;
  tags: number;
  chunksPerDoc: number;
  poolSize: number;
  /** Pool index of the first piece (documents of an update take a later stretch). */
  offset?: number;
}): PlannedDocument[] {
  const offset = opts.offset ?? 0;
  return Array.from({ length: opts.count }, (_, i) => ({
    tag: tagName(i, opts.tags),
    pieces: Array.from(
      { length: opts.chunksPerDoc },
      (_, j) => (offset + i * opts.chunksPerDoc + j) % opts.poolSize,
    ),
  }));
}

const sourceOf = (pool: TextPool, doc: PlannedDocument) => doc.pieces.map((p) => pool.texts[p]).join(" ");

/** What the worker's processing of a short text writes (activities/document-processing.ts extractAs). */
async function processRun(
  db: Database,
  pool: TextPool,
  ref: { documentId: string; run: number },
  doc: PlannedDocument,
  memoryMaxChars: number,
) {
  await enterStage(db, ref, "extracting");
  const content = sourceOf(pool, doc);
  const chunkingAt = new Date();
  await saveProcessedText(db, ref, {
    identified: { type: "text", mimeType: "text/plain" },
    extracted: { content, title: null, type: "text", contentHash: String(content.length) },
    pieces: doc.pieces.map((p, position) => ({
      content: pool.texts[p] as string,
      position,
      embedding: Array.from(pool.vectors[p] as Float32Array),
    })),
    model: CHURN_SPACE,
    stages: [
      { status: "chunking", at: chunkingAt },
      { status: "embedding", at: chunkingAt },
      { status: "done", at: new Date() },
    ],
    // The service keeps a one-chunk text of up to SHORT_TEXT_MEMORY_MAX_CHARS (600) as a memory too.
    ...(doc.pieces.length === 1 && content.length <= memoryMaxChars
      ? {
          memory: {
            content,
            isStatic: false,
            containerTags: [doc.tag, ...(doc.extraTags ?? [])],
            endUserId: null,
            metadata: {},
          },
        }
      : {}),
  });
}

/** Admits every waiting run (as the admission loop would) and processes each with its planned content. */
async function admitAndProcess(
  db: Database,
  pool: TextPool,
  planned: Map<string, PlannedDocument>,
  memoryMaxChars: number,
) {
  for (;;) {
    const admitted = await admitRuns(db, { maxInFlight: 1_000_000, limit: 500 });
    if (!admitted.length) return;
    await markWorkflowsStarted(db, admitted);
    for (const run of admitted) {
      const doc = planned.get(run.documentId);
      if (!doc) throw new Error(`document ${run.documentId} was admitted but not planned`);
      await processRun(db, pool, { documentId: run.documentId, run: run.run }, doc, memoryMaxChars);
    }
  }
}

interface FillOptions {
  /** Documents per admission pass (what a batch import of that size does). */
  batch?: number;
  /** Short texts up to this many characters are kept as memories too (the service's default: 600; 0: never). */
  memoryMaxChars?: number;
  label?: string;
}

/** Adds the documents through the API's and the worker's store path; answers their ids in order. */
export async function addDocuments(
  db: Database,
  pool: TextPool,
  docs: readonly PlannedDocument[],
  opts: FillOptions = {},
): Promise<string[]> {
  const batch = opts.batch ?? 100;
  const bar = progress(opts.label ?? "add", docs.length, 15_000);
  const ids: string[] = [];
  for (let i = 0; i < docs.length; i += batch) {
    const planned = new Map<string, PlannedDocument>();
    for (const doc of docs.slice(i, i + batch)) {
      const saved = await saveDocument(db, {
        source: sourceOf(pool, doc),
        containerTags: [doc.tag, ...(doc.extraTags ?? [])],
        metadata: doc.metadata ?? {},
        priority: 1,
      });
      ids.push(saved.document.id);
      planned.set(saved.document.id, doc);
    }
    await admitAndProcess(db, pool, planned, opts.memoryMaxChars ?? 600);
    bar.update(ids.length);
  }
  bar.finish();
  return ids;
}

/** New content for existing documents (PATCH /v3/documents/:id), each then processed again. */
export async function updateDocuments(
  db: Database,
  pool: TextPool,
  updates: readonly { id: string; doc: PlannedDocument }[],
  opts: FillOptions = {},
): Promise<void> {
  const batch = opts.batch ?? 100;
  const bar = progress(opts.label ?? "update", updates.length, 15_000);
  for (let i = 0; i < updates.length; i += batch) {
    const planned = new Map<string, PlannedDocument>();
    for (const u of updates.slice(i, i + batch)) {
      const saved = await updateDocument(db, u.id, { content: sourceOf(pool, u.doc) });
      if (!saved?.process) throw new Error(`update of ${u.id} did not requeue it`);
      planned.set(u.id, u.doc);
    }
    await admitAndProcess(db, pool, planned, opts.memoryMaxChars ?? 600);
    bar.update(Math.min(updates.length, i + batch));
  }
  bar.finish();
}

/** DELETE /v3/documents/:id for each (chunks and memories go with the document). */
export async function deleteDocuments(db: Database, ids: readonly string[], label = "delete"): Promise<void> {
  const bar = progress(label, ids.length, 15_000);
  let done = 0;
  for (const id of ids) {
    if (!(await deleteDocument(db, id))) throw new Error(`document ${id} was not there to delete`);
    bar.update(++done);
  }
  bar.finish();
}

/** Sizes in bytes of a table (heap, TOAST) and of each of its indexes, with live and dead tuple counts. */
export interface TableSizes {
  table: string;
  heap: number;
  toast: number;
  live: number;
  dead: number;
  indexes: Record<string, number>;
}

/**
 * With `countLive`, live rows are counted (`count(*)`) rather than read from the statistics: PGlite does not
 * keep them across a reopen (a store reopened after its fill reported 0 live rows).
 */
export async function tableSizes(
  db: Database,
  table: string,
  opts: { countLive?: boolean } = {},
): Promise<TableSizes> {
  const [t] = await queryRows<{ heap: string; toast: string; live: string; dead: string }>(
    db,
    sql`SELECT pg_relation_size(c.oid) AS heap,
               coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) AS toast,
               coalesce(s.n_live_tup, 0) AS live, coalesce(s.n_dead_tup, 0) AS dead
          FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
         WHERE c.oid = to_regclass(${table})`,
  );
  const idx = await queryRows<{ name: string; size: string }>(
    db,
    sql`SELECT i.relname AS name, pg_relation_size(i.oid) AS size
          FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
         WHERE x.indrelid = to_regclass(${table}) ORDER BY i.relname`,
  );
  const [counted] = opts.countLive
    ? await queryRows<{ live: string }>(db, sql`SELECT count(*) AS live FROM ${sql.identifier(table)}`)
    : [];
  return {
    table,
    heap: Number(t?.heap ?? 0),
    toast: Number(t?.toast ?? 0),
    live: Number(counted?.live ?? t?.live ?? 0),
    dead: Number(t?.dead ?? 0),
    indexes: Object.fromEntries(idx.map((r) => [r.name, Number(r.size)])),
  };
}
