import type { RouteHandler } from "@hono/zod-openapi";
import { inArray, sql } from "drizzle-orm";
import { compileFilter, FilterError, type FilterNode } from "../../store/filters.ts";
import { documents } from "../../store/schema/index.ts";
import { chunksAt, hybridChunkSearch } from "../../store/search.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { badRequest } from "../errors.ts";
import { tagsOf } from "../schemas.ts";
import type * as routes from "./routes.ts";

interface ChunkOut {
  content: string;
  metadata: Record<string, string | number>;
  isRelevant: boolean;
  score: number;
  position: number;
}

export function createSearchHandlers(deps: ApiDeps) {
  const { db } = deps;

  const searchDocuments: RouteHandler<typeof routes.searchDocuments, AppEnv> = async (c) => {
    const started = performance.now();
    const body = c.req.valid("json");
    const scope = c.get("scope");
    const requestedTags = tagsOf(body);
    scope.check(requestedTags);
    let documentFilter = body.filepath ? sql`d.filepath = ${body.filepath}` : undefined;
    if (body.filters) {
      try {
        const compiled = compileFilter(sql`d.metadata`, body.filters as FilterNode);
        documentFilter = documentFilter ? sql`${documentFilter} AND ${compiled}` : compiled;
      } catch (error) {
        if (error instanceof FilterError) throw badRequest(error.message, "filters");
        throw error;
      }
    }
    const [embedding] = await deps.embedder.embed([body.q]);
    const hits = await hybridChunkSearch(db, {
      text: body.q,
      embedding: embedding as number[],
      containerTags: requestedTags,
      scope: scope.tags,
      tagMode: body.containerTagsOperator,
      documentId: body.docId,
      documentFilter,
      candidates: Math.max(50, body.limit * 10),
    });

    // Group by document in fused order; identical chunk text is shown once (best-ranked copy).
    const seen = new Set<string>();
    const byDocument = new Map<string, ChunkOut[]>();
    for (const hit of hits) {
      if (hit.similarity < body.chunkThreshold) continue;
      const key = hit.content.trim().replace(/\s+/g, " ");
      if (seen.has(key)) continue;
      seen.add(key);
      const list = byDocument.get(hit.documentId) ?? [];
      list.push({
        content: hit.content,
        metadata: hit.metadata,
        isRelevant: true,
        score: round(hit.similarity),
        position: hit.position,
      });
      byDocument.set(hit.documentId, list);
    }
    const ranked = [...byDocument.entries()]
      .map(([documentId, chunks]) => ({
        documentId,
        chunks,
        score: Math.max(...chunks.map((ch) => ch.score)),
      }))
      .filter((d) => d.score >= body.documentThreshold)
      .slice(0, body.limit);

    if (!body.onlyMatchingChunks) await addContext(ranked, seen);
    const docs = ranked.length
      ? await db
          .select()
          .from(documents)
          .where(
            inArray(
              documents.id,
              ranked.map((r) => r.documentId),
            ),
          )
      : [];
    const rows = new Map(docs.map((d) => [d.id, d]));
    const results = ranked.flatMap((r) => {
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
          containerTags: doc.containerTags,
          createdAt: doc.createdAt.toISOString(),
          updatedAt: doc.updatedAt.toISOString(),
          ...(body.includeFullDocs ? { content: doc.content } : {}),
          ...(body.includeSummary ? { summary: doc.summary } : {}),
        },
      ];
    });
    return c.json({ results, timing: Math.round(performance.now() - started), total: results.length }, 200);
  };

  /** Neighbouring chunks give a match its context; they are marked isRelevant: false. */
  async function addContext(ranked: { documentId: string; chunks: ChunkOut[] }[], seen: Set<string>) {
    const wanted = ranked.flatMap((r) => {
      const have = new Set(r.chunks.map((ch) => ch.position));
      return r.chunks
        .flatMap((ch) => [ch.position - 1, ch.position + 1])
        .filter((p) => p >= 0 && !have.has(p))
        .map((position) => ({ documentId: r.documentId, position }));
    });
    const neighbours = await chunksAt(db, wanted);
    for (const n of neighbours) {
      const key = n.content.trim().replace(/\s+/g, " ");
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

  return { searchDocuments };
}

const round = (n: number) => Math.round(n * 10_000) / 10_000;
