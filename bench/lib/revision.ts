import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** What a benchmark run writes: changes to these never make the measured code dirty. */
const OUTPUT_PATHS = ["docs/benchmarks.md", "bench/results/"];

export interface Revision {
  /** Short commit hash of HEAD ("unknown" outside a git checkout). */
  commit: string;
  /** No file differs from the commit, apart from the benchmark's own outputs (OUTPUT_PATHS). */
  clean: boolean;
  /** The paths that differ (modified, added, deleted, renamed or untracked), outputs left out. */
  dirty: string[];
}

const isOutput = (file: string) =>
  OUTPUT_PATHS.some((p) => (p.endsWith("/") ? file.startsWith(p) : file === p));

/** `git status --porcelain` path field: "a -> b" for renames, quoted when it holds odd characters. */
function pathsOf(line: string): string[] {
  const field = line.slice(3);
  return field.split(" -> ").map((p) => (p.startsWith('"') ? (JSON.parse(p) as string) : p).trim());
}

/**
 * The commit measured and whether the checkout differs from it. Every file counts, the code, the benchmark itself
 * (a changed benchmark measures something else) and the documentation, except the files a run writes.
 */
export function revisionInfo(cwd = root): Revision {
  if (process.env.BENCH_REVISION) {
    // e.g. when run from a `git archive` export: the caller vouches for the tree.
    return { commit: process.env.BENCH_REVISION, clean: true, dirty: [] };
  }
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  try {
    const commit = git("rev-parse", "--short", "HEAD").trim();
    const dirty = git("status", "--porcelain", "--untracked-files=all")
      .split("\n")
      .filter((line) => line.trim())
      .flatMap(pathsOf)
      .filter((file) => file && !isOutput(file));
    const unique = [...new Set(dirty)].sort();
    return { commit, clean: unique.length === 0, dirty: unique };
  } catch {
    return { commit: "unknown", clean: false, dirty: ["(not a git checkout)"] };
  }
}

/** One phrase: "abc1234" or "abc1234 with uncommitted changes to 3 files". */
export function revisionLabel(r: Revision): string {
  if (r.commit === "unknown") return "unknown (not a git checkout)";
  return r.clean
    ? r.commit
    : `${r.commit} with uncommitted changes to ${r.dirty.length} file${r.dirty.length === 1 ? "" : "s"}`;
}

/** The commit measured, as a phrase (see revisionInfo). */
export function revision(cwd = root): string {
  return revisionLabel(revisionInfo(cwd));
}
