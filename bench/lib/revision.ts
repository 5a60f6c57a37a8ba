import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The commit measured, and whether files differ from it: the code and the benchmark itself both count (a changed
 * benchmark measures something else); only docs/ is left out, where the report is being written.
 */
export function revision(): string {
  if (process.env.BENCH_REVISION) return process.env.BENCH_REVISION; // e.g. when run from a `git archive` export
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  try {
    const commit = git("rev-parse", "--short", "HEAD").trim();
    const changed = git("status", "--porcelain")
      .split("\n")
      .map((line) => line.slice(3).trim())
      .filter((file) => file && !file.startsWith("docs/"));
    return changed.length ? `${commit} with uncommitted changes to ${changed.length} files` : commit;
  } catch {
    return "unknown (not a git checkout)";
  }
}
