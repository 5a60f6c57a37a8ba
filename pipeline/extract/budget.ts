// What one document may cost: the characters of text kept from it (its own and every attachment's,
// however deeply nested) and the chunks made of that text. A file past a cap is not failed: the text
// up to the cap is kept, searchable, and the document's fileMetadata says which cap cut it and how much
// was kept, so the run ends `done` on its first try instead of being retried into the same blow-up.
// The budget is handed down to each extraction (ctx.maxChars), so reading stops where the budget ends.

import type { ScalarMetadata, Segment } from "./types.ts";

/**
 * Attached messages (a mail forwarded as an attachment) are read this many levels deep, each with its
 * attachments; deeper ones are known by name. Each level is parsed again from its own bytes, so the
 * depth bounds the parsing one upload can cause, whatever the budget.
 */
export const MAX_ATTACHED_MAIL_DEPTH = 3;

/** What segmentsToText puts between two segments. */
const SEPARATOR = 2;

/**
 * The first `maxChars` characters of the segments' text as segmentsToText would join them (each
 * trimmed, empty ones dropped, "\n\n" between): the segments that fit, then the one that crosses the
 * limit cut short. `cut` tells whether anything was dropped.
 */
export function cutSegments(segments: Segment[], maxChars: number): { segments: Segment[]; cut: boolean } {
  const kept: Segment[] = [];
  let used = 0;
  for (const [i, segment] of segments.entries()) {
    const text = segment.text.trim();
    if (!text) continue;
    const cost = text.length + (kept.length ? SEPARATOR : 0);
    if (used + cost <= maxChars) {
      kept.push(segment.text === text ? segment : { ...segment, text });
      used += cost;
      continue;
    }
    const room = maxChars - used - (kept.length ? SEPARATOR : 0);
    if (room > 0) kept.push({ ...segment, text: sliceWhole(text, room) });
    // Whatever follows is dropped; `cut` only when some of it had text.
    const rest = segments.slice(i).some((s) => s.text.trim());
    return { segments: kept, cut: rest };
  }
  return { segments: kept, cut: false };
}

/** The first `length` UTF-16 units, one fewer if that would split a surrogate pair. */
function sliceWhole(text: string, length: number): string {
  const code = text.charCodeAt(length - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? length - 1 : length);
}

/**
 * The characters one document may still keep, spent as its parts are read in order: the file's own
 * text, then each attachment's. `left` is what the next part may bring (separator counted).
 */
export class TextBudget {
  readonly maxChars: number;
  #used = 0;
  #kept = 0;
  /** The text was cut: a part held more than was left. */
  cut = false;
  /** Attachments not read because the budget was spent before them. */
  unreadAttachments = 0;

  constructor(maxChars: number) {
    this.maxChars = maxChars;
  }

  /** Characters the next part may bring. */
  get left(): number {
    return Math.max(0, this.maxChars - this.#used - (this.#kept ? SEPARATOR : 0));
  }

  get exhausted(): boolean {
    return this.left <= 0;
  }

  /** Keeps what fits of a part's segments; `truncated` when the part itself already stopped at `left`. */
  take(segments: Segment[], truncated = false): Segment[] {
    const { segments: kept, cut } = cutSegments(segments, this.left);
    for (const s of kept) {
      this.#used += s.text.length + (this.#kept ? SEPARATOR : 0);
      this.#kept++;
    }
    if (cut || truncated) this.cut = true;
    return kept;
  }

  /** What the document's fileMetadata says when the cap was hit; empty when it was not. */
  metadata(): ScalarMetadata {
    if (!this.cut) return {};
    const kept = this.#used;
    const unread = this.unreadAttachments;
    const attachments = unread ? `, ${unread} attachment${unread === 1 ? " was" : "s were"} not read` : "";
    return {
      truncated: "MAX_EXTRACTED_CHARS",
      keptChars: kept,
      ...(unread ? { unreadAttachments: unread } : {}),
      note: `text cut at the cap of ${this.maxChars.toLocaleString("en")} characters per document (MAX_EXTRACTED_CHARS): the first ${kept.toLocaleString("en")} are kept and searchable${attachments}`,
    };
  }
}

/**
 * The fileMetadata of a document whose chunks stopped at MAX_CHUNKS_PER_DOCUMENT, added to what the
 * extraction wrote (a text cut by both caps names both).
 */
export function chunkCapMetadata(metadata: ScalarMetadata, maxChunks: number): ScalarMetadata {
  // A retried chunking step finds its own note already there.
  if (String(metadata.truncated ?? "").includes("MAX_CHUNKS_PER_DOCUMENT")) return metadata;
  const sentence = `chunks stopped at the cap of ${maxChunks.toLocaleString("en")} per document (MAX_CHUNKS_PER_DOCUMENT): the text after the last chunk is kept but not searchable`;
  return {
    ...metadata,
    truncated: metadata.truncated
      ? `${metadata.truncated}, MAX_CHUNKS_PER_DOCUMENT`
      : "MAX_CHUNKS_PER_DOCUMENT",
    keptChunks: maxChunks,
    note: metadata.truncated && metadata.note ? `${metadata.note}; ${sentence}` : sentence,
  };
}
