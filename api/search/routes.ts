import { createRoute } from "@hono/zod-openapi";
import { errorResponses } from "../schemas.ts";
import { SearchBody, SearchResponse } from "./schemas.ts";

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
