import { readlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { setPriority } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * Worker threads do not inherit tsx's loader hooks, so a .ts worker needs `--import tsx` (as an
 * absolute URL, so it resolves no matter the cwd). Skipped when the parent was already started with
 * it, since tsx passes its flags on through process.execArgv.
 */
export function threadExecArgv(filename: string): string[] {
  if (!filename.endsWith(".ts")) return [...process.execArgv];
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  if (process.execArgv.includes(tsx)) return [...process.execArgv];
  return [...process.execArgv, "--import", tsx];
}

/**
 * The worker module next to a module (`<name>.worker.ts` beside `<name>.ts`): the TypeScript source when
 * running from source; a build would ship the .js next to it.
 */
export function workerFileBeside(moduleUrl: string): string {
  return fileURLToPath(moduleUrl).replace(/\.(ts|js)$/, ".worker.$1");
}

/**
 * Lowers the calling thread's OS scheduling priority to `niceness` (1–19; 0 leaves it). On Linux each thread is
 * scheduled on its own and threads it starts later (onnxruntime's) inherit its niceness, so a bulk embedding
 * thread that calls this before loading its model yields the cores to the API, the store and query embedding
 * whenever they need them, and still gets every cycle they leave. Elsewhere it does nothing: the reason is
 * returned so the caller can say it.
 */
export function lowerThreadPriority(niceness: number): string | undefined {
  if (niceness <= 0) return undefined;
  if (process.platform !== "linux")
    return `thread priorities are only set on Linux (this is ${process.platform})`;
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (!Number.isInteger(tid) || tid <= 0) return "could not read this thread's id from /proc/thread-self";
    setPriority(tid, niceness);
    return undefined;
  } catch (error) {
    return `could not lower the thread's priority: ${(error as Error).message}`;
  }
}
