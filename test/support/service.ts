import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { inject } from "vitest";
import { loadConfig } from "../../config/env.ts";
import { createLogger } from "../../config/logger.ts";
import { type Role, startService } from "../../runtime/service.ts";

export const TEST_ADMIN_KEY = "sm_test_admin_key_0123456789abcdef";

export interface TestService {
  url: string;
  dataDir: string;
  taskQueue: string;
  /** Document workflows this service started, and how many went straight to its own worker (eager start). */
  processingStarts(): { total: number; eager: number };
  stop(): Promise<void>;
}

/**
 * The real service in this process: real Temporal (the suite's dev server), a real worker, a real
 * store (a fresh PGlite directory, or the suite's PostgreSQL), the real embedding model.
 */
export async function startTestService(
  opts: {
    driver?: "pglite" | "postgres";
    roles?: Role[];
    env?: Record<string, string>;
    /** Reuse a data directory (a restart); it is then left in place by stop(). */
    dataDir?: string;
  } = {},
): Promise<TestService> {
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(tmpdir(), "memory-test-"));
  // A task queue of its own, so workers of other test files never pick up this file's documents.
  const taskQueue = `test-${randomBytes(4).toString("hex")}`;
  const config = loadConfig({
    PORT: "0",
    DATA_DIR: dataDir,
    TEMPORAL_ADDRESS: inject("TEST_TEMPORAL_ADDRESS"),
    TEMPORAL_TASK_QUEUE: taskQueue,
    MEMORY_ADMIN_KEY: TEST_ADMIN_KEY,
    ALLOW_PRIVATE_NETWORK: "true",
    LOG_LEVEL: "warn",
    ...(opts.driver === "postgres" ? { DATABASE_URL: await freshDatabase() } : {}),
    ...opts.env,
  });
  const service = await startService(config, createLogger("warn"), opts.roles ?? ["api", "worker"]);
  return {
    url: service.url as string,
    dataDir,
    taskQueue,
    processingStarts: () => service.processingStarts(),
    async stop() {
      await service.stop();
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Polls until `check` returns a value (not undefined), or fails with the last seen state. */
export async function waitFor<T>(
  check: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 90_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}${last ? ` (last: ${JSON.stringify(last)})` : ""}`);
}

/** A new, empty database on the suite's PostgreSQL server, so test files never see each other's rows. */
export async function freshDatabase(): Promise<string> {
  const base = new URL(inject("TEST_DATABASE_URL"));
  const name = `t_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: base.toString() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  base.pathname = `/${name}`;
  return base.toString();
}

/** Polls a document (through any SDK version's `get`) until processing has finished, done or failed. */
export function untilProcessed<D extends { status: string }>(
  get: (id: string) => Promise<D>,
  id: string,
  timeoutMs = 90_000,
): Promise<D & { errorReason?: string | null }> {
  return waitFor(
    async () => {
      const doc = await get(id);
      return doc.status === "done" || doc.status === "failed" ? doc : undefined;
    },
    `document ${id} to finish processing`,
    timeoutMs,
  );
}
