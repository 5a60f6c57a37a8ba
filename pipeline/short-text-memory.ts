// Without an LLM nothing can extract facts from a document, yet what assistants save is mostly a sentence
// or two ("My favourite language is OCaml and I live in Lisbon."). Such a short text is kept as a memory
// as well, word for word, so memory search finds it as a memory, the profile shows it and "forget that"
// (DELETE /v4/memories by content) finds it. The rule is deliberately simple and documented in the README.

export interface ShortTextMemory {
  content: string;
  /** Static (a lasting fact about the user) or dynamic (something recent or planned): see isStaticFact. */
  isStatic: boolean;
}

/**
 * The memory a short text becomes, or undefined when the text is not short: at most `maxChars` characters
 * (0 turns the rule off) after trimming, and one chunk long.
 */
export function shortTextMemory(text: string, maxChars: number): ShortTextMemory | undefined {
  const content = text.trim();
  if (maxChars <= 0 || !content || content.length > maxChars) return undefined;
  return { content, isStatic: isStaticFact(content) };
}

const FIRST_PERSON = /\b(i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|our|ours|us)\b/i;
const WEEKDAY = "(monday|tuesday|wednesday|thursday|friday|saturday|sunday)";
const UNIT = `(week|weekend|month|year|morning|afternoon|evening|night|${WEEKDAY})`;
const TIME_MARKERS = [
  /\b(today|tonight|tomorrow|yesterday|now|currently|right now|recently|lately|soon|later|just now)\b/i,
  new RegExp(`\\b(this|next|last|coming|on)\\s+${UNIT}\\b`, "i"),
  new RegExp(`\\b${WEEKDAY}\\b`, "i"),
  /\b\d+\s+(minutes?|hours?|days?|weeks?|months?|years?)\s+ago\b/i,
  /\b(at|by|until|before|after)\s+\d{1,2}(:\d{2})?\s*(am|pm)?\b/i,
  /\b\d{4}-\d{2}-\d{2}\b/,
  /\b(am|is|are|was|were)\s+(going to|about to)\b/i,
  /\bi'm\s+\w+ing\b/i,
];

/**
 * A statement in the first person with no mark of time is a lasting fact about the user ("I live in
 * Lisbon", "My favourite language is OCaml"): static. Anything with a time mark ("tomorrow", "last week",
 * "I'm flying to Oslo"), or not about the user, is dynamic: the profile shows it among recent context.
 */
export function isStaticFact(text: string): boolean {
  if (!FIRST_PERSON.test(text)) return false;
  return !TIME_MARKERS.some((marker) => marker.test(text));
}
