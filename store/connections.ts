import { createHash } from "node:crypto";
import { and, arrayOverlaps, desc, eq, inArray, isNull, or, sql } from "drizzle-orm";
import type { Database } from "./db.ts";
import { type DeletedDocument, deletedColumns } from "./documents.ts";
import { newId } from "./ids.ts";
import {
  type ConnectionItemRow,
  type ConnectionRow,
  type ConnectionStatus,
  connectionItems,
  connections,
  documents,
  type SyncCounts,
  type SyncRunRow,
  type SyncRunStatus,
  syncRuns,
} from "./schema/index.ts";
import type { TagScope } from "./tag-scope.ts";

export type { ConnectionItemRow, ConnectionRow, SyncCounts, SyncRunRow };

export const emptyCounts = (): SyncCounts => ({ added: 0, updated: 0, deleted: 0, unchanged: 0, failed: 0 });

function connectionInScope(scope: TagScope | undefined) {
  return scope ? arrayOverlaps(connections.containerTags, [...scope]) : undefined;
}

export interface NewConnection {
  provider: string;
  containerTags: string[];
  metadata: Record<string, string | number | boolean>;
  sealedSecrets: string | null;
  documentLimit?: number | null;
  syncIntervalMinutes: number;
  redirectUrl?: string | null;
  status?: ConnectionStatus;
}

export async function createConnection(db: Database, input: NewConnection): Promise<ConnectionRow> {
  const [row] = await db
    .insert(connections)
    .values({ id: newId(), ...input })
    .returning();
  return row as ConnectionRow;
}

export async function findConnection(
  db: Database,
  id: string,
  scope: TagScope = null,
): Promise<ConnectionRow | undefined> {
  const [row] = await db
    .select()
    .from(connections)
    .where(and(eq(connections.id, id), connectionInScope(scope)));
  return row;
}

export async function listConnections(
  db: Database,
  filter: { provider?: string; containerTags?: string[] },
  scope: TagScope = null,
): Promise<ConnectionRow[]> {
  return db
    .select()
    .from(connections)
    .where(
      and(
        filter.provider ? eq(connections.provider, filter.provider) : undefined,
        filter.containerTags?.length
          ? arrayOverlaps(connections.containerTags, filter.containerTags)
          : undefined,
        connectionInScope(scope),
      ),
    )
    .orderBy(desc(connections.createdAt));
}

export async function deleteConnection(db: Database, id: string): Promise<ConnectionRow | undefined> {
  const [row] = await db.delete(connections).where(eq(connections.id, id)).returning();
  return row;
}

/**
 * Runs `work` in a transaction holding the connection's row lock (SELECT ... FOR UPDATE), so two processes
 * doing the same thing to one connection (refreshing its token) take turns; `work` writes through `tx`.
 */
export function withConnectionLocked<T>(
  db: Database,
  id: string,
  work: (row: ConnectionRow | undefined, tx: Database) => Promise<T>,
): Promise<T> {
  return db.transaction(async (tx) => {
    const [row] = await tx.select().from(connections).where(eq(connections.id, id)).for("update");
    return work(row, tx as Database);
  });
}

export async function updateConnection(
  db: Database,
  id: string,
  values: Partial<
    Pick<
      ConnectionRow,
      | "metadata"
      | "status"
      | "cursor"
      | "sealedSecrets"
      | "syncIntervalMinutes"
      | "email"
      | "selection"
      | "pickerTokenHash"
      | "pickerTokenExpiresAt"
    >
  >,
): Promise<void> {
  await db
    .update(connections)
    .set({ ...values, updatedAt: new Date() })
    .where(eq(connections.id, id));
}

export async function startSyncRun(
  db: Database,
  input: { connectionId: string; trigger: string; workflowId: string },
): Promise<SyncRunRow> {
  const [row] = await db
    .insert(syncRuns)
    .values({ id: newId(), ...input })
    .returning();
  return row as SyncRunRow;
}

/**
 * Why a running run is waiting (`rate_limited`, `provider_unavailable`), or null once an attempt failed for
 * another reason; a finished run is left alone.
 */
export async function noteSyncRunWait(db: Database, runId: string, errorCode: string | null): Promise<void> {
  await db
    .update(syncRuns)
    .set({ errorCode })
    .where(and(eq(syncRuns.id, runId), eq(syncRuns.status, "running")));
}

/**
 * Ends a run. A run that failed with the generic code `error` keeps the more precise code its last wait noted
 * (the source kept rate limiting, or kept failing), since the workflow that finishes it knows only the failure.
 */
export async function finishSyncRun(
  db: Database,
  runId: string,
  outcome: {
    status: Exclude<SyncRunStatus, "running">;
    counts: SyncCounts;
    errorCode?: string;
    error?: string;
  },
): Promise<void> {
  await db
    .update(syncRuns)
    .set({
      status: outcome.status,
      counts: outcome.counts,
      errorCode:
        outcome.errorCode === "error"
          ? sql`CASE WHEN ${syncRuns.errorCode} IN ('rate_limited', 'provider_unavailable') THEN ${syncRuns.errorCode} ELSE 'error' END`
          : (outcome.errorCode ?? null),
      error: outcome.error?.slice(0, 2000) ?? null,
      finishedAt: new Date(),
    })
    .where(eq(syncRuns.id, runId));
}

/** The newest run of each connection (one query for a list). */
export async function latestSyncRuns(
  db: Database,
  connectionIds: string[],
): Promise<Map<string, SyncRunRow>> {
  if (!connectionIds.length) return new Map();
  const rows = await db
    .selectDistinctOn([syncRuns.connectionId])
    .from(syncRuns)
    .where(inArray(syncRuns.connectionId, connectionIds))
    .orderBy(syncRuns.connectionId, desc(syncRuns.startedAt));
  return new Map(rows.map((r) => [r.connectionId, r]));
}

/** A connection's runs, newest first. */
export async function recentSyncRuns(
  db: Database,
  connectionId: string,
  limit: number,
): Promise<SyncRunRow[]> {
  return db
    .select()
    .from(syncRuns)
    .where(eq(syncRuns.connectionId, connectionId))
    .orderBy(desc(syncRuns.startedAt), desc(syncRuns.id))
    .limit(limit);
}

/** What the connection stored of these items at earlier syncs. */
export async function knownItems(
  db: Database,
  connectionId: string,
  itemIds: string[],
): Promise<Map<string, ConnectionItemRow>> {
  if (!itemIds.length) return new Map();
  const rows = await db
    .select()
    .from(connectionItems)
    .where(and(eq(connectionItems.connectionId, connectionId), inArray(connectionItems.itemId, itemIds)));
  return new Map(rows.map((r) => [r.itemId, r]));
}

/** Items listed again unchanged: they, and the items inside them, are still there. */
export async function markItemsSeen(
  db: Database,
  connectionId: string,
  itemIds: string[],
  runId: string,
): Promise<void> {
  if (!itemIds.length) return;
  await db
    .update(connectionItems)
    .set({ seenRun: runId, missedAt: null })
    .where(
      and(
        eq(connectionItems.connectionId, connectionId),
        or(inArray(connectionItems.itemId, itemIds), inArray(connectionItems.parentItemId, itemIds)),
      ),
    );
}

export async function saveItem(
  db: Database,
  item: {
    connectionId: string;
    itemId: string;
    parentItemId?: string | null;
    version: string;
    documentId: string | null;
    seenRun: string;
  },
): Promise<void> {
  const values = { ...item, parentItemId: item.parentItemId ?? null, updatedAt: new Date(), missedAt: null };
  await db
    .insert(connectionItems)
    .values(values)
    .onConflictDoUpdate({
      target: [connectionItems.connectionId, connectionItems.itemId],
      set: {
        version: values.version,
        documentId: values.documentId,
        seenRun: values.seenRun,
        updatedAt: values.updatedAt,
        parentItemId: values.parentItemId,
        missedAt: null,
      },
    });
}

/**
 * Items under these id prefixes that the source reports unchanged (a 304): still there, as they were.
 * Items this run already saw (listed on an earlier page) are left alone, so nothing is counted twice.
 * Returns how many source items (not counting the items inside them) were kept.
 */
export async function markPrefixesSeen(
  db: Database,
  connectionId: string,
  prefixes: string[],
  runId: string,
  exceptItemIds: string[],
): Promise<number> {
  if (!prefixes.length) return 0;
  const rows = await db
    .update(connectionItems)
    .set({ seenRun: runId, missedAt: null })
    .where(
      and(
        eq(connectionItems.connectionId, connectionId),
        sql`${connectionItems.seenRun} <> ${runId}`,
        or(...prefixes.map((p) => sql`starts_with(${connectionItems.itemId}, ${p})`)),
        exceptItemIds.length ? sql`NOT (${inArray(connectionItems.itemId, exceptItemIds)})` : undefined,
      ),
    )
    .returning({ parentItemId: connectionItems.parentItemId });
  return rows.filter((r) => r.parentItemId === null).length;
}

/**
 * Items of a connection that a complete pass (run) did not list, or that are named as deleted: their
 * documents and records go. Returns the removed document ids, so their workflows can be stopped, and their
 * stored files, to be released.
 */
export async function removeItems(
  db: Database,
  connectionId: string,
  which: { notSeenIn: string } | { itemIds: string[] },
): Promise<{ items: number; documentIds: string[]; fileKeys: string[] }> {
  return db.transaction(async (tx) => {
    const condition =
      "notSeenIn" in which
        ? sql`${connectionItems.seenRun} <> ${which.notSeenIn}`
        : or(
            inArray(connectionItems.itemId, which.itemIds.length ? which.itemIds : [""]),
            inArray(connectionItems.parentItemId, which.itemIds.length ? which.itemIds : [""]),
          );
    const gone = await tx
      .delete(connectionItems)
      .where(and(eq(connectionItems.connectionId, connectionId), condition))
      .returning({ documentId: connectionItems.documentId, parentItemId: connectionItems.parentItemId });
    const documentIds = gone.flatMap((g) => (g.documentId ? [g.documentId] : []));
    // Counted as the source counts them: a mail with its attachments is one item.
    const items = gone.filter((g) => g.parentItemId === null).length;
    const deleted = documentIds.length
      ? await tx
          .delete(documents)
          .where(and(inArray(documents.id, documentIds), eq(documents.connectionId, connectionId)))
          .returning({ fileKey: documents.fileKey })
      : [];
    return { items, documentIds, fileKeys: deleted.flatMap((d) => (d.fileKey ? [d.fileKey] : [])) };
  });
}

/** A source item a complete listing did not return: what the engine asks the source about before deleting. */
export interface MissedItem {
  itemId: string;
  version: string;
  /** When an earlier listing first missed it, if one did and the source could not say it was gone. */
  missedAt: Date | null;
}

/**
 * The items (not those inside them) that run `runId`, a complete pass, did not list, in item order after
 * `after`, `limit` at a time.
 */
export async function itemsMissedBy(
  db: Database,
  connectionId: string,
  runId: string,
  page: { after: string; limit: number },
): Promise<MissedItem[]> {
  return db
    .select({
      itemId: connectionItems.itemId,
      version: connectionItems.version,
      missedAt: connectionItems.missedAt,
    })
    .from(connectionItems)
    .where(
      and(
        eq(connectionItems.connectionId, connectionId),
        isNull(connectionItems.parentItemId),
        sql`${connectionItems.seenRun} <> ${runId}`,
        sql`${connectionItems.itemId} > ${page.after}`,
      ),
    )
    .orderBy(connectionItems.itemId)
    .limit(page.limit);
}

/** How many of the connection's items (not those inside them) run `runId` missed, and how many it holds. */
export async function missedItemCounts(
  db: Database,
  connectionId: string,
  runId: string,
): Promise<{ missed: number; total: number }> {
  const [row] = await db
    .select({
      missed: sql<number>`count(*) FILTER (WHERE ${connectionItems.seenRun} <> ${runId})::int`,
      total: sql<number>`count(*)::int`,
    })
    .from(connectionItems)
    .where(and(eq(connectionItems.connectionId, connectionId), isNull(connectionItems.parentItemId)));
  return { missed: Number(row?.missed ?? 0), total: Number(row?.total ?? 0) };
}

/** Notes that a listing missed these items (at `at`), where no earlier listing had. */
export async function markItemsMissed(
  db: Database,
  connectionId: string,
  itemIds: string[],
  at: Date,
): Promise<void> {
  if (!itemIds.length) return;
  await db
    .update(connectionItems)
    .set({ missedAt: at })
    .where(
      and(
        eq(connectionItems.connectionId, connectionId),
        inArray(connectionItems.itemId, itemIds),
        isNull(connectionItems.missedAt),
      ),
    );
}

/** How many documents the connection holds now (for documentLimit). */
export async function connectionDocumentCount(db: Database, connectionId: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(documents)
    .where(eq(documents.connectionId, connectionId));
  return Number(row?.n ?? 0);
}

/** A document's customId for a source item: readable, unique per connection, within the 255-character limit. */
export function itemCustomId(provider: string, connectionId: string, itemId: string): string {
  const readable = `${provider}:${connectionId}:${itemId}`;
  if (readable.length <= 255) return readable;
  const digest = createHash("sha256").update(itemId).digest("hex").slice(0, 40);
  return `${provider}:${connectionId}:${itemId.slice(0, 150)}#${digest}`;
}

export function deleteConnectionDocuments(db: Database, connectionId: string): Promise<DeletedDocument[]> {
  return db.delete(documents).where(eq(documents.connectionId, connectionId)).returning(deletedColumns);
}

export type { ConnectionStatus };

/** The newest documents synced by these connections (at most `limit`). */
export function connectionsDocuments(db: Database, connectionIds: string[], limit: number) {
  return db
    .select()
    .from(documents)
    .where(inArray(documents.connectionId, connectionIds))
    .orderBy(desc(documents.updatedAt))
    .limit(limit);
}
