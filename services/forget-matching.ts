// POST /v4/memories/forget-matching: forget every memory of a container that matches a query (or the given ids),
// with a dry run that shows the same set without forgetting it.
//
// Selection is search with a threshold (services/search-memories.ts, memories only, no rewriting, no reranking),
// not an LLM: given the same store, a dry run and the real run select exactly the same memories, which is what a
// preview promises. Forgetting is the soft forget of DELETE /v4/memories: the rows stay, leave search and
// profiles, and come back with include.forgottenMemories.

import { randomUUID } from "node:crypto";
import type { Database } from "../store/db.ts";
import { forgetMemories, liveMemoriesByIds } from "../store/memories.ts";
import type { TagScope } from "../store/tag-scope.ts";
import type { SearchDeps } from "./search-documents.ts";
import { searchMemoriesAndChunks } from "./search-memories.ts";

/** maxForget when the request leaves it out, and the most it may ask for (the OpenAPI document's 100 and 500). */
export const MAX_FORGET_DEFAULT = 100;
export const MAX_FORGET_CEILING = 500;

export interface ForgetMatchingRequest {
  containerTag: string;
  query?: string;
  ids?: string[];
  /** The least reported similarity (as /v4/search reports it) a memory must have to be forgotten. */
  threshold: number;
  maxForget: number;
  reason?: string;
  dryRun: boolean;
}

export interface ForgetCandidate {
  id: string;
  memory: string;
  /** Similarity to the query, as /v4/search reports it; 1 for a memory named by id. */
  score: number;
}

export interface ForgetMatchingResult {
  dryRun: boolean;
  count: number;
  forgetBatchId: string | null;
  summary: string;
  candidates?: ForgetCandidate[];
  forgotten?: ForgetCandidate[];
}

/**
 * "Forget everything about Project Titan" is searched as "Project Titan": the instruction's words would only
 * pull the query's vector away from the topic. A bare topic is searched as it is.
 */
const INSTRUCTION =
  /^\s*(?:please\s+)?(?:forget|remove|delete|erase)\s+(?:(?:everything|anything|all(?:\s+memories)?|memories)\s+)?(?:about|regarding|concerning|related\s+to|on|of|that)?\s*/i;

export function forgetTopic(query: string): string {
  const topic = query.replace(INSTRUCTION, "").trim();
  return topic.length ? topic : query.trim();
}

/**
 * The memories a call would forget, best match first, at most maxForget: the one selection both the dry run and
 * the real run use. Only the container's latest, live memories within the caller's scope are considered.
 */
export async function selectForForgetting(
  deps: SearchDeps & { db: Database },
  request: ForgetMatchingRequest,
  scope: TagScope,
): Promise<ForgetCandidate[]> {
  if (request.ids?.length) {
    const rows = await liveMemoriesByIds(deps.db, request.containerTag, request.ids, scope);
    return rows.slice(0, request.maxForget).map((m) => ({ id: m.id, memory: m.content, score: 1 }));
  }
  const found = await searchMemoriesAndChunks(
    deps,
    {
      q: forgetTopic(request.query ?? ""),
      containerTags: [request.containerTag],
      searchMode: "memories",
      threshold: request.threshold,
      // The search ranks at most max(50, 5 × limit) candidates per side: 2,500 at the ceiling.
      limit: request.maxForget,
      include: { documents: false, summaries: false, relatedMemories: false, forgottenMemories: false },
      rerank: false,
      rewriteQuery: false,
    },
    scope,
  );
  return found.results.flatMap((r) =>
    r.memory === undefined ? [] : [{ id: r.id, memory: r.memory, score: r.similarity }],
  );
}

export async function forgetMatching(
  deps: SearchDeps & { db: Database },
  request: ForgetMatchingRequest,
  scope: TagScope,
): Promise<ForgetMatchingResult> {
  const selected = await selectForForgetting(deps, request, scope);
  const what = request.ids?.length
    ? `of ${request.ids.length} id${request.ids.length === 1 ? "" : "s"} given`
    : `matching "${forgetTopic(request.query ?? "")}" at threshold ${request.threshold}`;
  if (request.dryRun)
    return {
      dryRun: true,
      count: selected.length,
      forgetBatchId: null,
      summary: `Would forget ${plural(selected.length)} ${what} in ${request.containerTag}.`,
      candidates: selected,
    };
  const changed = new Set(
    await forgetMemories(
      deps.db,
      selected.map((s) => s.id),
      request.reason ?? null,
    ),
  );
  // One forgotten by another call between the selection and the update is not this call's.
  const forgotten = selected.filter((s) => changed.has(s.id));
  return {
    dryRun: false,
    count: forgotten.length,
    forgetBatchId: forgotten.length ? `fb_${randomUUID().replaceAll("-", "")}` : null,
    summary: `Forgot ${plural(forgotten.length)} ${what} in ${request.containerTag}.`,
    forgotten,
  };
}

const plural = (n: number) => `${n} memor${n === 1 ? "y" : "ies"}`;
