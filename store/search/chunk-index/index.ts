import type { Database } from "../../db.ts";
import type { VectorSpace } from "../vector-index.ts";
import { dropChangeLog } from "./change-log.ts";
import { ChunkIndex } from "./chunk-index.ts";

export { ChunkIndex } from "./chunk-index.ts";

const attached = new WeakMap<Database, ChunkIndex>();

/** How often a started index applies the store's changes when no search asks it to. */
const KEEP_CURRENT_MS = 1000;

/** The in-memory index searches over `db` use, if one was started for it. */
export function chunkIndexOf(db: Database): ChunkIndex | undefined {
  return attached.get(db);
}

/**
 * Starts an in-memory chunk index for searches over `searchDb` (the embedded store: one process owns it, so
 * every write goes through the change log this index reads). It is built over `buildDb` in the background;
 * searches use SQL until it is ready. Resolves with the index once built.
 */
export function startChunkIndex(
  searchDb: Database,
  buildDb: Database,
  space: VectorSpace,
): { index: ChunkIndex; built: Promise<ChunkIndex> } {
  // One index per store: the change log has one reader, which empties it as it goes.
  attached.get(searchDb)?.stop();
  const index = new ChunkIndex(space);
  attached.set(searchDb, index);
  const built = index.build(buildDb).then(() => {
    index.keepCurrent(searchDb, KEEP_CURRENT_MS);
    return index;
  });
  return { index, built };
}

/** Stops using an index (searches go back to SQL). */
export function detachChunkIndex(searchDb: Database): void {
  attached.get(searchDb)?.stop();
  attached.delete(searchDb);
}

/** For a store searched without an index: its change log would only grow, so it goes. */
export function withoutChunkIndex(db: Database): Promise<void> {
  return dropChangeLog(db);
}
