import { z } from "@hono/zod-openapi";
import { ContainerTag, Filters } from "../schemas.ts";

const unit = z.number().min(0).max(1);

export const SearchBody = z
  .object({
    q: z.string().trim().min(1).max(10_000),
    containerTag: ContainerTag.optional(),
    containerTags: z.array(ContainerTag).max(100).optional(),
    containerTagsOperator: z.enum(["any", "all"]).default("any"),
    limit: z.number().int().min(1).max(100).default(10),
    chunkThreshold: unit.default(0).openapi({ description: "Minimum cosine similarity of a returned chunk" }),
    documentThreshold: unit
      .default(0)
      .openapi({ description: "Minimum score (best chunk similarity) of a document" }),
    docId: z
      .string()
      .min(1)
      .optional()
      .openapi({ description: "Search inside one document (id or customId)" }),
    onlyMatchingChunks: z.boolean().default(false).openapi({
      description:
        "Only the matching chunks; otherwise each match also brings its neighbours as context (isRelevant: false)",
    }),
    includeFullDocs: z.boolean().default(false),
    includeSummary: z.boolean().default(false),
    filters: Filters.optional(),
    filepath: z.string().optional(),
    categoriesFilter: z.array(z.string().min(1).max(200)).max(100).optional().openapi({
      description: "Deprecated in the SDK: documents whose metadata.category is one of these (use filters)",
    }),
    endUserId: z.string().min(1).max(255).optional().openapi({
      description: "Only documents added with this endUserId (see POST /v3/documents)",
    }),
    rerank: z
      .boolean()
      .default(false)
      .openapi({
        description:
          "Rescore the best 50 fused chunks with the cross-encoder; scores are then the reranker's (0..1). " +
          "The response says whether it happened (reranked, rerankModel) and why not (warnings)",
      }),
    rewriteQuery: z.boolean().default(false).openapi({
      description:
        "Let the configured LLM rewrite the query first (LLM_BASE_URL); see rewrittenQuery and warnings",
    }),
    retrieval: z.enum(["hybrid", "vector", "keyword"]).default("hybrid").openapi({
      description: "Extension: which retrievers run. hybrid (default) fuses vector and full-text search",
    }),
    fusion: z.enum(["rrf", "blend"]).optional().openapi({
      description:
        "Extension, for evaluation: how hybrid retrieval combines its two rankings (blend: normalised scores averaged, the default; rrf: reciprocal rank fusion)",
    }),
  })
  .strict()
  .openapi("SearchDocuments");

export const SearchResponse = z
  .object({
    results: z.array(
      z.object({
        documentId: z.string(),
        chunks: z.array(
          z.object({
            content: z.string(),
            isRelevant: z.boolean(),
            score: z.number(),
            metadata: z.record(z.string(), z.union([z.string(), z.number()])).openapi({
              description:
                "Where the chunk is in its file: page, slide, section, startSeconds/endSeconds, source",
            }),
          }),
        ),
        score: z.number(),
        title: z.string().nullable(),
        type: z.string().nullable(),
        metadata: z.record(z.string(), z.unknown()).nullable(),
        containerTags: z.array(z.string()),
        createdAt: z.string(),
        updatedAt: z.string(),
        content: z.string().nullable().optional(),
        summary: z.string().nullable().optional(),
      }),
    ),
    timing: z.number().openapi({ description: "Milliseconds spent" }),
    total: z.number(),
    reranked: z.boolean().openapi({ description: "True only when a reranker reordered these results" }),
    rerankModel: z.string().optional(),
    rewrittenQuery: z.string().optional().openapi({ description: "The query as the LLM rewrote it" }),
    warnings: z
      .array(z.string())
      .optional()
      .openapi({ description: "Options asked for that could not be honoured, and why" }),
  })
  .openapi("SearchResult");

export const SearchMemoriesBody = z
  .object({
    q: z.string().trim().min(1).max(10_000),
    containerTag: ContainerTag.optional(),
    containerTags: z.array(ContainerTag).max(100).optional(),
    searchMode: z.enum(["memories", "hybrid", "documents"]).optional().openapi({
      description:
        "memories (default): memory entries only; hybrid: memories and document chunks; documents: chunks only",
    }),
    threshold: unit.default(0).openapi({ description: "Minimum similarity (or reranker score) of a result" }),
    limit: z.number().int().min(1).max(100).default(10),
    include: z
      .object({
        documents: z.boolean().default(false),
        summaries: z.boolean().default(false),
        relatedMemories: z.boolean().default(false),
        forgottenMemories: z.boolean().default(false),
        chunks: z
          .boolean()
          .optional()
          .openapi({ description: "Deprecated: true switches to searchMode hybrid" }),
      })
      .strict()
      .default({ documents: false, summaries: false, relatedMemories: false, forgottenMemories: false }),
    filters: Filters.optional(),
    filepath: z.string().optional(),
    endUserId: z.string().min(1).max(255).optional(),
    rerank: z.boolean().default(false),
    rewriteQuery: z.boolean().default(false),
    aggregate: z.boolean().default(false).openapi({
      description:
        "Synthesising new memories from several is not offered: true adds a warning, results are unchanged",
    }),
  })
  .strict()
  .openapi("SearchMemories");

const Related = z.object({
  memory: z.string(),
  relation: z.enum(["updates", "extends", "derives"]),
  updatedAt: z.string(),
  metadata: z.record(z.string(), z.unknown()).nullable().optional(),
  version: z.number().nullable().optional(),
});

export const SearchMemoriesResponse = z
  .object({
    results: z.array(
      z.object({
        id: z.string(),
        similarity: z.number(),
        metadata: z.record(z.string(), z.unknown()).nullable(),
        updatedAt: z.string(),
        memory: z.string().optional(),
        chunk: z.string().optional(),
        version: z.number().nullable().optional(),
        filepath: z.string().nullable().optional(),
        isAggregated: z.boolean().optional(),
        isForgotten: z.boolean().optional(),
        context: z
          .object({ parents: z.array(Related), children: z.array(Related), related: z.array(Related) })
          .optional(),
        documents: z
          .array(
            z.object({
              id: z.string(),
              createdAt: z.string(),
              updatedAt: z.string(),
              title: z.string().optional(),
              type: z.string().optional(),
              metadata: z.record(z.string(), z.unknown()).nullable().optional(),
              summary: z.string().nullable().optional(),
            }),
          )
          .optional(),
      }),
    ),
    timing: z.number(),
    total: z.number(),
    reranked: z.boolean(),
    rerankModel: z.string().optional(),
    rewrittenQuery: z.string().optional(),
    warnings: z.array(z.string()).optional(),
  })
  .openapi("SearchMemoriesResult");
