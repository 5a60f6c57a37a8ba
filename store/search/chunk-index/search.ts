import type { Database } from "../../db.ts";
import type { ChunkHit } from "../chunk-hit.ts";
import { budgetedLexemes, commonTerms } from "../keyword.ts";
import { RRF_K, searchTuning } from "../tuning.ts";
import { lastChangeAndLexemes } from "./change-log.ts";
import type { ChunkIndex } from "./chunk-index.ts";
import { heldMetadata } from "./held-chunks.ts";
import { rankChunks, type SideScore } from "./rank.ts";

/** What an indexed search needs of a search (a subset of store/search/chunk-search.ts's query, to keep this free of it). */
export interface IndexedSearchQuery {
  text: string;
  embedding: number[] | PromiseLike<number[]>;
  space: { model: string; dimension: number };
  retrieval?: "hybrid" | "vector" | "keyword";
  fusion?: "rrf" | "blend";
  endUserId?: string;
  containerTags?: string[];
  tagMode: "any" | "all";
  scope?: readonly string[] | null;
  documentId?: string;
  filepath?: string;
  filters?: unknown;
  documentIds?: string[];
  candidates: number;
}

/**
 * Whether the index can answer a search: one over tags only (the caller's scope, container tags), in the index's
 * vector space. Narrowings only the document row answers (a document, an end user, a filepath, metadata
 * filters) go to SQL, which joins the documents.
 */
export function indexAnswers(index: ChunkIndex, q: IndexedSearchQuery): boolean {
  return (
    index.ready &&
    !q.documentId &&
    !q.endUserId &&
    !q.filepath &&
    q.filters === undefined &&
    !q.documentIds &&
    q.space.model === index.space.model &&
    q.space.dimension === index.space.dimension
  );
}

/** store/search/chunk-search.ts fusedScore, over one row's two sides. */
function fuser(fusion: "rrf" | "blend"): (v: SideScore | null, k: SideScore | null) => number {
  if (fusion === "rrf") return (v, k) => (v ? 1 / (RRF_K + v.rank) : 0) + (k ? 1 / (RRF_K + k.rank) : 0);
  const w = searchTuning().blendVectorWeight;
  const rest = Number((1 - w).toFixed(6));
  const norm = (s: SideScore | null) => (!s ? 0 : s.hi - s.lo !== 0 ? (s.score - s.lo) / (s.hi - s.lo) : 1);
  return (v, k) => w * norm(v) + rest * norm(k);
}

/**
 * The search over the in-memory index: the keyword query is made as for SQL (the store stems the text, the
 * common terms are left out), both sides and the fusion run here, and the hits' fields are the index's own
 * copy (no chunk row is read). Null when the index is behind a long backlog of changes (the caller asks SQL).
 */
export async function indexedChunkSearch(
  db: Database,
  index: ChunkIndex,
  q: IndexedSearchQuery,
): Promise<ChunkHit[] | null> {
  const pending = Promise.resolve(q.embedding);
  pending.catch(() => undefined);
  const byKeyword = q.retrieval !== "vector";
  const common = byKeyword ? await commonTerms(db, "chunks") : null;
  const found = await lastChangeAndLexemes(db, byKeyword ? q.text : null);
  if (!(await index.sync(db, found.newest))) return null;
  // The keyword query SQL would run (keywordTsquery's rule), as its lexemes.
  const lexemes = common ? budgetedLexemes(found.lexemes, common) : null;
  // Keyword retrieval alone still reports each row's similarity, as SQL does.
  const embedding = await pending;
  const ranked = rankChunks(index.held, {
    scope: { scope: q.scope ?? undefined, containerTags: q.containerTags, tagMode: q.tagMode },
    embedding,
    vectorSide: q.retrieval !== "keyword",
    lexemes,
    candidates: q.candidates,
    fuse: fuser(q.fusion ?? searchTuning().fusion),
  });
  // The fields come with the ranking: the index holds them, current as of the sync above (as a statement's
  // snapshot would be), so no chunk row is read here.
  return ranked.map((r) => ({
    chunkId: r.id,
    documentId: r.documentId,
    position: r.position,
    content: r.content,
    metadata: heldMetadata(r),
    similarity: r.similarity,
    keywordRank: r.keywordRank,
    fused: r.fused,
  }));
}
