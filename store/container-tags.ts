// Whole-container operations: deleting a container tag, and reading/writing a container for export
// and import. Documents carry an array of tags (a document may be shared between containers);
// memories carry exactly one.

import { and, arrayContained, arrayContains, asc, count, eq, inArray, sql } from "drizzle-orm";
import { fairnessKeySql } from "./admission.ts";
import { type Database, queryRows } from "./db.ts";
import {
  connections,
  containerTagSettings,
  type DocumentStatus,
  documents,
  memories,
  memoryFields,
  type NewDocumentRow,
  type NewMemoryRow,
} from "./schema/index.ts";
import { customIdNamespace } from "./tag-scope.ts";

const hasTag = (tag: string) => arrayContains(documents.containerTags, [tag]);

export interface TagDeletion {
  /** Documents that carried only this tag: deleted (their chunks by cascade). */
  deletedDocuments: { id: string; status: DocumentStatus; processingRun: number; admittedRun: number }[];
  /** Documents shared with other tags: the tag was removed, the rest of the document stays. */
  untaggedDocuments: number;
  /** Every version of every memory of the tag. */
  deletedMemories: number;
  /** Stored files of the deleted documents that no remaining document references. */
  unreferencedFileKeys: string[];
  /** Connections that synced into this tag only: deleted (their items and runs by cascade); their syncs must stop. */
  deletedConnectionIds: string[];
  /** The tag had settings (a name, entity context, buckets): they went with it. */
  deletedSettings: boolean;
}

/** Removes a container tag from the database in one transaction; stored files are the caller's to delete. */
export async function deleteContainerTag(db: Database, tag: string): Promise<TagDeletion> {
  return db.transaction(async (tx) => {
    const deleted = await tx
      .delete(documents)
      .where(and(hasTag(tag), arrayContained(documents.containerTags, [tag])))
      .returning({
        id: documents.id,
        status: documents.status,
        processingRun: documents.processingRun,
        admittedRun: documents.admittedRun,
        fileKey: documents.fileKey,
      });
    const untagged = await tx
      .update(documents)
      .set({
        containerTags: sql`array_remove(${documents.containerTags}, ${tag})`,
        // The share of admission slots follows the first tag left (store/admission.ts, fairnessKeyOf).
        fairnessKey: fairnessKeySql(sql`array_remove(${documents.containerTags}, ${tag})`),
        // Memory extraction's diagnostics name the tags it had problems with: nothing may name this one.
        memoryExtraction: sql`CASE WHEN strpos(${documents.memoryExtraction}->>'reason', ${tag}) > 0
          THEN ${documents.memoryExtraction} - 'reason' ELSE ${documents.memoryExtraction} END`,
        updatedAt: new Date(),
      })
      .where(hasTag(tag))
      .returning({ id: documents.id });
    const removedMemories = await tx
      .delete(memories)
      .where(eq(memories.containerTag, tag))
      .returning({ id: memories.id });
    const goneConnections = await tx
      .delete(connections)
      .where(
        and(
          arrayContains(connections.containerTags, [tag]),
          arrayContained(connections.containerTags, [tag]),
        ),
      )
      .returning({ id: connections.id });
    await tx
      .update(connections)
      .set({ containerTags: sql`array_remove(${connections.containerTags}, ${tag})`, updatedAt: new Date() })
      .where(arrayContains(connections.containerTags, [tag]));
    const settingsGone = await tx
      .delete(containerTagSettings)
      .where(eq(containerTagSettings.containerTag, tag))
      .returning({ tag: containerTagSettings.containerTag });
    const keys = [...new Set(deleted.flatMap((d) => (d.fileKey ? [d.fileKey] : [])))];
    const stillUsed = await referencedFileKeys(tx as Database, keys);
    return {
      deletedDocuments: deleted.map(({ id, status, processingRun, admittedRun }) => ({
        id,
        status,
        processingRun,
        admittedRun,
      })),
      untaggedDocuments: untagged.length,
      deletedMemories: removedMemories.length,
      unreferencedFileKeys: keys.filter((k) => !stillUsed.has(k)),
      deletedConnectionIds: goneConnections.map((c) => c.id),
      deletedSettings: settingsGone.length > 0,
    };
  });
}

/** How many documents there are, and how many container tags hold any document or memory (before a reset). */
export async function contentCounts(db: Database): Promise<{ documents: number; tags: number }> {
  const [row] = await queryRows<{ documents: number | string; tags: number | string }>(
    db,
    sql`SELECT (SELECT count(*) FROM documents) AS documents,
               (SELECT count(*) FROM (SELECT unnest(container_tags) FROM documents
                                      UNION SELECT container_tag FROM memories) t) AS tags`,
  );
  return { documents: Number(row?.documents ?? 0), tags: Number(row?.tags ?? 0) };
}

/** Ids of up to `limit` documents of any tag (an organisation reset deletes them a batch at a time). */
export async function someDocumentIds(db: Database, limit: number): Promise<string[]> {
  const rows = await db.select({ id: documents.id }).from(documents).orderBy(asc(documents.id)).limit(limit);
  return rows.map((r) => r.id);
}

/** Deletes every memory, every version (an organisation reset); answers how many rows went. */
export async function deleteAllMemories(db: Database): Promise<number> {
  const [row] = await queryRows<{ n: number | string }>(
    db,
    sql`WITH gone AS (DELETE FROM memories RETURNING 1) SELECT count(*) AS n FROM gone`,
  );
  return Number(row?.n ?? 0);
}

/** The given file keys that some document still references. */
export async function referencedFileKeys(db: Database, keys: string[]): Promise<Set<string>> {
  const used = new Set<string>();
  for (const part of slices(keys, 500)) {
    const rows = await db
      .selectDistinct({ key: documents.fileKey })
      .from(documents)
      .where(inArray(documents.fileKey, part));
    for (const r of rows) if (r.key) used.add(r.key);
  }
  return used;
}

export async function countTag(db: Database, tag: string): Promise<{ documents: number; memories: number }> {
  const [docs] = await db.select({ n: count() }).from(documents).where(hasTag(tag));
  const [mems] = await db.select({ n: count() }).from(memories).where(eq(memories.containerTag, tag));
  return { documents: Number(docs?.n ?? 0), memories: Number(mems?.n ?? 0) };
}

/** The stored fields of a document that an export carries (no segments, chunks or status history: processing remakes them). */
const exportedDocumentColumns = {
  id: documents.id,
  customId: documents.customId,
  title: documents.title,
  type: documents.type,
  source: documents.source,
  url: documents.url,
  filepath: documents.filepath,
  entityContext: documents.entityContext,
  endUserId: documents.endUserId,
  metadata: documents.metadata,
  fileMetadata: documents.fileMetadata,
  fileKey: documents.fileKey,
  fileName: documents.fileName,
  mimeType: documents.mimeType,
  fileSize: documents.fileSize,
  summary: documents.summary,
  content: documents.content,
  containerTags: documents.containerTags,
  connectionId: documents.connectionId,
  memoryExtraction: documents.memoryExtraction,
  status: documents.status,
  errorReason: documents.errorReason,
  processingRun: documents.processingRun,
  createdAt: documents.createdAt,
  updatedAt: documents.updatedAt,
};

export type ExportedDocumentRow = Awaited<ReturnType<typeof documentsPage>>[number];

/** One page of a tag's documents in id order, after `afterId` (keyset paging: no offset scans). */
export function documentsPage(db: Database, tag: string, afterId: string | null, limit: number) {
  return db
    .select(exportedDocumentColumns)
    .from(documents)
    .where(and(hasTag(tag), afterId === null ? undefined : sql`${documents.id} > ${afterId}`))
    .orderBy(asc(documents.id))
    .limit(limit);
}

export type ExportedMemoryRow = Awaited<ReturnType<typeof memoriesPage>>[number];
export interface MemoryCursor {
  root: string;
  version: number;
  id: string;
}

const chainOf = sql<string>`coalesce(${memories.rootId}, ${memories.id})`;

/** One page of a tag's memories, every version, ordered by chain (rootId) then version. */
export function memoriesPage(db: Database, tag: string, after: MemoryCursor | null, limit: number) {
  return db
    .select({ ...memoryFields, chain: chainOf })
    .from(memories)
    .where(
      and(
        eq(memories.containerTag, tag),
        after === null
          ? undefined
          : sql`(${chainOf}, ${memories.version}, ${memories.id}) > (${after.root}, ${after.version}, ${after.id})`,
      ),
    )
    .orderBy(chainOf, asc(memories.version), asc(memories.id))
    .limit(limit);
}

/** Which of these ids exist in the table. */
export async function existingIds(db: Database, table: "documents" | "memories", ids: string[]) {
  const found = new Set<string>();
  const column = table === "documents" ? documents.id : memories.id;
  for (const part of slices([...new Set(ids)], 500)) {
    const rows = await db
      .select({ id: column })
      .from(table === "documents" ? documents : memories)
      .where(inArray(column, part));
    for (const r of rows) found.add(r.id);
  }
  return found;
}

/**
 * customId → id of the documents holding these customIds in the shared namespace, the one an (admin-only)
 * import writes into (store/tag-scope.ts customIdNamespace).
 */
export async function customIdHolders(db: Database, customIds: string[]): Promise<Map<string, string>> {
  const holders = new Map<string, string>();
  for (const part of slices([...new Set(customIds)], 500)) {
    const rows = await db
      .select({ id: documents.id, customId: documents.customId })
      .from(documents)
      .where(
        and(inArray(documents.customId, part), eq(documents.customIdNamespace, customIdNamespace(null))),
      );
    for (const r of rows) if (r.customId) holders.set(r.customId, r.id);
  }
  return holders;
}

/**
 * Writes imported documents in one transaction. Rows whose id exists are skipped (ON CONFLICT DO
 * NOTHING), so importing the same export twice changes nothing; a customId held by another
 * document fails the whole transaction (unique violation).
 */
export async function insertImportedDocuments(
  db: Database,
  rows: NewDocumentRow[],
): Promise<{ id: string; processingRun: number }[]> {
  if (!rows.length) return [];
  return db.transaction(async (tx) => {
    const inserted: { id: string; processingRun: number }[] = [];
    for (const part of slices(rows, 100)) {
      inserted.push(
        ...(await tx
          .insert(documents)
          .values(part)
          .onConflictDoNothing({ target: documents.id })
          .returning({ id: documents.id, processingRun: documents.processingRun })),
      );
    }
    return inserted;
  });
}

/**
 * Writes imported memories (one transaction per call), skipping ids that exist. A memory keeps its
 * sourceDocumentId only when that document exists; otherwise the link is dropped (null).
 */
export async function insertImportedMemories(db: Database, rows: NewMemoryRow[]): Promise<number> {
  if (!rows.length) return 0;
  return db.transaction(async (tx) => {
    const sources = rows.flatMap((m) => (m.sourceDocumentId ? [m.sourceDocumentId] : []));
    const present = await existingIds(tx as Database, "documents", sources);
    let inserted = 0;
    for (const part of slices(rows, 100)) {
      const values = part.map((m) => ({
        ...m,
        sourceDocumentId: m.sourceDocumentId && present.has(m.sourceDocumentId) ? m.sourceDocumentId : null,
      }));
      const written = await tx
        .insert(memories)
        .values(values)
        .onConflictDoNothing({ target: memories.id })
        .returning({ id: memories.id });
      inserted += written.length;
    }
    return inserted;
  });
}

function slices<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
