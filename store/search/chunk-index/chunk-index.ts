import { sql } from "drizzle-orm";
import { type Database, queryRows } from "../../db.ts";
import type { VectorSpace } from "../vector-index.ts";
import { changesAfter, forgetChanges, lastChange, startChangeLog } from "./change-log.ts";
import { buildGraph, type Graph, type GraphBuild, newGraph } from "./graph-build.ts";
import { lengthDivisor, parseTsvector, rankOver, termScore } from "./ts-rank.ts";

// An in-memory copy of what search ranks chunks by: their tags, their lexemes (with what each adds to ts_rank)
// and their vectors (an HNSW graph for large scopes, an exact scan for small ones). PGlite runs every statement
// on the service's one thread; at 100,000 chunks the two ranking statements of a search took ~30 ms of it
// there, which capped concurrent searches (docs/operations.md "The floor under 8 clients"). This ranks the same
// rows the same way in a few milliseconds, and holds what a hit shows (its document, position, text and
// metadata) so that a search reads no chunk row: reading a hundred candidates' rows was another ~2 ms of the thread.

/**
 * A lexeme's postings: the rows holding it, each row's position count for it, and the generation of the row's
 * slot when it was added (a slot is reused by a later chunk: an entry whose generation is not the slot's is stale).
 */
class Postings {
  rows = new Int32Array(4);
  positions = new Uint16Array(4);
  gens = new Uint32Array(4);
  size = 0;
  add(row: number, positions: number, gen: number) {
    if (this.size === this.rows.length) this.resize(this.size * 2);
    this.rows[this.size] = row;
    this.positions[this.size] = positions;
    this.gens[this.size] = gen;
    this.size++;
  }
  /** Keeps the entries `keep` accepts; returns how many it dropped. */
  retain(keep: (row: number, gen: number) => boolean): number {
    let kept = 0;
    for (let i = 0; i < this.size; i++) {
      const row = this.rows[i] as number;
      const gen = this.gens[i] as number;
      if (!keep(row, gen)) continue;
      this.rows[kept] = row;
      this.positions[kept] = this.positions[i] as number;
      this.gens[kept] = gen;
      kept++;
    }
    const dropped = this.size - kept;
    this.size = kept;
    if (kept * 4 < this.rows.length && this.rows.length > 4) this.resize(Math.max(4, kept * 2));
    return dropped;
  }
  private resize(capacity: number) {
    const rows = new Int32Array(capacity);
    rows.set(this.rows.subarray(0, Math.min(this.size, capacity)));
    this.rows = rows;
    const counts = new Uint16Array(capacity);
    counts.set(this.positions.subarray(0, Math.min(this.size, capacity)));
    this.positions = counts;
    const gens = new Uint32Array(capacity);
    gens.set(this.gens.subarray(0, Math.min(this.size, capacity)));
    this.gens = gens;
  }
}

/**
 * The rows carrying one tag. A tag with more rows than an exact scan takes also gets a byte per slot: a large
 * scope's keyword side asks about every matched row (thousands a search), and a byte read is much cheaper than
 * a Set lookup.
 */
export class TagRows {
  readonly rows = new Set<number>();
  private mask: Uint8Array | null = null;
  get size(): number {
    return this.rows.size;
  }
  has(row: number): boolean {
    return this.mask ? this.mask[row] === 1 : this.rows.has(row);
  }
  add(row: number): void {
    this.rows.add(row);
    if (this.mask) {
      if (row >= this.mask.length) {
        const grown = new Uint8Array(Math.max(row + 1, this.mask.length * 2));
        grown.set(this.mask);
        this.mask = grown;
      }
      this.mask[row] = 1;
    } else if (this.rows.size > EXACT_SCAN_ROWS) {
      let highest = 0;
      for (const r of this.rows) highest = Math.max(highest, r);
      this.mask = new Uint8Array(highest * 2 + 1);
      for (const r of this.rows) this.mask[r] = 1;
    }
  }
  delete(row: number): void {
    this.rows.delete(row);
    if (this.mask && row < this.mask.length) this.mask[row] = 0;
  }
}

const NO_ROWS = new TagRows();

export interface IndexedScope {
  /** The caller's scope: a row must carry one of these tags. */
  scope?: readonly string[];
  containerTags?: readonly string[];
  tagMode: "any" | "all";
}

/** What a search shows of a chunk, held with it so that a search reads no chunk row from the store. */
export interface ChunkFields {
  documentId: string;
  position: number;
  content: string;
  /** The metadata as the store's JSON text (parsed per hit, so that no caller shares the held copy). */
  metadata: string | null;
}

/** A held chunk's metadata as a caller's own object (parsed per call, so that no caller shares the held copy). */
export function heldMetadata(fields: ChunkFields): Record<string, string | number> {
  return fields.metadata === null ? {} : (JSON.parse(fields.metadata) as Record<string, string | number>);
}

export interface RankedChunk extends ChunkFields {
  id: string;
  /** Rank on each side (1 = best), null when that side did not return the row. */
  vectorRank: number | null;
  keywordRank: number | null;
  /** Cosine similarity (0..1 as pgvector's 1 − distance), computed for every row of the space. */
  similarity: number;
  fused: number;
}

/** Rows of a scope at most this many are ranked by an exact scan of their vectors; more go to the HNSW graph. */
const EXACT_SCAN_ROWS = 4096;
const LOAD_PAGE = 2000;
/** Longest run of index work between two turns of the event loop while building or catching up. */
const YIELD_AFTER_MS = 10;
/** Changes applied inline by a search; a longer backlog is applied in the background, SQL answering meanwhile. */
const INLINE_CHANGES = 2000;
/** Stale postings (of removed or replaced rows) are dropped once they outnumber the live ones and this many. */
const COMPACT_AFTER_STALE_POSTINGS = 200_000;

export class ChunkIndex {
  readonly space: VectorSpace;
  /** Per slot: its chunk's id ("" when free). A removed chunk's slot is reused by the next one added. */
  private ids: string[] = [];
  private free: number[] = [];
  /** Per slot: bumped each time the slot takes a chunk, so its postings from an earlier chunk are told apart. */
  private generation = new Uint32Array(1024);
  /** Per slot: how many postings its chunk added. */
  private lexemeCounts: number[] = [];
  private livePostings = 0;
  private stalePostings = 0;
  private compacting = false;
  private readonly compactAfter: number;
  /** Per row: its tags, or null once the row is gone (deleted, updated into a new row, or no longer searchable). */
  private tags: (readonly string[] | null)[] = [];
  /** Per row: the fields a search shows (null when the slot is free). */
  private fields: (ChunkFields | null)[] = [];
  /** Per row: ts_rank's length normalisation divisor (log2 of its positions + 1), worked out once. */
  private lengthDivisors: number[] = [];
  private vectors: Float32Array;
  private hasVector: Uint8Array;
  private rowOf = new Map<string, number>();
  /** Per document: its rows by position, so that the chunks beside a hit (its context) are read from here too. */
  private rowsByDocument = new Map<string, Map<number, number>>();
  private rowsByTag = new Map<string, TagRows>();
  private postings = new Map<string, Postings>();
  private graph: Graph;
  /** While the index is first built the graph is not: it is built from every row at once on its own thread. */
  private graphBuild: GraphBuild | "pending" | null = null;
  private live = 0;
  /** The change log position this copy reflects. */
  private appliedChange = 0;
  private applying: Promise<void> = Promise.resolve();
  private catchingUp = false;
  /** Scratch for keyword sums, one per row, all zero between searches. */
  private sums = new Float32Array(0);
  ready = false;
  private stopped = false;

  private timer: NodeJS.Timeout | undefined;

  /** Ends a build in progress at its next page, and the periodic sync (the store is closing). */
  stop(): void {
    this.stopped = true;
    this.ready = false;
    clearInterval(this.timer);
    if (this.graphBuild && this.graphBuild !== "pending") this.graphBuild.stop();
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
    this.compactAfter = options.compactAfterStalePostings ?? COMPACT_AFTER_STALE_POSTINGS;
    this.vectors = new Float32Array(1024 * space.dimension);
    this.hasVector = new Uint8Array(1024);
    this.graph = newGraph(space.dimension);
  }

  get size(): number {
    return this.live;
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
    const found: ChunkFields[] = [];
    const elsewhere: { documentId: string; position: number }[] = [];
    for (const w of wanted) {
      const positions = this.rowsByDocument.get(w.documentId);
      if (!positions) {
        elsewhere.push(w);
        continue;
      }
      const row = positions.get(w.position);
      const fields = row === undefined ? null : this.fields[row];
      if (fields) found.push(fields);
    }
    return { found, elsewhere };
  }

  /** What the index holds: slots (live and free), live chunks, and postings live and stale. */
  stats(): { slots: number; live: number; livePostings: number; stalePostings: number } {
    return {
      slots: this.ids.length,
      live: this.live,
      livePostings: this.livePostings,
      stalePostings: this.stalePostings,
    };
  }

  /**
   * Creates the change log, then reads every searchable chunk (over `db`, page by page), builds their graph on a
   * thread of its own, and applies what changed meanwhile.
   */
  async build(db: Database): Promise<void> {
    this.appliedChange = await startChangeLog(db);
    this.graphBuild = "pending";
    let after = "";
    for (;;) {
      if (this.stopped) throw new Error("the search index was stopped while it was being built");
      const rows = await readRows(db, sql`c.id > ${after}`, LOAD_PAGE);
      await this.putYielding(rows);
      const last = rows[rows.length - 1];
      if (!last) break;
      after = last.id;
    }
    await this.buildGraphOfRows();
    await this.catchUp(db);
    this.ready = true;
  }

  /** The graph of every row with a vector, built elsewhere; until it is here no change is applied. */
  private async buildGraphOfRows(): Promise<void> {
    const dim = this.space.dimension;
    const rows: number[] = [];
    for (let n = 0; n < this.ids.length; n++) if (this.hasVector[n]) rows.push(n);
    if (rows.length === 0 || this.stopped) {
      this.graphBuild = null;
      return;
    }
    const keys = new BigUint64Array(rows.length);
    const vectors = new Float32Array(rows.length * dim);
    rows.forEach((n, i) => {
      keys[i] = BigInt(n);
      vectors.set(this.vectors.subarray(n * dim, (n + 1) * dim), i * dim);
    });
    const build = buildGraph(dim, keys, vectors);
    this.graphBuild = build;
    try {
      this.graph = await build.graph;
    } finally {
      this.graphBuild = null;
    }
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
      for (const id of wanted) if (!found.has(id)) this.remove(id);
      await this.putYielding(rows);
    }
    const applied = upTo - this.appliedChange;
    this.appliedChange = upTo;
    await forgetChanges(db, upTo);
    this.compactIfStale();
    return applied;
  }

  /**
   * Adds rows, giving the event loop a turn every few milliseconds: an HNSW insert takes ~0.4 ms, and a page
   * of them at once would hold up every request for most of a second.
   */
  private async putYielding(rows: LoadedRow[]): Promise<void> {
    let since = performance.now();
    for (const row of rows) {
      this.put(row);
      if (performance.now() - since > YIELD_AFTER_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        since = performance.now();
      }
    }
  }

  private put(row: LoadedRow) {
    this.remove(row.id);
    if (!row.search_tags) return;
    const dim = this.space.dimension;
    const n = this.free.pop() ?? this.newSlot();
    const gen = ((this.generation[n] ?? 0) + 1) >>> 0;
    this.generation[n] = gen;
    this.ids[n] = row.id;
    this.fields[n] = {
      documentId: row.document_id,
      position: Number(row.position),
      content: row.content,
      metadata: row.metadata,
    };
    this.tags[n] = row.search_tags;
    this.rowOf.set(row.id, n);
    const positions = this.rowsByDocument.get(row.document_id) ?? new Map<number, number>();
    this.rowsByDocument.set(row.document_id, positions);
    positions.set(Number(row.position), n);
    for (const tag of row.search_tags) {
      const rows = this.rowsByTag.get(tag) ?? new TagRows();
      this.rowsByTag.set(tag, rows);
      rows.add(n);
    }
    const tsv = parseTsvector(row.tsv ?? "");
    this.lengthDivisors[n] = lengthDivisor(tsv.length);
    this.lexemeCounts[n] = tsv.lexemes.length;
    this.livePostings += tsv.lexemes.length;
    tsv.lexemes.forEach((lexeme, i) => {
      const postings = this.postings.get(lexeme) ?? new Postings();
      this.postings.set(lexeme, postings);
      postings.add(n, tsv.positions[i] ?? 1, gen);
    });
    this.hasVector[n] = 0;
    if (row.v && row.embedding_model === this.space.model) {
      const values = JSON.parse(row.v) as number[];
      if (values.length === dim) {
        const vector = Float32Array.from(values);
        this.vectors.set(vector, n * dim);
        this.hasVector[n] = 1;
        if (!this.graphBuild) this.graph.add(BigInt(n), vector);
      }
    }
    this.live++;
  }

  /** A new slot at the end, the per-slot arrays grown to hold it. */
  private newSlot(): number {
    const n = this.ids.length;
    this.ids.push("");
    this.fields.push(null);
    this.tags.push(null);
    this.lengthDivisors.push(0);
    this.lexemeCounts.push(0);
    const dim = this.space.dimension;
    if ((n + 1) * dim > this.vectors.length) {
      const vectors = new Float32Array(this.vectors.length * 2);
      vectors.set(this.vectors);
      this.vectors = vectors;
    }
    if (n + 1 > this.hasVector.length) {
      const has = new Uint8Array(this.hasVector.length * 2);
      has.set(this.hasVector);
      this.hasVector = has;
      const generation = new Uint32Array(this.generation.length * 2);
      generation.set(this.generation);
      this.generation = generation;
    }
    return n;
  }

  private remove(id: string) {
    const row = this.rowOf.get(id);
    if (row === undefined) return;
    this.rowOf.delete(id);
    for (const tag of this.tags[row] ?? []) this.rowsByTag.get(tag)?.delete(row);
    this.tags[row] = null;
    this.ids[row] = "";
    const fields = this.fields[row];
    const positions = fields ? this.rowsByDocument.get(fields.documentId) : undefined;
    if (fields && positions?.get(fields.position) === row) {
      positions.delete(fields.position);
      if (positions.size === 0) this.rowsByDocument.delete(fields.documentId);
    }
    this.fields[row] = null;
    // Its postings stay until a compaction; a row without tags, or a later chunk in the slot, skips them.
    const count = this.lexemeCounts[row] ?? 0;
    this.livePostings -= count;
    this.stalePostings += count;
    this.lexemeCounts[row] = 0;
    if (this.hasVector[row] && !this.graphBuild) this.graph.remove(BigInt(row));
    this.hasVector[row] = 0;
    this.free.push(row);
    this.live--;
  }

  /**
   * Drops the postings of removed and replaced rows once they outnumber the live ones, in the background and in
   * slices (each lexeme's list is rewritten at once, so a search between two slices sees every list whole).
   */
  private compactIfStale(): void {
    if (this.compacting || this.stalePostings <= Math.max(this.compactAfter, this.livePostings)) return;
    this.compacting = true;
    const run = async () => {
      let since = performance.now();
      for (const [lexeme, postings] of [...this.postings]) {
        const dropped = postings.retain(
          (row, gen) => this.tags[row] !== null && this.generation[row] === gen,
        );
        this.stalePostings -= dropped;
        if (postings.size === 0) this.postings.delete(lexeme);
        if (performance.now() - since > YIELD_AFTER_MS) {
          await new Promise((resolve) => setImmediate(resolve));
          since = performance.now();
        }
      }
    };
    void run().finally(() => {
      this.compacting = false;
    });
  }

  /** Until a compaction has run, resolves at once; for tests and benchmarks that wait for one. */
  async compacted(): Promise<void> {
    while (this.compacting) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  /** Whether a row is in a scope, by its tags' row sets (a hash lookup each, no scan of the row's tags). */
  private admits(scope: IndexedScope): (row: number) => boolean {
    const setsOf = (tags: readonly string[]) => tags.map((t) => this.rowsByTag.get(t) ?? NO_ROWS);
    const allowed = scope.scope ? setsOf(scope.scope) : null;
    const tagged = scope.containerTags?.length ? setsOf(scope.containerTags) : null;
    const all = scope.tagMode === "all";
    return (row) => {
      if (!this.tags[row]) return false;
      if (allowed && !allowed.some((rows) => rows.has(row))) return false;
      if (tagged) return all ? tagged.every((rows) => rows.has(row)) : tagged.some((rows) => rows.has(row));
      return true;
    };
  }

  /**
   * The smallest known superset of the rows a scope admits: the rows of its tags (for "all", the least used
   * one's; for "any" and the caller's scope, all of theirs), or null when no tag narrows it.
   */
  private boundingRows(scope: IndexedScope): { lists: TagRows[]; size: number } | null {
    let best: { lists: TagRows[]; size: number } | null = null;
    const consider = (lists: TagRows[]) => {
      const size = lists.reduce((a, s) => a + s.size, 0);
      if (!best || size < best.size) best = { lists, size };
    };
    const setsOf = (tags: readonly string[]) => tags.map((t) => this.rowsByTag.get(t) ?? NO_ROWS);
    if (scope.containerTags?.length) {
      const sets = setsOf(scope.containerTags);
      consider(scope.tagMode === "all" ? [sets.reduce((a, s) => (s.size < a.size ? s : a))] : sets);
    }
    if (scope.scope) consider(setsOf(scope.scope));
    return best;
  }

  /** The rows a scope admits when they are few enough for an exact scan, else null. */
  private fewRows(scope: IndexedScope, admits: (row: number) => boolean): number[] | null {
    const bound = this.boundingRows(scope);
    if (!bound) return this.live <= EXACT_SCAN_ROWS ? this.allRows().filter(admits) : null;
    if (bound.size > EXACT_SCAN_ROWS) return null;
    const rows = new Set<number>();
    for (const list of bound.lists) for (const row of list.rows) if (admits(row)) rows.add(row);
    return [...rows];
  }

  private allRows(): number[] {
    return [...this.rowOf.values()];
  }

  private similarity(row: number, query: Float32Array, queryNorm: number): number {
    const dim = this.space.dimension;
    // Local references and no fallbacks in the loop: it runs for every candidate (a hundred a search).
    const vectors = this.vectors;
    const base = row * dim;
    let dot = 0;
    let norm = 0;
    for (let i = 0; i < dim; i++) {
      const x = vectors[base + i] as number;
      dot += x * (query[i] as number);
      norm += x * x;
    }
    return norm > 0 && queryNorm > 0 ? dot / Math.sqrt(norm * queryNorm) : 0;
  }

  /** The `limit` nearest rows the scope admits, nearest first, with their similarity. */
  private nearest(
    query: Float32Array,
    limit: number,
    few: number[] | null,
    scope: IndexedScope,
    admits: (row: number) => boolean,
  ): { row: number; score: number }[] {
    let queryNorm = 0;
    for (const x of query) queryNorm += x * x;
    const exact = (rows: number[]) =>
      rows
        .filter((row) => this.hasVector[row])
        .map((row) => ({ row, score: this.similarity(row, query, queryNorm) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, limit);
    if (few) return exact(few);
    // The graph holds every row; ask for more than `limit` when the scope admits only part of them.
    const share = Math.max(1e-3, this.scopeShare(scope));
    let wanted = Math.min(this.graph.size(), share < 1 ? Math.ceil((limit / share) * 1.5) : limit);
    for (;;) {
      const found = this.graph.search(query, wanted, 1);
      const hits: { row: number; score: number }[] = [];
      for (let i = 0; i < found.keys.length && hits.length < limit; i++) {
        const row = Number(found.keys[i]);
        // The graph's f16 distance orders; the reported similarity is the exact one (f32), as pgvector's.
        if (admits(row)) hits.push({ row, score: this.similarity(row, query, queryNorm) });
      }
      if (hits.length >= limit || wanted >= this.graph.size()) return hits.sort((a, b) => b.score - a.score);
      if (wanted >= (8 * limit) / share) return exact(this.allRows().filter(admits));
      wanted = Math.min(this.graph.size(), wanted * 4);
    }
  }

  /** About which share of the rows a scope admits (from its bounding rows). */
  private scopeShare(scope: IndexedScope): number {
    const bound = this.boundingRows(scope);
    return bound && this.live ? Math.min(1, bound.size / this.live) : 1;
  }

  /** The best `limit` keyword matches (ts_rank/1 over the query's lexemes), best first. */
  private keywordMatches(
    lexemes: readonly string[],
    limit: number,
    admits: (row: number) => boolean,
    /** The admitted rows when the scope is small (then only they are summed), else null. */
    few: Uint8Array | null,
  ): { row: number; score: number }[] {
    if (this.sums.length < this.ids.length) this.sums = new Float32Array(this.ids.length * 2);
    const sums = this.sums;
    const touched: number[] = [];
    const sorted = [...new Set(lexemes)].sort();
    // Summed in single precision (a Float32Array element) in the query's lexeme order, as ts_rank does. In a
    // large scope every posting is summed and the scope checked once per matched row afterwards.
    for (const lexeme of sorted) {
      const postings = this.postings.get(lexeme);
      if (!postings) continue;
      const rows = postings.rows;
      const positions = postings.positions;
      const gens = postings.gens;
      const generation = this.generation;
      for (let i = 0; i < postings.size; i++) {
        const row = rows[i] as number;
        if (gens[i] !== generation[row]) continue;
        if (few && few[row] !== 1) continue;
        if (sums[row] === 0) touched.push(row);
        sums[row] = (sums[row] as number) + termScore(positions[i] as number);
      }
    }
    const matched: number[] = [];
    const matchedScores: number[] = [];
    for (const row of touched) {
      if (few || admits(row)) {
        matched.push(row);
        matchedScores.push(rankOver(sums[row] as number, sorted.length, this.lengthDivisors[row] ?? 0));
      }
      sums[row] = 0;
    }
    touched.length = 0;
    touched.push(...matched);
    const scores = Float64Array.from(matchedScores);
    return topByScore(touched, scores, limit, (row) => this.ids[row] ?? "");
  }

  /**
   * Ranks the scope's chunks as store/search/chunk-search.ts searchStatement does: the nearest `candidates` by cosine, the
   * best `candidates` keyword matches, fused by `fuse`, the best `candidates` of those, best first (ties by id).
   */
  rank(o: {
    scope: IndexedScope;
    embedding: readonly number[] | null;
    /** False: the query's vector only gives each row its similarity (keyword retrieval alone). */
    vectorSide?: boolean;
    lexemes: readonly string[] | null;
    candidates: number;
    fuse: (v: SideScore | null, k: SideScore | null) => number;
  }): RankedChunk[] {
    const admits = this.admits(o.scope);
    const few = this.fewRows(o.scope, admits);
    const query = o.embedding ? Float32Array.from(o.embedding) : null;
    const byVector =
      query && o.vectorSide !== false ? this.nearest(query, o.candidates, few, o.scope, admits) : [];
    let mask: Uint8Array | null = null;
    if (few && o.lexemes?.length) {
      mask = new Uint8Array(this.ids.length);
      for (const row of few) mask[row] = 1;
    }
    const byKeyword = o.lexemes?.length ? this.keywordMatches(o.lexemes, o.candidates, admits, mask) : [];
    const vSide = sideOf(byVector);
    const kSide = sideOf(byKeyword);
    const rows = new Set([...vSide.ranks.keys(), ...kSide.ranks.keys()]);
    let queryNorm = 0;
    if (query) for (const x of query) queryNorm += x * x;
    const fused: RankedChunk[] = [];
    for (const row of rows) {
      const vRank = vSide.ranks.get(row);
      const kRank = kSide.ranks.get(row);
      const v =
        vRank === undefined
          ? null
          : { rank: vRank, score: vSide.scores.get(row) ?? 0, lo: vSide.lo, hi: vSide.hi };
      const k =
        kRank === undefined
          ? null
          : { rank: kRank, score: kSide.scores.get(row) ?? 0, lo: kSide.lo, hi: kSide.hi };
      const fields = this.fields[row];
      if (!fields) continue;
      fused.push({
        ...fields,
        id: this.ids[row] ?? "",
        vectorRank: vRank ?? null,
        keywordRank: kRank ?? null,
        similarity: v ? v.score : query && this.hasVector[row] ? this.similarity(row, query, queryNorm) : 0,
        fused: o.fuse(v, k),
      });
    }
    fused.sort((a, b) => b.fused - a.fused || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return fused.slice(0, o.candidates);
  }
}

/**
 * The best `limit` rows by score, best first, ties by id (as ORDER BY score DESC, id): the limit-th best score
 * (a native numeric sort) bounds them, and only the rows tied at that bound are ordered by id.
 */
function topByScore(
  rows: number[],
  scores: Float64Array,
  limit: number,
  idOf: (row: number) => string,
): { row: number; score: number }[] {
  const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  const threshold = rows.length > limit ? kthLargest(scores, limit) : Number.NEGATIVE_INFINITY;
  const above: { row: number; score: number; id: string }[] = [];
  const tied: { row: number; score: number; id: string }[] = [];
  rows.forEach((row, i) => {
    const score = scores[i] ?? 0;
    if (score > threshold) above.push({ row, score, id: idOf(row) });
    else if (score === threshold) tied.push({ row, score, id: idOf(row) });
  });
  const best = [...above, ...tied.sort(byId).slice(0, Math.max(0, limit - above.length))];
  return best.sort((a, b) => b.score - a.score || byId(a, b));
}

/** The k-th largest of `values` (duplicates counted), by a min-heap of the k largest: no sort of them all. */
export function kthLargest(values: Float64Array, k: number): number {
  const heap = new Float64Array(k);
  let size = 0;
  for (const value of values) {
    if (size < k) {
      // Sift up.
      let i = size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if ((heap[parent] as number) <= value) break;
        heap[i] = heap[parent] as number;
        i = parent;
      }
      heap[i] = value;
    } else if (value > (heap[0] as number)) {
      // Replace the smallest and sift down.
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= k) break;
        const right = left + 1;
        const child = right < k && (heap[right] as number) < (heap[left] as number) ? right : left;
        if ((heap[child] as number) >= value) break;
        heap[i] = heap[child] as number;
        i = child;
      }
      heap[i] = value;
    }
  }
  return heap[0] ?? Number.NEGATIVE_INFINITY;
}

/** One side's view of a row for fusion: its rank, its score and the side's lowest and highest scores. */
export interface SideScore {
  rank: number;
  score: number;
  lo: number;
  hi: number;
}

function sideOf(hits: { row: number; score: number }[]) {
  const ranks = new Map<number, number>();
  const scores = new Map<number, number>();
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  hits.forEach((h, i) => {
    ranks.set(h.row, i + 1);
    scores.set(h.row, h.score);
    lo = Math.min(lo, h.score);
    hi = Math.max(hi, h.score);
  });
  return { ranks, scores, lo, hi };
}

interface LoadedRow {
  id: string;
  document_id: string;
  position: number | string;
  content: string;
  metadata: string | null;
  search_tags: string[] | null;
  tsv: string | null;
  v: string | null;
  embedding_model: string | null;
}

function readRows(db: Database, where: ReturnType<typeof sql>, limit: number): Promise<LoadedRow[]> {
  return queryRows<LoadedRow>(
    db,
    sql`SELECT c.id, c.document_id, c.position, c.content, c.metadata::text AS metadata, c.search_tags,
               c.tsv::text AS tsv, c.embedding::text AS v, c.embedding_model
        FROM chunks c WHERE ${where} ORDER BY c.id LIMIT ${limit}`,
  );
}
