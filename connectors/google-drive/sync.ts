// Listing by the Drive changes API ("delta"). The first sync takes a changes start page token, then
// enumerates every file in scope folder by folder (with syncScope "full" from My Drive's root; with
// "selected" the picked files and, recursively, the picked folders), then reads the changes made while
// it listed. Later syncs read changes.list from the saved token: a changed file in scope is listed (its
// version decides whether it is fetched), a file removed, trashed or moved out of scope is reported in
// `deleted`. The token to resume from is handed to the engine as `carry` on the pass's last page.
//
// With "selected", the cursor keeps the folders inside the selection (id → parent within it) so a
// change can be placed by the file's `parents`: a folder created in or moved into a selected folder
// joins the set and is listed; one moved out or trashed leaves it, with its subfolders, and the files
// in them are reported deleted. With "full" a file is in scope when its folder chain reaches My Drive's
// root (files shared with the account but not in its My Drive are left out). When the scope or the
// selection changes, the next sync lists the new scope from scratch and reports what only the old
// scope held as deleted.
//
// Pending work (folders to list, folders whose files left the scope) is a queue in the cursor, so a page
// does a bounded number of requests and a crashed page is simply redone.

import { createHash } from "node:crypto";
import type { drive_v3 } from "@googleapis/drive";
import { z } from "zod";
import { ItemSkippedError, type SkipReason } from "../errors.ts";
import type { FetchedItem, ItemMetadata, ListPage, PickedItem, SourceItem, SyncContext } from "../types.ts";
import { DriveClient, errorReasons, httpFailure, httpStatus, quote, toConnectorError } from "./client.ts";
import { FOLDER_MIME, placeFolder, rememberFolder } from "./folders.ts";
import type { GoogleDriveConfig } from "./settings.ts";

export type GoogleDriveContext = SyncContext<GoogleDriveConfig, unknown>;
type DriveFile = drive_v3.Schema$File;

const SHORTCUT_MIME = "application/vnd.google-apps.shortcut";
const GOOGLE_PREFIX = "application/vnd.google-apps.";
/**
 * Google files and the format each is exported as. Other Google types (Forms, Sites...) are skipped.
 * Sheets go out as PDF: Drive's CSV and TSV exports carry the first sheet only
 * (https://developers.google.com/drive/api/guides/ref-export-formats), the extraction pipeline reads PDF
 * but not .xlsx or .ods, and the zipped-HTML export's layout inside the archive is not documented.
 */
export const EXPORT_FORMATS: Record<string, string> = {
  "application/vnd.google-apps.document": "text/plain",
  "application/vnd.google-apps.spreadsheet": "application/pdf",
  "application/vnd.google-apps.presentation": "text/plain",
};

const FILE_FIELDS =
  "id,name,mimeType,parents,trashed,modifiedTime,version,md5Checksum,size,driveId,webViewLink";
const LIST_FIELDS = `nextPageToken,files(${FILE_FIELDS})`;
const CHANGE_FIELDS = `nextPageToken,newStartPageToken,changes(changeType,fileId,removed,file(${FILE_FIELDS}))`;
/** Listing requests per page at most, so empty folders do not make one page each nor one page run long. */
const MAX_STEPS_PER_PAGE = 20;

/** Work left in a pass. */
const driveTaskSchema = z.discriminatedUnion("op", [
  /** List a folder in scope: its files are items, its subfolders are listed too. */
  z.object({ op: z.literal("add"), id: z.string(), pageToken: z.string().optional() }),
  /** A picked file. */
  z.object({ op: z.literal("file"), id: z.string() }),
  /** A folder that left the scope: its files are deleted unless still in scope another way. */
  z.object({ op: z.literal("leave"), id: z.string(), pageToken: z.string().optional() }),
  /** A file picked before but not now: deleted unless still in scope. */
  z.object({ op: z.literal("recheck"), id: z.string() }),
  /** The scope was "full" before: every file not in the new scope is deleted. */
  z.object({ op: z.literal("leaveAll"), pageToken: z.string().optional() }),
]);
export type DriveTask = z.infer<typeof driveTaskSchema>;

/** "selected": every folder inside the selection, id → parent id inside it (null: picked itself). */
const foldersSchema = z.record(z.string(), z.string().nullable());

/** What a completed pass hands to the next (saved by the engine). */
export const driveCarrySchema = z.object({
  /** Which scope and selection it was made for; another one starts over. */
  scope: z.string(),
  /** changes.list page token to resume from (null: nothing was selected, nothing to follow). */
  pageToken: z.string().nullable(),
  rootId: z.string().nullable(),
  folders: foldersSchema,
  /** "selected": the picked files. */
  files: z.array(z.string()),
});
export type DriveCarry = z.infer<typeof driveCarrySchema>;

export const driveCursorSchema = z.object({
  scope: z.string(),
  /** "start": take the changes token and root, queue the listing; "sync": work the queue, then changes. */
  phase: z.enum(["start", "sync"]),
  pageToken: z.string().nullable(),
  /** changes.list answered with newStartPageToken: once the queue is empty the pass is complete. */
  caughtUp: z.boolean(),
  rootId: z.string().nullable(),
  folders: foldersSchema,
  tasks: z.array(driveTaskSchema),
  /** The carry of another scope, whose leftovers this pass deletes. */
  previous: driveCarrySchema.optional(),
});
export type DriveCursor = z.infer<typeof driveCursorSchema>;

interface Scope {
  key: string;
  full: boolean;
  folders: Set<string>;
  files: Set<string>;
}

function scopeOf(ctx: GoogleDriveContext): Scope {
  if (ctx.config.syncScope === "full")
    return { key: "full", full: true, folders: new Set(), files: new Set() };
  const picks = ctx.selection ?? [];
  const folders = [...new Set(picks.filter((p) => p.kind === "folder").map((p) => p.id))].sort();
  const files = [...new Set(picks.filter((p) => p.kind === "file").map((p) => p.id))].sort();
  const hash = createHash("sha256").update(JSON.stringify({ folders, files })).digest("hex").slice(0, 16);
  return { key: `selected:${hash}`, full: false, folders: new Set(folders), files: new Set(files) };
}

export function initialDriveCursor(ctx: GoogleDriveContext, carry?: DriveCarry): DriveCursor {
  const scope = scopeOf(ctx);
  if (carry && carry.scope === scope.key) {
    return {
      scope: scope.key,
      phase: "sync",
      pageToken: carry.pageToken,
      caughtUp: carry.pageToken === null,
      rootId: carry.rootId,
      folders: { ...carry.folders },
      tasks: [],
    };
  }
  return {
    scope: scope.key,
    phase: "start",
    pageToken: null,
    caughtUp: false,
    rootId: carry?.rootId ?? null,
    folders: {},
    tasks: [],
    ...(carry ? { previous: carry } : {}),
  };
}

type Kind = "folder" | "export" | "download" | "skip";

function kindOf(mimeType: string | null | undefined): Kind {
  if (!mimeType) return "skip";
  if (mimeType === FOLDER_MIME) return "folder";
  if (EXPORT_FORMATS[mimeType]) return "export";
  // Shortcuts point at files listed where they live; Forms, Sites, Maps, Drawings have no text export here.
  if (mimeType === SHORTCUT_MIME || mimeType.startsWith(GOOGLE_PREFIX)) return "skip";
  return "download";
}

function versionOf(file: DriveFile): string {
  return file.version ?? `${file.modifiedTime ?? ""}:${file.md5Checksum ?? ""}`;
}

/** One page of work: the items and deletions it found, in the order found (a later word on an id wins). */
class Page {
  readonly out = new Map<string, string | null>();
  constructor(
    readonly ctx: GoogleDriveContext,
    readonly client: DriveClient,
    readonly cursor: DriveCursor,
    readonly scope: Scope,
  ) {}

  item(file: DriveFile) {
    const id = file.id;
    if (!id) return;
    const kind = kindOf(file.mimeType);
    if (kind === "folder" || kind === "skip") return;
    if (file.trashed || file.driveId) return this.delete(id);
    // A file over maxFileBytes is still listed: fetchItem refuses it as too_large, so the run shows it.
    this.out.delete(id);
    this.out.set(id, versionOf(file));
  }

  delete(id: string) {
    this.out.delete(id);
    this.out.set(id, null);
  }

  /** Whether a (non-folder) file belongs to the scope now. */
  async inScope(file: DriveFile): Promise<boolean> {
    if (file.trashed || file.driveId || !file.id) return false;
    if (this.scope.full) {
      const placed = await placeFolder(this.ctx, this.client, file.parents?.[0], this.cursor.rootId);
      return placed.inRoot;
    }
    if (this.scope.files.has(file.id)) return true;
    return (file.parents ?? []).some((p) => p in this.cursor.folders);
  }
}

export async function listDrivePage(
  ctx: GoogleDriveContext,
  input: DriveCursor,
): Promise<ListPage<DriveCursor, DriveCarry>> {
  const cursor: DriveCursor = structuredClone(input);
  const scope = scopeOf(ctx);
  try {
    const page = new Page(ctx, new DriveClient(ctx), cursor, scope);
    for (let steps = 0; steps < MAX_STEPS_PER_PAGE && page.out.size < ctx.config.pageSize; steps++) {
      if (cursor.phase === "start") await start(page);
      else if (cursor.tasks.length > 0) await runTask(page);
      else if (!cursor.caughtUp) await readChanges(page);
      else break;
    }
    const items: SourceItem[] = [];
    const deleted: string[] = [];
    for (const [id, version] of page.out) {
      if (version === null) deleted.push(id);
      else items.push({ id, version });
    }
    const done = cursor.phase === "sync" && cursor.tasks.length === 0 && cursor.caughtUp;
    if (!done) return { items, deleted, next: cursor };
    const carry: DriveCarry = {
      scope: cursor.scope,
      pageToken: cursor.pageToken,
      rootId: cursor.rootId,
      folders: cursor.folders,
      files: [...scope.files],
    };
    return { items, deleted, next: null, carry };
  } catch (error) {
    throw toConnectorError(error, ctx);
  }
}

/** Takes the changes token first (what changes while listing is read afterwards), then queues the listing. */
async function start(page: Page) {
  const { cursor, scope, client } = page;
  const previous = cursor.previous;
  delete cursor.previous;
  cursor.phase = "sync";
  const nothingPicked = !scope.full && scope.folders.size === 0 && scope.files.size === 0;
  if (nothingPicked) {
    // Nothing to follow; only what an earlier selection held has to go.
    cursor.pageToken = null;
    cursor.caughtUp = true;
  } else {
    const token = await client.call((api, options) =>
      api.changes.getStartPageToken({ fields: "startPageToken" }, options),
    );
    if (!token.startPageToken) throw new Error("Google Drive answered without a start page token");
    cursor.pageToken = token.startPageToken;
    const root = await client.call((api, options) =>
      api.files.get({ fileId: "root", fields: "id,name,parents" }, options),
    );
    if (!root.id) throw new Error("Google Drive answered without the root folder's id");
    cursor.rootId = root.id;
    rememberFolder(page.ctx, root.id, { name: root.name ?? "My Drive", parents: [] });
    if (scope.full) cursor.tasks.push({ op: "add", id: root.id });
    for (const id of scope.folders) {
      cursor.folders[id] = null;
      cursor.tasks.push({ op: "add", id });
    }
    for (const id of scope.files) cursor.tasks.push({ op: "file", id });
  }
  // After the listing (tasks found while listing go first): the new scope is known by then.
  if (previous?.scope === "full") cursor.tasks.push({ op: "leaveAll" });
  else if (previous) {
    for (const id of Object.keys(previous.folders)) cursor.tasks.push({ op: "leave", id });
    for (const id of previous.files) if (!scope.files.has(id)) cursor.tasks.push({ op: "recheck", id });
  }
}

async function runTask(page: Page) {
  const { cursor } = page;
  const task = cursor.tasks[0] as DriveTask;
  const rest = cursor.tasks.slice(1);
  switch (task.op) {
    case "add": {
      const { files, next } = await listFiles(
        page,
        `${quote(task.id)} in parents and trashed = false`,
        task.pageToken,
      );
      const found: DriveTask[] = [];
      for (const file of files) {
        if (!file.id) continue;
        if (file.mimeType === FOLDER_MIME) {
          remember(page, file);
          if (page.scope.full) found.push({ op: "add", id: file.id });
          else if (!(file.id in cursor.folders)) {
            cursor.folders[file.id] = task.id;
            found.push({ op: "add", id: file.id });
          }
        } else page.item(file);
      }
      cursor.tasks = [...(next ? [{ ...task, pageToken: next }] : []), ...found, ...rest];
      return;
    }
    case "file": {
      cursor.tasks = rest;
      const file = await getFile(page, task.id);
      if (!file) return page.delete(task.id);
      return page.item(file);
    }
    case "leave": {
      // Still (or again) in the selection: nothing left it.
      if (!page.scope.full && task.id in cursor.folders) {
        cursor.tasks = rest;
        return;
      }
      const { files, next } = await listFiles(
        page,
        `${quote(task.id)} in parents and mimeType != ${quote(FOLDER_MIME)}`,
        task.pageToken,
      );
      for (const file of files) if (file.id && !(await page.inScope(file))) page.delete(file.id);
      cursor.tasks = next ? [{ ...task, pageToken: next }, ...rest] : rest;
      return;
    }
    case "recheck": {
      cursor.tasks = rest;
      const file = await getFile(page, task.id);
      if (!file || (file.mimeType !== FOLDER_MIME && !(await page.inScope(file)))) page.delete(task.id);
      return;
    }
    case "leaveAll": {
      const { files, next } = await listFiles(
        page,
        `trashed = false and mimeType != ${quote(FOLDER_MIME)}`,
        task.pageToken,
      );
      for (const file of files) if (file.id && !(await page.inScope(file))) page.delete(file.id);
      cursor.tasks = next ? [{ ...task, pageToken: next }, ...rest] : rest;
      return;
    }
  }
}

async function listFiles(
  page: Page,
  q: string,
  pageToken: string | undefined,
): Promise<{ files: DriveFile[]; next: string | undefined }> {
  const data = await page.client.call((api, options) =>
    api.files.list(
      {
        q,
        pageSize: Math.min(1000, page.ctx.config.pageSize),
        fields: LIST_FIELDS,
        ...(pageToken ? { pageToken } : {}),
      },
      options,
    ),
  );
  return { files: data.files ?? [], next: data.nextPageToken ?? undefined };
}

async function getFile(page: Page, id: string): Promise<DriveFile | null> {
  try {
    return await page.client.call((api, options) =>
      api.files.get({ fileId: id, fields: FILE_FIELDS }, options),
    );
  } catch (error) {
    // Gone, or no longer shared with the account (rate limits and refused tokens arrive converted).
    const status = httpStatus(error);
    if (status === 404 || status === 403) return null;
    throw error;
  }
}

function remember(page: Page, folder: DriveFile) {
  if (!folder.id) return;
  rememberFolder(
    page.ctx,
    folder.id,
    folder.trashed ? null : { name: folder.name ?? "", parents: folder.parents ?? [] },
  );
}

async function readChanges(page: Page) {
  const { cursor } = page;
  if (cursor.pageToken === null) {
    cursor.caughtUp = true;
    return;
  }
  const token = cursor.pageToken;
  const data = await page.client.call((api, options) =>
    api.changes.list(
      {
        pageToken: token,
        pageSize: Math.min(1000, page.ctx.config.pageSize),
        fields: CHANGE_FIELDS,
        includeRemoved: true,
      },
      options,
    ),
  );
  for (const change of data.changes ?? []) {
    if (change.changeType && change.changeType !== "file") continue;
    const id = change.fileId ?? change.file?.id;
    if (!id) continue;
    const file = change.removed ? undefined : change.file;
    if (!file) {
      // Deleted for good (or no longer shared with the account): a folder's contents report their own.
      if (id in cursor.folders) leaveFolders(page, id, false);
      page.delete(id);
      continue;
    }
    if (file.mimeType === FOLDER_MIME) {
      folderChanged(page, { ...file, id });
      continue;
    }
    if (kindOf(file.mimeType) === "skip") continue;
    if (await page.inScope({ ...file, id })) page.item({ ...file, id });
    else page.delete(id);
  }
  if (data.nextPageToken) cursor.pageToken = data.nextPageToken;
  else {
    if (data.newStartPageToken) cursor.pageToken = data.newStartPageToken;
    cursor.caughtUp = true;
  }
}

/** A folder was created, renamed, moved or trashed: keep the selection's folder set right. */
function folderChanged(page: Page, folder: DriveFile & { id: string }) {
  remember(page, folder);
  const { cursor, scope } = page;
  // "full": files are placed by their own folder chain; a trashed folder's contents report their own changes.
  if (scope.full) return;
  const picked = scope.folders.has(folder.id);
  const parent = (folder.parents ?? []).find((p) => p !== folder.id && p in cursor.folders);
  const wasIn = folder.id in cursor.folders;
  const nowIn = !folder.trashed && !folder.driveId && (picked || parent !== undefined);
  if (nowIn) {
    cursor.folders[folder.id] = picked ? null : (parent as string);
    // New in the selection (created in it, moved into it, restored from the trash): list what it holds.
    if (!wasIn) cursor.tasks.push({ op: "add", id: folder.id });
  } else if (wasIn) leaveFolders(page, folder.id, true);
}

/** A folder and its subfolders (except picked ones) leave the selection; `list`: delete their files. */
function leaveFolders(page: Page, id: string, list: boolean) {
  const { cursor } = page;
  const children = new Map<string, string[]>();
  for (const [folder, parent] of Object.entries(cursor.folders)) {
    if (parent === null) continue;
    const siblings = children.get(parent) ?? [];
    siblings.push(folder);
    children.set(parent, siblings);
  }
  const leaving = [id];
  for (let i = 0; i < leaving.length; i++) {
    for (const child of children.get(leaving[i] as string) ?? []) {
      if (!page.scope.folders.has(child)) leaving.push(child);
    }
  }
  for (const folder of leaving) {
    delete cursor.folders[folder];
    if (list) cursor.tasks.push({ op: "leave", id: folder });
  }
}

/**
 * 403 reasons that concern one file's content, not the credential: Drive refuses exports past 10 MB
 * (https://developers.google.com/drive/api/guides/manage-downloads), and files the account may see but not
 * download (https://developers.google.com/drive/api/guides/handle-errors). Reasons that concern the token or
 * the app (insufficientPermissions, rate limits, accessNotConfigured) are converted by toConnectorError first.
 */
function skipReasonOf(reasons: string[]): SkipReason {
  if (reasons.includes("exportSizeLimitExceeded")) return "export_limit";
  // Asked to download a Google file or to export a binary one: a type this connector cannot read.
  if (reasons.includes("fileNotDownloadable") || reasons.includes("fileNotExportable"))
    return "unsupported_type";
  return "no_permission";
}

/**
 * One file this connector cannot have, as the ItemSkippedError the engine counts, or the failure as
 * toConnectorError sees it (refused credentials, rate limits, a server error worth retrying).
 */
function fetchFailure(error: unknown, ctx: GoogleDriveContext, id: string, name: string): unknown {
  const converted = toConnectorError(error, ctx);
  if (converted !== error || ctx.signal.aborted) return converted;
  const failure = httpFailure(error);
  const file = name === id ? id : `${name} (${id})`;
  if (failure?.status === 404)
    return new ItemSkippedError("not_found", `Google Drive file ${file} is gone: ${failure.message}`);
  if (failure?.status === 403) {
    const reasons = errorReasons(error);
    return new ItemSkippedError(
      skipReasonOf(reasons),
      `Google Drive refused the content of ${file}, ${reasons.join(", ") || "403"}: ${failure.message}`,
    );
  }
  return error;
}

function tooLarge(ctx: GoogleDriveContext, id: string, name: string, size: number): ItemSkippedError {
  return new ItemSkippedError(
    "too_large",
    `Google Drive file ${name} (${id}) has ${size} bytes, more than maxFileBytes (${ctx.config.maxFileBytes})`,
  );
}

export async function fetchDriveItem(ctx: GoogleDriveContext, item: SourceItem): Promise<FetchedItem | null> {
  let name = item.id;
  try {
    const client = new DriveClient(ctx);
    const file = await client.call((api, options) =>
      api.files.get({ fileId: item.id, fields: FILE_FIELDS }, options),
    );
    name = file.name ?? item.id;
    const kind = kindOf(file.mimeType);
    // Trashed or not content: the changes feed reports it deleted or it was never an item.
    if (file.trashed || kind === "folder" || kind === "skip") return null;
    const placed = await placeFolder(ctx, client, file.parents?.[0], null);
    const metadata: ItemMetadata = { mimeType: file.mimeType as string };
    if (file.modifiedTime) metadata.modifiedTime = file.modifiedTime;
    if (file.driveId) metadata.driveId = file.driveId;
    const base: FetchedItem = {
      title: name,
      ...(file.webViewLink ? { url: file.webViewLink } : {}),
      ...(placed.path ? { filepath: placed.path } : {}),
      metadata,
    };
    if (kind === "export") {
      const format = EXPORT_FORMATS[file.mimeType as string] as string;
      const data = await client.call((api, options) =>
        api.files.export({ fileId: item.id, mimeType: format }, { ...options, responseType: "arraybuffer" }),
      );
      if (format.startsWith("text/")) return { ...base, text: exportedText(data) };
      return {
        ...base,
        file: { bytes: toBuffer(data), name: `${name}${EXTENSIONS[format] ?? ""}`, mimeType: format },
      };
    }
    const size = Number(file.size ?? 0);
    if (size > ctx.config.maxFileBytes) throw tooLarge(ctx, item.id, name, size);
    const data = await client.call((api, options) =>
      api.files.get({ fileId: item.id, alt: "media" }, { ...options, responseType: "arraybuffer" }),
    );
    const bytes = toBuffer(data);
    // The size in the metadata may be stale; what came is what counts.
    if (bytes.length > ctx.config.maxFileBytes) throw tooLarge(ctx, item.id, name, bytes.length);
    return { ...base, file: { bytes, name, ...(file.mimeType ? { mimeType: file.mimeType } : {}) } };
  } catch (error) {
    throw fetchFailure(error, ctx, item.id, name);
  }
}

/** File name extensions of the binary export formats, so the pipeline sees what it gets. */
const EXTENSIONS: Record<string, string> = { "application/pdf": ".pdf" };

function toBuffer(data: unknown): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (typeof data === "string") return Buffer.from(data, "utf8");
  throw new Error("Google Drive answered with an unexpected body");
}

/** Exports come as UTF-8; Docs start with a byte order mark and end lines with CRLF. */
function exportedText(data: unknown): string {
  return toBuffer(data)
    .toString("utf8")
    .replace(/^\ufeff/, "")
    .replace(/\r\n/g, "\n");
}

/** The folders and files directly inside a folder (null: My Drive's root), folders first, by name. */
export async function browseDrive(ctx: GoogleDriveContext, parentId: string | null): Promise<PickedItem[]> {
  try {
    const client = new DriveClient(ctx);
    const entries: PickedItem[] = [];
    let pageToken: string | undefined;
    do {
      const token = pageToken;
      const data = await client.call((api, options) =>
        api.files.list(
          {
            q: `${quote(parentId ?? "root")} in parents and trashed = false`,
            fields: "nextPageToken,files(id,name,mimeType)",
            orderBy: "folder,name",
            pageSize: 1000,
            ...(token ? { pageToken: token } : {}),
          },
          options,
        ),
      );
      for (const file of data.files ?? []) {
        const kind = kindOf(file.mimeType);
        if (!file.id || kind === "skip") continue;
        entries.push({
          id: file.id,
          name: file.name ?? file.id,
          kind: kind === "folder" ? "folder" : "file",
          ...(file.mimeType ? { mimeType: file.mimeType } : {}),
        });
      }
      pageToken = data.nextPageToken ?? undefined;
    } while (pageToken);
    const collator = new Intl.Collator(undefined, { sensitivity: "base", numeric: true });
    return entries.sort(
      (a, b) => Number(b.kind === "folder") - Number(a.kind === "folder") || collator.compare(a.name, b.name),
    );
  } catch (error) {
    throw toConnectorError(error, ctx);
  }
}

/** With tokens present: that they work and reach Drive. Before the consent flow there is nothing to check. */
export async function verifyDrive(ctx: GoogleDriveContext): Promise<void> {
  if (!ctx.oauth) return;
  try {
    await new DriveClient(ctx).call((api, options) =>
      api.files.get({ fileId: "root", fields: "id" }, options),
    );
  } catch (error) {
    throw toConnectorError(error, ctx);
  }
}
