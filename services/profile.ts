// POST /v4/profile: what the service knows about one container (a user), built from its memories.
// Deterministic and one round trip to the store; no LLM on the read path.

import { and, desc, eq, sql } from "drizzle-orm";
import type { Database } from "../store/db.ts";
import { compileFilter, FilterError, type FilterNode } from "../store/filters.ts";
import { memories } from "../store/schema/index.ts";
import type { TagScope } from "../store/scope.ts";
import { type SearchDeps, SearchRequestError } from "./search-documents.ts";
import { searchMemoriesAndChunks, type V4Response } from "./search-memories.ts";

/** Long-lived facts shown at most; the newest win. */
const STATIC_LIMIT = 50;
/** Recent facts shown at most. */
const DYNAMIC_LIMIT = 20;

export interface ProfileRequest {
  containerTag: string;
  q?: string;
  threshold: number;
  filters?: FilterNode;
}

export interface ProfileResponse {
  profile: { static: string[]; dynamic: string[] };
  searchResults?: Pick<V4Response, "results" | "timing" | "total">;
}

/**
 * static: the container's long-lived facts (memories marked isStatic); dynamic: its most recent other
 * memories. Only the latest version of each, never forgotten or expired ones (checked at query time).
 */
export async function buildProfile(
  deps: SearchDeps & { db: Database },
  request: ProfileRequest,
  scope: TagScope,
): Promise<ProfileResponse> {
  let filter: ReturnType<typeof compileFilter> | undefined;
  if (request.filters) {
    try {
      filter = compileFilter(sql`${memories.metadata}`, request.filters);
    } catch (error) {
      if (error instanceof FilterError) throw new SearchRequestError(error.message, "filters");
      throw error;
    }
  }
  const live = and(
    eq(memories.containerTag, request.containerTag),
    eq(memories.isLatest, true),
    eq(memories.isForgotten, false),
    sql`(${memories.forgetAfter} IS NULL OR ${memories.forgetAfter} > now())`,
    filter,
  );
  const [facts, recent, search] = await Promise.all([
    deps.db
      .select({ content: memories.content })
      .from(memories)
      .where(and(live, eq(memories.isStatic, true)))
      .orderBy(desc(memories.updatedAt))
      .limit(STATIC_LIMIT),
    deps.db
      .select({ content: memories.content })
      .from(memories)
      .where(and(live, eq(memories.isStatic, false)))
      .orderBy(desc(memories.updatedAt))
      .limit(DYNAMIC_LIMIT),
    request.q
      ? searchMemoriesAndChunks(
          deps,
          {
            q: request.q,
            containerTags: [request.containerTag],
            searchMode: "memories",
            threshold: request.threshold,
            limit: 10,
            include: { documents: false, summaries: false, relatedMemories: false, forgottenMemories: false },
            filters: request.filters,
            rerank: false,
            rewriteQuery: false,
          },
          scope,
        )
      : undefined,
  ]);
  return {
    profile: { static: facts.map((f) => f.content), dynamic: recent.map((f) => f.content) },
    ...(search
      ? { searchResults: { results: search.results, timing: search.timing, total: search.total } }
      : {}),
  };
}
