import type { RouteHandler } from "@hono/zod-openapi";
import { type SearchDeps, SearchRequestError, searchDocuments } from "../../services/search-documents.ts";
import { searchMemoriesAndChunks } from "../../services/search-memories.ts";
import type { FilterNode } from "../../store/filters.ts";
import type { AppEnv } from "../deps.ts";
import { badRequest } from "../errors.ts";
import { tagsOf } from "../schemas.ts";
import type * as routes from "./routes.ts";

export function createSearchHandlers(deps: SearchDeps) {
  const documents: RouteHandler<typeof routes.searchDocuments, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const scope = c.get("scope");
    const containerTags = tagsOf(body);
    scope.check(containerTags);
    try {
      const { categoriesFilter, ...options } = body;
      let filters = body.filters as FilterNode | undefined;
      if (categoriesFilter?.length) {
        const categories: FilterNode = { OR: categoriesFilter.map((value) => ({ key: "category", value })) };
        filters = filters ? { AND: [filters, categories] } : { AND: [categories] };
      }
      const response = await searchDocuments(deps, { ...options, containerTags, filters }, scope.tags);
      return c.json(response, 200);
    } catch (error) {
      if (error instanceof SearchRequestError) throw badRequest(error.message, error.field);
      throw error;
    }
  };
  const memories: RouteHandler<typeof routes.searchMemories, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const scope = c.get("scope");
    const containerTags = tagsOf(body);
    scope.check(containerTags);
    const { chunks, ...include } = body.include;
    const { aggregate, ...options } = body;
    // include.chunks is the deprecated way of asking for document chunks too.
    const searchMode = body.searchMode ?? (chunks ? "hybrid" : "memories");
    try {
      const response = await searchMemoriesAndChunks(
        deps,
        {
          ...options,
          containerTags,
          searchMode,
          include,
          filters: body.filters as FilterNode | undefined,
        },
        scope.tags,
      );
      if (aggregate) {
        response.warnings = [
          ...(response.warnings ?? []),
          "aggregate: synthesising memories is not offered; results are the stored memories",
        ];
      }
      return c.json(response, 200);
    } catch (error) {
      if (error instanceof SearchRequestError) throw badRequest(error.message, error.field);
      throw error;
    }
  };

  return { searchDocuments: documents, searchMemories: memories };
}
