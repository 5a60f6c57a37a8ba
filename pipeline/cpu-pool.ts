import { Piscina } from "piscina";
import type { ChunkedSegments, CpuTask } from "./cpu-tasks.ts";
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
    opts: { maxChars: number; overlapSentences: number; maxChunks?: number },
  ): Promise<ChunkedSegments>;
  /** `maxChars`: the most text sent back (the document's budget left); the result says `truncated` when cut. */
  extract(
    type: ContentType,
    input: { bytes: Buffer; filename?: string; mimeType?: string },
    signal?: AbortSignal,
    maxChars?: number,
  ): Promise<ExtractResult>;
  ocr(image: Buffer): Promise<string>;
  close(): Promise<void>;
}

export interface CpuPoolOptions {
  /**
   * Each thread's V8 heap limit in MB (its old generation). A parse that needs more ends that thread
   * alone (piscina starts another), and its file fails as unprocessable; 0 = V8's own limit.
   */
  memoryMb?: number;
}

/** The default heap limit of a CPU thread: enough for any document a person wrote, not for a bomb. */
export const CPU_THREAD_MEMORY_MB = 256;

/** The code of a worker thread that was ended for passing its heap limit. */
const OUT_OF_MEMORY = "ERR_WORKER_OUT_OF_MEMORY";

export function createCpuPool(
  threads = 1,
  { memoryMb = CPU_THREAD_MEMORY_MB }: CpuPoolOptions = {},
): CpuPool {
  const pool = new Piscina({
    filename,
    minThreads: 1,
    maxThreads: threads,
    idleTimeout: 60_000,
    execArgv: threadExecArgv(filename),
    // One task per thread (piscina's default), so a thread that dies took only its own file with it.
    concurrentTasksPerWorker: 1,
    ...(memoryMb > 0 ? { resourceLimits: { maxOldGenerationSizeMb: memoryMb } } : {}),
  });
  // A thread that dies outside a task must not take the process down; piscina replaces it.
  pool.on("error", (error) => console.error("cpu thread failed:", error));
  const run = <T>(task: CpuTask, signal?: AbortSignal) =>
    pool.run(task, signal ? { signal } : {}) as Promise<T>;
  return {
    chunkSegments: (segments, opts) => run({ op: "chunkSegments", segments, ...opts }),
    async extract(type, input, signal, maxChars) {
      let result: ExtractResult | { unprocessable: string };
      try {
        result = await run<ExtractResult | { unprocessable: string }>(
          {
            op: "extract",
            type,
            bytes: input.bytes,
            filename: input.filename,
            mimeType: input.mimeType,
            maxChars,
          },
          signal,
        );
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === OUT_OF_MEMORY) {
          // Only this file was in the thread: it is what needed the memory, and would again.
          throw new UnprocessableContentError(
            `the ${type} file needs more memory to parse than the extraction thread's limit of ${memoryMb} MB`,
          );
        }
        throw error;
      }
      if ("unprocessable" in result) throw new UnprocessableContentError(result.unprocessable);
      return result;
    },
    ocr: (image) => run({ op: "ocr", image }),
    close: () => pool.destroy(),
  };
}
