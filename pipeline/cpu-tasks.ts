// Runs inside worker threads (piscina): parsing, OCR and splitting are CPU-bound and must not block
// the event loop that serves the API and heartbeats activities.
import { chunkText } from "./chunker.ts";
import { threadExtractors } from "./extract/registry.ts";
import { type ContentType, type SegmentLocation, UnprocessableContentError } from "./extract/types.ts";

export type CpuTask =
  | {
      op: "chunkSegments";
      segments: ({ text: string } & SegmentLocation)[];
      maxChars: number;
      overlapSentences: number;
    }
  | { op: "extract"; type: ContentType; bytes: Uint8Array; filename?: string; mimeType?: string }
  | { op: "ocr"; image: Uint8Array };

export interface ChunkPiece {
  content: string;
  position: number;
  metadata: Record<string, string | number>;
}

/** Each segment is split on its own, so a chunk never spans two pages, slides or sections. */
function chunkSegments(task: Extract<CpuTask, { op: "chunkSegments" }>): ChunkPiece[] {
  const pieces: ChunkPiece[] = [];
  for (const { text, ...location } of task.segments) {
    const metadata = Object.fromEntries(
      Object.entries(location).filter(([, v]) => typeof v === "string" || typeof v === "number"),
    ) as Record<string, string | number>;
    for (const chunk of chunkText(text, {
      maxChars: task.maxChars,
      overlapSentences: task.overlapSentences,
    })) {
      pieces.push({ content: chunk.content, position: pieces.length, metadata });
    }
  }
  return pieces;
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
        return await extractor(
          { bytes: Buffer.from(task.bytes), filename: task.filename, mimeType: task.mimeType },
          { heartbeat: () => {}, signal: controller.signal },
        );
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
