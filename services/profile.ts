// POST /v4/profile: what the service knows about one container (a user), built from its memories.
// Deterministic and one round trip to the store; no LLM on the read path.

import type { Database } from "../store/db.ts";
import { FilterError, type FilterNode } from "../store/filters.ts";
import { profileFacts } from "../store/memories.ts";
import type { TagScope } from "../store/tag-scope.ts";
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
  const [profile, search] = await Promise.all([
    profileFacts(deps.db, {
      containerTag: request.containerTag,
      filters: request.filters,
      staticLimit: STATIC_LIMIT,
      dynamicLimit: DYNAMIC_LIMIT,
    }).catch((error: unknown) => {
      throw error instanceof FilterError ? new SearchRequestError(error.message, "filters") : error;
    }),
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
    profile,
    ...(search
      ? { searchResults: { results: search.results, timing: search.timing, total: search.total } }
      : {}),
  };
}
