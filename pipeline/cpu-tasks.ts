// Runs inside worker threads (piscina): parsing, OCR and splitting are CPU-bound and must not block
// the event loop that serves the API and heartbeats activities.
import { chunkText } from "./chunker.ts";
import { cutSegments } from "./extract/budget.ts";
import { threadExtractors } from "./extract/registry.ts";
import { type ContentType, type SegmentLocation, UnprocessableContentError } from "./extract/types.ts";

export type CpuTask =
  | {
      op: "chunkSegments";
      segments: ({ text: string } & SegmentLocation)[];
      maxChars: number;
      overlapSentences: number;
      /** Stop once this many pieces are made (MAX_CHUNKS_PER_DOCUMENT). */
      maxChunks?: number;
    }
  | {
      op: "extract";
      type: ContentType;
      bytes: Uint8Array;
      filename?: string;
      mimeType?: string;
      /** The document's budget left: at most this much text is sent back (ExtractContext.maxChars). */
      maxChars?: number;
    }
  | { op: "ocr"; image: Uint8Array };

export interface ChunkPiece {
  content: string;
  position: number;
  metadata: Record<string, string | number>;
}

export interface ChunkedSegments {
  pieces: ChunkPiece[];
  /** The text made more than `maxChunks` pieces: the rest were not made. */
  truncated: boolean;
}

/** Each segment is split on its own, so a chunk never spans two pages, slides or sections. */
function chunkSegments(task: Extract<CpuTask, { op: "chunkSegments" }>): ChunkedSegments {
  const pieces: ChunkPiece[] = [];
  const max = task.maxChunks ?? Number.POSITIVE_INFINITY;
  for (const { text, ...location } of task.segments) {
    if (pieces.length >= max) {
      if (text.trim()) return { pieces, truncated: true };
      continue;
    }
    const metadata = Object.fromEntries(
      Object.entries(location).filter(([, v]) => typeof v === "string" || typeof v === "number"),
    ) as Record<string, string | number>;
    for (const chunk of chunkText(text, {
      maxChars: task.maxChars,
      overlapSentences: task.overlapSentences,
    })) {
      if (pieces.length >= max) return { pieces, truncated: true };
      pieces.push({ content: chunk.content, position: pieces.length, metadata });
    }
  }
  return { pieces, truncated: false };
}

export default async function run(task: CpuTask) {
  switch (task.op) {
    case "chunkSegments":
      return chunkSegments(task);
    case "extract": {
      const extractors = threadExtractors();
      const extractor = extractors[task.type];
      if (!extractor) throw new Error(`no extractor for ${task.type} in CPU threads`);
      const controller = new AbortController();
      try {
        const result = await extractor(
          { bytes: Buffer.from(task.bytes), filename: task.filename, mimeType: task.mimeType },
          { heartbeat: () => {}, signal: controller.signal, maxChars: task.maxChars },
        );
        if (task.maxChars === undefined) return result;
        // Only what the document can keep crosses back to the main thread, whatever the extractor read.
        const { segments, cut } = cutSegments(result.segments, task.maxChars);
        return { ...result, segments, ...(cut || result.truncated ? { truncated: true } : {}) };
      } catch (error) {
        // Error classes do not survive the trip between threads: send "bad content" back as data.
        if (error instanceof UnprocessableContentError) return { unprocessable: error.message };
        // Parsing bytes already in memory ran out of stack: structure nested past what any parser
        // here can follow, which a retry would only meet again.
        if (error instanceof RangeError && /call stack size/i.test(error.message)) {
          return { unprocessable: `the ${task.type} file is nested too deeply to parse (${error.message})` };
        }
        throw error;
      }
    }
    case "ocr":
      return threadExtractors().ocrText(Buffer.from(task.image));
  }
}
