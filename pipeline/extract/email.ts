// E-mail messages (.eml, RFC 822/MIME) with mailparser: the headers worth reading as one segment,
// the body as another (the text part, or the HTML part made readable when there is no text part),
// and the attachments handed back with their bytes so the pipeline can make documents of them.

import type { AddressObject, EmailAddress } from "mailparser";
import { simpleParser } from "mailparser";
import { htmlToText } from "../html.ts";
import type {
  ExtractContext,
  ExtractInput,
  Extractor,
  ExtractResult,
  ScalarMetadata,
  Segment,
} from "./types.ts";
import { UnprocessableContentError } from "./types.ts";

export interface EmailAttachment {
  /** The attachment's file name; "attachment-N" (1-based) when the message gives none. */
  filename: string;
  contentType: string;
  bytes: Buffer;
  /** Shown inside the HTML body (referenced by Content-ID, e.g. a logo in a signature), not attached as a file. */
  inline: boolean;
}

const MiB = 1024 * 1024;
/** Deepest nesting of parts (multiparts and attached messages inside each other) a message may have. */
export const MAX_MAIL_DEPTH = 50;
/** Most bytes all of a message's attachments may decode to, together. */
export const MAX_MAIL_ATTACHMENT_BYTES = 100 * MiB;
/** Most attachments one message may carry. */
export const MAX_MAIL_ATTACHMENTS = 500;
/** Most MIME parts the parser reads in one message (mailparser's own default is 1,000). */
const MAX_MAIL_PARTS = 2_000;

/** The value of a header line (unfolded) without its parameters, lowercased. */
function mediaType(value: string): string {
  return (value.split(";")[0] ?? "").trim().toLowerCase();
}

function boundaryOf(value: string): string | null {
  const match = value.match(/;\s*boundary\s*=\s*(?:"([^"]*)"|([^\s;]+))/i);
  return match ? (match[1] ?? match[2] ?? null) : null;
}

/**
 * How deeply the message's parts nest, read from the raw lines before the parser sees them: each
 * multipart and each attached message (message/rfc822, not base64-encoded) opens a level. Stops
 * and throws as soon as the depth passes `max`, so a message nested 100,000 times costs one pass
 * over its bytes, not a recursive parse.
 */
export function checkMailDepth(bytes: Buffer, max = MAX_MAIL_DEPTH): void {
  /** Open multiparts, innermost last: their boundary and the depth of their parts. */
  const open: { boundary: string; depth: number }[] = [];
  let depth = 0;
  let inHeaders = true;
  let contentType = "";
  let encoding = "";
  let header = "";
  const takeHeader = () => {
    const colon = header.indexOf(":");
    if (colon > 0) {
      const name = header.slice(0, colon).trim().toLowerCase();
      const value = header.slice(colon + 1).trim();
      if (name === "content-type") contentType = value;
      else if (name === "content-transfer-encoding") encoding = value.toLowerCase();
    }
    header = "";
  };
  const enter = (level: number) => {
    if (level > max) {
      throw new UnprocessableContentError(
        `the e-mail message nests parts and attached messages past the cap of ${max} levels`,
      );
    }
    depth = level;
    inHeaders = true;
    contentType = "";
    encoding = "";
    header = "";
  };
  for (let start = 0; start < bytes.length; ) {
    const lineStart = start;
    let lineEnd = bytes.indexOf(0x0a, start);
    if (lineEnd < 0) lineEnd = bytes.length;
    start = lineEnd + 1;
    if (lineEnd > lineStart && bytes[lineEnd - 1] === 0x0d) lineEnd--;
    // A delimiter line ("--" and an open boundary) ends the part it is in, headers or body.
    if (open.length > 0 && bytes[lineStart] === 0x2d && bytes[lineStart + 1] === 0x2d) {
      const delimiter = bytes.toString("latin1", lineStart, Math.min(lineEnd, lineStart + 1000)).trimEnd();
      let matched = false;
      for (let i = open.length - 1; i >= 0 && !matched; i--) {
        const entry = open[i];
        if (!entry) continue;
        if (delimiter === `--${entry.boundary}`) {
          open.length = i + 1;
          enter(entry.depth);
          matched = true;
        } else if (delimiter === `--${entry.boundary}--`) {
          open.length = i;
          depth = entry.depth - 1;
          inHeaders = false;
          matched = true;
        }
      }
      if (matched) continue;
    }
    if (!inHeaders) continue;
    const line = bytes.toString("latin1", lineStart, lineEnd);
    if (line === "") {
      takeHeader();
      inHeaders = false;
      const type = mediaType(contentType);
      const boundary = type.startsWith("multipart/") ? boundaryOf(contentType) : null;
      if (boundary) open.push({ boundary, depth: depth + 1 });
      else if (type === "message/rfc822" && !["base64", "quoted-printable"].includes(encoding)) {
        enter(depth + 1); // the attached message's own headers start right here
      }
    } else if (line.startsWith(" ") || line.startsWith("\t")) {
      header += line;
    } else {
      takeHeader();
      header = line;
    }
  }
}

/** The e-mail extractor's result: the usual result plus the message's attachments. */
export type EmailExtractResult = ExtractResult & { attachments?: EmailAttachment[] };

/** Formats one address: "Name <user@host>", or just the address. Groups list their members. */
function formatAddress(address: EmailAddress): string {
  if (address.group) {
    const members = address.group.map(formatAddress).join(", ");
    return address.name ? `${address.name}: ${members}` : members;
  }
  if (address.name && address.address) return `${address.name} <${address.address}>`;
  return address.address || address.name || "";
}

function formatAddresses(value: AddressObject | AddressObject[] | undefined): string {
  const objects = value === undefined ? [] : Array.isArray(value) ? value : [value];
  return objects
    .flatMap((o) => o.value.map(formatAddress))
    .filter(Boolean)
    .join(", ");
}

/** Body text: line endings normalised, trailing spaces and runs of blank lines removed. */
function tidy(text: string): string {
  return text
    .replace(/\r\n?/g, "\n")
    .split("\n")
    .map((line) => line.replace(/\s+$/, ""))
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/**
 * An e-mail message. Segments: the headers (Subject, From, To, Cc, Date as lines, then
 * "Attachments: a.pdf, b.png"; `source: "headers"`), then the body. The body is the text/plain part;
 * when there is none, the HTML part through htmlToText. The result also carries `attachments` with
 * their bytes. Input with neither headers nor body (e.g. only blank lines) is UnprocessableContentError.
 * Typed as returning EmailExtractResult; it is an Extractor all the same.
 */
export const extractEmail = (async (
  input: ExtractInput,
  ctx: ExtractContext,
): Promise<EmailExtractResult> => {
  ctx.signal.throwIfAborted();
  checkMailDepth(input.bytes);
  let mail: Awaited<ReturnType<typeof simpleParser>>;
  try {
    mail = await simpleParser(input.bytes, {
      skipHtmlToText: true, // a missing text part is filled from the HTML below, with htmlToText
      skipTextToHtml: true,
      skipImageLinks: true,
      keepCidLinks: true, // inline images stay attachments instead of being copied into the HTML as data URIs
      maxChildNodes: MAX_MAIL_PARTS,
    });
  } catch (error) {
    // The bytes are in memory: whatever the parser refuses (too many parts, a header block too
    // large, a stack too deep) is the message's doing, and would fail the same way again.
    throw new UnprocessableContentError(
      `the e-mail message cannot be parsed (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  ctx.signal.throwIfAborted();
  if (mail.attachments.length > MAX_MAIL_ATTACHMENTS) {
    throw new UnprocessableContentError(
      `the e-mail message has ${mail.attachments.length} attachments, past the cap of ${MAX_MAIL_ATTACHMENTS}`,
    );
  }
  const attachmentBytes = mail.attachments.reduce((sum, a) => sum + a.content.length, 0);
  if (attachmentBytes > MAX_MAIL_ATTACHMENT_BYTES) {
    throw new UnprocessableContentError(
      `the e-mail message's attachments decode past the cap of ${MAX_MAIL_ATTACHMENT_BYTES / MiB} MiB together`,
    );
  }

  let body = tidy(mail.text ?? "");
  if (!body && typeof mail.html === "string" && mail.html.trim()) body = htmlToText(mail.html).text;

  const subject = mail.subject?.replace(/\s+/g, " ").trim() ?? "";
  const from = formatAddresses(mail.from);
  const to = formatAddresses(mail.to);
  const cc = formatAddresses(mail.cc);
  const date = mail.date && !Number.isNaN(mail.date.getTime()) ? mail.date.toISOString() : null;

  const attachments: EmailAttachment[] = mail.attachments.map((a, i) => ({
    filename: a.filename?.trim() || `attachment-${i + 1}`,
    contentType: a.contentType || "application/octet-stream",
    bytes: a.content,
    inline: a.related === true || (a.contentDisposition === "inline" && Boolean(a.cid)),
  }));

  const headerCount = mail.headers?.size ?? 0;
  if (headerCount === 0 && !body && attachments.length === 0) {
    throw new UnprocessableContentError("the file is not an e-mail message: it has no headers and no body");
  }

  const headerLines: string[] = [];
  if (subject) headerLines.push(`Subject: ${subject}`);
  if (from) headerLines.push(`From: ${from}`);
  if (to) headerLines.push(`To: ${to}`);
  if (cc) headerLines.push(`Cc: ${cc}`);
  if (date) headerLines.push(`Date: ${date}`);
  if (attachments.length) headerLines.push(`Attachments: ${attachments.map((a) => a.filename).join(", ")}`);

  const segments: Segment[] = [];
  if (headerLines.length) segments.push({ text: headerLines.join("\n"), source: "headers" });
  if (body) segments.push({ text: body });

  const metadata: ScalarMetadata = { attachmentCount: attachments.length };
  if (from) metadata.from = from;
  if (to) metadata.to = to;
  if (cc) metadata.cc = cc;
  if (date) metadata.date = date;
  if (mail.messageId) metadata.messageId = mail.messageId;
  if (mail.inReplyTo) metadata.inReplyTo = mail.inReplyTo;

  return { type: "email", title: subject || null, segments, metadata, attachments };
}) satisfies Extractor;
