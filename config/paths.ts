import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

// Must match cacheDir() in scripts/setup.mjs, which cannot import TypeScript (it runs before `npm install`).
export function cacheDir(): string {
  if (process.env.MEMORY_CACHE_DIR) return process.env.MEMORY_CACHE_DIR;
  const base = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(base, "memory-service");
}

/** The Temporal CLI used for the embedded dev server: an explicit TEMPORAL_CLI_PATH wins over the cached build. */
export function temporalCliPath(): string {
  const path = process.env.TEMPORAL_CLI_PATH || join(cacheDir(), "bin", "temporal");
  if (!existsSync(path)) {
    throw new Error(
      `Temporal CLI not found at ${path}. Run \`node scripts/setup.mjs\` to build it, ` +
        "set TEMPORAL_CLI_PATH to an existing binary, or set TEMPORAL_ADDRESS to use an external server.",
    );
  }
  return path;
}

/** PostgreSQL (with pgvector) binaries for tests; setup.mjs --test records where it installed them. */
export function pgBinDir(): string {
  const recorded = join(cacheDir(), "pg-bin-path");
  if (!existsSync(recorded)) {
    throw new Error(`${recorded} is missing: run \`node scripts/setup.mjs --test\` to install PostgreSQL.`);
  }
  const dir = readFileSync(recorded, "utf8").trim();
  for (const tool of ["initdb", "postgres", "pg_ctl"]) {
    if (!existsSync(join(dir, tool))) {
      throw new Error(`${join(dir, tool)} is missing: run \`node scripts/setup.mjs --test\` again.`);
    }
  }
  return dir;
}
