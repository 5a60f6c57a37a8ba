// Where a file sits: the names of its folders up to the top (My Drive's root, or the highest folder the
// account can see), for `filepath` and, with syncScope "full", to tell files in My Drive from files
// merely shared with the account. Folder lookups are cached per connection for a few minutes, so
// listing a page of files in the same folders costs one request per folder, not per file; changes to a
// folder seen in the changes feed replace its entry.

import { type DriveClient, type DriveContext, httpStatus } from "./client.ts";

export const FOLDER_MIME = "application/vnd.google-apps.folder";

const TTL_MS = 10 * 60 * 1000;
const MAX_FOLDERS_PER_CONNECTION = 20_000;
const MAX_CONNECTIONS = 64;
/** Deeper chains are cut (and cycles, which Drive does not allow, cannot loop). */
const MAX_DEPTH = 64;

export interface FolderInfo {
  name: string;
  parents: string[];
}

interface Entry {
  info: FolderInfo | null;
  at: number;
}

const caches = new Map<string, Map<string, Entry>>();

function cacheFor(ctx: DriveContext): Map<string, Entry> {
  const key = `${ctx.apiBaseUrl ?? ""}|${ctx.connectionId}`;
  let cache = caches.get(key);
  if (!cache) {
    if (caches.size >= MAX_CONNECTIONS) {
      const oldest = caches.keys().next().value;
      if (oldest !== undefined) caches.delete(oldest);
    }
    cache = new Map();
    caches.set(key, cache);
  }
  return cache;
}

/** Records a folder seen in a listing or in the changes feed (null: gone or out of reach). */
export function rememberFolder(ctx: DriveContext, id: string, info: FolderInfo | null) {
  const cache = cacheFor(ctx);
  if (cache.size >= MAX_FOLDERS_PER_CONNECTION) cache.clear();
  cache.set(id, { info, at: Date.now() });
}

export function forgetFolders(ctx: DriveContext) {
  caches.delete(`${ctx.apiBaseUrl ?? ""}|${ctx.connectionId}`);
}

async function folder(ctx: DriveContext, client: DriveClient, id: string): Promise<FolderInfo | null> {
  const cached = cacheFor(ctx).get(id);
  if (cached && Date.now() - cached.at < TTL_MS) return cached.info;
  let info: FolderInfo | null;
  try {
    const data = await client.call((api, options) =>
      api.files.get({ fileId: id, fields: "id,name,parents,trashed", supportsAllDrives: true }, options),
    );
    info = data.trashed ? null : { name: data.name ?? "", parents: data.parents ?? [] };
  } catch (error) {
    // A parent the account cannot see (someone else's folder above a shared one) ends the chain.
    const status = httpStatus(error);
    if (status !== 404 && status !== 403) throw error;
    info = null;
  }
  rememberFolder(ctx, id, info);
  return info;
}

export interface Placement {
  /** `/My Drive/Projects/` style; undefined when not even the direct parent is visible. */
  path: string | undefined;
  /** The chain ends at `rootId` (My Drive's root): the file is in My Drive. */
  inRoot: boolean;
}

/** Where a folder (a file's parent) is: its path from the top, and whether that top is My Drive. */
export async function placeFolder(
  ctx: DriveContext,
  client: DriveClient,
  folderId: string | undefined,
  rootId: string | null,
): Promise<Placement> {
  const names: string[] = [];
  const seen = new Set<string>();
  let id = folderId;
  let inRoot = false;
  while (id && !seen.has(id) && seen.size < MAX_DEPTH) {
    seen.add(id);
    const info = await folder(ctx, client, id);
    if (!info) break;
    names.push(info.name);
    if (id === rootId) {
      inRoot = true;
      break;
    }
    id = info.parents[0];
  }
  return { path: names.length ? `/${names.reverse().join("/")}/` : undefined, inRoot };
}
