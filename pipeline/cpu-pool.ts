import { Piscina } from "piscina";
import type { ChunkPiece, CpuTask } from "./cpu-tasks.ts";
import {
  type ContentType,
  type ExtractResult,
  type SegmentLocation,
  UnprocessableContentError,
} from "./extract/types.ts";
import { threadExecArgv } from "./threads.ts";

const filename = new URL("./cpu-tasks.ts", import.meta.url).href;

export interface CpuPool {
  chunkSegments(
    segments: ({ text: string } & SegmentLocation)[],
    opts: { maxChars: number; overlapSentences: number },
  ): Promise<ChunkPiece[]>;
  extract(
    type: ContentType,
    input: { bytes: Buffer; filename?: string; mimeType?: string },
    signal?: AbortSignal,
  ): Promise<ExtractResult>;
  ocr(image: Buffer): Promise<string>;
  close(): Promise<void>;
}

export function createCpuPool(threads = 1): CpuPool {
  const pool = new Piscina({
    filename,
    minThreads: 1,
    maxThreads: threads,
    idleTimeout: 60_000,
    execArgv: threadExecArgv(filename),
  });
  // A thread that dies outside a task must not take the process down; piscina replaces it.
  pool.on("error", (error) => console.error("cpu thread failed:", error));
  const run = <T>(task: CpuTask, signal?: AbortSignal) =>
    pool.run(task, signal ? { signal } : {}) as Promise<T>;
  return {
    chunkSegments: (segments, opts) => run({ op: "chunkSegments", segments, ...opts }),
    async extract(type, input, signal) {
      const result = await run<ExtractResult | { unprocessable: string }>(
        { op: "extract", type, bytes: input.bytes, filename: input.filename, mimeType: input.mimeType },
        signal,
      );
      if ("unprocessable" in result) throw new UnprocessableContentError(result.unprocessable);
      return result;
    },
    ocr: (image) => run({ op: "ocr", image }),
    close: () => pool.destroy(),
  };
}
