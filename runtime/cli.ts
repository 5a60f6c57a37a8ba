import { setFlagsFromString } from "node:v8";
import { ConfigError, loadConfig } from "../config/env.ts";
import { createLogger } from "../config/logger.ts";
import { type Role, startService } from "./service.ts";

/** Shared entry of `npm start`, `npm run api` and `npm run worker`. */
export async function runFromCommandLine(roles: Role[]): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const log = createLogger(config.LOG_LEVEL);
  // Before anything big is allocated; V8 reads the factor at every full collection, in every isolate.
  if (config.V8_HEAP_GROWING_PERCENT > 0)
    setFlagsFromString(`--heap-growing-percent=${config.V8_HEAP_GROWING_PERCENT}`);
  if (roles.length === 1 && !config.DATABASE_URL) {
    log.warn(
      "running the API or the worker alone needs DATABASE_URL (PGlite is owned by one process); use `npm start` otherwise",
    );
  }
  // A promise nobody awaited is a bug to log, not a reason to drop every request in flight.
  process.on("unhandledRejection", (reason) => log.error({ err: reason }, "unhandled promise rejection"));
  const service = await startService(config, log, roles);
  log.info(
    {
      api: service.url,
      openapi: service.url && `${service.url}/openapi.json`,
      console: service.url && `${service.url}/console/`,
      mcp: service.url && `${service.url}/mcp`,
      temporal: service.temporalAddress,
      temporalUi: service.temporalUiUrl,
      dataDir: config.DATABASE_URL ? undefined : config.dataDir,
    },
    `memory service running (${roles.join(" + ")})`,
  );
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    await service.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}
