// Plain text and markdown: decode the bytes (BOM, UTF-8, UTF-16, else detected), then cut markdown
// into one segment per section at its headings. The decoding helpers are shared with the HTML extractor.

import chardet from "chardet";
import iconv from "iconv-lite";
import type { ExtractContext, ExtractInput, Extractor, ExtractResult, Segment } from "./types.ts";
import { UnprocessableContentError } from "./types.ts";

export interface DecodedText {
  text: string;
  /** The encoding the bytes were read as, lower case (e.g. "utf-8", "utf-16le", "windows-1252"). */
  encoding: string;
  /** The text was UTF-8 that had been decoded as Latin-1 and re-encoded ("â\u0080\u0093" for "–"); it was repaired. */
  repairedMojibake: boolean;
}

interface Bom {
  encoding: string;
  length: number;
}

/** The byte order mark at the start of `bytes`, if any. UTF-32 is checked before UTF-16 (FF FE 00 00 vs FF FE). */
export function sniffBom(bytes: Uint8Array): Bom | null {
  const [a, b, c, d] = bytes;
  if (a === 0xef && b === 0xbb && c === 0xbf) return { encoding: "utf-8", length: 3 };
  if (a === 0xff && b === 0xfe && c === 0 && d === 0) return { encoding: "utf-32le", length: 4 };
  if (a === 0 && b === 0 && c === 0xfe && d === 0xff) return { encoding: "utf-32be", length: 4 };
  if (a === 0xff && b === 0xfe) return { encoding: "utf-16le", length: 2 };
  if (a === 0xfe && b === 0xff) return { encoding: "utf-16be", length: 2 };
  return null;
}

/**
 * Maps a charset label (from a Content-Type, a <meta>, or a detector) to an encoding iconv-lite can
 * decode, or null if it is unknown. Follows the WHATWG Encoding Standard where it differs from the
 * label's literal meaning: Latin-1 and ASCII labels mean windows-1252 (what every browser decodes, and
 * what such files really are: 0x80-0x9F hold €, quotes and dashes, not C1 control codes).
 */
export function normalizeCharset(label: string | null | undefined): string | null {
  if (!label) return null;
  const name = label
    .trim()
    .replace(/^["']|["']$/g, "")
    .toLowerCase();
  if (!name) return null;
  const alias: Record<string, string> = {
    "us-ascii": "windows-1252",
    ascii: "windows-1252",
    "iso-8859-1": "windows-1252",
    "iso8859-1": "windows-1252",
    iso_8859_1: "windows-1252",
    "iso_8859-1": "windows-1252",
    latin1: "windows-1252",
    l1: "windows-1252",
    cp1252: "windows-1252",
    "x-cp1252": "windows-1252",
    "iso-8859-9": "windows-1254",
    latin5: "windows-1254",
    "iso-8859-11": "windows-874",
    "tis-620": "windows-874",
    gb2312: "gb18030",
    gbk: "gb18030",
    "x-gbk": "gb18030",
    "x-sjis": "shift_jis",
    "unicode-1-1-utf-8": "utf-8",
    utf8: "utf-8",
  };
  const mapped = alias[name] ?? name;
  return iconv.encodingExists(mapped) ? mapped : null;
}

/** Decodes with iconv-lite (correct windows-125x tables, unlike Node's TextDecoder for windows-1252). */
export function decodeAs(bytes: Uint8Array, encoding: string): string {
  return iconv.decode(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), encoding, {
    stripBOM: true,
  });
}

const utf8Strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function isValidUtf8(bytes: Uint8Array): boolean {
  try {
    utf8Strict.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** UTF-16 without a BOM: one byte of most pairs is zero (true of any text mostly in Latin script). */
function sniffUtf16WithoutBom(bytes: Uint8Array): string | null {
  const pairs = Math.floor(Math.min(bytes.length, 4096) / 2);
  if (pairs < 4) return null;
  let zeroEven = 0;
  let zeroOdd = 0;
  for (let i = 0; i < pairs * 2; i += 2) {
    if (bytes[i] === 0) zeroEven++;
    if (bytes[i + 1] === 0) zeroOdd++;
  }
  if (zeroOdd > pairs * 0.6 && zeroEven < pairs * 0.1) return "utf-16le";
  if (zeroEven > pairs * 0.6 && zeroOdd < pairs * 0.1) return "utf-16be";
  return null;
}

/**
 * The encoding of text with no BOM and no trustworthy declaration: valid UTF-8 is UTF-8 (no other
 * common encoding produces it by accident), BOM-less UTF-16 is recognised by its zero bytes, and
 * anything else is left to chardet, with windows-1252 as the last resort.
 */
export function detectEncoding(bytes: Uint8Array): string {
  if (isValidUtf8(bytes)) return "utf-8";
  const utf16 = sniffUtf16WithoutBom(bytes);
  if (utf16) return utf16;
  const sample = bytes.length > 65536 ? bytes.subarray(0, 65536) : bytes;
  for (const match of chardet.analyse(sample)) {
    const encoding = normalizeCharset(match.name);
    // chardet also reports UTF-8 for mostly-UTF-8 text with a few bad bytes; decoding it as UTF-8
    // (bad bytes become U+FFFD) beats reading every multi-byte character as two Latin-1 ones.
    if (encoding && match.confidence >= 10) return encoding;
  }
  return "windows-1252";
}

/**
 * UTF-8 that was once decoded as Latin-1 and saved again as UTF-8 reads "â\u0080\u0093" where "–" was
 * meant. C1 control characters (U+0080-U+009F) never occur in real text, so their presence, with every
 * character in the Latin-1 range and the Latin-1 bytes forming valid UTF-8, identifies the damage exactly.
 */
export function repairMojibake(text: string): string | null {
  if (!/[\u0080-\u009f]/.test(text)) return null;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0xff) return null;
  const bytes = Buffer.from(text, "latin1");
  if (!isValidUtf8(bytes)) return null;
  return bytes.toString("utf8");
}

/**
 * Decodes bytes whose encoding is not known for certain. A BOM always wins; then `declared` (a charset
 * label from a Content-Type header or a <meta>, ignored if unknown); then detection.
 */
export function decodeBytes(bytes: Uint8Array, declared?: string | null): DecodedText {
  const bom = sniffBom(bytes);
  let encoding: string;
  let body = bytes;
  if (bom) {
    encoding = bom.encoding;
    body = bytes.subarray(bom.length);
  } else {
    encoding = normalizeCharset(declared) ?? detectEncoding(bytes);
  }
  let text = decodeAs(body, encoding);
  let repairedMojibake = false;
  if (encoding === "utf-8") {
    const repaired = repairMojibake(text);
    if (repaired !== null) {
      text = repaired;
      repairedMojibake = true;
    }
  }
  return { text, encoding, repairedMojibake };
}

/** The charset parameter of a MIME type such as "text/plain; charset=ISO-8859-1". */
export function charsetOf(mimeType: string | undefined): string | null {
  const match = mimeType?.match(/;\s*charset\s*=\s*("?)([^";\s]+)\1/i);
  return match?.[2] ?? null;
}

const MARKDOWN_EXTENSIONS = /\.(md|markdown|mdown|mkd|mkdn|mdx)$/i;
const ATX_HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

function isMarkdown(input: ExtractInput, text: string): boolean {
  const mime = input.mimeType?.split(";")[0]?.trim().toLowerCase();
  if (mime === "text/markdown" || mime === "text/x-markdown") return true;
  if (input.filename && MARKDOWN_EXTENSIONS.test(input.filename)) return true;
  if (input.filename || mime) return false; // declared as something else, e.g. notes.txt or text/plain
  return headings(text.split("\n")).length > 0;
}

interface Heading {
  line: number;
  level: number;
  text: string;
}

/** ATX headings ("# Title"), skipping lines inside fenced code blocks. */
function headings(lines: string[]): Heading[] {
  const found: Heading[] = [];
  let fence: string | null = null;
  for (const [i, line] of lines.entries()) {
    const fenceMatch = line.match(FENCE);
    if (fence) {
      const marker = fenceMatch?.[1];
      if (
        marker &&
        marker[0] === fence[0] &&
        marker.length >= fence.length &&
        !line.trim().slice(marker.length)
      )
        fence = null;
      continue;
    }
    if (fenceMatch?.[1]) {
      fence = fenceMatch[1];
      continue;
    }
    const heading = line.match(ATX_HEADING);
    const text = heading?.[2]?.trim();
    if (heading?.[1] && text) found.push({ line: i, level: heading[1].length, text });
  }
  return found;
}

/**
 * The heading level at which a document is cut into sections: the shallowest level that occurs more
 * than once (so a lone "# Title" over "## Part" headings does not swallow the whole document), or, if
 * every level occurs once, the deepest. Headings at or above it start a section.
 */
export function sectionLevel(levels: number[]): number {
  const counts = new Map<number, number>();
  for (const level of levels) counts.set(level, (counts.get(level) ?? 0) + 1);
  const sorted = [...counts.keys()].sort((a, b) => a - b);
  return sorted.find((level) => (counts.get(level) ?? 0) > 1) ?? sorted[sorted.length - 1] ?? 1;
}

function markdownSegments(text: string): { segments: Segment[]; firstHeading: string | null } {
  const lines = text.split("\n");
  const found = headings(lines);
  if (found.length === 0) return { segments: [{ text: text.trim() }], firstHeading: null };
  const level = sectionLevel(found.map((h) => h.level));
  const cuts = found.filter((h) => h.level <= level);
  const segments: Segment[] = [];
  const preamble = lines
    .slice(0, cuts[0]?.line ?? 0)
    .join("\n")
    .trim();
  if (preamble) segments.push({ text: preamble });
  for (const [i, cut] of cuts.entries()) {
    const end = cuts[i + 1]?.line ?? lines.length;
    segments.push({ text: lines.slice(cut.line, end).join("\n").trim(), section: cut.text });
  }
  return { segments, firstHeading: found[0]?.text ?? null };
}

/** Text that decodes to NUL bytes or many control characters is a binary file, whatever its name says. */
function looksBinary(text: string): boolean {
  const sample = text.length > 65536 ? text.slice(0, 65536) : text;
  let controls = 0;
  for (let i = 0; i < sample.length; i++) {
    const c = sample.charCodeAt(i);
    if (c === 0) return true;
    if (c < 32 && c !== 9 && c !== 10 && c !== 12 && c !== 13 && c !== 27) controls++;
  }
  return controls > Math.max(2, sample.length / 100);
}

function firstLine(text: string): string | null {
  const line = text
    .split("\n")
    .map((l) => l.trim())
    .find(Boolean);
  if (!line) return null;
  return line.length > 200 ? `${line.slice(0, 199).trimEnd()}…` : line;
}

/**
 * Plain text and markdown. Empty or whitespace-only input is not an error here: it yields no segments
 * (the pipeline fails documents without text). Binary content is UnprocessableContentError.
 */
export const extractText: Extractor = async (
  input: ExtractInput,
  ctx: ExtractContext,
): Promise<ExtractResult> => {
  ctx.signal.throwIfAborted();
  const decoded = decodeBytes(input.bytes, charsetOf(input.mimeType));
  if (looksBinary(decoded.text))
    throw new UnprocessableContentError("the file is not text: it contains binary data");
  const text = decoded.text.replace(/\r\n?/g, "\n");
  const metadata: ExtractResult["metadata"] = { encoding: decoded.encoding };
  if (decoded.repairedMojibake) metadata.repairedMojibake = true;
  if (!text.trim()) return { type: "text", title: null, segments: [], metadata };

  if (isMarkdown(input, text)) {
    metadata.format = "markdown";
    const { segments, firstHeading } = markdownSegments(text);
    return { type: "text", title: firstHeading ?? firstLine(text), segments, metadata };
  }
  metadata.format = "plain";
  return { type: "text", title: firstLine(text), segments: [{ text: text.trim() }], metadata };
};
