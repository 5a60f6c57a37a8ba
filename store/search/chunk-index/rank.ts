import { type ChunkFields, EXACT_SCAN_ROWS, type HeldChunks, NO_ROWS, type TagRows } from "./held-chunks.ts";
import { rankOver, termScore } from "./ts-rank.ts";

// Ranking a search over the in-memory copy (held-chunks.ts), as store/search/chunk-search.ts ranks it in SQL:
// reads the copy, never changes it, and knows no SQL; the caller (chunk-index/search.ts) has brought the copy
// up to date first.

export interface IndexedScope {
  /** The caller's scope: a row must carry one of these tags. */
  scope?: readonly string[];
  containerTags?: readonly string[];
  tagMode: "any" | "all";
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

/** Scratch for keyword sums, one per row, all zero between searches (a search ranks synchronously, so one will do). */
let sums = new Float32Array(0);

/**
 * Ranks the scope's chunks as store/search/chunk-search.ts searchStatement does: the nearest `candidates` by
 * cosine, the best `candidates` keyword matches, fused by `fuse`, the best `candidates` of those, best first
 * (ties by id).
 */
export function rankChunks(held: HeldChunks, o: RankQuery): RankedChunk[] {
  return new Ranking(held).rank(o);
}

export interface RankQuery {
  scope: IndexedScope;
  embedding: readonly number[] | null;
  /** False: the query's vector only gives each row its similarity (keyword retrieval alone). */
  vectorSide?: boolean;
  lexemes: readonly string[] | null;
  candidates: number;
  fuse: (v: SideScore | null, k: SideScore | null) => number;
}

class Ranking {
  constructor(private readonly held: HeldChunks) {}

  /** Whether a row is in a scope, by its tags' row sets (a hash lookup each, no scan of the row's tags). */
  private admits(scope: IndexedScope): (row: number) => boolean {
    const setsOf = (tags: readonly string[]) => tags.map((t) => this.held.rowsByTag.get(t) ?? NO_ROWS);
    const allowed = scope.scope ? setsOf(scope.scope) : null;
    const tagged = scope.containerTags?.length ? setsOf(scope.containerTags) : null;
    const all = scope.tagMode === "all";
    return (row) => {
      if (!this.held.tags[row]) return false;
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
    const setsOf = (tags: readonly string[]) => tags.map((t) => this.held.rowsByTag.get(t) ?? NO_ROWS);
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
    if (!bound) return this.held.live <= EXACT_SCAN_ROWS ? this.allRows().filter(admits) : null;
    if (bound.size > EXACT_SCAN_ROWS) return null;
    const rows = new Set<number>();
    for (const list of bound.lists) for (const row of list.rows) if (admits(row)) rows.add(row);
    return [...rows];
  }

  private allRows(): number[] {
    return [...this.held.rowOf.values()];
  }

  private similarity(row: number, query: Float32Array, queryNorm: number): number {
    const dim = this.held.space.dimension;
    // Local references and no fallbacks in the loop: it runs for every candidate (a hundred a search).
    const vectors = this.held.vectors;
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
        .filter((row) => this.held.hasVector[row])
        .map((row) => ({ row, score: this.similarity(row, query, queryNorm) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, limit);
    if (few) return exact(few);
    // The graph holds every row; ask for more than `limit` when the scope admits only part of them.
    const share = Math.max(1e-3, this.scopeShare(scope));
    let wanted = Math.min(this.held.graph.size(), share < 1 ? Math.ceil((limit / share) * 1.5) : limit);
    for (;;) {
      const found = this.held.graph.search(query, wanted, 1);
      const hits: { row: number; score: number }[] = [];
      for (let i = 0; i < found.keys.length && hits.length < limit; i++) {
        const row = Number(found.keys[i]);
        // The graph's f16 distance orders; the reported similarity is the exact one (f32), as pgvector's.
        if (admits(row)) hits.push({ row, score: this.similarity(row, query, queryNorm) });
      }
      if (hits.length >= limit || wanted >= this.held.graph.size())
        return hits.sort((a, b) => b.score - a.score);
      if (wanted >= (8 * limit) / share) return exact(this.allRows().filter(admits));
      wanted = Math.min(this.held.graph.size(), wanted * 4);
    }
  }

  /** About which share of the rows a scope admits (from its bounding rows). */
  private scopeShare(scope: IndexedScope): number {
    const bound = this.boundingRows(scope);
    return bound && this.held.live ? Math.min(1, bound.size / this.held.live) : 1;
  }

  /** The best `limit` keyword matches (ts_rank/1 over the query's lexemes), best first. */
  private keywordMatches(
    lexemes: readonly string[],
    limit: number,
    admits: (row: number) => boolean,
    /** The admitted rows when the scope is small (then only they are summed), else null. */
    few: Uint8Array | null,
  ): { row: number; score: number }[] {
    if (sums.length < this.held.ids.length) sums = new Float32Array(this.held.ids.length * 2);
    const touched: number[] = [];
    const sorted = [...new Set(lexemes)].sort();
    // Summed in single precision (a Float32Array element) in the query's lexeme order, as ts_rank does. In a
    // large scope every posting is summed and the scope checked once per matched row afterwards.
    for (const lexeme of sorted) {
      const postings = this.held.postings.get(lexeme);
      if (!postings) continue;
      const rows = postings.rows;
      const positions = postings.positions;
      const gens = postings.gens;
      const generation = this.held.generation;
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
        matchedScores.push(rankOver(sums[row] as number, sorted.length, this.held.lengthDivisors[row] ?? 0));
      }
      sums[row] = 0;
    }
    touched.length = 0;
    touched.push(...matched);
    const scores = Float64Array.from(matchedScores);
    return topByScore(touched, scores, limit, (row) => this.held.ids[row] ?? "");
  }

  rank(o: RankQuery): RankedChunk[] {
    const admits = this.admits(o.scope);
    const few = this.fewRows(o.scope, admits);
    const query = o.embedding ? Float32Array.from(o.embedding) : null;
    const byVector =
      query && o.vectorSide !== false ? this.nearest(query, o.candidates, few, o.scope, admits) : [];
    let mask: Uint8Array | null = null;
    if (few && o.lexemes?.length) {
      mask = new Uint8Array(this.held.ids.length);
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
      const fields = this.held.fields[row];
      if (!fields) continue;
      fused.push({
        ...fields,
        id: this.held.ids[row] ?? "",
        vectorRank: vRank ?? null,
        keywordRank: kRank ?? null,
        similarity: v
          ? v.score
          : query && this.held.hasVector[row]
            ? this.similarity(row, query, queryNorm)
            : 0,
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
