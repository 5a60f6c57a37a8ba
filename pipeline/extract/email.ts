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
  const mail = await simpleParser(input.bytes, {
    skipHtmlToText: true, // a missing text part is filled from the HTML below, with htmlToText
    skipTextToHtml: true,
    skipImageLinks: true,
    keepCidLinks: true, // inline images stay attachments instead of being copied into the HTML as data URIs
  });
  ctx.signal.throwIfAborted();

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
