// Splits a document's text into chunks for embedding and search. Chunks are exact slices of the
// input (content === text.slice(startOffset, startOffset + content.length)), so a hit can be located
// in the original and formatting such as code blocks survives.

export interface Chunk {
  content: string;
  /** 0-based index of the chunk within the document. */
  position: number;
  /** Offset of the chunk's first character in the input, in UTF-16 code units. */
  startOffset: number;
}

export interface ChunkOptions {
  /** Upper bound on a chunk's length in UTF-16 code units. */
  maxChars?: number;
  /** Sentences repeated at the start of the next chunk, so a thought split across chunks stays findable. */
  overlapSentences?: number;
  /** Locale for sentence rules; fixed by default so results do not depend on the host's locale. */
  locale?: string;
}

interface Span {
  start: number;
  end: number;
}

const PARAGRAPH_BREAK = /\n[ \t\r]*\n/;
/** A line break inside a sentence: the next line continues in lower case (hard-wrapped text, PDFs). */
const SOFT_WRAP = /\r?\n(?=\p{Ll})/gu;

export function chunkText(text: string, options: ChunkOptions = {}): Chunk[] {
  const maxChars = options.maxChars ?? 1200;
  const overlap = options.overlapSentences ?? 1;
  if (!Number.isInteger(maxChars) || maxChars < 1)
    throw new RangeError(`maxChars must be a positive integer`);
  if (!Number.isInteger(overlap) || overlap < 0)
    throw new RangeError(`overlapSentences must be a non-negative integer`);

  const units = sentenceUnits(text, maxChars, options.locale ?? "en");
  const chunks: Chunk[] = [];
  let first = 0;
  while (first < units.length) {
    const last = chunkEnd(text, units, first, maxChars);
    const start = (units[first] as Span).start;
    chunks.push({
      content: text.slice(start, (units[last] as Span).end),
      position: chunks.length,
      startOffset: start,
    });
    if (last === units.length - 1) break;
    first = nextStart(units, first, last, overlap, maxChars);
  }
  return chunks;
}

/**
 * Index of the last unit in the chunk starting at `first`: as many units as fit, but if that would
 * end mid-paragraph and a paragraph ends at least halfway into the budget, end the chunk there.
 */
function chunkEnd(text: string, units: Span[], first: number, maxChars: number): number {
  const start = (units[first] as Span).start;
  let last = first;
  let lastParagraphEnd = -1;
  while (last + 1 < units.length && (units[last + 1] as Span).end - start <= maxChars) {
    if (endsParagraph(text, units, last)) lastParagraphEnd = last;
    last++;
  }
  if (last + 1 < units.length && !endsParagraph(text, units, last) && lastParagraphEnd >= first) {
    if ((units[lastParagraphEnd] as Span).end - start >= maxChars / 2) return lastParagraphEnd;
  }
  return last;
}

function endsParagraph(text: string, units: Span[], i: number): boolean {
  const next = units[i + 1];
  return next !== undefined && PARAGRAPH_BREAK.test(text.slice((units[i] as Span).end, next.start));
}

/**
 * The next chunk starts `overlap` units before the unit that did not fit, fewer if the overlap and
 * that unit together would exceed maxChars, and always after `first` so the loop makes progress.
 */
function nextStart(units: Span[], first: number, last: number, overlap: number, maxChars: number): number {
  const next = last + 1;
  const nextEnd = (units[next] as Span).end;
  let start = Math.max(first + 1, next - overlap);
  while (start < next && nextEnd - (units[start] as Span).start > maxChars) start++;
  return start;
}

/** Sentences as trimmed spans, with any sentence longer than maxChars cut into pieces at spaces. */
function sentenceUnits(text: string, maxChars: number, locale: string): Span[] {
  const units: Span[] = [];
  // ICU sentence rules break at every line end. That keeps list items and code lines as units, but
  // cuts hard-wrapped prose mid-sentence, so soft wraps become spaces first (same length: offsets hold).
  const segmentable = text.replace(SOFT_WRAP, (m) => " ".repeat(m.length));
  const segmenter = new Intl.Segmenter(locale, { granularity: "sentence" });
  for (const { segment, index } of segmenter.segment(segmentable)) {
    const lead = segment.length - segment.trimStart().length;
    const body = segment.trim();
    if (!body) continue;
    splitLong(text, index + lead, index + lead + body.length, maxChars, units);
  }
  return units;
}

function splitLong(text: string, start: number, end: number, maxChars: number, out: Span[]): void {
  let s = start;
  while (end - s > maxChars) {
    // Last whitespace that leaves a non-empty piece of at most maxChars.
    let cut = -1;
    for (let i = s + maxChars; i > s; i--) {
      if (/\s/.test(text[i] ?? "")) {
        cut = i;
        break;
      }
    }
    let pieceEnd = cut;
    if (cut === -1) {
      // One "word" longer than maxChars (a URL, base64): cut by length, never inside a surrogate pair.
      pieceEnd = s + maxChars;
      if (isLowSurrogate(text.charCodeAt(pieceEnd))) pieceEnd--;
      if (pieceEnd === s) pieceEnd = s + 2; // maxChars 1 cannot hold an astral character; keep it whole
    }
    while (pieceEnd > s && /\s/.test(text[pieceEnd - 1] ?? "")) pieceEnd--;
    out.push({ start: s, end: pieceEnd });
    s = cut === -1 ? pieceEnd : cut;
    while (s < end && /\s/.test(text[s] ?? "")) s++;
  }
  if (end > s) out.push({ start: s, end });
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
