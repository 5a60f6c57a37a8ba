// What a sync covers (the whole drive, or the picked folders and files) and whether an item lies inside it.
// Delta answers carry no parentReference.path ("When using delta you should always track items by id":
// https://learn.microsoft.com/en-us/graph/api/driveitem-delta#remarks), so "is this under a picked
// folder?" is answered first from the folders the same delta page listed (id → parent id, up to a pick or
// the drive's root), and only for a folder the page did not list from the paths GET gives: its path
// against each picked folder's path, both read at the same time. Results are cached for one listPage call.

import { z } from "zod";
import { type DriveItem, type OnedriveContext, readableItem } from "./graph.ts";

export const syncScopeSchema = z.object({
  mode: z.enum(["full", "selected"]),
  /** Folders whose delta is followed: "root" (the whole drive) in full mode, else the picked folders' ids. */
  roots: z.array(z.string()),
  /** Picked single files (selected mode). */
  files: z.array(z.string()),
});
export type SyncScope = z.infer<typeof syncScopeSchema>;

export function desiredScope(ctx: OnedriveContext): SyncScope {
  if (ctx.config.syncScope === "full") return { mode: "full", roots: ["root"], files: [] };
  const roots: string[] = [];
  const files: string[] = [];
  for (const picked of ctx.selection ?? []) {
    const list = picked.kind === "folder" ? roots : files;
    if (picked.id && !list.includes(picked.id)) list.push(picked.id);
  }
  return { mode: "selected", roots, files };
}

export function sameScope(a: SyncScope, b: SyncScope): boolean {
  const same = (x: string[], y: string[]) => x.length === y.length && x.every((v) => y.includes(v));
  return a.mode === b.mode && same(a.roots, b.roots) && same(a.files, b.files);
}

function decode(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** `/drive/root:/A/B` (or `/drives/{id}/root:/A/B`) → `/A/B`; the root's own children → "". */
export function drivePath(parentReferencePath: string | undefined): string | undefined {
  if (parentReferencePath === undefined) return undefined;
  const at = parentReferencePath.indexOf("root:");
  if (at < 0) return undefined;
  return decode(parentReferencePath.slice(at + "root:".length)).replace(/\/+$/, "");
}

/** The item's own path (`/A/B/name`), "" for the drive root; undefined when Graph gave no path. */
export function itemDrivePath(item: DriveItem): string | undefined {
  if (item.root) return "";
  const parent = drivePath(item.parentReference?.path);
  return parent === undefined || item.name === undefined ? undefined : `${parent}/${item.name}`;
}

const under = (path: string, folder: string) =>
  path.toLowerCase() === folder.toLowerCase() || path.toLowerCase().startsWith(`${folder.toLowerCase()}/`);

export class ScopeCheck {
  private rootPathsPromise: Promise<string[]> | undefined;
  private readonly folders = new Map<string, Promise<boolean>>();
  /** Folder id → its parent's id, from the delta page being read. */
  private readonly parents = new Map<string, string>();

  constructor(
    private readonly ctx: OnedriveContext,
    private readonly scope: SyncScope,
    /** The drive root's id, when known: what reaches it without passing a pick is outside the scope. */
    private readonly driveRootId?: string,
  ) {}

  /** Remembers where the page's live folders are, so their contents are placed without a GET. */
  learn(items: DriveItem[]): void {
    for (const item of items) {
      const parent = item.parentReference?.id;
      if (item.folder && !item.deleted && !item.remoteItem && parent) this.parents.set(item.id, parent);
    }
  }

  private rootPaths(): Promise<string[]> {
    this.rootPathsPromise ??= (async () => {
      const paths: string[] = [];
      for (const id of this.scope.roots) {
        const root = await readableItem(this.ctx, id);
        const path = root ? itemDrivePath(root) : undefined;
        if (path !== undefined) paths.push(path);
      }
      return paths;
    })();
    return this.rootPathsPromise;
  }

  /** The folder is a picked folder or lies under one (full mode: anything that exists). */
  folderInScope(id: string): Promise<boolean> {
    if (this.scope.mode === "full") return Promise.resolve(true);
    // Up through the folders this page listed, to a pick, the drive's root, or a folder it did not list.
    const visited = new Set<string>();
    for (;;) {
      if (this.scope.roots.includes(id)) return Promise.resolve(true);
      if (id === this.driveRootId) return Promise.resolve(false);
      const parent = this.parents.get(id);
      if (parent === undefined || visited.has(id)) break;
      visited.add(id);
      id = parent;
    }
    let known = this.folders.get(id);
    if (!known) {
      known = (async () => {
        const folder = await readableItem(this.ctx, id);
        const path = folder ? itemDrivePath(folder) : undefined;
        if (path === undefined) return false;
        return (await this.rootPaths()).some((root) => under(path, root));
      })();
      this.folders.set(id, known);
    }
    return known;
  }

  /** The item (a file or folder) still exists and lies in the scope. */
  async existingInScope(id: string): Promise<boolean> {
    const item = await readableItem(this.ctx, id);
    if (!item) return false;
    return this.itemInScope(item);
  }

  /** Where the item is now (from a GET, with its path, or from delta, with only its parent's id). */
  async itemInScope(item: DriveItem): Promise<boolean> {
    if (this.scope.mode === "full") return true;
    if (this.scope.files.includes(item.id) || this.scope.roots.includes(item.id)) return true;
    const parentId = item.parentReference?.id;
    if (parentId && this.scope.roots.includes(parentId)) return true;
    const parentPath = drivePath(item.parentReference?.path);
    if (parentPath !== undefined) return (await this.rootPaths()).some((root) => under(parentPath, root));
    return parentId ? this.folderInScope(parentId) : false;
  }
}
