import {
  and,
  arrayContained,
  arrayContains,
  arrayOverlaps,
  asc,
  count,
  desc,
  eq,
  inArray,
  ne,
  notInArray,
  or,
  type SQL,
  sql,
} from "drizzle-orm";
import { fairnessKeyOf, fairnessKeySql } from "./admission.ts";
import type { Database } from "./db.ts";
import { compileFilter, type FilterNode, metadataColumns } from "./filters.ts";
import { newId } from "./ids.ts";
import {
  chunks,
  connections,
  DOCUMENT_PRIORITY,
  type DocumentPriority,
  type DocumentRow,
  type DocumentStatus,
  documents,
  type Metadata,
  memories,
  SHORT_TEXT_MEMORY_KEY,
  SHORT_TEXT_MEMORY_SOURCE,
} from "./schema/index.ts";
import { customIdNamespace, inScope, type TagScope } from "./tag-scope.ts";

export type { DocumentRow, DocumentStatus, Metadata };

export const terminalStatuses: DocumentStatus[] = ["done", "failed"];

export interface NewDocumentInput {
  source: string;
  url?: string | null;
  customId?: string | null;
  containerTags: string[];
  /** Tags a new document gets when `containerTags` is empty (a scoped key's first tag); an existing one keeps its own. */
  defaultTags?: string[];
  metadata: Metadata;
  title?: string | null;
  filepath?: string | null;
  entityContext?: string | null;
  /** The end user of the caller's application who added it. */
  endUserId?: string | null;
  file?: { key: string; name: string | null; mimeType: string | null; size: number } | null;
  /** The connection that keeps this document in sync with its source. */
  connectionId?: string | null;
  /** Admission order of its processing run: single adds are interactive, batches, syncs and imports bulk (the default). */
  priority?: DocumentPriority;
}

export interface SaveResult {
  document: DocumentRow;
  /** True when processing must (re)start for `document.processingRun`. */
  process: boolean;
  /**
   * A stored file no document points at after this save (the one the document had before new bytes replaced
   * it, or the copy just written of bytes it already had): the caller releases it.
   */
  unusedFileKey?: string;
  /**
   * The run this save replaced while it had not finished (its workflow may be going): the caller stops it.
   * Its writes are fenced by the run number already; stopping it frees its slot and work sooner.
   */
  supersededRun?: number;
}

/**
 * Creates a document, or, when the customId already exists, updates that document instead of
 * duplicating it: new content (or a failed document) is reprocessed, the same content is not.
 */
export async function saveDocument(
  db: Database,
  input: NewDocumentInput,
  scope: TagScope = null,
): Promise<SaveResult> {
  try {
    return await saveDocumentOnce(db, input, scope);
  } catch (error) {
    if (pgErrorCode(error) !== "23505" || !input.customId) throw error;
  }
  try {
    // Two first-time adds of one customId raced; the loser now finds the winner's row and updates it.
    return await saveDocumentOnce(db, input, scope);
  } catch (error) {
    // Still taken: the key's own namespace holds the customId on a document an admin moved out of its scope.
    if (pgErrorCode(error) === "23505" && input.customId) throw new CustomIdTakenError(input.customId);
    throw error;
  }
}

/**
 * A customId is unique within its namespace (store/tag-scope.ts customIdNamespace): taken only by a document of the
 * caller's own namespace, never by another tenant's.
 */
export class CustomIdTakenError extends Error {
  constructor(readonly customId: string) {
    super(`customId '${customId}' is already in use`);
  }
}

/**
 * A scoped key asked to change a document that also carries container tags outside its scope: another tenant's
 * copy, which only an admin key may change (a scoped key may delete its own share, see removeWithinScope).
 */
export class SharedDocumentError extends Error {
  constructor(
    readonly documentId: string,
    what = "only its container tags within the scope can change (an admin key can change the rest)",
  ) {
    super(`document ${documentId} is shared with container tags outside this key's scope: ${what}`);
  }
}

/** The tags of `tags` outside the scope (none for an admin, whose scope is everything). */
function foreignTags(tags: readonly string[], scope: TagScope): string[] {
  return scope ? tags.filter((t) => !scope.includes(t)) : [];
}

/** The SQLSTATE of a driver error, also when drizzle wrapped it. */
export function pgErrorCode(error: unknown): string | undefined {
  const e = error as { code?: unknown; cause?: { code?: unknown } };
  const code = e?.code ?? e?.cause?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * A sync saved an item of a connection that was deleted meanwhile: nothing is saved. The save holds a share
 * lock on the connection's row, so a delete waits for a save in progress and no save starts after it.
 */
export class ConnectionGoneError extends Error {
  constructor(readonly connectionId: string) {
    super(`the connection ${connectionId} was deleted`);
    this.name = "ConnectionGoneError";
  }
}

async function saveDocumentOnce(db: Database, input: NewDocumentInput, scope: TagScope): Promise<SaveResult> {
  return db.transaction(async (tx) => {
    if (input.connectionId) {
      const [live] = await tx
        .select({ id: connections.id })
        .from(connections)
        .where(eq(connections.id, input.connectionId))
        .for("share");
      if (!live) throw new ConnectionGoneError(input.connectionId);
    }
    const namespace = customIdNamespace(scope);
    const targetTags = input.containerTags.length ? input.containerTags : (input.defaultTags ?? []);
    // The document this customId names for the caller: one within its scope, of its own namespace or carrying
    // one of the tags it writes to (an admin re-adding a tenant's note), its own namespace's first.
    const existing = input.customId
      ? (
          await tx
            .select()
            .from(documents)
            .where(
              and(
                eq(documents.customId, input.customId),
                inScope(scope),
                targetTags.length
                  ? or(
                      eq(documents.customIdNamespace, namespace),
                      arrayOverlaps(documents.containerTags, targetTags),
                    )
                  : eq(documents.customIdNamespace, namespace),
              ),
            )
            .orderBy(...customIdPreference(namespace))
            .limit(1)
            .for("update")
        )[0]
      : undefined;
    if (existing && foreignTags(existing.containerTags, scope).length)
      throw new SharedDocumentError(existing.id);
    if (!existing) {
      const containerTags = input.containerTags.length ? input.containerTags : (input.defaultTags ?? []);
      const [row] = await tx
        .insert(documents)
        .values({
          id: newId(),
          customId: input.customId ?? null,
          customIdNamespace: namespace,
          source: input.source,
          url: input.url ?? null,
          title: input.title ?? null,
          filepath: input.filepath ?? null,
          entityContext: input.entityContext ?? null,
          endUserId: input.endUserId ?? null,
          ...fileColumns(input),
          connectionId: input.connectionId ?? null,
          containerTags,
          metadata: input.metadata,
          status: "queued",
          processingRun: 1,
          priority: input.priority ?? DOCUMENT_PRIORITY.bulk,
          fairnessKey: fairnessKeyOf({ connectionId: input.connectionId, containerTags }),
          statusHistory: [{ status: "queued", at: new Date().toISOString(), run: 1 }],
        })
        .returning();
      return { document: row as DocumentRow, process: true };
    }
    const reprocess = existing.source !== input.source || existing.status === "failed";
    const containerTags = input.containerTags.length ? input.containerTags : existing.containerTags;
    // The same bytes again (their hash is the source): the document keeps its stored copy, which a run in
    // flight may be reading, and the caller deletes the one just written.
    const sameFile = Boolean(input.file && existing.fileKey && existing.source === input.source);
    const file = fileColumns(input);
    if (sameFile) file.fileKey = existing.fileKey;
    const [row] = await tx
      .update(documents)
      .set({
        source: input.source,
        url: input.url ?? null,
        ...file,
        containerTags,
        fairnessKey: fairnessKeyOf({ connectionId: existing.connectionId, containerTags }),
        metadata: { ...existing.metadata, ...input.metadata },
        ...(input.title ? { title: input.title } : {}),
        ...(input.filepath ? { filepath: input.filepath } : {}),
        ...(input.entityContext ? { entityContext: input.entityContext } : {}),
        ...(input.endUserId ? { endUserId: input.endUserId } : {}),
        updatedAt: new Date(),
        ...(reprocess ? requeue(existing, input.priority ?? DOCUMENT_PRIORITY.bulk) : {}),
      })
      .where(eq(documents.id, existing.id))
      .returning();
    const unusedFileKey = sameFile
      ? input.file?.key
      : existing.fileKey && existing.fileKey !== file.fileKey
        ? existing.fileKey
        : undefined;
    return {
      document: row as DocumentRow,
      process: reprocess,
      unusedFileKey,
      ...supersededRunOf(existing, reprocess),
    };
  });
}

/** The run a requeue replaces, when it had not finished (see SaveResult.supersededRun). */
function supersededRunOf(existing: DocumentRow, reprocess: boolean): { supersededRun?: number } {
  return reprocess && !terminalStatuses.includes(existing.status)
    ? { supersededRun: existing.processingRun }
    : {};
}

function fileColumns(input: NewDocumentInput) {
  return {
    fileKey: input.file?.key ?? null,
    fileName: input.file?.name ?? null,
    mimeType: input.file?.mimeType ?? null,
    fileSize: input.file?.size ?? null,
  };
}

/** A new processing run: it waits for admission like a new document, with this priority. */
function requeue(
  existing: DocumentRow,
  priority: DocumentPriority = DOCUMENT_PRIORITY.interactive,
): Partial<DocumentRow> {
  const run = existing.processingRun + 1;
  // The fairness key follows the tags and is set wherever they change, not here.
  return {
    status: "queued",
    processingRun: run,
    priority,
    errorReason: null,
    statusHistory: [...existing.statusHistory, { status: "queued", at: new Date().toISOString(), run }],
  };
}

/**
 * Of several documents one customId names within a scope (its own namespace's, an admin's or a sync's in its
 * tags, another tenant's shared into them), the caller's namespace's comes first, then the latest.
 */
function customIdPreference(namespace: string): SQL[] {
  return [sql`(${documents.customIdNamespace} = ${namespace}) DESC`, desc(documents.updatedAt)];
}

/** Looks a document up by its id or, failing that, its customId (see customIdPreference). */
export async function findDocument(
  db: Database,
  idOrCustomId: string,
  scope: TagScope = null,
): Promise<DocumentRow | undefined> {
  const rows = await db
    .select()
    .from(documents)
    .where(and(or(eq(documents.id, idOrCustomId), eq(documents.customId, idOrCustomId)), inScope(scope)))
    .orderBy(sql`(${documents.id} = ${idOrCustomId}) DESC`, ...customIdPreference(customIdNamespace(scope)))
    .limit(1);
  return rows[0];
}

export interface DocumentPatch {
  content?: string;
  metadata?: Metadata;
  containerTags?: string[];
  customId?: string;
  title?: string;
  filepath?: string;
}

/** Content changes requeue the document; metadata-only changes never touch its chunks. */
export async function updateDocument(
  db: Database,
  idOrCustomId: string,
  patch: DocumentPatch,
  scope: TagScope = null,
): Promise<SaveResult | undefined> {
  return updateDocumentOnce(db, idOrCustomId, patch, scope).catch((error: unknown) => {
    // A new customId already names another document of this one's namespace.
    if (pgErrorCode(error) === "23505" && patch.customId) throw new CustomIdTakenError(patch.customId);
    throw error;
  });
}

function updateDocumentOnce(
  db: Database,
  idOrCustomId: string,
  patch: DocumentPatch,
  scope: TagScope,
): Promise<SaveResult | undefined> {
  return db.transaction(async (tx) => {
    const found = await findDocument(tx as Database, idOrCustomId, scope);
    if (!found) return undefined;
    const [existing] = await tx.select().from(documents).where(eq(documents.id, found.id)).for("update");
    if (!existing) return undefined;
    // A shared document: the key may move it between its own tags; the other tenants' tags, and what they
    // see (content, metadata, title, customId, filepath), stay as they are.
    const foreign = foreignTags(existing.containerTags, scope);
    if (
      foreign.length &&
      (patch.content !== undefined || patch.metadata || patch.customId || patch.title || patch.filepath)
    )
      throw new SharedDocumentError(existing.id);
    const containerTags =
      patch.containerTags && foreign.length
        ? [...new Set([...patch.containerTags, ...foreign])]
        : patch.containerTags;
    const renamed = patch.customId && patch.customId !== existing.customId ? patch.customId : undefined;
    // A renamed document goes into the caller's namespace, as an add by the same key would have made it (an
    // admin's rename leaves it where it is): a document an admin, a sync, an import or a version before
    // namespaces wrote sits in the shared namespace, where the new customId would clash with every tenant's.
    const namespace = scope ? customIdNamespace(scope) : existing.customIdNamespace;
    if (
      renamed &&
      (await customIdHolder(
        tx as Database,
        renamed,
        existing.id,
        namespace,
        scope,
        containerTags ?? existing.containerTags,
      ))
    )
      throw new CustomIdTakenError(renamed);
    const reprocess = patch.content !== undefined && patch.content !== existing.source;
    const [row] = await tx
      .update(documents)
      .set({
        ...(patch.content !== undefined
          ? {
              source: patch.content,
              url: looksLikeUrl(patch.content) ? patch.content : null,
              ...fileColumns({ source: patch.content, containerTags: [], metadata: {} }),
            }
          : {}),
        ...(patch.metadata ? { metadata: { ...existing.metadata, ...patch.metadata } } : {}),
        ...(containerTags
          ? {
              containerTags,
              fairnessKey: fairnessKeyOf({
                connectionId: existing.connectionId,
                containerTags,
              }),
            }
          : {}),
        ...(renamed ? { customId: renamed, customIdNamespace: namespace } : {}),
        ...(patch.title ? { title: patch.title } : {}),
        ...(patch.filepath ? { filepath: patch.filepath } : {}),
        updatedAt: new Date(),
        ...(reprocess ? requeue(existing, DOCUMENT_PRIORITY.interactive) : {}),
      })
      .where(eq(documents.id, existing.id))
      .returning();
    // New content replaces the file too (the document becomes the text or URL given).
    const unusedFileKey = patch.content !== undefined && existing.fileKey ? existing.fileKey : undefined;
    return {
      document: row as DocumentRow,
      process: reprocess,
      unusedFileKey,
      ...supersededRunOf(existing, reprocess),
    };
  });
}

/**
 * Another document the customId already names for the caller, by the rule an add follows (saveDocumentOnce): one in
 * the caller's scope, of the namespace the renamed document goes to or carrying one of its tags. Documents of other
 * tenants, which the caller cannot see, never hold it.
 */
async function customIdHolder(
  tx: Database,
  customId: string,
  exceptId: string,
  namespace: string,
  scope: TagScope,
  tags: readonly string[],
): Promise<boolean> {
  const [row] = await tx
    .select({ id: documents.id })
    .from(documents)
    .where(
      and(
        eq(documents.customId, customId),
        ne(documents.id, exceptId),
        inScope(scope),
        tags.length
          ? or(eq(documents.customIdNamespace, namespace), arrayOverlaps(documents.containerTags, [...tags]))
          : eq(documents.customIdNamespace, namespace),
      ),
    )
    .limit(1);
  return row !== undefined;
}

/** Starts a new processing run of a document as it is (the "reprocess" action). */
export async function requeueDocument(
  db: Database,
  id: string,
  scope: TagScope = null,
): Promise<DocumentRow | undefined> {
  return db.transaction(async (tx) => {
    const [existing] = await tx
      .select()
      .from(documents)
      .where(and(eq(documents.id, id), inScope(scope)))
      .for("update");
    if (!existing) return undefined;
    // One run serves every tenant carrying the document: reprocessing refetches its URL and replaces the chunks
    // the others search. A request that reaches every tenant is for a key that reaches them all, not one tenant's.
    if (foreignTags(existing.containerTags, scope).length)
      throw new SharedDocumentError(
        existing.id,
        "it is processed once for all of them, so only a key whose scope holds all its tags (or an admin key) can reprocess it",
      );
    const [row] = await tx
      .update(documents)
      .set({ updatedAt: new Date(), ...requeue(existing) })
      .where(eq(documents.id, existing.id))
      .returning();
    return row;
  });
}

/** A document's chunks in order, without their vectors. */
export function documentChunks(db: Database, documentId: string) {
  return db
    .select({
      id: chunks.id,
      position: chunks.position,
      content: chunks.content,
      metadata: chunks.metadata,
      embeddingModel: chunks.embeddingModel,
      createdAt: chunks.createdAt,
    })
    .from(chunks)
    .where(eq(chunks.documentId, documentId))
    .orderBy(asc(chunks.position));
}

export function looksLikeUrl(text: string): boolean {
  return /^https?:\/\/\S+$/i.test(text.trim());
}

export type TagMode = "any" | "all";

function tagCondition(column: typeof documents.containerTags, tags: string[] | undefined, mode: TagMode) {
  if (!tags?.length) return undefined;
  return mode === "all" ? arrayContains(column, tags) : arrayOverlaps(column, tags);
}

export interface ListQuery {
  containerTags?: string[];
  tagMode: TagMode;
  sort: "createdAt" | "updatedAt";
  order: "asc" | "desc";
  limit: number;
  page: number;
  statuses?: DocumentStatus[];
  excludeStatuses?: DocumentStatus[];
  /** A metadata filter (compiled here: a malformed one throws FilterError). */
  filters?: FilterNode;
  /** An exact filepath, or a folder when it ends in "/". */
  filepath?: string;
  scope?: TagScope;
}

/**
 * The list's two statements: the page's document ids, and the count of all that match. Both can be answered from
 * the list indexes alone (migration 0017) when the list is narrowed only by tags and statuses; the page's rows are
 * then read for its ids only, not for every row an OFFSET skips.
 */
export function documentListStatements(db: Database, q: ListQuery) {
  const where = and(
    tagCondition(documents.containerTags, q.containerTags, q.tagMode),
    q.statuses ? inArray(documents.status, q.statuses) : undefined,
    q.excludeStatuses ? notInArray(documents.status, q.excludeStatuses) : undefined,
    q.filters ? compileFilter(metadataColumns("documents"), q.filters) : undefined,
    filepathMatches(q.filepath),
    inScope(q.scope),
  );
  const sortColumn = q.sort === "updatedAt" ? documents.updatedAt : documents.createdAt;
  const direction = q.order === "asc" ? asc : desc;
  const order = [direction(sortColumn), direction(documents.id)];
  const pageIds = db
    .select({ id: documents.id })
    .from(documents)
    .where(where)
    .orderBy(...order)
    .limit(q.limit)
    .offset((q.page - 1) * q.limit);
  return { pageIds, order, total: db.select({ total: count() }).from(documents).where(where) };
}

export async function listDocuments(
  db: Database,
  q: ListQuery,
): Promise<{ rows: DocumentRow[]; total: number }> {
  const { pageIds, order, total } = documentListStatements(db, q);
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(documents)
      .where(inArray(documents.id, pageIds))
      .orderBy(...order),
    total,
  ]);
  return { rows, total: Number(totals[0]?.total ?? 0) };
}

export async function deleteDocument(
  db: Database,
  idOrCustomId: string,
  scope: TagScope = null,
): Promise<DeletedDocument | undefined> {
  const found = await findDocument(db, idOrCustomId, scope);
  if (!found) return undefined;
  const [row] = await removeWithinScope(db, eq(documents.id, found.id), scope);
  return row;
}

/** What a delete reports of each document, so the caller can stop the runs that were in flight. */
export interface DeletedDocument {
  id: string;
  customId: string | null;
  status: DocumentStatus;
  processingRun: number;
  admittedRun: number;
  /** Its stored file, for the caller to release (services/document-files.ts). */
  fileKey: string | null;
  /**
   * Still there for other tenants: a scoped key "deleted" a document it shares with tags outside its scope, and
   * only its own tags were removed. Its runs go on and its file stays (see deletedOnly).
   */
  untagged?: boolean;
}

/** The documents a delete really removed (not those only untagged): their runs stop, their files go. */
export function deletedOnly(rows: readonly DeletedDocument[]): DeletedDocument[] {
  return rows.filter((r) => !r.untagged);
}

export const deletedColumns = {
  id: documents.id,
  customId: documents.customId,
  status: documents.status,
  processingRun: documents.processingRun,
  admittedRun: documents.admittedRun,
  fileKey: documents.fileKey,
};

/**
 * Deletes the documents matching `where` within the scope. A scoped key deletes only its own share of a document
 * that other container tags carry too: its tags are removed from it, and the document stays for the others
 * (reported with `untagged`). One transaction.
 */
export function removeWithinScope(db: Database, where: SQL, scope: TagScope): Promise<DeletedDocument[]> {
  if (!scope) return db.delete(documents).where(where).returning(deletedColumns);
  return db.transaction(async (tx) => {
    const wholly = arrayContained(documents.containerTags, [...scope]);
    const deleted = await tx
      .delete(documents)
      .where(and(where, inScope(scope), wholly))
      .returning(deletedColumns);
    let remaining: SQL = sql`${documents.containerTags}`;
    for (const tag of scope) remaining = sql`array_remove(${remaining}, ${tag})`;
    const untagged = await tx
      .update(documents)
      .set({
        containerTags: remaining,
        fairnessKey: fairnessKeySql(remaining),
        updatedAt: new Date(),
      } as never)
      .where(and(where, inScope(scope), sql`NOT (${wholly})`))
      .returning(deletedColumns);
    // The memories those documents were kept as, word for word, in the tags just removed go with the tags
    // (a deleted document takes them by its foreign key).
    if (untagged.length)
      await tx.delete(memories).where(
        and(
          inArray(
            memories.sourceDocumentId,
            untagged.map((r) => r.id),
          ),
          inArray(memories.containerTag, [...scope]),
          sql`${memories.metadata}->>${SHORT_TEXT_MEMORY_KEY} = ${SHORT_TEXT_MEMORY_SOURCE}`,
        ),
      );
    return [...deleted, ...untagged.map((r) => ({ ...r, untagged: true }))];
  });
}

/**
 * Deletes the documents of these ids or customIds within the scope (every document a customId names there); with
 * `underPath`, only those under that filepath (or folder), with `containerTags` only those carrying one of them.
 */
export function deleteDocumentsByIds(
  db: Database,
  ids: string[],
  scope: TagScope = null,
  narrow: { underPath?: string; containerTags?: string[] } = {},
): Promise<DeletedDocument[]> {
  if (!ids.length) return Promise.resolve([]);
  return removeWithinScope(
    db,
    and(
      or(inArray(documents.id, ids), inArray(documents.customId, ids)),
      filepathMatches(narrow.underPath),
      tagCondition(documents.containerTags, narrow.containerTags, "any"),
    ) as SQL,
    scope,
  );
}

/** The documents under a filepath (a folder when it ends in "/"), of any of `containerTags` when given. */
export function deleteDocumentsUnderPath(
  db: Database,
  where: { filepath: string; containerTags?: string[] },
  scope: TagScope = null,
): Promise<DeletedDocument[]> {
  const condition = and(
    tagCondition(documents.containerTags, where.containerTags, "any"),
    filepathMatches(where.filepath),
  );
  return removeWithinScope(db, condition as SQL, scope);
}

/**
 * Documents as search results show them: the columns a result carries, and the text only as far as asked
 * (`full`: includeFullDocs; `unsummarized`: the text of those without a stored summary, which a result's summary
 * is then made from; `none`). A document's text can run to megabytes (a long PDF), and reading it for every
 * result of every search cost ~2 ms per search even for 200-word abstracts.
 */
export async function resultDocuments(
  db: Database,
  ids: string[],
  options: { content: "full" | "unsummarized" | "none"; scope?: TagScope },
): Promise<ResultDocument[]> {
  if (!ids.length) return [];
  const content =
    options.content === "full"
      ? documents.content
      : options.content === "unsummarized"
        ? sql<string | null>`CASE WHEN ${documents.summary} IS NULL THEN ${documents.content} END`
        : sql<string | null>`NULL::text`;
  return db
    .select({
      id: documents.id,
      title: documents.title,
      type: documents.type,
      metadata: documents.metadata,
      containerTags: documents.containerTags,
      filepath: documents.filepath,
      summary: documents.summary,
      createdAt: documents.createdAt,
      updatedAt: documents.updatedAt,
      content,
    })
    .from(documents)
    .where(and(inArray(documents.id, ids), inScope(options.scope ?? null)));
}

export type ResultDocument = Pick<
  DocumentRow,
  | "id"
  | "title"
  | "type"
  | "metadata"
  | "containerTags"
  | "filepath"
  | "summary"
  | "createdAt"
  | "updatedAt"
  | "content"
>;

/** A caller's `filepath`: the exact path, or every path under it when it ends in "/" (as the official SDK documents it). */
function filepathMatches(filepath: string | undefined): SQL | undefined {
  if (!filepath) return undefined;
  return filepath.endsWith("/")
    ? sql`starts_with(${documents.filepath}, ${filepath})`
    : eq(documents.filepath, filepath);
}

export function deleteDocumentsByTags(
  db: Database,
  tags: string[],
  scope: TagScope = null,
): Promise<DeletedDocument[]> {
  if (!tags.length) return Promise.resolve([]);
  return removeWithinScope(db, arrayOverlaps(documents.containerTags, tags), scope);
}

export async function countUnfinished(db: Database): Promise<number> {
  const [row] = await db
    .select({ total: count() })
    .from(documents)
    .where(notInArray(documents.status, terminalStatuses));
  return Number(row?.total ?? 0);
}

/** Documents whose processing has not finished: used by the list-processing endpoint and the reconciler. */
/** Marks a run's workflow as started (idempotent; never moves backwards). */
/** Records that Temporal has the workflows of these runs (one admission pass's): one statement, whatever their number. */
export async function markWorkflowsStarted(
  db: Database,
  runs: readonly { documentId: string; run: number }[],
): Promise<void> {
  if (!runs.length) return;
  await db.execute(sql`
    UPDATE documents SET workflow_run = s.run
      FROM unnest(${sql.param(runs.map((r) => r.documentId))}::text[], ${sql.param(runs.map((r) => r.run))}::int[])
           AS s(id, run)
     WHERE documents.id = s.id AND documents.workflow_run < s.run`);
}

export function unfinishedDocuments(
  db: Database,
  limit = 1000,
  scope: TagScope = null,
): Promise<DocumentRow[]> {
  return db
    .select()
    .from(documents)
    .where(and(notInArray(documents.status, terminalStatuses), inScope(scope)))
    .orderBy(asc(documents.createdAt))
    .limit(limit);
}

/**
 * "Forget that" for documents: deletes the container's documents that are the forgotten text (given by id,
 * or whose whole text is exactly `content`, surrounding whitespace aside), and marks the memories drawn
 * from them in this container forgotten. One transaction; memories kept word for word from them go with
 * them (migration 0011). Answers what was deleted, so the caller can stop runs still in flight.
 */
export function forgetDocumentText(
  db: Database,
  containerTag: string,
  by: { documentIds: string[]; content?: string },
  reason: string | null,
  scope: TagScope = null,
): Promise<DeletedDocument[]> {
  const match = [
    by.documentIds.length ? inArray(documents.id, by.documentIds) : undefined,
    by.content !== undefined ? sql`btrim(${documents.content}) = ${by.content.trim()}` : undefined,
  ].filter((c) => c !== undefined);
  if (!match.length) return Promise.resolve([]);
  return db.transaction(async (tx) => {
    const t = tx as Database;
    const found = await t
      .select({ id: documents.id })
      .from(documents)
      .where(and(arrayContains(documents.containerTags, [containerTag]), or(...match), inScope(scope)));
    if (!found.length) return [];
    const ids = found.map((d) => d.id);
    const now = new Date();
    await t
      .update(memories)
      .set({
        isForgotten: true,
        forgottenAt: now,
        updatedAt: now,
        ...(reason ? { forgetReason: reason } : {}),
      })
      .where(
        and(
          eq(memories.containerTag, containerTag),
          inArray(memories.sourceDocumentId, ids),
          eq(memories.isForgotten, false),
        ),
      );
    // Forgotten in this container: a document other containers carry too stays theirs, without this tag.
    return removeWithinScope(t, inArray(documents.id, ids), [containerTag]);
  });
}
