// Lists a OneDrive with Graph's delta queries, plus picked single files read by id. Which deltas are
// followed (the pass's "feeds") depends on the scope and the drive:
//
// - the whole drive: the root's delta (/me/drive/root/delta);
// - picked folders on a personal OneDrive: each picked folder's delta (/me/drive/items/{id}/delta);
// - picked folders on OneDrive for Business or a SharePoint library: the root's delta, keeping only what
//   lies inside the picks, because Graph answers a folder's delta there with 501 notSupported ("view.delta
//   can only be called on the root": https://github.com/OneDrive/onedrive-api-docs/issues/214, #842,
//   #1060; the v1.0 reference lists only root routes: https://learn.microsoft.com/en-us/graph/api/driveitem-delta).
//   The drive's type comes from its root item (parentReference.driveType); a folder delta that answers
//   notSupported anyway switches the connection to the root's delta as well.
//
// A sync is one pass in steps:
//
// 1. reconcile: the feeds are settled (the drive's root is read once per connection when picks need it);
//    when the picks changed since the last sync, the files of folders no longer picked (and picked files no
//    longer picked) are reported deleted, unless they still lie in the scope;
// 2. delta: per feed, from the deltaLink the last sync ended with (only what changed) or, the first time, a
//    full enumeration; @odata.nextLink pages are followed and the final @odata.deltaLink kept;
// 3. walk: folders a delta reports (created, renamed, or moved in: Graph then reports the folder, not what
//    is inside it), and folders newly picked on a root feed that already has a deltaLink, are listed
//    through /children and their files reported; folders that left the scope likewise, their files
//    reported deleted;
// 4. files: each picked single file is read by id.
//
// The deltaLinks of a complete pass are its `carry`: the engine keeps them when the sync completes and
// hands them to `initialCursor` next time. A sync that fails starts again from the previous links, which
// only lists the same changes again (versions decide what is fetched).
//
// When Graph answers 410 (the token expired, or the service lost its change history), every feed is
// enumerated again from scratch and the pass's pages say `fullResync`: Graph's instruction is to replace
// local state with the server's, deletes included, so what the pass does not list is gone.
//
// Items are files only (no folders, OneNote notebooks, or items shared from other drives); the id is the
// driveItem id and the version its content hash (else cTag, else eTag: see versionOf), so renames and
// moves do not fetch a file again.

import { z } from "zod";
import { ConnectorConfigError, ItemSkippedError } from "../errors.ts";
import type { FetchedItem, ItemMetadata, ListPage, PickedItem, SourceItem } from "../types.ts";
import {
  apiRoot,
  type DriveItem,
  downloadItem,
  driveDenied,
  GraphError,
  getItem,
  graphJson,
  type ItemPage,
  itemPath,
  type OnedriveContext,
  readableItem,
} from "./graph.ts";
import { desiredScope, drivePath, ScopeCheck, type SyncScope, sameScope, syncScopeSchema } from "./scope.ts";

/** Feed ("root" or a folder id) → the @odata.deltaLink its last complete enumeration ended with. */
const deltaLinksSchema = z.record(z.string(), z.string());

/** What the connector learned about the drive, once per connection. */
const driveSchema = z.object({
  rootId: z.string(),
  /** OneDrive for Business and SharePoint: delta works on the root only. */
  deltaAtRoot: z.boolean(),
});

/** What a complete pass hands to the next one. */
export const onedriveCarrySchema = syncScopeSchema.extend({
  v: z.literal(1),
  links: deltaLinksSchema,
  /** Absent in carries written before the drive was looked at: read again on the next pass. */
  drive: driveSchema.optional(),
});
export type OnedriveCarry = z.infer<typeof onedriveCarrySchema>;

const stepSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("reconcile") }),
  /** url: the nextLink to continue with; null: start from the root's deltaLink (or enumerate it). */
  z.object({
    kind: z.literal("delta"),
    index: z.number().int().min(0),
    url: z.string().nullable(),
    fresh: z.boolean(),
  }),
  /** The first entry of `walks`; url: its next children page. */
  z.object({ kind: z.literal("walk"), url: z.string().nullable() }),
  z.object({ kind: z.literal("files"), index: z.number().int().min(0) }),
]);
type Step = z.infer<typeof stepSchema>;

const walkSchema = z.object({
  folder: z.string(),
  /** add: report its files (it entered the scope); remove: report them deleted (it left). */
  mode: z.enum(["add", "remove"]),
});
type Walk = z.infer<typeof walkSchema>;

export const onedriveCursorSchema = syncScopeSchema.extend({
  v: z.literal(1),
  links: deltaLinksSchema,
  drive: driveSchema.nullable(),
  /** The deltas this pass follows, in order; null until the reconcile step has settled them. */
  feeds: z.array(z.string()).nullable(),
  /** The scope of the last complete pass, until this pass has reconciled the picks with it. */
  previous: syncScopeSchema.nullable(),
  step: stepSchema,
  walks: z.array(walkSchema),
  /** A 410 made this pass enumerate every feed again: it lists everything in scope. */
  resync: z.boolean(),
});
export type OnedriveCursor = z.infer<typeof onedriveCursorSchema>;

/** Picked single files read per listing page. */
const FILES_PER_PAGE = 25;
/** OneNote sections and notebooks: binary formats that cannot be read as documents. */
const ONENOTE = /\.(one|onetoc2|onepkg)$/i;
/** Content types that say nothing about the bytes: the pipeline sniffs those itself. */
const GENERIC_TYPES = new Set(["", "application/octet-stream", "binary/octet-stream"]);

export function initialOnedriveCursor(ctx: OnedriveContext, previous?: OnedriveCarry): OnedriveCursor {
  const scope = desiredScope(ctx);
  // A link of another mode covers another scope: the feeds are enumerated afresh. The reconcile step
  // drops the links of feeds this pass does not follow.
  const links = previous && previous.mode === scope.mode ? { ...previous.links } : {};
  return {
    v: 1,
    ...scope,
    links,
    drive: previous?.drive ?? null,
    feeds: null,
    previous: previous ? { mode: previous.mode, roots: previous.roots, files: previous.files } : null,
    step: { kind: "reconcile" },
    walks: [],
    resync: false,
  };
}

/** A page's items and deletions; the last word on an id wins (Graph may list an item twice). */
class PageBuilder {
  readonly items = new Map<string, SourceItem>();
  readonly deleted = new Set<string>();
  oversized = 0;

  constructor(private readonly ctx: OnedriveContext) {}

  present(item: DriveItem): void {
    if (item.size !== undefined && item.size > this.ctx.config.maxFileBytes) {
      // Grown past the limit: its document (if any) goes rather than going stale.
      this.oversized++;
      this.gone(item.id);
      return;
    }
    this.deleted.delete(item.id);
    this.items.set(item.id, { id: item.id, version: versionOf(item) });
  }

  gone(id: string): void {
    this.items.delete(id);
    this.deleted.add(id);
  }

  get empty(): boolean {
    return this.items.size === 0 && this.deleted.size === 0;
  }

  /** The page; the pass's carry when it is the last one (next null). */
  page(next: OnedriveCursor | null, cursor: OnedriveCursor): ListPage<OnedriveCursor, OnedriveCarry> {
    if (this.oversized)
      this.ctx.log.info(
        { skipped: this.oversized, maxFileBytes: this.ctx.config.maxFileBytes },
        "onedrive: files larger than maxFileBytes are not synced",
      );
    const page: ListPage<OnedriveCursor, OnedriveCarry> = { items: [...this.items.values()], next };
    if (this.deleted.size) page.deleted = [...this.deleted];
    if (cursor.resync) page.fullResync = true;
    if (next === null) page.carry = carryOf(cursor);
    return page;
  }
}

function carryOf(cursor: OnedriveCursor): OnedriveCarry {
  const carry: OnedriveCarry = {
    v: 1,
    mode: cursor.mode,
    roots: cursor.roots,
    files: cursor.files,
    links: cursor.links,
  };
  if (cursor.drive) carry.drive = cursor.drive;
  return carry;
}

/**
 * What changes exactly when the bytes do: the content hash (quickXorHash, on every file of both OneDrive
 * kinds), else the cTag, else the eTag. Delta on OneDrive for Business leaves cTag out while /children and
 * GET have it, so a cTag-first version would differ between listings of the same unchanged file.
 */
export function versionOf(item: DriveItem): string {
  const hashes = item.file?.hashes;
  const hash = hashes?.quickXorHash ?? hashes?.sha256Hash ?? hashes?.sha1Hash;
  if (hash) return `hash:${hash}`;
  return item.cTag ?? item.eTag ?? item.lastModifiedDateTime ?? "unversioned";
}

/** A file the connector syncs: not a folder, notebook, item of another drive, or flagged as malware. */
export function isSyncableFile(item: DriveItem): boolean {
  return Boolean(
    item.file &&
      !item.folder &&
      !item.package &&
      !item.remoteItem &&
      !item.root &&
      !item.malware &&
      !ONENOTE.test(item.name ?? ""),
  );
}

const isFolder = (item: DriveItem) =>
  Boolean((item.folder || item.root) && !item.package && !item.remoteItem);

const feedsOf = (cursor: OnedriveCursor): string[] => cursor.feeds ?? [];

/** Moves to the next step that has work; null when the pass is complete. */
function settle(cursor: OnedriveCursor): OnedriveCursor | null {
  for (;;) {
    const step = cursor.step;
    if (step.kind === "delta" && step.index >= feedsOf(cursor).length)
      cursor.step = { kind: "walk", url: null };
    else if (step.kind === "walk" && cursor.walks.length === 0) cursor.step = { kind: "files", index: 0 };
    else if (step.kind === "files" && step.index >= cursor.files.length) return null;
    else return cursor;
  }
}

function enqueue(cursor: OnedriveCursor, walk: Walk): void {
  if (!cursor.walks.some((w) => w.folder === walk.folder && w.mode === walk.mode)) cursor.walks.push(walk);
}

function deltaStart(ctx: OnedriveContext, feed: string): string {
  return `${apiRoot(ctx)}${itemPath(feed)}/delta?$top=${ctx.config.pageSize}`;
}

/**
 * The drive's root id and whether delta works only there: from the root item's
 * parentReference.driveType ("personal", "business", "documentLibrary":
 * https://learn.microsoft.com/en-us/graph/api/resources/itemreference). Anything but a personal OneDrive
 * gets the root's delta, the only one Graph serves on every kind of drive.
 */
async function lookUpDrive(ctx: OnedriveContext): Promise<z.infer<typeof driveSchema>> {
  let root: DriveItem;
  try {
    root = await graphJson<DriveItem>(ctx, itemPath("root"));
  } catch (error) {
    if (error instanceof GraphError && error.status === 403) throw driveDenied(error);
    throw error;
  }
  return { rootId: root.id, deltaAtRoot: root.parentReference?.driveType !== "personal" };
}

/** The deltas this pass follows: the root for the whole drive or a business drive, else the picked folders. */
async function settleFeeds(ctx: OnedriveContext, cursor: OnedriveCursor): Promise<void> {
  if (cursor.mode === "full") cursor.feeds = ["root"];
  else if (cursor.roots.length === 0) cursor.feeds = [];
  else {
    cursor.drive ??= await lookUpDrive(ctx);
    cursor.feeds = cursor.drive.deltaAtRoot ? ["root"] : [...cursor.roots];
  }
  const feeds = cursor.feeds;
  for (const feed of Object.keys(cursor.links)) if (!feeds.includes(feed)) delete cursor.links[feed];
}

/** The root's delta only lists what changes: folders picked since its last deltaLink are listed by a walk. */
function walkNewPicks(cursor: OnedriveCursor, previous: SyncScope | null): void {
  if (cursor.mode !== "selected" || !previous || previous.mode !== "selected") return;
  if (!feedsOf(cursor).includes("root") || cursor.links.root === undefined) return;
  for (const root of cursor.roots)
    if (!previous.roots.includes(root)) enqueue(cursor, { folder: root, mode: "add" });
}

export async function listOnedrivePage(
  ctx: OnedriveContext,
  input: OnedriveCursor,
): Promise<ListPage<OnedriveCursor, OnedriveCarry>> {
  const cursor: OnedriveCursor = structuredClone(input);
  const out = new PageBuilder(ctx);
  if (cursor.step.kind === "reconcile") {
    await settleFeeds(ctx, cursor);
    cursor.step = { kind: "delta", index: 0, url: null, fresh: false };
    const previous = cursor.previous;
    cursor.previous = null;
    if (previous && !sameScope(previous, cursor)) {
      walkNewPicks(cursor, previous);
      await reconcile(ctx, cursor, previous, out);
    }
    // Deletions go out on a page of their own; otherwise the listing starts in this call.
    if (!out.empty || settle(cursor) === null) return out.page(settle(cursor), cursor);
  }
  const step = cursor.step;
  const next =
    step.kind === "delta"
      ? await deltaPage(ctx, cursor, step, out)
      : step.kind === "walk"
        ? await walkPage(ctx, cursor, step, out)
        : await filesPage(ctx, cursor, step as Extract<Step, { kind: "files" }>, out);
  return out.page(settle(next), cursor);
}

/** The picks changed: what left the scope is reported deleted (what stays in it through another pick is kept). */
async function reconcile(
  ctx: OnedriveContext,
  cursor: OnedriveCursor,
  previous: SyncScope,
  out: PageBuilder,
): Promise<void> {
  // Everything in the drive is in a full scope: nothing to remove.
  if (cursor.mode === "full") return;
  const scope = new ScopeCheck(ctx, cursor, cursor.drive?.rootId);
  const removedRoots =
    previous.mode === "full" ? ["root"] : previous.roots.filter((r) => !cursor.roots.includes(r));
  for (const root of removedRoots) {
    // A folder under a folder that is still picked keeps its files.
    if (root !== "root" && (await scope.folderInScope(root))) continue;
    enqueue(cursor, { folder: root, mode: "remove" });
  }
  if (previous.mode === "selected") {
    for (const file of previous.files) {
      if (cursor.files.includes(file)) continue;
      if (!(await scope.existingInScope(file))) out.gone(file);
    }
  }
  ctx.log.info(
    { removedFolders: removedRoots.length, walks: cursor.walks.length },
    "onedrive: the picked folders and files changed since the last sync",
  );
}

async function deltaPage(
  ctx: OnedriveContext,
  cursor: OnedriveCursor,
  step: Extract<Step, { kind: "delta" }>,
  out: PageBuilder,
): Promise<OnedriveCursor> {
  const feed = feedsOf(cursor)[step.index] as string;
  const link = step.url ?? cursor.links[feed] ?? null;
  // Without a link the feed is enumerated: what is in the scope is all listed, nothing was there before.
  const fresh = step.url ? step.fresh : link === null;
  let page: ItemPage;
  try {
    page = await graphJson<ItemPage>(ctx, link ?? deltaStart(ctx, feed), { deltaExcludeParent: "true" });
  } catch (error) {
    if (!(error instanceof GraphError)) throw error;
    if (error.status === 410) return resyncAll(ctx, cursor, step, error);
    if (feed === "root") {
      if (error.status === 403) throw driveDenied(error);
      throw error;
    }
    if (error.status === 501 && error.code === "notSupported") {
      // A folder's delta on a drive that serves delta only at its root: follow the root from now on.
      ctx.log.warn(
        { folder: feed },
        "onedrive: folder delta not supported on this drive; following the root's",
      );
      cursor.drive = { rootId: cursor.drive?.rootId ?? (await lookUpDrive(ctx)).rootId, deltaAtRoot: true };
      cursor.feeds = ["root"];
      cursor.links = {};
      cursor.step = { kind: "delta", index: 0, url: null, fresh: false };
      return cursor;
    }
    if (error.status === 404 || error.status === 403) {
      // Its files that Graph did not report deleted before keep their documents (they cannot be listed now).
      ctx.log.warn(
        { folder: feed, status: error.status },
        "onedrive: a picked folder no longer exists or can no longer be read; skipping it",
      );
      delete cursor.links[feed];
      cursor.step = { kind: "delta", index: step.index + 1, url: null, fresh: false };
      return cursor;
    }
    throw error;
  }

  const entries = lastOccurrences(page.value ?? []);
  if (cursor.mode === "selected" && feed === "root") {
    await changesAtRoot(ctx, cursor, entries, fresh, out);
  } else if (cursor.mode === "full" || fresh) {
    for (const item of entries) {
      if (item.id === feed) continue;
      if (item.deleted) {
        if (!item.folder) out.gone(item.id);
      } else if (isSyncableFile(item)) out.present(item);
    }
  } else {
    await changesInFolder(ctx, cursor, feed, entries, out);
  }

  const nextLink = page["@odata.nextLink"];
  if (nextLink) {
    cursor.step = { kind: "delta", index: step.index, url: nextLink, fresh };
  } else {
    const deltaLink = page["@odata.deltaLink"];
    if (deltaLink) cursor.links[feed] = deltaLink;
    else delete cursor.links[feed];
    cursor.step = { kind: "delta", index: step.index + 1, url: null, fresh: false };
  }
  return cursor;
}

/**
 * 410 Gone (resyncRequired, syncStateNotFound...): Graph cannot say what changed since the link, and asks
 * for a fresh enumeration after which local state is replaced with the server's, deletes included
 * (https://learn.microsoft.com/en-us/graph/api/driveitem-delta, "Example 2"). Every feed is enumerated
 * again (its Location starts the one that failed), and the pass says `fullResync` so that what it does
 * not list is removed once it completes.
 */
function resyncAll(
  ctx: OnedriveContext,
  cursor: OnedriveCursor,
  step: Extract<Step, { kind: "delta" }>,
  error: GraphError,
): OnedriveCursor {
  const feed = feedsOf(cursor)[step.index] as string;
  ctx.log.warn(
    { feed, code: error.code, feeds: feedsOf(cursor).length },
    "onedrive: delta token expired; enumerating the scope again, what it no longer lists will be removed",
  );
  cursor.resync = true;
  cursor.links = {};
  // The failed feed restarts at Location when it is the first one; the others from scratch.
  const location = step.index === 0 ? error.location : undefined;
  cursor.step = { kind: "delta", index: 0, url: location ?? null, fresh: true };
  return cursor;
}

/**
 * The root's delta of a drive whose picked folders cannot have their own (OneDrive for Business): only
 * files inside the picks count, placed by their ancestry. On this feed a tombstone is a real deletion
 * (a move is reported as the item in its new place). Folders that changed are walked (after an
 * enumeration their files are all listed already): in when they now lie in the scope, out otherwise.
 */
async function changesAtRoot(
  ctx: OnedriveContext,
  cursor: OnedriveCursor,
  entries: DriveItem[],
  fresh: boolean,
  out: PageBuilder,
): Promise<void> {
  const scope = new ScopeCheck(ctx, cursor, cursor.drive?.rootId);
  scope.learn(entries);
  for (const item of entries) {
    if (item.root || item.id === cursor.drive?.rootId) continue;
    if (item.deleted) {
      // A deleted folder's files come as tombstones of their own.
      if (!item.folder) out.gone(item.id);
      continue;
    }
    if (item.remoteItem) continue;
    const inScope = await scope.itemInScope(item);
    if (isFolder(item)) {
      if (!fresh) enqueue(cursor, { folder: item.id, mode: inScope ? "add" : "remove" });
      continue;
    }
    if (!isSyncableFile(item)) continue;
    // Outside the picks: it may have moved out of them (gone for an id the engine does not hold is a no-op).
    if (inScope) out.present(item);
    else out.gone(item.id);
  }
}

/**
 * Changes inside a picked folder since its last deltaLink. An item listed there may have left the folder
 * (moved elsewhere: Graph lists it in its new place, or as deleted); it is checked against the scope, so a
 * file moved from one picked folder to another is not deleted. Folders that moved in or out are walked.
 */
async function changesInFolder(
  ctx: OnedriveContext,
  cursor: OnedriveCursor,
  root: string,
  entries: DriveItem[],
  out: PageBuilder,
): Promise<void> {
  const scope = new ScopeCheck(ctx, cursor, cursor.drive?.rootId);
  const severalPicks = cursor.roots.length + cursor.files.length > 1;
  for (const item of entries) {
    if (item.id === root) continue;
    if (item.deleted) {
      // Deleted here may mean moved out of the folder, or to another pick (Graph's tombstones do not say):
      // a file is simply gone when this is the only pick; otherwise look where the item is now.
      if (item.file && !item.folder && !severalPicks) {
        out.gone(item.id);
        continue;
      }
      const now = await readableItem(ctx, item.id);
      if (!now) {
        // A deleted folder's files come as tombstones of their own.
        if (!item.folder) out.gone(item.id);
        continue;
      }
      const inScope = await scope.itemInScope(now);
      // A folder that moved says nothing about what it holds: walk it where it is now.
      if (isFolder(now)) enqueue(cursor, { folder: now.id, mode: inScope ? "add" : "remove" });
      else if (inScope && isSyncableFile(now)) out.present(now);
      else out.gone(item.id);
      continue;
    }
    if (item.remoteItem) continue;
    const inScope = await scope.itemInScope(item);
    if (isFolder(item)) {
      enqueue(cursor, { folder: item.id, mode: inScope ? "add" : "remove" });
      continue;
    }
    if (!isSyncableFile(item)) continue;
    if (inScope) out.present(item);
    else out.gone(item.id);
  }
}

async function walkPage(
  ctx: OnedriveContext,
  cursor: OnedriveCursor,
  step: Extract<Step, { kind: "walk" }>,
  out: PageBuilder,
): Promise<OnedriveCursor> {
  const walk = cursor.walks[0] as Walk;
  let page: ItemPage;
  try {
    page = await graphJson<ItemPage>(
      ctx,
      step.url ?? `${apiRoot(ctx)}${itemPath(walk.folder)}/children?$top=${ctx.config.pageSize}`,
    );
  } catch (error) {
    if (!(error instanceof GraphError) || (error.status !== 404 && error.status !== 403)) throw error;
    if (walk.mode === "remove")
      ctx.log.warn(
        { folder: walk.folder },
        "onedrive: a folder that left the scope no longer exists; its files cannot be listed to remove them",
      );
    cursor.walks.shift();
    cursor.step = { kind: "walk", url: null };
    return cursor;
  }
  for (const item of page.value ?? []) {
    if (item.deleted || item.remoteItem) continue;
    if (isFolder(item)) {
      // Picked folders under a folder that left the scope stay.
      if (walk.mode === "remove" && cursor.roots.includes(item.id)) continue;
      enqueue(cursor, { folder: item.id, mode: walk.mode });
      continue;
    }
    if (!isSyncableFile(item)) continue;
    if (walk.mode === "add") out.present(item);
    else if (!cursor.files.includes(item.id)) out.gone(item.id);
  }
  const nextLink = page["@odata.nextLink"];
  if (nextLink) cursor.step = { kind: "walk", url: nextLink };
  else {
    cursor.walks.shift();
    cursor.step = { kind: "walk", url: null };
  }
  return cursor;
}

async function filesPage(
  ctx: OnedriveContext,
  cursor: OnedriveCursor,
  step: Extract<Step, { kind: "files" }>,
  out: PageBuilder,
): Promise<OnedriveCursor> {
  const batch = cursor.files.slice(step.index, step.index + FILES_PER_PAGE);
  for (const id of batch) {
    let item: DriveItem | null;
    try {
      item = await getItem(ctx, id);
    } catch (error) {
      if (!(error instanceof GraphError) || error.status !== 403) throw error;
      // Access to the file was taken away: its document stays (as for an item the source will not give).
      ctx.log.warn({ itemId: id }, "onedrive: a picked file can no longer be read; keeping what was synced");
      continue;
    }
    if (!item) out.gone(id);
    else if (isSyncableFile(item)) out.present(item);
    else if (!isFolder(item)) out.gone(id);
  }
  cursor.step = { kind: "files", index: step.index + batch.length };
  return cursor;
}

function lastOccurrences(items: DriveItem[]): DriveItem[] {
  const byId = new Map<string, DriveItem>();
  for (const item of items) {
    if (!item?.id) continue;
    byId.delete(item.id);
    byId.set(item.id, item);
  }
  return [...byId.values()];
}

export async function fetchOnedriveItem(ctx: OnedriveContext, item: SourceItem): Promise<FetchedItem | null> {
  let meta: DriveItem | null;
  try {
    meta = await getItem(ctx, item.id);
  } catch (error) {
    // One file the user may no longer read (a share revoked after the listing): skip it, not the connection.
    if (error instanceof GraphError && error.status === 403)
      throw new ItemSkippedError("no_permission", `OneDrive refused file ${item.id}: ${error.message}`);
    throw error;
  }
  if (!meta)
    throw new ItemSkippedError("not_found", `OneDrive file ${item.id} was deleted after it was listed`);
  if (!isSyncableFile(meta)) return null;
  const { maxFileBytes } = ctx.config;
  const tooLarge = () =>
    new ItemSkippedError(
      "too_large",
      `OneDrive file ${item.id} is larger than maxFileBytes (${maxFileBytes})`,
    );
  if ((meta.size ?? 0) > maxFileBytes) throw tooLarge();
  const bytes = await downloadItem(ctx, meta, maxFileBytes);
  if (!bytes) throw tooLarge();
  const name = meta.name ?? item.id;
  const mimeType = meta.file?.mimeType?.trim();
  const metadata: ItemMetadata = { driveItemId: meta.id, size: bytes.length };
  if (meta.parentReference?.driveId) metadata.driveId = meta.parentReference.driveId;
  if (meta.lastModifiedDateTime) metadata.lastModified = meta.lastModifiedDateTime;
  if (meta.createdDateTime) metadata.created = meta.createdDateTime;
  const author = meta.createdBy?.user?.displayName;
  if (author) metadata.author = author;
  const editor = meta.lastModifiedBy?.user?.displayName;
  if (editor) metadata.lastModifiedBy = editor;
  const folder = drivePath(meta.parentReference?.path);
  return {
    title: name,
    file: {
      bytes,
      name,
      ...(mimeType && !GENERIC_TYPES.has(mimeType.split(";")[0]?.toLowerCase() ?? "") ? { mimeType } : {}),
    },
    ...(meta.webUrl ? { url: meta.webUrl } : {}),
    ...(folder !== undefined ? { filepath: `${folder}/` } : {}),
    metadata,
  };
}

/** The folders (first) and files directly inside a folder, for the picker; null: the drive's root. */
export async function browseOnedrive(ctx: OnedriveContext, parentId: string | null): Promise<PickedItem[]> {
  const folders: PickedItem[] = [];
  const files: PickedItem[] = [];
  let url: string | undefined =
    `${apiRoot(ctx)}${itemPath(parentId ?? "root")}/children?$top=${Math.max(ctx.config.pageSize, 1)}`;
  while (url) {
    let page: ItemPage;
    try {
      page = await graphJson<ItemPage>(ctx, url);
    } catch (error) {
      if (error instanceof GraphError && error.status === 404)
        throw new ConnectorConfigError(`no OneDrive folder with id ${parentId}`);
      if (error instanceof GraphError && error.status === 403) {
        if (parentId === null) throw driveDenied(error);
        throw new ConnectorConfigError(`the OneDrive folder ${parentId} can no longer be read`);
      }
      throw error;
    }
    for (const item of page.value ?? []) {
      if (item.deleted || !item.name) continue;
      if (isFolder(item)) folders.push({ id: item.id, name: item.name, kind: "folder" });
      else if (isSyncableFile(item))
        files.push({
          id: item.id,
          name: item.name,
          kind: "file",
          ...(item.file?.mimeType ? { mimeType: item.file.mimeType } : {}),
        });
    }
    url = page["@odata.nextLink"];
  }
  const byName = (a: PickedItem, b: PickedItem) =>
    a.name.localeCompare(b.name, undefined, { sensitivity: "base" });
  return [...folders.sort(byName), ...files.sort(byName)];
}

/** With tokens: reads the drive, which a sync needs. Before the consent flow there is nothing to check. */
export async function verifyOnedrive(ctx: OnedriveContext): Promise<void> {
  if (!ctx.oauth) return;
  try {
    await graphJson(ctx, "/me/drive");
  } catch (error) {
    if (error instanceof GraphError && error.status === 403) throw driveDenied(error);
    throw error;
  }
}
