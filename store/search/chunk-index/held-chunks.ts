import type { VectorSpace } from "../vector-index.ts";
import { buildGraph, type Graph, type GraphBuild, newGraph } from "./graph-build.ts";
import { lengthDivisor, parseTsvector } from "./ts-rank.ts";

// The in-memory copy itself: per slot a chunk's tags, lexemes (postings), vector and what a hit shows, and the
// graph over the vectors. It knows no SQL: chunk-index.ts feeds it the store's rows (load, change log) and
// rank.ts reads it to rank a search.

/**
 * A lexeme's postings: the rows holding it, each row's position count for it, and the generation of the row's
 * slot when it was added (a slot is reused by a later chunk: an entry whose generation is not the slot's is stale).
 */
export class Postings {
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

export const NO_ROWS = new TagRows();

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

/** Rows of a scope at most this many are ranked by an exact scan of their vectors; more go to the HNSW graph. */
export const EXACT_SCAN_ROWS = 4096;
/** Longest run of index work between two turns of the event loop while building or catching up. */
export const YIELD_AFTER_MS = 10;
/** Stale postings (of removed or replaced rows) are dropped once they outnumber the live ones and this many. */
const COMPACT_AFTER_STALE_POSTINGS = 200_000;

/** A chunk as the store hands it to the copy (chunk-index.ts reads it). */
export interface LoadedRow {
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

/**
 * The copy's rows. Its per-row arrays are read as they are by the ranking (rank.ts), which runs for every search
 * and must not pay for accessors; only this class and chunk-index.ts write them.
 */
export class HeldChunks {
  readonly space: VectorSpace;
  /** Per slot: its chunk's id ("" when free). A removed chunk's slot is reused by the next one added. */
  ids: string[] = [];
  private free: number[] = [];
  /** Per slot: bumped each time the slot takes a chunk, so its postings from an earlier chunk are told apart. */
  generation = new Uint32Array(1024);
  /** Per slot: how many postings its chunk added. */
  private lexemeCounts: number[] = [];
  private livePostings = 0;
  private stalePostings = 0;
  private compacting = false;
  private readonly compactAfter: number;
  /** Per row: its tags, or null once the row is gone (deleted, updated into a new row, or no longer searchable). */
  tags: (readonly string[] | null)[] = [];
  /** Per row: the fields a search shows (null when the slot is free). */
  fields: (ChunkFields | null)[] = [];
  /** Per row: ts_rank's length normalisation divisor (log2 of its positions + 1), worked out once. */
  lengthDivisors: number[] = [];
  vectors: Float32Array;
  hasVector: Uint8Array;
  rowOf = new Map<string, number>();
  /** Per document: its rows by position, so that the chunks beside a hit (its context) are read from here too. */
  private rowsByDocument = new Map<string, Map<number, number>>();
  rowsByTag = new Map<string, TagRows>();
  postings = new Map<string, Postings>();
  graph: Graph;
  /** While the copy is first loaded the graph is not: it is built from every row at once on its own thread. */
  private graphBuild: GraphBuild | "pending" | null = null;
  live = 0;

  constructor(space: VectorSpace, options: { compactAfterStalePostings?: number } = {}) {
    this.space = space;
    this.compactAfter = options.compactAfterStalePostings ?? COMPACT_AFTER_STALE_POSTINGS;
    this.vectors = new Float32Array(1024 * space.dimension);
    this.hasVector = new Uint8Array(1024);
    this.graph = newGraph(space.dimension);
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

  /** Rows put from now on join the graph only when buildGraphOfRows builds it from them all (the first load). */
  deferGraph(): void {
    this.graphBuild = "pending";
  }

  /** Ends a graph build in progress (the store is closing). */
  stopGraphBuild(): void {
    if (this.graphBuild && this.graphBuild !== "pending") this.graphBuild.stop();
  }

  /** The graph of every row with a vector, built elsewhere; until it is here no change is applied. */
  async buildGraphOfRows(stopped: () => boolean): Promise<void> {
    const dim = this.space.dimension;
    const rows: number[] = [];
    for (let n = 0; n < this.ids.length; n++) if (this.hasVector[n]) rows.push(n);
    if (rows.length === 0 || stopped()) {
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
   * Adds rows, giving the event loop a turn every few milliseconds: an HNSW insert takes ~0.4 ms, and a page
   * of them at once would hold up every request for most of a second.
   */
  async putYielding(rows: LoadedRow[]): Promise<void> {
    let since = performance.now();
    for (const row of rows) {
      this.put(row);
      if (performance.now() - since > YIELD_AFTER_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        since = performance.now();
      }
    }
  }

  put(row: LoadedRow) {
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

  remove(id: string) {
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
  compactIfStale(): void {
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
}
