import type { ChatModel } from "./chat.ts";

const INSTRUCTIONS =
  "You rewrite search queries for a document search engine that combines keyword and semantic search. " +
  "Rewrite the user's query into one clearer search query: expand abbreviations, add the most useful synonyms " +
  "or related terms, fix spelling, keep every entity and number. Answer with the rewritten query only, one line, " +
  "no quotes, no explanation.";

/** The query as the LLM rewrote it; the caller decides what to do when this throws. */
export async function rewriteQuery(llm: ChatModel, query: string, signal?: AbortSignal): Promise<string> {
  const answer = await llm.complete(
    [
      { role: "system", content: INSTRUCTIONS },
      { role: "user", content: query },
    ],
    { maxTokens: 200, signal },
  );
  const line =
    answer
      .split("\n")
      .find((l) => l.trim())
      ?.trim() ?? "";
  const cleaned = line.replace(/^["'“]+|["'”]+$/g, "").slice(0, 2000);
  return cleaned || query;
}
