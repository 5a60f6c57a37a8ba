import { and, desc, eq, inArray, or, type SQL, sql } from "drizzle-orm";
import { type Database, queryRows } from "./db.ts";
import { compileFilter, type FilterNode, metadataColumns } from "./filters.ts";
import { newId } from "./ids.ts";
import { type RunRef, SupersededRunError } from "./processing.ts";
import {
  documents,
  type MemoryExtractionRecord,
  type MemoryFields,
  type MemoryRelation,
  type MemoryRow,
  type Metadata,
  memories,
  memoryFields,
} from "./schema/index.ts";
import { fewIds, inIdList, opaqueFilter } from "./search/exact-rank.ts";
import { commonTerms, keywordTsquery, topKeywordMatches } from "./search/keyword.ts";
import { hnswScanSettings, queryVectorText, type VectorSpace, vectorTerms } from "./search/vector-index.ts";
import type { TagScope } from "./tag-scope.ts";

export type { MemoryRow };

export interface NewMemory {
  content: string;
  isStatic?: boolean;
  metadata?: Metadata;
  forgetAfter?: Date | null;
  forgetReason?: string | null;
  endUserId?: string | null;
  sourceDocumentId?: string | null;
  embedding: number[];
}

/** Inserts memories of one container in one transaction: all or none. */
export async function insertMemories(
  db: Database,
  containerTag: string,
  space: VectorSpace,
  items: NewMemory[],
): Promise<MemoryRow[]> {
  if (!items.length) return [];
  return db.transaction(async (tx) => {
    const rows: MemoryRow[] = [];
    for (const item of items) {
      const id = newId();
      const [row] = await tx
        .insert(memories)
        .values({
          id,
          containerTag,
          content: item.content,
          isStatic: item.isStatic ?? false,
          metadata: item.metadata ?? {},
          forgetAfter: item.forgetAfter ?? null,
          forgetReason: item.forgetReason ?? null,
          endUserId: item.endUserId ?? null,
          sourceDocumentId: item.sourceDocumentId ?? null,
          rootId: id,
          embedding: item.embedding,
          embeddingModel: space.model,
        })
        .returning();
      rows.push(row as MemoryRow);
    }
    return rows;
  });
}

/** The latest version of a memory in a container, found by id (any version's id) or by exact content (surrounding whitespace aside). */
export async function findLatestMemory(
  db: Database,
  containerTag: string,
  by: { id?: string; content?: string },
): Promise<MemoryRow | undefined> {
  if (by.id) {
    const [row] = await db
      .select()
      .from(memories)
      .where(and(eq(memories.id, by.id), eq(memories.containerTag, containerTag)));
    if (!row) return undefined;
    if (row.isLatest) return row;
    const [latest] = await db
      .select()
      .from(memories)
      .where(and(eq(memories.rootId, row.rootId ?? row.id), eq(memories.isLatest, true)));
    return latest;
  }
  if (by.content !== undefined) {
    const [row] = await db
      .select()
      .from(memories)
      .where(
        and(
          eq(memories.containerTag, containerTag),
          sql`btrim(${memories.content}) = ${by.content.trim()}`,
          eq(memories.isLatest, true),
        ),
      )
      // A live one before one already forgotten, then the newest.
      .orderBy(memories.isForgotten, desc(memories.createdAt))
      .limit(1);
    return row;
  }
  return undefined;
}

/** Marks a memory forgotten; returns false when it already was (nothing changes). */
export async function forgetMemory(db: Database, id: string, reason: string | null): Promise<boolean> {
  const updated = await db
    .update(memories)
    .set({
      isForgotten: true,
      forgottenAt: new Date(),
      ...(reason ? { forgetReason: reason } : {}),
      updatedAt: new Date(),
    })
    .where(and(eq(memories.id, id), eq(memories.isForgotten, false)))
    .returning({ id: memories.id });
  return updated.length > 0;
}

/** Whether a memory is still shown: not forgotten and not past its forgetAfter (as of the statement). */
const isLive = sql`NOT ${memories.isForgotten} AND (${memories.forgetAfter} IS NULL OR ${memories.forgetAfter} > now())`;

/**
 * The live latest memories of a container named by these ids (an earlier version's id names its latest version,
 * as DELETE /v4/memories takes it), in the order first named; unknown ids, other containers' and ids outside
 * the scope are left out. A scope is a list of container tags: a memory carries exactly one.
 */
export async function liveMemoriesByIds(
  db: Database,
  containerTag: string,
  ids: readonly string[],
  scope: TagScope = null,
): Promise<MemoryFields[]> {
  if (!ids.length || (scope && !scope.includes(containerTag))) return [];
  const root = sql<string>`coalesce(${memories.rootId}, ${memories.id})`;
  const named = await db
    .select({ id: memories.id, root })
    .from(memories)
    .where(and(inArray(memories.id, [...new Set(ids)]), eq(memories.containerTag, containerTag)));
  if (!named.length) return [];
  const rootOf = new Map(named.map((n) => [n.id, n.root]));
  const rows = await db
    .select(memoryFields)
    .from(memories)
    .where(
      and(
        eq(memories.containerTag, containerTag),
        eq(memories.isLatest, true),
        isLive,
        inArray(root, [...new Set(rootOf.values())]),
      ),
    );
  // A chain's versions share their root: the first id naming any of them places it.
  const position = new Map<string, number>();
  ids.forEach((id, i) => {
    const r = rootOf.get(id);
    if (r !== undefined && !position.has(r)) position.set(r, i);
  });
  const at = (m: MemoryFields) => position.get(m.rootId ?? m.id) ?? 0;
  return rows.sort((a, b) => at(a) - at(b));
}

/**
 * Marks these memories forgotten in one statement (a reason, when given, is stored as their forgetReason) and
 * answers the ids it changed: one forgotten meanwhile, or no longer the latest version, is not changed.
 */
export async function forgetMemories(
  db: Database,
  ids: readonly string[],
  reason: string | null,
): Promise<string[]> {
  if (!ids.length) return [];
  const now = new Date();
  const updated = await db
    .update(memories)
    .set({ isForgotten: true, forgottenAt: now, updatedAt: now, ...(reason ? { forgetReason: reason } : {}) })
    .where(and(inArray(memories.id, [...ids]), eq(memories.isLatest, true), isLive))
    .returning({ id: memories.id });
  return updated.map((u) => u.id);
}

export interface MemoryUpdate {
  content: string;
  embedding: number[];
  metadata?: Metadata;
  /** undefined inherits the previous version's; null clears it. */
  forgetAfter?: Date | null;
  forgetReason?: string | null;
}

/**
 * A new version of a memory: inserted with parentId → the previous version, which stops being the
 * latest. Row-locked so two concurrent updates of one memory chain one after the other.
 */
export async function updateMemory(
  db: Database,
  previousId: string,
  space: VectorSpace,
  update: MemoryUpdate,
): Promise<MemoryRow | undefined> {
  return db.transaction(async (tx) => {
    const previous = await lockLatest(tx as Database, previousId);
    return previous ? insertVersion(tx as Database, previous, space, update) : undefined;
  });
}

async function lockLatest(tx: Database, id: string): Promise<MemoryRow | undefined> {
  const [row] = await tx
    .select()
    .from(memories)
    .where(and(eq(memories.id, id), eq(memories.isLatest, true)))
    .for("update");
  return row;
}

async function insertVersion(
  tx: Database,
  previous: MemoryRow,
  space: VectorSpace,
  update: MemoryUpdate & { isStatic?: boolean; sourceDocumentId?: string | null },
): Promise<MemoryRow> {
  await tx
    .update(memories)
    .set({ isLatest: false, updatedAt: new Date() })
    .where(eq(memories.id, previous.id));
  const forgetAfter = update.forgetAfter === undefined ? previous.forgetAfter : update.forgetAfter;
  const forgetReason =
    update.forgetAfter === null
      ? null
      : update.forgetReason === undefined
        ? previous.forgetReason
        : update.forgetReason;
  const [row] = await tx
    .insert(memories)
    .values({
      id: newId(),
      containerTag: previous.containerTag,
      content: update.content,
      isStatic: update.isStatic ?? previous.isStatic,
      metadata: update.metadata ?? previous.metadata,
      endUserId: previous.endUserId,
      forgetAfter,
      forgetReason,
      version: previous.version + 1,
      parentId: previous.id,
      rootId: previous.rootId ?? previous.id,
      relation: "updates",
      relatedTo: previous.id,
      sourceDocumentId:
        update.sourceDocumentId === undefined ? previous.sourceDocumentId : update.sourceDocumentId,
      embedding: update.embedding,
      embeddingModel: space.model,
    })
    .returning();
  return row as MemoryRow;
}

export interface ExtractedMemory {
  content: string;
  isStatic: boolean;
  embedding: number[];
  relation?: { type: MemoryRelation; memoryId: string };
}

export interface ExtractedForTag {
  containerTag: string;
  items: ExtractedMemory[];
}

/**
 * Writes what memory extraction found for one processing run of a document, in one transaction with
 * the record of it: a retried activity finds the record and writes nothing twice, and a run that a
 * newer one replaced writes nothing at all. "updates" make a new version of the related memory;
 * "extends" and "derives" link a new memory to it. A relation to a memory that is not (or no longer)
 * the latest live one of that container is dropped and the memory stored on its own.
 */
export async function saveExtractedMemories(
  db: Database,
  ref: RunRef,
  space: VectorSpace,
  found: ExtractedForTag[],
  outcome: { status: MemoryExtractionRecord["status"]; reason?: string },
): Promise<{ written: number; alreadyDone: boolean }> {
  return db.transaction(async (tx) => {
    const t = tx as Database;
    const [doc] = await t
      .select({
        memoryExtraction: documents.memoryExtraction,
        endUserId: documents.endUserId,
      })
      .from(documents)
      .where(and(eq(documents.id, ref.documentId), eq(documents.processingRun, ref.run)))
      .for("update");
    if (!doc) throw new SupersededRunError(ref.documentId, ref.run);
    if (doc.memoryExtraction?.run === ref.run)
      return { written: doc.memoryExtraction.memories, alreadyDone: true };
    let written = 0;
    for (const { containerTag, items } of found) {
      for (const item of items) {
        const [duplicate] = await t
          .select({ id: memories.id })
          .from(memories)
          .where(
            and(
              eq(memories.containerTag, containerTag),
              eq(memories.content, item.content),
              eq(memories.isLatest, true),
              eq(memories.isForgotten, false),
            ),
          )
          .limit(1);
        if (duplicate) continue;
        const related = item.relation ? await lockLatest(t, item.relation.memoryId) : undefined;
        const target =
          related && related.containerTag === containerTag && !related.isForgotten ? related : undefined;
        if (target && item.relation?.type === "updates") {
          await insertVersion(t, target, space, {
            content: item.content,
            embedding: item.embedding,
            isStatic: item.isStatic,
            sourceDocumentId: ref.documentId,
          });
        } else {
          const id = newId();
          await t.insert(memories).values({
            id,
            containerTag,
            content: item.content,
            isStatic: item.isStatic,
            endUserId: doc.endUserId,
            rootId: id,
            relation: target ? item.relation?.type : null,
            relatedTo: target ? target.id : null,
            sourceDocumentId: ref.documentId,
            embedding: item.embedding,
            embeddingModel: space.model,
          });
        }
        written++;
      }
    }
    const record: MemoryExtractionRecord = {
      run: ref.run,
      status: outcome.status,
      memories: written,
      ...(outcome.reason ? { reason: outcome.reason.slice(0, 1000) } : {}),
      at: new Date().toISOString(),
    };
    await t.update(documents).set({ memoryExtraction: record }).where(eq(documents.id, ref.documentId));
    return { written, alreadyDone: false };
  });
}

/** Every version of the chains the given memories belong to, oldest first. */
export async function memoryVersions(db: Database, rootIds: string[]): Promise<MemoryFields[]> {
  if (!rootIds.length) return [];
  return db
    .select(memoryFields)
    .from(memories)
    .where(inArray(memories.rootId, rootIds))
    .orderBy(memories.rootId, memories.version);
}

/** Memories that extend or derive from the given ones, and those the given ones point at. */
export async function relatedMemories(db: Database, ids: string[]): Promise<MemoryFields[]> {
  if (!ids.length) return [];
  const pointedAt = await db
    .select({ relatedTo: memories.relatedTo })
    .from(memories)
    .where(inArray(memories.id, ids));
  const targets = pointedAt.flatMap((r) => (r.relatedTo ? [r.relatedTo] : []));
  return db
    .select(memoryFields)
    .from(memories)
    .where(
      targets.length
        ? or(inArray(memories.relatedTo, ids), inArray(memories.id, targets))
        : inArray(memories.relatedTo, ids),
    );
}

export interface MemorySearchQuery {
  text: string;
  /** The query's vector, or the promise of it: the keyword side runs while the query is still being embedded. */
  embedding: number[] | PromiseLike<number[]>;
  space: VectorSpace;
  containerTags?: string[];
  scope: TagScope;
  /** Also forgotten memories and those past forgetAfter. */
  includeForgotten: boolean;
  endUserId?: string;
  /** A filter over the memories' metadata (a bad one throws FilterError). */
  filters?: FilterNode;
  candidates: number;
}

export interface MemoryHit {
  row: MemoryFields;
  similarity: number;
  fused: number;
}

const textArray = (tags: readonly string[]) =>
  sql`ARRAY[${sql.join(
    tags.map((t) => sql`${t}`),
    sql`, `,
  )}]::text[]`;

/** The memories a search may return, as a condition on `memories m`. */
export function memoryConditions(q: MemorySearchQuery): SQL {
  const conditions = [
    sql`m.is_latest`,
    q.containerTags?.length ? sql`m.container_tag = ANY(${textArray(q.containerTags)})` : undefined,
    q.scope ? sql`m.container_tag = ANY(${textArray(q.scope)})` : undefined,
    q.includeForgotten
      ? undefined
      : sql`NOT m.is_forgotten AND (m.forget_after IS NULL OR m.forget_after > now())`,
    q.endUserId ? sql`m.end_user_id = ${q.endUserId}` : undefined,
    q.filters ? compileFilter(metadataColumns("m"), q.filters) : undefined,
  ].filter((c): c is SQL => Boolean(c));
  return sql.join(conditions, sql` AND `);
}

/**
 * Hybrid search over the latest versions of memories: nearest by vector and best by keyword, fused by rank.
 * As in store/search/chunk-search.ts (hybridChunkSearch), the keyword side needs no vector, so it runs first, while the query
 * is still being embedded, and its rows go into the vector side's statement as a value. In a container of 100,000
 * memories the keyword side ranks thousands of matches (p50 16.5 ms in process), as long as the embedding takes.
 */
export async function searchMemories(db: Database, q: MemorySearchQuery): Promise<MemoryHit[]> {
  const pending = Promise.resolve(q.embedding);
  // Observed at once: when the keyword side fails first, a failed embedding must not go unhandled.
  pending.catch(() => undefined);
  const scoped = memoryConditions(q);
  // A filter no index answers, when it keeps few memories of a big tag, is run first and its memories ranked
  // exactly by id (store/search/exact-rank.ts), as store/search/chunk-search.ts does for documents.
  const few = opaqueFilter(q.filters, metadataColumns("m"))
    ? await fewIds(db, sql`SELECT m.id FROM memories m WHERE ${scoped}`)
    : null;
  if (few?.length === 0) return [];
  const where = few ? inIdList(sql`m.id`, few) : scoped;
  const common = await commonTerms(db, "memories");
  const keywordRows = await db.transaction(async (tx) => {
    // Null when the text has no lexeme: then only the vector side ranks.
    const tsq = await keywordTsquery(tx as Database, q.text, common);
    if (tsq === null) return "[]";
    const [row] = await queryRows(
      tx as Database,
      sql`SELECT coalesce(json_agg(k ORDER BY k.rank), '[]')::text AS rows
          FROM (${memoryKeywordSide(where, tsq, q.candidates)}) k`,
    );
    return String(row?.rows ?? "[]");
  });
  const s = memorySearchStatement(q, where, await pending, keywordRows);
  const rows = await db.transaction(async (tx) => {
    await tx.execute(sql.raw(s.settings));
    return queryRows<{ id: string; similarity: number | null; fused: number }>(tx as Database, s.statement);
  });
  if (!rows.length) return [];
  const full = await db
    .select(memoryFields)
    .from(memories)
    .where(
      inArray(
        memories.id,
        rows.map((r) => r.id),
      ),
    );
  const byId = new Map(full.map((m) => [m.id, m]));
  return rows.flatMap((r) => {
    const row = byId.get(r.id);
    return row ? [{ row, similarity: Number(r.similarity ?? 0), fused: Number(r.fused) }] : [];
  });
}

/** The best keyword matches among the memories `where` keeps (GIN + the tuned rank): id, rank, score. */
export function memoryKeywordSide(where: SQL, tsq: string, candidates: number): SQL {
  return topKeywordMatches({ from: sql`memories m`, alias: "m", where, tsq, limit: candidates });
}

/**
 * The vector side and the fusion (by rank) over the keyword side's rows, given as JSON text, in one statement
 * run after `settings`; `byVector` is the vector side alone, for its plan.
 */
export function memorySearchStatement(
  q: Pick<MemorySearchQuery, "space" | "candidates">,
  where: SQL,
  embedding: readonly number[],
  keywordRows: string,
): { settings: string; statement: SQL; byVector: SQL } {
  const v = vectorTerms("m", q.space);
  // Sent once, read at each use (as in store/search/chunk-search.ts): each parameter is parsed on its own.
  const queryVector = sql`(SELECT v FROM query_vector)`;
  const withVector = sql`WITH query_vector AS (SELECT ${queryVectorText(embedding)}${v.cast} AS v)`;
  const byVector = sql`
      SELECT m.id, row_number() OVER (ORDER BY ${v.column} <=> ${queryVector}) AS rank,
             1 - (${v.column} <=> ${queryVector}) AS similarity
      FROM memories m
      WHERE ${v.inSpace} AND ${where}
      ORDER BY ${v.column} <=> ${queryVector}
      LIMIT ${q.candidates}`;
  return {
    settings: hnswScanSettings(q.candidates),
    byVector: sql`${withVector} ${byVector}`,
    statement: sql`
    ${withVector},
    by_vector AS (${byVector}),
    by_keyword AS (SELECT * FROM jsonb_to_recordset(${keywordRows}::jsonb) AS k(id text, rank bigint)),
    fused AS (
      SELECT coalesce(v.id, k.id) AS id, v.similarity,
             coalesce(1.0 / (60 + v.rank), 0) + coalesce(1.0 / (60 + k.rank), 0) AS fused
      FROM by_vector v FULL OUTER JOIN by_keyword k ON v.id = k.id
      ORDER BY fused DESC, id
      LIMIT ${q.candidates}
    )
    -- Only a memory the keyword side alone found is read again, for its similarity (0 in another model's space;
    -- none when it was deleted since the keyword side ran: the rows read next leave it out).
    SELECT f.id, f.fused,
           coalesce(f.similarity,
                    (SELECT CASE WHEN ${v.inSpace} THEN 1 - (${v.column} <=> ${queryVector}) ELSE 0 END
                     FROM memories m WHERE m.id = f.id)) AS similarity
    FROM fused f
    ORDER BY f.fused DESC, f.id`,
  };
}

/** Latest memories of a container, newest first (for listing and profiles). */
export async function latestMemories(
  db: Database,
  containerTag: string,
  options: { includeForgotten?: boolean; limit?: number } = {},
): Promise<MemoryFields[]> {
  const live = options.includeForgotten
    ? undefined
    : sql`NOT ${memories.isForgotten} AND (${memories.forgetAfter} IS NULL OR ${memories.forgetAfter} > now())`;
  return db
    .select(memoryFields)
    .from(memories)
    .where(and(eq(memories.containerTag, containerTag), eq(memories.isLatest, true), live))
    .orderBy(desc(memories.updatedAt))
    .limit(options.limit ?? 100);
}

/**
 * The live latest memories of a container closest to a text's vector (those of another model last),
 * for memory extraction to relate new facts to: what a document may update, extend or derive from.
 */
export async function memoriesNear(
  db: Database,
  containerTag: string,
  space: VectorSpace,
  embedding: number[],
  limit: number,
): Promise<Pick<MemoryRow, "id" | "content" | "isStatic">[]> {
  const v = vectorTerms("m", space);
  const queryVector = sql`${queryVectorText(embedding)}${v.cast}`;
  const rows = await queryRows<{ id: string; content: string; is_static: boolean }>(
    db,
    sql`SELECT m.id, m.content, m.is_static FROM memories m
        WHERE m.container_tag = ${containerTag} AND m.is_latest AND NOT m.is_forgotten
          AND (m.forget_after IS NULL OR m.forget_after > now())
        ORDER BY CASE WHEN ${v.inSpace} THEN ${v.column} <=> ${queryVector} ELSE 3 END, m.updated_at DESC
        LIMIT ${limit}`,
  );
  return rows.map((r) => ({ id: r.id, content: r.content, isStatic: r.is_static }));
}

/**
 * A container's profile facts: its latest, unforgotten, unexpired memories, long-lived (isStatic) and
 * others, newest first. `filters` is a metadata filter (compiled here; a bad one throws FilterError).
 */
export async function profileFacts(
  db: Database,
  request: { containerTag: string; filters?: FilterNode; staticLimit: number; dynamicLimit: number },
): Promise<{ static: string[]; dynamic: string[] }> {
  const filter = request.filters ? compileFilter(metadataColumns("memories"), request.filters) : undefined;
  const live = and(
    eq(memories.containerTag, request.containerTag),
    eq(memories.isLatest, true),
    eq(memories.isForgotten, false),
    sql`(${memories.forgetAfter} IS NULL OR ${memories.forgetAfter} > now())`,
    filter,
  );
  const newest = (isStatic: boolean, limit: number) =>
    db
      .select({ content: memories.content })
      .from(memories)
      .where(and(live, eq(memories.isStatic, isStatic)))
      .orderBy(desc(memories.updatedAt))
      .limit(limit);
  const [facts, recent] = await Promise.all([
    newest(true, request.staticLimit),
    newest(false, request.dynamicLimit),
  ]);
  return { static: facts.map((f) => f.content), dynamic: recent.map((f) => f.content) };
}
