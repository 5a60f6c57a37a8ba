import { createRequire } from "node:module";
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
