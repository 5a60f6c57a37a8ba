// Document search (POST /v3/search): one implementation for the REST API and the MCP server.

import type { Embedder } from "../pipeline/embedder/types.ts";
import type { ChatModel } from "../pipeline/llm/chat.ts";
import { rewriteQuery } from "../pipeline/llm/rewrite-query.ts";
import type { Database } from "../store/db.ts";
import { type ResultDocument, resultDocuments } from "../store/documents.ts";
import { checkFilter, FilterError, type FilterNode } from "../store/filters.ts";
import {
  type ChunkHit,
  chunksAt,
  type Fusion,
  hybridChunkSearch,
  type Retrieval,
} from "../store/search/chunk-search.ts";
import { type TagScope, tagsWithin } from "../store/tag-scope.ts";
import { RESCORER_MODEL, rescore } from "./rescorer.ts";

/** Scores query–passage pairs jointly (a cross-encoder); higher is more relevant, 0..1. */
export interface Reranker {
  readonly model: string;
  score(query: string, passages: string[]): Promise<number[]>;
}

export interface SearchDeps {
  db: Database;
  embedder: Embedder;
  reranker?: Reranker;
  llm?: ChatModel;
}

export interface DocumentSearchRequest {
  q: string;
  containerTags?: string[];
  containerTagsOperator: "any" | "all";
  limit: number;
  chunkThreshold: number;
  documentThreshold: number;
  docId?: string;
  endUserId?: string;
  onlyMatchingChunks: boolean;
  includeFullDocs: boolean;
  includeSummary: boolean;
  filters?: FilterNode;
  filepath?: string;
  rerank: boolean;
  rewriteQuery: boolean;
  retrieval: Retrieval;
  fusion?: Fusion;
}

export interface ChunkOut {
  content: string;
  metadata: Record<string, string | number>;
  isRelevant: boolean;
  score: number;
}

export interface DocumentResult {
  documentId: string;
  chunks: ChunkOut[];
  score: number;
  title: string | null;
  type: string | null;
  metadata: Record<string, unknown> | null;
  containerTags: string[];
  createdAt: string;
  updatedAt: string;
  content?: string | null;
  summary?: string | null;
}

/** What every search response reports besides its results (v3 and v4 alike). */
export interface SearchReport {
  timing: number;
  total: number;
  /** True only when a reranker actually reordered these results. */
  reranked: boolean;
  rerankModel?: string;
  /** The query the search ran with, when an LLM rewrote it. */
  rewrittenQuery?: string;
  /** Options that were asked for but could not be honoured, and why. */
  warnings?: string[];
}

export interface DocumentSearchResponse extends SearchReport {
  results: DocumentResult[];
}

/** What a second stage rescores: a chunk or a memory, its text, and its first-stage cosine similarity. */
export interface SecondStageCandidate {
  id: string;
  table: "chunks" | "memories";
  content: string;
  similarity: number;
}

/**
 * Rescores candidates: with the cross-encoder when one is installed, otherwise with the documented
 * BM25 + dense rescorer (services/rescorer.ts). Either way the response names the model used.
 */
export async function secondStage(
  deps: SearchDeps,
  query: string,
  head: SecondStageCandidate[],
): Promise<{ model: string; scores: Map<string, number> }> {
  if (deps.reranker) {
    const scores = await deps.reranker.score(
      query,
      head.map((h) => h.content),
    );
    return { model: deps.reranker.model, scores: new Map(head.map((h, i) => [h.id, scores[i] as number])) };
  }
  return { model: RESCORER_MODEL, scores: await rescore(deps.db, query, head) };
}

/**
 * The query as the configured LLM rewrote it, or undefined (with the reason in `warnings`) when there is
 * no LLM or it failed: the search then runs with the query as given rather than failing.
 */
export async function rewriteIfPossible(
  deps: SearchDeps,
  query: string,
  warnings: string[],
): Promise<string | undefined> {
  if (!deps.llm) {
    warnings.push("rewriteQuery: no LLM is configured (LLM_BASE_URL); the query was used as given");
    return undefined;
  }
  try {
    return await rewriteQuery(deps.llm, query);
  } catch (error) {
    warnings.push(`rewriteQuery: the LLM failed (${(error as Error).message}); the query was used as given`);
    return undefined;
  }
}

/** The query's vector, in the embedder's query lane (ahead of any document chunks waiting). */
export async function embedQuery(deps: SearchDeps, query: string): Promise<number[]> {
  const [embedding] = await deps.embedder.embed([query], "query", { priority: "query" });
  return embedding as number[];
}

/** A caller error in the request (bad filters), reported as 400 by the API. */
export class SearchRequestError extends Error {
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

/** Refuses a bad metadata filter as the caller's error, before any work (embedding) is done for the request. */
export function refuseInvalidFilters(filters: FilterNode | undefined): void {
  if (!filters) return;
  try {
    checkFilter(filters);
  } catch (error) {
    if (error instanceof FilterError) throw new SearchRequestError(error.message, "filters");
    throw error;
  }
}

/** The most matching chunks one document shows (each may bring its neighbours as context). */
export const MATCHING_CHUNKS_PER_DOCUMENT = 3;

/** How many fused candidates a reranker rescores: enough to reorder, few enough to stay fast. */
const RERANK_CANDIDATES = 50;

export async function searchDocuments(
  deps: SearchDeps,
  request: DocumentSearchRequest,
  scope: TagScope,
): Promise<DocumentSearchResponse> {
  const started = performance.now();
  const warnings: string[] = [];
  refuseInvalidFilters(request.filters);

  const rewrittenQuery = request.rewriteQuery
    ? await rewriteIfPossible(deps, request.q, warnings)
    : undefined;
  const query = rewrittenQuery ?? request.q;

  // Not awaited here: the search's keyword side runs while the query is embedded (store/search/chunk-search.ts).
  const embedding = embedQuery(deps, query);
  const candidates = Math.max(50, request.limit * 10);
  let hits = await hybridChunkSearch(deps.db, {
    // Keywords of both the original and the rewritten query: a rewrite must not lose an exact term.
    text: rewrittenQuery ? `${request.q} ${rewrittenQuery}` : request.q,
    embedding,
    space: { model: deps.embedder.model, dimension: deps.embedder.dimension },
    retrieval: request.retrieval,
    fusion: request.fusion,
    containerTags: request.containerTags,
    scope,
    tagMode: request.containerTagsOperator,
    documentId: request.docId,
    endUserId: request.endUserId,
    filepath: request.filepath,
    filters: request.filters,
    candidates,
  });
  hits = dedupeByContent(hits);

  let scoreOf = (hit: ChunkHit) => hit.similarity;
  let reranked = false;
  let rerankModel: string | undefined;
  if (request.rerank && hits.length) {
    const head = hits.slice(0, Math.max(RERANK_CANDIDATES, request.limit));
    const byChunk = await secondStage(
      deps,
      request.q,
      head.map((h) => ({ id: h.chunkId, table: "chunks", content: h.content, similarity: h.similarity })),
    );
    // Chunks beyond the reranked head keep their fused order below every reranked one (score 0).
    const tail = hits.slice(head.length);
    hits = [
      ...head.sort((a, b) => (byChunk.scores.get(b.chunkId) ?? 0) - (byChunk.scores.get(a.chunkId) ?? 0)),
      ...tail,
    ];
    scoreOf = (hit) => byChunk.scores.get(hit.chunkId) ?? 0;
    reranked = true;
    rerankModel = byChunk.model;
  }

  // Group by document in ranked order; a document's score is its best chunk's.
  const byDocument = new Map<string, { chunks: (ChunkOut & { position: number })[]; score: number }>();
  for (const hit of hits) {
    const score = round(scoreOf(hit));
    if (score < request.chunkThreshold) continue;
    const entry = byDocument.get(hit.documentId) ?? { chunks: [], score };
    // Hits arrive best first: a long document shows its few best passages, not every chunk it has.
    if (entry.chunks.length >= MATCHING_CHUNKS_PER_DOCUMENT) continue;
    entry.chunks.push({
      content: hit.content,
      metadata: hit.metadata,
      isRelevant: true,
      score,
      position: hit.position,
    });
    entry.score = Math.max(entry.score, score);
    byDocument.set(hit.documentId, entry);
  }
  let ranked = [...byDocument.entries()]
    .map(([documentId, entry]) => ({ documentId, ...entry }))
    .filter((d) => d.score >= request.documentThreshold);
  if (reranked) ranked.sort((a, b) => b.score - a.score);
  ranked = ranked.slice(0, request.limit);

  // The neighbours and the document rows at once: on PostgreSQL two connections, one round trip of the wait.
  const [, documentRows] = await Promise.all([
    request.onlyMatchingChunks ? undefined : addContext(deps.db, ranked),
    // Unscoped: every ranked document came out of the scoped search above.
    resultDocuments(
      deps.db,
      ranked.map((r) => r.documentId),
      { content: request.includeFullDocs ? "full" : request.includeSummary ? "unsummarized" : "none" },
    ),
  ]);
  const rows = new Map<string, ResultDocument>(documentRows.map((row) => [row.id, row]));
  const results = ranked.flatMap((r): DocumentResult[] => {
    const doc = rows.get(r.documentId);
    if (!doc) return [];
    return [
      {
        documentId: r.documentId,
        chunks: r.chunks.sort((a, b) => a.position - b.position).map(({ position: _, ...ch }) => ch),
        score: r.score,
        title: doc.title,
        type: doc.type,
        metadata: doc.metadata,
        // A shared document's other tenants' tags are theirs (store/tag-scope.ts tagsWithin).
        containerTags: tagsWithin(doc.containerTags, scope),
        createdAt: doc.createdAt.toISOString(),
        updatedAt: doc.updatedAt.toISOString(),
        ...(request.includeFullDocs ? { content: doc.content } : {}),
        ...(request.includeSummary ? { summary: doc.summary ?? summarize(doc.content) } : {}),
      },
    ];
  });
  return {
    results,
    timing: Math.round(performance.now() - started),
    total: results.length,
    reranked,
    ...(rerankModel ? { rerankModel } : {}),
    ...(rewrittenQuery ? { rewrittenQuery } : {}),
    ...(warnings.length ? { warnings } : {}),
  };
}

/** Identical chunk text (the same paragraph in two documents) is shown once: its best-ranked copy. */
function dedupeByContent(hits: ChunkHit[]): ChunkHit[] {
  const seen = new Set<string>();
  return hits.filter((hit) => {
    const key = normalized(hit.content);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

const normalized = (text: string) => text.trim().replace(/\s+/g, " ").toLowerCase();

/** Neighbouring chunks give a match its context; they are marked isRelevant: false. */
async function addContext(
  db: Database,
  ranked: { documentId: string; chunks: (ChunkOut & { position: number })[] }[],
) {
  const seen = new Set(ranked.flatMap((r) => r.chunks.map((ch) => normalized(ch.content))));
  const wanted = ranked.flatMap((r) => {
    const have = new Set(r.chunks.map((ch) => ch.position));
    return r.chunks
      .flatMap((ch) => [ch.position - 1, ch.position + 1])
      .filter((p) => p >= 0 && !have.has(p))
      .map((position) => ({ documentId: r.documentId, position }));
  });
  for (const n of await chunksAt(db, wanted)) {
    const key = normalized(n.content);
    if (seen.has(key)) continue;
    seen.add(key);
    const target = ranked.find((r) => r.documentId === n.documentId);
    if (target && !target.chunks.some((ch) => ch.position === n.position)) {
      target.chunks.push({
        content: n.content,
        metadata: n.metadata,
        isRelevant: false,
        score: 0,
        position: n.position,
      });
    }
  }
}

/**
 * A document's summary when none was written at processing: its opening sentences, cut at a
 * sentence end near 300 characters. Said plainly in the README: this is an extract, not an LLM summary.
 */
export function summarize(content: string | null): string | null {
  if (!content) return null;
  const text = content.replace(/\s+/g, " ").trim();
  if (text.length <= 300) return text;
  const cut = text.slice(0, 400);
  const end = Math.max(cut.lastIndexOf(". ", 300), cut.lastIndexOf("? ", 300), cut.lastIndexOf("! ", 300));
  return end > 100 ? cut.slice(0, end + 1) : `${text.slice(0, 300).trimEnd()}…`;
}

const round = (n: number) => Math.round(n * 10_000) / 10_000;
