import { Piscina } from "piscina";
import { threadExecArgv } from "../pipeline/threads.ts";

const filename = new URL("./cpu-tasks.ts", import.meta.url).href;

export interface CpuPool {
  htmlToText(html: string, url?: string): Promise<{ title: string | null; text: string }>;
  chunk(
    text: string,
    opts: { maxChars: number; overlapSentences: number },
  ): Promise<{ content: string; position: number }[]>;
  close(): Promise<void>;
}

export function createCpuPool(threads = 1): CpuPool {
  const pool = new Piscina({
    filename,
    minThreads: 1,
    maxThreads: threads,
    execArgv: threadExecArgv(filename),
  });
  return {
    htmlToText: (html, url) => pool.run({ op: "html", html, url }),
    chunk: (text, opts) => pool.run({ op: "chunk", text, ...opts }),
    close: () => pool.destroy(),
  };
}
