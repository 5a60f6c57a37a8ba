import { fileTypeFromBuffer } from "file-type";
import type { ContentType } from "./types.ts";

export interface Detected {
  /** null: the bytes are of a kind the service cannot extract text from. */
  type: ContentType | null;
  /** Best-known MIME type of the bytes. */
  mime: string;
}

const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation";
const IMAGE_MIMES = new Set([
  "image/png",
  "image/jpeg",
  "image/tiff",
  "image/bmp",
  "image/webp",
  "image/gif",
]);

/** Signatures short enough to occur at the start of ordinary text. */
const WEAK_SIGNATURES = new Set([
  "image/bmp",
  "video/quicktime",
  "audio/mpeg",
  "image/x-icon",
  "application/x-mobipocket-ebook",
]);

/**
 * What a file is, from its bytes first (magic numbers), then from its text, and only then from the
 * declared name or MIME type: names and declared types are often wrong.
 */
export async function detectContentType(
  bytes: Buffer,
  hints: { filename?: string | null; mimeType?: string | null; inlineText?: boolean } = {},
): Promise<Detected> {
  // A byte-order mark means text; checked first because a UTF-16 BOM can look like an MP3 frame header.
  const bom = textBom(bytes);
  // Text sent as a JSON string is text (or markup or mail): a title starting "BM" is not a bitmap.
  if (!bom && !hints.inlineText) {
    const magic = await fileTypeFromBuffer(bytes);
    // Two- and four-byte signatures also occur in prose ("BMJ…", "…wide…"); readable text wins over them.
    const weak = magic && WEAK_SIGNATURES.has(magic.mime) && looksLikeText(bytes);
    if (magic && !weak) {
      const type = typeFromMime(magic.mime);
      if (type) return { type, mime: magic.mime };
      if (magic.mime !== "application/xml") return { type: null, mime: magic.mime };
    }
  }
  if (!bom && !looksLikeText(bytes)) {
    return { type: null, mime: hints.mimeType || "application/octet-stream" };
  }
  const head = decodeHead(bytes, bom).trimStart();
  if (/^(<!doctype\s+html|<html[\s>]|<\?xml[^>]*>\s*(<!doctype\s+html|<html))/i.test(head)) {
    return { type: "webpage", mime: "text/html" };
  }
  if (looksLikeMail(head)) return { type: "email", mime: "message/rfc822" };
  // A fragment without <html>, e.g. "<head>..." or "<body>...": markup first, not markdown mentioning tags.
  if (head.startsWith("<") && /<(body|head)[\s>]/i.test(head.slice(0, 4000))) {
    return { type: "webpage", mime: "text/html" };
  }
  const declared = (hints.mimeType ?? "").toLowerCase();
  const name = (hints.filename ?? "").toLowerCase();
  if (declared === "text/html" || /\.x?html?$/.test(name)) return { type: "webpage", mime: "text/html" };
  if (declared === "message/rfc822" || name.endsWith(".eml"))
    return { type: "email", mime: "message/rfc822" };
  return {
    type: "text",
    mime: name.endsWith(".md") || declared === "text/markdown" ? "text/markdown" : "text/plain",
  };
}

export function typeFromMime(mime: string): ContentType | null {
  if (mime === "application/pdf") return "pdf";
  if (IMAGE_MIMES.has(mime)) return "image";
  if (mime.startsWith("audio/")) return "audio";
  if (mime.startsWith("video/")) return "video";
  if (mime === DOCX) return "docx";
  if (mime === PPTX) return "pptx";
  if (mime === "message/rfc822") return "email";
  if (mime === "text/html" || mime === "application/xhtml+xml") return "webpage";
  return null;
}

function textBom(bytes: Buffer): "utf8" | "utf16le" | "utf16be" | null {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return "utf8";
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return "utf16le";
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return "utf16be";
  return null;
}

function decodeHead(bytes: Buffer, bom: ReturnType<typeof textBom>): string {
  const head = bytes.subarray(0, 16_384);
  if (bom === "utf16le") return new TextDecoder("utf-16le").decode(head);
  if (bom === "utf16be") return new TextDecoder("utf-16be").decode(head);
  return new TextDecoder("utf-8").decode(head);
}

/** Text has no NUL bytes and few control characters; legacy 8-bit encodings still count as text. */
function looksLikeText(bytes: Buffer): boolean {
  const sample = bytes.subarray(0, 8192);
  let control = 0;
  for (const b of sample) {
    if (b === 0) return false;
    if (b < 9 || (b > 13 && b < 32)) control++;
  }
  return control <= sample.length * 0.02;
}

/** RFC 822: a block of "Name: value" header lines, including at least two typical mail headers. */
function looksLikeMail(head: string): boolean {
  const headerBlock = head.split(/\r?\n\r?\n/, 1)[0] ?? "";
  const lines = headerBlock.split(/\r?\n/).filter((l) => !/^[ \t]/.test(l));
  if (lines.length < 2 || !lines.every((l) => /^[!-9;-~]+:/.test(l))) return false;
  const names = new Set(lines.map((l) => l.slice(0, l.indexOf(":")).toLowerCase()));
  const typical = ["from", "to", "subject", "date", "received", "message-id", "mime-version", "return-path"];
  return typical.filter((n) => names.has(n)).length >= 2;
}
