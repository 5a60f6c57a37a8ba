// Lists a OneDrive with Graph's delta queries: the whole drive (/me/drive/root/delta) or each picked folder
// (/me/drive/items/{id}/delta), plus picked single files read by id. A sync is one pass in steps:
//
// 1. reconcile: when the picks changed since the last sync, the files of folders no longer picked (and
//    picked files no longer picked) are reported deleted, unless they still lie in the scope;
// 2. delta: per root, from the deltaLink the last sync ended with (only what changed) or, the first time, a
//    full enumeration; @odata.nextLink pages are followed and the final @odata.deltaLink kept;
// 3. walk: folders a picked folder's delta reports (created, renamed, or moved in: Graph then reports the
//    folder, not what is inside it) are listed through /children and their files reported; folders that
//    left the scope likewise, their files reported deleted;
// 4. files: each picked single file is read by id.
//
// The deltaLinks of a complete pass are its `carry`: the engine keeps them when the sync completes and
// hands them to `initialCursor` next time. A sync that fails starts again from the previous links, which
// only lists the same changes again (versions decide what is fetched).
//
// Items are files only (no folders, OneNote notebooks, or items shared from other drives); the id is the
// driveItem id and the version its content hash (else cTag, else eTag: see versionOf), so renames and
// moves do not fetch a file again.

import { z } from "zod";
import { ConnectorConfigError } from "../errors.ts";
import type { FetchedItem, ItemMetadata, ListPage, PickedItem, SourceItem } from "../types.ts";
import {
  apiRoot,
  type DriveItem,
  downloadItem,
  GraphError,
  getItem,
  graphJson,
  type ItemPage,
  itemPath,
  type OnedriveContext,
} from "./graph.ts";
import { desiredScope, drivePath, ScopeCheck, type SyncScope, sameScope, syncScopeSchema } from "./scope.ts";

/** Root ("root" or a folder id) → the @odata.deltaLink its last complete enumeration ended with. */
const deltaLinksSchema = z.record(z.string(), z.string());

/** What a complete pass hands to the next one. */
export const onedriveCarrySchema = syncScopeSchema.extend({
  v: z.literal(1),
  links: deltaLinksSchema,
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
  /** The scope of the last complete pass, until this pass has reconciled the picks with it. */
  previous: syncScopeSchema.nullable(),
  step: stepSchema,
  walks: z.array(walkSchema),
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
  const links: Record<string, string> = {};
  if (previous && previous.mode === scope.mode) {
    for (const root of scope.roots) {
      const link = previous.links[root];
      if (link !== undefined) links[root] = link;
    }
  }
  return {
    v: 1,
    ...scope,
    links,
    previous: previous ? { mode: previous.mode, roots: previous.roots, files: previous.files } : null,
    step: { kind: "reconcile" },
    walks: [],
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
    if (next === null) page.carry = carryOf(cursor);
    return page;
  }
}

function carryOf(cursor: OnedriveCursor): OnedriveCarry {
  return { v: 1, mode: cursor.mode, roots: cursor.roots, files: cursor.files, links: cursor.links };
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

/** Moves to the next step that has work; null when the pass is complete. */
function settle(cursor: OnedriveCursor): OnedriveCursor | null {
  for (;;) {
    const step = cursor.step;
    if (step.kind === "delta" && step.index >= cursor.roots.length) cursor.step = { kind: "walk", url: null };
    else if (step.kind === "walk" && cursor.walks.length === 0) cursor.step = { kind: "files", index: 0 };
    else if (step.kind === "files" && step.index >= cursor.files.length) return null;
    else return cursor;
  }
}

function enqueue(cursor: OnedriveCursor, walk: Walk): void {
  if (!cursor.walks.some((w) => w.folder === walk.folder && w.mode === walk.mode)) cursor.walks.push(walk);
}

function deltaStart(ctx: OnedriveContext, root: string): string {
  return `${apiRoot(ctx)}${itemPath(root)}/delta?$top=${ctx.config.pageSize}`;
}

export async function listOnedrivePage(
  ctx: OnedriveContext,
  input: OnedriveCursor,
): Promise<ListPage<OnedriveCursor, OnedriveCarry>> {
  const cursor: OnedriveCursor = structuredClone(input);
  const out = new PageBuilder(ctx);
  if (cursor.step.kind === "reconcile") {
    cursor.step = { kind: "delta", index: 0, url: null, fresh: false };
    const previous = cursor.previous;
    cursor.previous = null;
    if (previous && !sameScope(previous, cursor)) await reconcile(ctx, cursor, previous, out);
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
  const scope = new ScopeCheck(ctx, cursor);
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
  const root = cursor.roots[step.index] as string;
  const link = step.url ?? cursor.links[root] ?? null;
  // Without a link the root is enumerated: everything listed is in the scope, nothing was there before.
  const fresh = step.url ? step.fresh : link === null;
  let page: ItemPage;
  try {
    page = await graphJson<ItemPage>(ctx, link ?? deltaStart(ctx, root), { deltaExcludeParent: "true" });
  } catch (error) {
    if (!(error instanceof GraphError)) throw error;
    // A fresh enumeration refused as well: give up for now (the engine retries the page later).
    if (error.status === 410 && !(step.url && step.fresh)) {
      // The token is too old (or the service lost its state): Graph starts a fresh enumeration at Location.
      // Files deleted while the token was out of date are not reported by it.
      ctx.log.warn({ root, code: error.code }, "onedrive: delta token expired, enumerating the folder again");
      delete cursor.links[root];
      cursor.step = {
        kind: "delta",
        index: step.index,
        url: error.location ?? deltaStart(ctx, root),
        fresh: true,
      };
      return cursor;
    }
    if (error.status === 404 && root !== "root") {
      // Its files that Graph did not report deleted before keep their documents (they cannot be listed now).
      ctx.log.warn({ folder: root }, "onedrive: a picked folder no longer exists; skipping it");
      delete cursor.links[root];
      cursor.step = { kind: "delta", index: step.index + 1, url: null, fresh: false };
      return cursor;
    }
    throw error;
  }

  const entries = lastOccurrences(page.value ?? []);
  if (cursor.mode === "full" || fresh) {
    for (const item of entries) {
      if (item.id === root) continue;
      if (item.deleted) {
        if (!item.folder) out.gone(item.id);
      } else if (isSyncableFile(item)) out.present(item);
    }
  } else {
    await changesInFolder(ctx, cursor, root, entries, out);
  }

  const nextLink = page["@odata.nextLink"];
  if (nextLink) {
    cursor.step = { kind: "delta", index: step.index, url: nextLink, fresh };
  } else {
    const deltaLink = page["@odata.deltaLink"];
    if (deltaLink) cursor.links[root] = deltaLink;
    else delete cursor.links[root];
    cursor.step = { kind: "delta", index: step.index + 1, url: null, fresh: false };
  }
  return cursor;
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
  const scope = new ScopeCheck(ctx, cursor);
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
      const now = await getItem(ctx, item.id);
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
    if (!(error instanceof GraphError) || error.status !== 404) throw error;
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
    const item = await getItem(ctx, id);
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
  const meta = await getItem(ctx, item.id);
  if (!meta || !isSyncableFile(meta)) return null;
  const { maxFileBytes } = ctx.config;
  const tooLarge = () => {
    ctx.log.info({ itemId: item.id, maxFileBytes }, "onedrive: skipping a file larger than maxFileBytes");
    return null;
  };
  if ((meta.size ?? 0) > maxFileBytes) return tooLarge();
  const bytes = await downloadItem(ctx, meta, maxFileBytes);
  if (!bytes) return tooLarge();
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
  await graphJson(ctx, "/me/drive");
}
