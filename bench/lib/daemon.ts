// The service as a child process, the way `npm start` runs it (`main.ts`: API + worker + embedder +
// PGlite in one Node process), against a Temporal dev server started here, so the resident memory
// and CPU measured are the daemon's own and not the benchmark's. Each call starts a fresh pair.

import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { Client, Connection } from "@temporalio/client";
import {
  findFreePort,
  guardChildProcess,
  startTemporalDevServer,
} from "../../runtime/temporal-dev-server.ts";
import { jsonClient } from "./http.ts";
import { type Cleanup, tempDir } from "./service.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Variables passed through from the benchmark's environment; everything the service reads is set here. */
const PASS_THROUGH = [
  "PATH",
  "HOME",
  "USER",
  "TMPDIR",
  "LANG",
  "LC_ALL",
  "TZ",
  "XDG_CACHE_HOME",
  "MEMORY_CACHE_DIR",
  "TEMPORAL_CLI_PATH",
];

export interface ServiceProcess {
  url: string;
  apiKey: string;
  /** The service's Node process. */
  pid: number;
  temporalPid: number;
  temporalAddress: string;
  taskQueue: string;
  dataDir: string;
  /** The service's configuration as set by the benchmark (the admin key left out). */
  settings: Record<string, string>;
  /** Start of the child until /health answered. */
  startMs: number;
  /** The last lines the service printed. */
  outputTail(): string;
  /** Whether the child is still running. */
  alive(): boolean;
  /** Running `processDocument` workflows in Temporal (undefined when Temporal could not be asked). */
  runningWorkflows(): Promise<number | undefined>;
  /** Stops the service (SIGTERM, then SIGKILL after `graceMs`), then the Temporal dev server. */
  stop(graceMs?: number): Promise<{ exitCode: number | null; killed: boolean }>;
  /** Removes the data directory (after stop). */
  removeData(): Promise<void>;
}

function tailBuffer(limit = 64 * 1024) {
  let text = "";
  return {
    push(d: Buffer) {
      text += d.toString();
      if (text.length > 2 * limit) text = text.slice(-limit);
    },
    get: () => text.slice(-limit),
  };
}

export async function startServiceProcess(
  cleanup: Cleanup,
  opts: {
    threads: number;
    embeddingModel: string;
    logLevel: string;
    /** More service settings (`--bulk-env KEY=VALUE`), applied last. */
    extraEnv: Record<string, string>;
    startTimeoutMs?: number;
  },
): Promise<ServiceProcess> {
  const temporalDir = tempDir(cleanup, "memory-bench-bulk-temporal-");
  const dev = await startTemporalDevServer({ dataDir: temporalDir.dir, port: 0, uiPort: 0 });
  const stopTemporal = cleanup.add(`Temporal dev server (pid ${dev.pid})`, async () => {
    await dev.stop();
    await temporalDir.remove();
  });
  const data = tempDir(cleanup, "memory-bench-bulk-");
  const port = await findFreePort();
  const apiKey = `sm_bench_${randomBytes(16).toString("hex")}`;
  const taskQueue = `bulk-${randomBytes(4).toString("hex")}`;
  const settings: Record<string, string> = {
    DATA_DIR: data.dir,
    HOST: "127.0.0.1",
    PORT: String(port),
    TEMPORAL_ADDRESS: dev.address,
    TEMPORAL_TASK_QUEUE: taskQueue,
    DATABASE_URL: "",
    EMBEDDING_THREADS: String(opts.threads),
    EMBEDDING_MODEL: opts.embeddingModel,
    LOG_LEVEL: opts.logLevel,
    // glibc's allocator as `npm start` sets it (package.json): fewer arenas, freed memory returned to the system.
    MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? "2",
    MALLOC_TRIM_THRESHOLD_: process.env.MALLOC_TRIM_THRESHOLD_ ?? "131072",
    // The benchmark's own requests come from loopback in bursts: no admin rate limit (the default, made explicit).
    ADMIN_RATE_LIMIT_MAX: "0",
    ...opts.extraEnv,
  };
  const env: Record<string, string> = { MEMORY_ADMIN_KEY: apiKey, ...settings };
  for (const name of PASS_THROUGH) {
    const v = process.env[name];
    if (v !== undefined && env[name] === undefined) env[name] = v;
  }
  const started = performance.now();
  const child: ChildProcess = spawn(process.execPath, [...serviceNodeArgs(), "--import", "tsx", "main.ts"], {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const pid = child.pid;
  if (!pid) throw new Error("could not start the service process");
  const guard = guardChildProcess(pid, "SIGTERM");
  const output = tailBuffer();
  child.stdout?.on("data", (d: Buffer) => output.push(d));
  child.stderr?.on("data", (d: Buffer) => output.push(d));
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      exitCode = code;
      resolve(code);
    }),
  );
  const alive = () => exitCode === undefined;

  let temporal: { connection: Connection; client: Client } | undefined;
  let stopped: Promise<{ exitCode: number | null; killed: boolean }> | undefined;
  const stop = (graceMs = 120_000) => {
    stopped ??= (async () => {
      let killed = false;
      if (alive()) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => {
          killed = true;
          child.kill("SIGKILL");
        }, graceMs);
        await exited;
        clearTimeout(timer);
      }
      guard.release();
      await temporal?.connection.close().catch(() => undefined);
      await stopTemporal();
      return { exitCode: exitCode ?? null, killed };
    })();
    return stopped;
  };
  const unregister = cleanup.add(`service process ${pid}`, async () => {
    await stop(30_000);
  });

  // Ready when /health answers: the API is started last, after the store, the embedder and the worker.
  const url = `http://127.0.0.1:${port}`;
  const probe = jsonClient({ baseUrl: url, apiKey, connections: 1, timeoutMs: 5_000 });
  const deadline = Date.now() + (opts.startTimeoutMs ?? 300_000);
  try {
    for (;;) {
      if (!alive()) throw new Error(`the service exited (code ${exitCode}) while starting:\n${output.get()}`);
      const o = await probe.request("GET", "/health");
      if (o.ok) break;
      if (Date.now() > deadline)
        throw new Error(`the service did not answer /health in time:\n${output.get()}`);
      await sleep(250);
    }
  } catch (error) {
    await unregister();
    throw error;
  } finally {
    probe.close();
  }
  const startMs = performance.now() - started;

  const visible = { ...settings };
  return {
    url,
    apiKey,
    pid,
    temporalPid: dev.pid,
    temporalAddress: dev.address,
    taskQueue,
    dataDir: data.dir,
    settings: visible,
    startMs,
    outputTail: output.get,
    alive,
    async runningWorkflows() {
      try {
        if (!temporal) {
          const connection = await Connection.connect({ address: dev.address });
          temporal = { connection, client: new Client({ connection }) };
        }
        const { count } = await temporal.client.workflow.count(
          `WorkflowType = "processDocument" AND ExecutionStatus = "Running"`,
        );
        return count;
      } catch {
        return undefined;
      }
    },
    async stop(graceMs?: number) {
      const result = await stop(graceMs);
      await unregister();
      return result;
    },
    removeData: () => data.remove(),
  };
}

/** Extra node flags for the service process (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), which NODE_OPTIONS refuses. */
function serviceNodeArgs(): string[] {
  return (process.env.BENCH_SERVICE_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
}
