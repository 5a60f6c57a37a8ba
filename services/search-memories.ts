// POST /v4/search: memories, document chunks, or both. One implementation for REST and MCP.

import { type ResultDocument, resultDocuments } from "../store/documents.ts";
import type { FilterNode } from "../store/filters.ts";
import { type MemoryHit, memoryVersions, relatedMemories, searchMemories } from "../store/memories.ts";
import type { MemoryFields } from "../store/schema/index.ts";
import { type ChunkHit, hybridChunkSearch } from "../store/search/chunk-search.ts";
import type { TagScope } from "../store/tag-scope.ts";
import {
  embedQuery,
  refuseInvalidFilters,
  rewriteIfPossible,
  type SearchDeps,
  type SearchReport,
  secondStage,
  summarize,
} from "./search-documents.ts";
import { reportedSimilarity } from "./similarity.ts";

export type SearchMode = "memories" | "hybrid" | "documents";

export interface MemorySearchRequest {
  q: string;
  containerTags?: string[];
  searchMode: SearchMode;
  threshold: number;
  limit: number;
  include: {
    documents: boolean;
    summaries: boolean;
    relatedMemories: boolean;
    forgottenMemories: boolean;
  };
  filters?: FilterNode;
  filepath?: string;
  endUserId?: string;
  rerank: boolean;
  rewriteQuery: boolean;
}

interface ContextMemory {
  memory: string;
  relation: "updates" | "extends" | "derives";
  updatedAt: string;
  metadata: Record<string, unknown> | null;
  version?: number | null;
}

export interface V4Result {
  id: string;
  similarity: number;
  metadata: Record<string, unknown> | null;
  updatedAt: string;
  memory?: string;
  chunk?: string;
  version?: number | null;
  filepath?: string | null;
  isAggregated?: boolean;
  /** Extension: forgotten or expired (only present when include.forgottenMemories brought it in). */
  isForgotten?: boolean;
  context?: {
    parents: ContextMemory[];
    children: ContextMemory[];
    related: Omit<ContextMemory, "version">[];
  };
  documents?: {
    id: string;
    createdAt: string;
    updatedAt: string;
    title?: string;
    type?: string;
    metadata?: Record<string, unknown> | null;
    summary?: string | null;
  }[];
}

export interface V4Response extends SearchReport {
  results: V4Result[];
}

interface Candidate {
  kind: "memory" | "chunk";
  id: string;
  content: string;
  /** Cosine similarity to the query (what the second stage takes). */
  similarity: number;
  /** What the result reports and `threshold` cuts: the calibrated similarity, or the second stage's score. */
  score: number;
  memory?: MemoryFields;
  chunk?: ChunkHit;
}

const RERANK_CANDIDATES = 50;

export async function searchMemoriesAndChunks(
  deps: SearchDeps,
  request: MemorySearchRequest,
  scope: TagScope,
): Promise<V4Response> {
  const started = performance.now();
  const warnings: string[] = [];
  refuseInvalidFilters(request.filters);
  const space = { model: deps.embedder.model, dimension: deps.embedder.dimension };

  const rewrittenQuery = request.rewriteQuery
    ? await rewriteIfPossible(deps, request.q, warnings)
    : undefined;
  const query = rewrittenQuery ?? request.q;
  const keywordText = rewrittenQuery ? `${request.q} ${rewrittenQuery}` : request.q;
  // Not awaited yet: both keyword sides run while the query is embedded (store/search/chunk-search.ts, store/memories.ts).
  const embedding = embedQuery(deps, query);
  const candidates = Math.max(50, request.limit * 5);

  // Started together, so each one's keyword side runs before either waits for the vector (on PGlite the
  // statements take turns at its gate in the order asked; on PostgreSQL they run side by side).
  const [chunkHits, memoryHits] = await Promise.all([
    request.searchMode === "memories"
      ? ([] as ChunkHit[])
      : hybridChunkSearch(deps.db, {
          text: keywordText,
          embedding,
          space,
          containerTags: request.containerTags,
          scope,
          tagMode: "any",
          endUserId: request.endUserId,
          filepath: request.filepath,
          filters: request.filters,
          candidates,
        }),
    request.searchMode === "documents"
      ? ([] as MemoryHit[])
      : searchMemories(deps.db, {
          text: keywordText,
          embedding,
          space,
          containerTags: request.containerTags,
          scope,
          includeForgotten: request.include.forgottenMemories,
          endUserId: request.endUserId,
          filters: request.filters,
          candidates,
        }),
  ]);
  // Memories are listed first: a memory wins a tie below.
  const found: Candidate[] = memoryHits.map((h) => ({
    kind: "memory",
    id: h.row.id,
    content: h.row.content,
    similarity: h.similarity,
    score: reportedSimilarity(space.model, h.similarity),
    memory: h.row,
  }));
  // A chunk with a found memory's very text (a short text kept as a memory too) is shown once, as the memory.
  const key = (text: string) => text.trim().replace(/\s+/g, " ").toLowerCase();
  const seen = new Set<string>(found.map((c) => key(c.content)));
  for (const h of chunkHits) {
    if (seen.has(key(h.content))) continue;
    seen.add(key(h.content));
    found.push({
      kind: "chunk",
      id: h.chunkId,
      content: h.content,
      similarity: h.similarity,
      score: reportedSimilarity(space.model, h.similarity),
      chunk: h,
    });
  }

  let reranked = false;
  let rerankModel: string | undefined;
  if (request.rerank && found.length) {
    found.sort((a, b) => b.similarity - a.similarity);
    const head = found.slice(0, Math.max(RERANK_CANDIDATES, request.limit));
    const second = await secondStage(
      deps,
      request.q,
      head.map((c) => ({
        id: c.id,
        table: c.kind === "memory" ? "memories" : "chunks",
        content: c.content,
        similarity: c.similarity,
      })),
    );
    rerankModel = second.model;
    for (const c of head) c.score = second.scores.get(c.id) ?? 0;
    for (const c of found.slice(head.length)) c.score = 0;
    reranked = true;
  }

  // Memories and chunks are embedded by one model, so their similarities are comparable and one order serves both.
  const ranked = found
    .filter((c) => c.score >= request.threshold)
    .sort((a, b) => b.score - a.score)
    .slice(0, request.limit);

  const documentIds = new Set<string>();
  for (const c of ranked) {
    if (c.chunk) documentIds.add(c.chunk.documentId);
    if (c.memory?.sourceDocumentId) documentIds.add(c.memory.sourceDocumentId);
  }
  const docs = new Map<string, ResultDocument>();
  // In scope only: a memory's source document may since have lost the caller's tags (retagged to another
  // tenant); the memory is still the caller's, the document's title, metadata and summary are not.
  const content = request.include.summaries ? "unsummarized" : "none";
  for (const d of await resultDocuments(deps.db, [...documentIds], { content, scope })) docs.set(d.id, d);
  const related = request.include.relatedMemories ? await relatedContext(deps, ranked) : undefined;

  const documentOut = (doc: ResultDocument) => ({
    id: doc.id,
    createdAt: doc.createdAt.toISOString(),
    updatedAt: doc.updatedAt.toISOString(),
    ...(request.include.documents
      ? { title: doc.title ?? undefined, type: doc.type, metadata: doc.metadata }
      : {}),
    ...(request.include.summaries ? { summary: doc.summary ?? summarize(doc.content) } : {}),
  });
  const wantDocuments = request.include.documents || request.include.summaries;

  const results = ranked.map((c): V4Result => {
    const score = round(c.score);
    if (c.kind === "memory" && c.memory) {
      const m = c.memory;
      const source = m.sourceDocumentId ? docs.get(m.sourceDocumentId) : undefined;
      const forgotten = m.isForgotten || (m.forgetAfter !== null && m.forgetAfter.getTime() <= Date.now());
      return {
        id: m.id,
        memory: m.content,
        similarity: score,
        metadata: m.metadata,
        updatedAt: m.updatedAt.toISOString(),
        version: m.version,
        filepath: source?.filepath ?? null,
        isAggregated: false,
        ...(forgotten ? { isForgotten: true } : {}),
        ...(related ? { context: related.get(m.id) ?? { parents: [], children: [], related: [] } } : {}),
        ...(wantDocuments && source ? { documents: [documentOut(source)] } : {}),
      };
    }
    const chunk = c.chunk as ChunkHit;
    const doc = docs.get(chunk.documentId);
    return {
      id: chunk.chunkId,
      chunk: chunk.content,
      similarity: score,
      metadata: doc?.metadata ?? null,
      updatedAt: (doc?.updatedAt ?? new Date()).toISOString(),
      filepath: doc?.filepath ?? null,
      ...(wantDocuments && doc ? { documents: [documentOut(doc)] } : {}),
    };
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

/** Version history (older = parents, newer = children) and extends/derives links of each memory found. */
async function relatedContext(deps: SearchDeps, ranked: Candidate[]) {
  const found = ranked.flatMap((c) => (c.memory ? [c.memory] : []));
  const chains = await memoryVersions(deps.db, [...new Set(found.map((m) => m.rootId ?? m.id))]);
  const byRoot = new Map<string, MemoryFields[]>();
  for (const m of chains) byRoot.set(m.rootId ?? m.id, [...(byRoot.get(m.rootId ?? m.id) ?? []), m]);
  const linked = await relatedMemories(
    deps.db,
    found.map((m) => m.id),
  );
  const out = new Map<string, NonNullable<V4Result["context"]>>();
  for (const m of found) {
    const chain = byRoot.get(m.rootId ?? m.id) ?? [];
    const view = (other: MemoryFields, relation: ContextMemory["relation"]) => ({
      memory: other.content,
      relation,
      updatedAt: other.updatedAt.toISOString(),
      metadata: other.metadata,
    });
    out.set(m.id, {
      parents: chain
        .filter((o) => o.version < m.version)
        .reverse()
        .map((o) => ({ ...view(o, "updates"), version: o.version - m.version })),
      children: chain
        .filter((o) => o.version > m.version)
        .map((o) => ({ ...view(o, "updates"), version: o.version - m.version })),
      related: linked
        .filter((o) => o.relatedTo === m.id || o.id === m.relatedTo)
        .filter((o) => o.relation === "extends" || o.relation === "derives" || o.id === m.relatedTo)
        .filter((o) => o.id !== m.id && o.rootId !== (m.rootId ?? m.id))
        .map((o) =>
          view(o, (o.relatedTo === m.id ? o.relation : m.relation) === "derives" ? "derives" : "extends"),
        ),
    });
  }
  return out;
}

const round = (n: number) => Math.round(n * 10_000) / 10_000;
