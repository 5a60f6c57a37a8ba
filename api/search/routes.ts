import { createRoute } from "@hono/zod-openapi";
import { errorResponses } from "../schemas.ts";
import { SearchBody, SearchMemoriesBody, SearchMemoriesResponse, SearchResponse } from "./schemas.ts";

export const searchDocuments = createRoute({
  method: "post",
  path: "/",
  tags: ["search"],
  security: [{ bearer: [] }],
  summary: "Hybrid search (vector + full-text, fused by reciprocal rank) over processed documents",
  request: { body: { content: { "application/json": { schema: SearchBody } }, required: true } },
  responses: {
    200: {
      description: "Matching documents with their chunks",
      content: { "application/json": { schema: SearchResponse } },
    },
    ...errorResponses,
  },
});

export const searchMemories = createRoute({
  method: "post",
  path: "/",
  tags: ["search"],
  security: [{ bearer: [] }],
  summary: "Search memories, document chunks (searchMode documents) or both (hybrid)",
  request: { body: { content: { "application/json": { schema: SearchMemoriesBody } }, required: true } },
  responses: {
    200: {
      description: "Matching memories and chunks, best first",
      content: { "application/json": { schema: SearchMemoriesResponse } },
    },
    ...errorResponses,
  },
});
