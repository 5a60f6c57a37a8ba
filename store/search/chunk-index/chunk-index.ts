import { sql } from "drizzle-orm";
import { type Database, queryRows } from "../../db.ts";
import type { VectorSpace } from "../vector-index.ts";
import { changesAfter, forgetChanges, lastChange, startChangeLog } from "./change-log.ts";
import { type ChunkFields, HeldChunks, type LoadedRow } from "./held-chunks.ts";

// An in-memory copy of what search ranks chunks by: their tags, their lexemes (with what each adds to ts_rank)
// and their vectors (an HNSW graph for large scopes, an exact scan for small ones). PGlite runs every statement
// on the service's one thread; at 100,000 chunks the two ranking statements of a search took ~30 ms of it
// there, which capped concurrent searches (docs/decisions/README.md#0002-in-memory-search-index). rank.ts ranks the same
// rows the same way in a few milliseconds, and holds what a hit shows (its document, position, text and
// metadata) so that a search reads no chunk row: reading a hundred candidates' rows was another ~2 ms of the thread.
//
// This module keeps the copy (held-chunks.ts) current: the first load, then the store's change log applied
// before each search and every second. Ranking the copy is rank.ts's.

const LOAD_PAGE = 2000;
/** Changes applied inline by a search; a longer backlog is applied in the background, SQL answering meanwhile. */
const INLINE_CHANGES = 2000;

export class ChunkIndex {
  readonly space: VectorSpace;
  /** What the index holds, read by rank.ts. */
  readonly held: HeldChunks;
  /** The change log position this copy reflects. */
  private appliedChange = 0;
  private applying: Promise<void> = Promise.resolve();
  private catchingUp = false;
  ready = false;
  private stopped = false;

  private timer: NodeJS.Timeout | undefined;

  /** Ends a build in progress at its next page, and the periodic sync (the store is closing). */
  stop(): void {
    this.stopped = true;
    this.ready = false;
    clearInterval(this.timer);
    this.held.stopGraphBuild();
  }

  /**
   * Applies the store's changes every `everyMs` as well as before each search: the log stays short while nobody
   * searches (an import), and a search seldom finds more than a few changes to apply first.
   */
  keepCurrent(db: Database, everyMs: number): void {
    clearInterval(this.timer);
    this.timer = setInterval(() => {
      // A failed pass is retried by the next one, and by the next search, which reports its own errors.
      if (this.ready && !this.catchingUp) this.sync(db).catch(() => undefined);
    }, everyMs);
    this.timer.unref();
  }

  constructor(space: VectorSpace, options: { compactAfterStalePostings?: number } = {}) {
    this.space = space;
    this.held = new HeldChunks(space, options);
  }

  get size(): number {
    return this.held.live;
  }

  /**
   * Built, and not behind a long backlog of changes: what it holds is what the store held at its last sync (at most
   * a second ago, or a search's own sync), so it can answer for the store.
   */
  get current(): boolean {
    return this.ready && !this.catchingUp;
  }

  /**
   * The chunks at these positions of the documents the index holds; `elsewhere` lists the positions asked of
   * documents it holds no chunk of (not searchable as of the last sync, or new since), for the caller to ask the store.
   */
  chunksAt(wanted: readonly { documentId: string; position: number }[]): {
    found: ChunkFields[];
    elsewhere: { documentId: string; position: number }[];
  } {
    return this.held.chunksAt(wanted);
  }

  /** What the index holds: slots (live and free), live chunks, and postings live and stale. */
  stats(): { slots: number; live: number; livePostings: number; stalePostings: number } {
    return this.held.stats();
  }

  /** Until a compaction has run, resolves at once; for tests and benchmarks that wait for one. */
  compacted(): Promise<void> {
    return this.held.compacted();
  }

  /**
   * Creates the change log, then reads every searchable chunk (over `db`, page by page), builds their graph on a
   * thread of its own, and applies what changed meanwhile.
   */
  async build(db: Database): Promise<void> {
    this.appliedChange = await startChangeLog(db);
    this.held.deferGraph();
    let after = "";
    for (;;) {
      if (this.stopped) throw new Error("the search index was stopped while it was being built");
      const rows = await readRows(db, sql`c.id > ${after}`, LOAD_PAGE);
      await this.held.putYielding(rows);
      const last = rows[rows.length - 1];
      if (!last) break;
      after = last.id;
    }
    await this.held.buildGraphOfRows(() => this.stopped);
    await this.catchUp(db);
    this.ready = true;
  }

  /**
   * Applies the store's changes since the last call. True when this copy is now current; false when the
   * backlog is long (a large import): it is applied in the background and the caller should ask the store.
   */
  async sync(db: Database, newestChange?: number): Promise<boolean> {
    const run = this.applying.then(async () => {
      const newest = newestChange ?? (await lastChange(db));
      if (newest <= this.appliedChange) return true;
      if (newest - this.appliedChange > INLINE_CHANGES) return false;
      await this.applyChanges(db, INLINE_CHANGES);
      return true;
    });
    this.applying = run.then(
      () => undefined,
      () => undefined,
    );
    const current = await run;
    if (!current) this.startCatchUp(db);
    return current;
  }

  private startCatchUp(db: Database) {
    if (this.catchingUp) return;
    this.catchingUp = true;
    const done = this.applying.then(() => this.catchUp(db));
    this.applying = done.then(
      () => undefined,
      () => undefined,
    );
    void done.finally(() => {
      this.catchingUp = false;
    });
  }

  private async catchUp(db: Database): Promise<void> {
    while ((await this.applyChanges(db, 10_000)) > 0);
  }

  /** Reads up to `limit` logged changes and the rows they name; returns how many changes it applied. */
  private async applyChanges(db: Database, limit: number): Promise<number> {
    const { ids, upTo } = await changesAfter(db, this.appliedChange, limit);
    if (upTo === this.appliedChange) return 0;
    for (let start = 0; start < ids.length; start += LOAD_PAGE) {
      const wanted = ids.slice(start, start + LOAD_PAGE);
      const rows = await readRows(db, sql`c.id = ANY(${`{${wanted.join(",")}}`}::text[])`, wanted.length);
      const found = new Set(rows.map((r) => r.id));
      for (const id of wanted) if (!found.has(id)) this.held.remove(id);
      await this.held.putYielding(rows);
    }
    const applied = upTo - this.appliedChange;
    this.appliedChange = upTo;
    await forgetChanges(db, upTo);
    this.held.compactIfStale();
    return applied;
  }
}

function readRows(db: Database, where: ReturnType<typeof sql>, limit: number): Promise<LoadedRow[]> {
  return queryRows<LoadedRow>(
    db,
    sql`SELECT c.id, c.document_id, c.position, c.content, c.metadata::text AS metadata, c.search_tags,
               c.tsv::text AS tsv, c.embedding::text AS v, c.embedding_model
        FROM chunks c WHERE ${where} ORDER BY c.id LIMIT ${limit}`,
  );
}
