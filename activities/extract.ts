import type { BlobStore } from "../blobs/index.ts";
import type { Logger } from "../config/logger.ts";
import { MAX_ATTACHED_MAIL_DEPTH, TextBudget } from "../pipeline/extract/budget.ts";
import { DESCRIBED_WHEN_TEXTLESS, describeTextless, TEXTLESS_NOTE } from "../pipeline/extract/describe.ts";
import { detectContentType } from "../pipeline/extract/detect.ts";
import {
  type ContentType,
  type ExtractContext,
  type ExtractResult,
  type ScalarMetadata,
  type Segment,
  segmentsToText,
  UnprocessableContentError,
} from "../pipeline/extract/types.ts";
import { FetchFailedError, FetchRefusedError, fetchUrl } from "../pipeline/safe-fetch.ts";
import { storeDocumentFile } from "../services/document-files.ts";
import type { DocumentRow } from "../store/schema/index.ts";

export { UnprocessableContentError };

/** Runs one extractor; the worker decides where (a CPU thread, or the main thread for subprocess work). */
export type ExtractionRunner = (
  type: ContentType,
  input: { bytes: Buffer; filename?: string; mimeType?: string },
  ctx: ExtractContext,
) => Promise<ExtractResult & { attachments?: Attachment[] }>;

export interface Attachment {
  filename?: string;
  contentType?: string;
  bytes: Buffer | Uint8Array;
}

export interface SourceDeps {
  blobs: BlobStore;
  fetching: { allowPrivateNetwork: boolean; timeoutMs: number; maxBytes: number };
  /** Where a refused fetch's detail goes (the address a name resolved to), which the document's reason leaves out. */
  log?: Pick<Logger, "warn">;
}

export interface ResolvedSource {
  bytes: Buffer;
  filename?: string;
  mimeType?: string;
  /** The caller's own text (a JSON string), never a binary file whatever its first bytes look like. */
  inlineText?: boolean;
  /** Set when the bytes were fetched now and stored: the document should point at them. */
  stored?: { key: string; size: number; mimeType: string | null; name: string | null };
}

/** The original bytes of a document: its uploaded file, the page or file at its URL, or its inline text. */
export async function resolveSource(
  doc: Pick<DocumentRow, "id" | "source" | "url" | "fileKey" | "fileName" | "mimeType" | "connectionId">,
  deps: SourceDeps,
  refetch: boolean,
): Promise<ResolvedSource> {
  // A connector already fetched what a synced document holds; its url is where people open it.
  const fetchable = doc.url && !doc.connectionId;
  if (doc.fileKey && !(fetchable && refetch)) {
    const bytes = await deps.blobs.get(doc.fileKey);
    return { bytes, filename: doc.fileName ?? undefined, mimeType: doc.mimeType ?? undefined };
  }
  if (fetchable && doc.url) {
    const response = await fetchSource({ id: doc.id, url: doc.url }, deps);
    const name = decodeURIComponent(new URL(response.finalUrl).pathname.split("/").pop() ?? "") || null;
    const mimeType = response.contentType;
    const { key } = await storeDocumentFile(deps.blobs, response.body, mimeType, doc.id);
    return {
      bytes: response.body,
      filename: name ?? undefined,
      mimeType: mimeType ?? undefined,
      stored: { key, size: response.body.length, mimeType, name },
    };
  }
  return { bytes: Buffer.from(doc.source, "utf8"), inlineText: true };
}

/** Detects the content type from the bytes; a kind we cannot read fails the document with a clear reason. */
export async function identify(source: ResolvedSource): Promise<{ type: ContentType; mime: string }> {
  if (!source.bytes.length) throw new UnprocessableContentError("the content is empty");
  const detected = await detectContentType(source.bytes, {
    filename: source.filename,
    mimeType: source.mimeType?.split(";")[0]?.trim(),
    inlineText: source.inlineText,
  });
  if (!detected.type) {
    throw new UnprocessableContentError(
      `unsupported content type ${detected.mime}: the service reads text, web pages, PDF, images, audio, video, .docx, .pptx and .eml`,
    );
  }
  return { type: detected.type, mime: detected.mime };
}

export interface Extracted {
  type: ContentType;
  title: string | null;
  content: string;
  segments: Segment[];
  metadata: ScalarMetadata;
}

/** A caption for a picture (a vision-capable LLM), when one is configured. */
export type Captioner = (bytes: Buffer, mimeType: string, signal: AbortSignal) => Promise<string>;

export interface ExtractOptions {
  /** Most characters of text kept from the document, attachments included (MAX_EXTRACTED_CHARS). */
  maxChars: number;
  /** A caption for a picture without text, when a vision-capable LLM is configured. */
  caption?: Captioner;
}

/**
 * Extracts text, with a mail's readable attachments appended as segments of their own (an attached
 * message's text and attachments too, MAX_ATTACHED_MAIL_DEPTH levels deep). The document's text
 * budget is handed to each extraction in turn, so reading stops once it is spent; a document cut
 * short keeps what was read and says so in its metadata (TextBudget.metadata).
 */
export async function extractAll(
  type: ContentType,
  source: ResolvedSource,
  run: ExtractionRunner,
  ctx: ExtractContext,
  { maxChars, caption }: ExtractOptions,
): Promise<Extracted> {
  const budget = new TextBudget(maxChars);
  const result = await run(
    type,
    { bytes: source.bytes, filename: source.filename, mimeType: source.mimeType },
    { ...ctx, maxChars: budget.left },
  );
  const segments = budget.take(result.segments.map(clean), result.truncated);
  await readAttachments(result.attachments ?? [], "attachment:", 1, run, ctx, budget, segments);
  const capped = budget.metadata();
  const content = segmentsToText(segments);
  if (!content.trim()) {
    // A photo, a music clip, a scan OCR cannot read: kept, and found, by what is known about the file.
    if (DESCRIBED_WHEN_TEXTLESS.includes(result.type)) {
      const metadata: ScalarMetadata = { ...result.metadata, note: TEXTLESS_NOTE };
      let description = describeTextless(result.type, source.filename, result.metadata);
      if (result.type === "image" && caption) {
        try {
          const said = await caption(source.bytes, imageMime(result.metadata), ctx.signal);
          if (said) {
            metadata.caption = said;
            description = `${description} Caption: ${said}`;
          }
        } catch (error) {
          // The picture is kept by what is known about it; why it has no caption is on the document.
          if (ctx.signal.aborted) throw error;
          metadata.captionError = (error as Error).message.slice(0, 300);
        }
      }
      return {
        type: result.type,
        title: result.title ?? source.filename ?? null,
        content: description,
        segments: [{ text: description, source: "description" }],
        metadata,
      };
    }
    throw new UnprocessableContentError(`no text could be extracted from the ${type} content`);
  }
  return {
    type: result.type,
    title: result.title ?? titleFromText(content),
    content,
    segments,
    metadata: { ...result.metadata, ...capped },
  };
}

/**
 * Appends the readable attachments' text to `segments`, each segment marked with where it came from:
 * `attachment:<name>`, or `attachment:<message>/<name>` inside an attached message, whose own text and
 * attachments are read the same way, MAX_ATTACHED_MAIL_DEPTH levels deep. Stops once the budget is
 * spent: the attachments left are counted as unread.
 */
async function readAttachments(
  attachments: Attachment[],
  label: string,
  depth: number,
  run: ExtractionRunner,
  ctx: ExtractContext,
  budget: TextBudget,
  segments: Segment[],
): Promise<void> {
  for (const [i, attachment] of attachments.entries()) {
    if (budget.exhausted) {
      budget.cut = true;
      budget.unreadAttachments += attachments.length - i;
      return;
    }
    const bytes = Buffer.from(attachment.bytes);
    const detected = await detectContentType(bytes, {
      filename: attachment.filename,
      mimeType: attachment.contentType,
    });
    if (!detected.type) continue;
    // A message attached deeper is known by the name its parent lists.
    if (detected.type === "email" && depth > MAX_ATTACHED_MAIL_DEPTH) continue;
    const name = `${label}${attachment.filename ?? "unnamed"}`;
    let inner: Awaited<ReturnType<ExtractionRunner>>;
    try {
      inner = await run(
        detected.type,
        { bytes, filename: attachment.filename, mimeType: detected.mime },
        { ...ctx, maxChars: budget.left },
      );
    } catch (error) {
      // One unreadable attachment must not fail the whole mail; its name is still listed in the text.
      if (!(error instanceof UnprocessableContentError)) throw error;
      ctx.heartbeat();
      continue;
    }
    const kept = budget.take(
      inner.segments.map((s) => clean({ ...s, source: name })),
      inner.truncated,
    );
    for (const segment of kept) segments.push(segment);
    ctx.heartbeat();
    if (inner.attachments?.length) {
      await readAttachments(inner.attachments, `${name}/`, depth + 1, run, ctx, budget, segments);
    }
  }
}

/** The MIME type of a decoded image, from the format its extractor found. */
function imageMime(metadata: ScalarMetadata): string {
  const format = String(metadata.format ?? "png");
  return `image/${format === "jpg" ? "jpeg" : format}`;
}

/** PostgreSQL text cannot hold NUL characters (some PDFs' text layers contain them). */
function clean(segment: Segment): Segment {
  return segment.text.includes("\u0000")
    ? { ...segment, text: segment.text.replaceAll("\u0000", "") }
    : segment;
}

async function fetchSource(doc: { id: string; url: string }, deps: SourceDeps) {
  try {
    return await fetchUrl(doc.url, deps.fetching);
  } catch (error) {
    if (error instanceof FetchRefusedError) {
      if (error.detail)
        deps.log?.warn({ documentId: doc.id, url: error.url, detail: error.detail }, "fetch refused");
      throw new UnprocessableContentError(error.message);
    }
    // A 4xx will answer the same next time (except for throttling); 5xx and network errors may not.
    if (
      error instanceof FetchFailedError &&
      error.status &&
      error.status < 500 &&
      ![408, 429].includes(error.status)
    ) {
      throw new UnprocessableContentError(error.message);
    }
    throw error;
  }
}

/**
 * The first line that reads as words, as a title: markdown heading marks and leading bullets or
 * checkboxes removed, lines of only symbols or numbers skipped ("☐", "---", "12") unless there is
 * nothing else.
 */
export function titleFromText(text: string): string | null {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.replace(/^#+\s*/, "").trim())
    .filter((l) => l.length > 0);
  const line =
    lines
      // Bullets, checkboxes, dashes, quote marks of markdown; currency signs, ¿ and brackets stay.
      .map((l) => l.replace(/^[\p{So}\p{Pd}•·‣▪◦*>+~|=_\s]+/u, ""))
      .find((l) => (l.match(/\p{L}/gu)?.length ?? 0) >= 2) ?? lines[0];
  if (!line) return null;
  return line.length > 100 ? `${line.slice(0, 97).trimEnd()}...` : line;
}
