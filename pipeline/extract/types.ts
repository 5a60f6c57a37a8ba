/**
 * The contract every content extractor follows: bytes in, text segments out. Extractors are pure
 * libraries (no database, no Temporal); activities wrap them with timeouts and heartbeats.
 */

/** What a document is; stored in `documents.type`. Names follow the official SDK where it has one. */
export type ContentType =
  | "text"
  | "webpage"
  | "pdf"
  | "image"
  | "audio"
  | "video"
  | "docx"
  | "pptx"
  | "email";

/** Where a piece of text came from inside its file; kept on the chunks made from it. */
export interface SegmentLocation {
  page?: number;
  slide?: number;
  section?: string;
  /** Seconds from the start of audio or video. */
  startSeconds?: number;
  endSeconds?: number;
  /** e.g. "notes" for speaker notes, "ocr" for text read from an image, "attachment:<name>". */
  source?: string;
}

export interface Segment extends SegmentLocation {
  text: string;
}

export type ScalarMetadata = Record<string, string | number | boolean>;

export interface ExtractResult {
  type: ContentType;
  title: string | null;
  /** In reading order. Empty text segments are allowed but carry no content. */
  segments: Segment[];
  /** Facts about the file worth keeping on the document (page count, duration, author, ...). */
  metadata: ScalarMetadata;
  /** The text stopped at `ExtractContext.maxChars`: the file holds more than was read or kept. */
  truncated?: boolean;
}

export interface ExtractContext {
  /** Call during long work so the activity's heartbeat shows progress. */
  heartbeat(details?: unknown): void;
  /** Aborted when the activity is cancelled or times out; stop work promptly. */
  signal: AbortSignal;
  /**
   * Most characters of text the document can still keep (its budget, MAX_EXTRACTED_CHARS, less what
   * its other parts used): an extractor may stop reading once its segments hold that many, and say
   * so with `truncated`. Unset: no limit.
   */
  maxChars?: number;
}

export interface ExtractInput {
  bytes: Buffer;
  filename?: string;
  /** Declared by the caller; a hint only: detection from the bytes wins. */
  mimeType?: string;
}

export type Extractor = (input: ExtractInput, ctx: ExtractContext) => Promise<ExtractResult>;

/**
 * The content can never be processed as it is (corrupt, encrypted, empty, unsupported):
 * retrying would not help. The message is shown to users as the document's failure reason.
 */
export class UnprocessableContentError extends Error {
  override readonly name = "UnprocessableContentError";
}

/** Joins segments into the document's plain-text content. */
export function segmentsToText(segments: Segment[]): string {
  return segments
    .map((s) => s.text.trim())
    .filter(Boolean)
    .join("\n\n");
}
