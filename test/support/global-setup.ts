import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startTemporalDevServer, type TemporalDevServer } from "../../runtime/temporal-dev-server.ts";
import { type NativePostgres, startNativePostgres } from "./postgres.ts";

declare module "vitest" {
  export interface ProvidedContext {
    TEST_TEMPORAL_ADDRESS: string;
    TEST_DATABASE_URL: string;
  }
}

/**
 * One Temporal dev server and one PostgreSQL for the whole run: starting them per file would cost seconds and
 * hundreds of MB each on a 2-core machine. Tests get the addresses through inject() and, for child processes
 * they spawn, through process.env.
 */
export default async function setup(project: TestProject) {
  const temporalDir = mkdtempSync(join(tmpdir(), "memory-temporal-"));
  const [temporal, postgres] = await Promise.allSettled([
    startTemporalDevServer({ dataDir: temporalDir }),
    startNativePostgres(),
  ]);
  const teardown = async () => {
    await Promise.all([
      temporal.status === "fulfilled" ? temporal.value.stop() : undefined,
      postgres.status === "fulfilled" ? postgres.value.stop() : undefined,
    ]);
    rmSync(temporalDir, { recursive: true, force: true });
  };
  if (temporal.status === "rejected" || postgres.status === "rejected") {
    await teardown();
    const reasons = [temporal, postgres].flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []));
    throw new Error(`test services failed to start:\n${reasons.join("\n")}`);
  }
  provide(project, temporal.value, postgres.value);
  return teardown;
}

function provide(project: TestProject, temporal: TemporalDevServer, postgres: NativePostgres) {
  project.provide("TEST_TEMPORAL_ADDRESS", temporal.address);
  project.provide("TEST_DATABASE_URL", postgres.url);
  process.env.TEST_TEMPORAL_ADDRESS = temporal.address;
  process.env.TEST_DATABASE_URL = postgres.url;
}
