import { type Dirent, readdirSync, statSync } from "node:fs";
import { totalmem } from "node:os";
import path from "node:path";

/**
 * PGlite's buffer pool (PostgreSQL's shared_buffers) sized from the store it opens, for PGLITE_SHARED_BUFFERS=auto.
 *
 * Every page a statement needs that is not in the pool costs PGlite a read through its file layer (one readSync per
 * 8 kB page, ~3 µs, plus the eviction of another page, in WebAssembly). A search in a big tag reads ~1,660 pages
 * (its HNSW walk and its keyword matches' rows), so with the pool far smaller than the store most of them miss.
 * The pool is a start parameter and PGlite's memory never shrinks, so it is chosen once, at open, from what the
 * store holds then: an empty or small store keeps the floor (a first import's memory stays bounded),
 * a store that has grown gets a pool in proportion, up to the ceiling. Measured numbers: docs/decisions/README.md#0005-buffer-pool-sized-from-the-store.
 */
export const AUTO_POOL = {
  /** What a small store gets: the fixed default before `auto`. */
  floorMb: 32,
  /** The most `auto` chooses (a store of about 100,000 chunks reaches it); a larger pool must be set explicitly. */
  ceilingMb: 256,
  /** The share of the store's relation files (`base/`) the pool is sized to. */
  shareOfStore: 1 / 2,
  /** Never more than this share of the memory the process may use (the machine's, or its container's limit). */
  shareOfMemory: 1 / 16,
} as const;

const MB = 1024 * 1024;

/**
 * The memory this process may use: the machine's, or a container's limit when one is set (cgroups; Node reports
 * it as constrainedMemory, 0 or undefined when there is none).
 */
export function availableMemory(): number {
  const limit = process.constrainedMemory?.() ?? 0;
  return limit > 0 ? Math.min(limit, totalmem()) : totalmem();
}

/** The pool `auto` gives a store whose relation files take `storeBytes`, with `memoryBytes` to run in. */
export function autoSharedBuffers(storeBytes: number, memoryBytes = availableMemory()): string {
  const wanted = Math.floor((storeBytes * AUTO_POOL.shareOfStore) / MB);
  const allowed = Math.min(AUTO_POOL.ceilingMb, Math.floor((memoryBytes * AUTO_POOL.shareOfMemory) / MB));
  return `${Math.max(AUTO_POOL.floorMb, Math.min(wanted, allowed))}MB`;
}

/** Bytes of the relation files under a PGlite data directory's `base/` (0 before its first start). */
export function storeBytes(pgliteDir: string): number {
  let total = 0;
  let entries: Dirent[];
  try {
    entries = readdirSync(path.join(pgliteDir, "base"), { withFileTypes: true, recursive: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw error;
  }
  for (const entry of entries) {
    // A file can go while we count (a dropped relation); it then counts as nothing.
    if (entry.isFile())
      total += statSync(path.join(entry.parentPath, entry.name), { throwIfNoEntry: false })?.size ?? 0;
  }
  return total;
}

/** The rule of `auto` in words, for reports and logs: it follows AUTO_POOL. */
export function autoPoolRule(): string {
  return `${Math.round(AUTO_POOL.shareOfStore * 100)} % of its relation files, ${AUTO_POOL.floorMb}MB to ${AUTO_POOL.ceilingMb}MB`;
}

/** The shared_buffers value to start PGlite with: `auto` resolved against the directory, any size as given. */
export function resolveSharedBuffers(setting: string | undefined, pgliteDir: string): string | undefined {
  return setting === "auto" ? autoSharedBuffers(storeBytes(pgliteDir)) : setting;
}
