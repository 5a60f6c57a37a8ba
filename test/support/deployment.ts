import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import Supermemory from "supermemory";
import { inject } from "vitest";
import { findFreePort } from "../../runtime/temporal-dev-server.ts";
import { type Spawned, spawnEntry } from "./processes.ts";
import { freshDatabase } from "./service.ts";

const running: Spawned[] = [];
const dirs: string[] = [];

/** Kills every process the deployments of a test file started and removes their data dirs (afterAll). */
export async function stopDeployments(): Promise<void> {
  for (const p of running.splice(0)) await p.stop("SIGKILL");
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

export type Deployment = Awaited<ReturnType<typeof deployment>>;

/**
 * The scale-out shape as real child processes: API and worker entry points sharing one PostgreSQL
 * database and one Temporal task queue; start as many of each as a test needs.
 */
export async function deployment(name: string, databaseUrl?: string) {
  const dataDir = mkdtempSync(path.join(tmpdir(), `memory-${name}-`));
  dirs.push(dataDir);
  const adminKey = `sm_${name}_${randomBytes(16).toString("hex")}`;
  const env = {
    DATABASE_URL: databaseUrl ?? (await freshDatabase()),
    TEMPORAL_ADDRESS: inject("TEST_TEMPORAL_ADDRESS"),
    TEMPORAL_TASK_QUEUE: `${name}-${randomBytes(4).toString("hex")}`,
    MEMORY_ADMIN_KEY: adminKey,
    DATA_DIR: dataDir,
  };
  const start = async (entry: "api" | "worker", extra: Record<string, string> = {}) => {
    const port = entry === "api" ? await findFreePort() : 0;
    const child = spawnEntry(`bin/${entry}.ts`, { ...env, PORT: String(port), ...extra });
    running.push(child);
    await child.waitFor(new RegExp(`memory service running \\(${entry}\\)`), 180_000);
    return Object.assign(child, { url: `http://127.0.0.1:${port}` });
  };
  const client = (url: string) => new Supermemory({ apiKey: adminKey, baseURL: url, maxRetries: 0 });
  /** Straight to the database, to check what the API cannot show (duplicate chunks, runs). */
  const sql = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) => {
    const db = new pg.Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    try {
      return (await db.query<T>(text, values)).rows;
    } finally {
      await db.end();
    }
  };
  return { env, start, client, sql };
}
