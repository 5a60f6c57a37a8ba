/**
 * Worker threads load our TypeScript sources directly, so they need the tsx loader that the main
 * thread got from `tsx`. Under vitest the main thread has no such flag, so add it there.
 */
export function threadExecArgv(filename: string): string[] {
  const argv = process.execArgv.filter((a) => !a.startsWith("--inspect"));
  if (!filename.endsWith(".ts") || argv.some((a) => /\btsx\b/.test(a))) return argv;
  return [...argv, "--import", "tsx"];
}
