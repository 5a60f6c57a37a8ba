// Memories from documents: an LLM reads a document and proposes short facts about the container's
// entity, related to what is already remembered. Its answer is checked against a schema; a malformed
// answer is sent back once or twice with the error, then given up (the document is never failed for it).

import { z } from "zod";
import type { ChatMessage, ChatModel } from "./chat.ts";

export const memoryRelations = ["updates", "extends", "derives"] as const;

const ProposedMemory = z.object({
  content: z.string().trim().min(1).max(2000),
  isStatic: z.boolean().default(false),
  relation: z
    .object({ type: z.enum(memoryRelations), memoryId: z.string().min(1) })
    .nullish()
    .transform((r) => r ?? undefined),
});

const ExtractionAnswer = z.object({ memories: z.array(ProposedMemory).max(50) });

export type ProposedMemory = z.infer<typeof ProposedMemory>;

export interface KnownMemory {
  id: string;
  content: string;
  isStatic: boolean;
}

export interface ExtractionInput {
  containerTag: string;
  /** The caller's hint about whom the content is about (`entityContext` on add). */
  entityContext?: string | null;
  title?: string | null;
  content: string;
  /** Memories of the container the document may update, extend or derive from. */
  known: KnownMemory[];
}

export type ExtractionResult =
  | { ok: true; memories: ProposedMemory[]; attempts: number }
  | { ok: false; reason: string; attempts: number };

const SYSTEM_PROMPT = `You maintain the long-term memory of an application about one entity (a user, project or organisation).
From the document you are given, extract memories: short, self-contained facts about that entity that are worth remembering later.
Each memory is one sentence that makes sense on its own (name the entity instead of saying "he" or "the user" without context).
Mark a memory "isStatic": true when it is a lasting fact (identity, background, long-held preferences), false when it is a recent event or a passing state.
Relate a memory to one of the KNOWN MEMORIES when it does:
- "updates": the fact changed and this memory replaces the known one (e.g. a new city of residence);
- "extends": it adds detail to the known memory without contradicting it;
- "derives": it is a conclusion drawn from the known memory together with the document.
Use the known memory's id in "memoryId". Do not repeat facts already known unchanged. Extract at most 20 memories; none if nothing is worth remembering.
Answer with one JSON object and nothing else, in this shape:
{"memories":[{"content":"...","isStatic":false,"relation":{"type":"updates","memoryId":"..."}}]}
Use "relation": null when a memory relates to no known memory.`;

export function buildExtractionMessages(input: ExtractionInput): ChatMessage[] {
  const known = input.known.length
    ? input.known.map((m) => `- id ${m.id}${m.isStatic ? " (static)" : ""}: ${m.content}`).join("\n")
    : "(none)";
  const about = input.entityContext ? `\nABOUT THE ENTITY: ${input.entityContext}` : "";
  const title = input.title ? `\nTITLE: ${input.title}` : "";
  return [
    { role: "system", content: SYSTEM_PROMPT },
    {
      role: "user",
      content: `CONTAINER: ${input.containerTag}${about}\n\nKNOWN MEMORIES:\n${known}\n\nDOCUMENT:${title}\n${input.content}`,
    },
  ];
}

/** Parses an answer: the JSON object alone, or wrapped in a Markdown fence as some models do. */
export function parseExtractionAnswer(
  answer: string,
): { ok: true; memories: ProposedMemory[] } | { ok: false; error: string } {
  const unfenced = answer
    .trim()
    .replace(/^```(?:json)?\s*/i, "")
    .replace(/\s*```$/, "");
  let json: unknown;
  try {
    json = JSON.parse(unfenced);
  } catch (error) {
    return { ok: false, error: `not valid JSON (${(error as Error).message})` };
  }
  const parsed = ExtractionAnswer.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    return {
      ok: false,
      error: `JSON not in the asked shape: ${first?.path.join(".") || "(root)"}: ${first?.message}`,
    };
  }
  return { ok: true, memories: parsed.data.memories };
}

/**
 * Asks the model, and on a malformed answer asks again with the error (up to `attempts` answers in
 * all). Transport errors (endpoint down, 5xx) are thrown so the caller's retry policy handles them.
 */
export async function extractMemories(
  llm: ChatModel,
  input: ExtractionInput,
  options: { attempts?: number; signal?: AbortSignal } = {},
): Promise<ExtractionResult> {
  const attempts = options.attempts ?? 3;
  const messages = buildExtractionMessages(input);
  let lastError = "no answer";
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const answer = await llm.complete(messages, { json: true, maxTokens: 2000, signal: options.signal });
    const parsed = parseExtractionAnswer(answer);
    if (parsed.ok) return { ok: true, memories: parsed.memories, attempts: attempt };
    lastError = parsed.error;
    messages.push(
      { role: "assistant", content: answer.slice(0, 4000) },
      {
        role: "user",
        content: `Your answer was ${parsed.error}. Answer again with only the JSON object in the shape asked for.`,
      },
    );
  }
  return { ok: false, reason: `LLM answer unusable after ${attempts} attempts: ${lastError}`, attempts };
}
