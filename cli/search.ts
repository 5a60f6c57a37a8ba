import type { ApiClient } from "./client.ts";
import { clip, type Output, table } from "./output.ts";

interface SearchResponse {
  results: {
    documentId: string;
    title: string | null;
    score: number;
    containerTags: string[];
    chunks: { content: string; isRelevant: boolean; score: number }[];
  }[];
  total: number;
  timing: number;
  warnings?: string[];
}

export async function searchCommand(
  client: ApiClient,
  out: Output,
  query: string,
  opts: { containerTag?: string; limit: number },
) {
  const res = await client.request<SearchResponse>("POST", "/v3/search", {
    body: {
      q: query,
      limit: opts.limit,
      ...(opts.containerTag ? { containerTags: [opts.containerTag] } : {}),
    },
  });
  for (const w of res.warnings ?? []) out.note(`warning: ${w}`);
  out.result(res, () => {
    if (!res.results.length) return `No results for "${query}".`;
    const rows = res.results.map((r, i) => {
      // The chunk that matched, not a neighbour brought along as context.
      const best = r.chunks.find((c) => c.isRelevant) ?? r.chunks[0];
      return [String(i + 1), r.score.toFixed(3), r.title ?? r.documentId, clip(best?.content ?? "", 100)];
    });
    // The order is the hybrid ranking (keywords and meaning together), which a similarity alone can
    // contradict: say so, or a lower score above a higher one looks like a bug.
    return (
      `${table(["#", "SCORE", "TITLE", "SNIPPET"], rows, 100)}\n\n` +
      `${res.results.length} result(s) in ${Math.round(res.timing)} ms, ranked by keywords and meaning together; ` +
      "SCORE is the best passage's similarity to the query."
    );
  });
}
