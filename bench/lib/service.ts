import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Supermemory from "supermemory";
import { loadConfig } from "../../config/env.ts";
import { createLogger } from "../../config/logger.ts";
import { type QueryPrecision, resolveQueryPrecision } from "../../pipeline/embedder/index.ts";
import { startService } from "../../runtime/service.ts";
import { startTemporalDevServer } from "../../runtime/temporal-dev-server.ts";

/** Everything the benchmark starts registers its stop here; cleanup runs it in reverse, once. */
export class Cleanup {
  private readonly tasks: { what: string; run: () => Promise<void> | void }[] = [];

  add(what: string, run: () => Promise<void> | void): () => Promise<void> {
    const task = { what, run };
    this.tasks.push(task);
    return async () => {
      const i = this.tasks.indexOf(task);
      if (i === -1) return;
      this.tasks.splice(i, 1);
      await task.run();
    };
  }

  /** On SIGINT/SIGTERM: run every stop once, then exit (130 / 143), so no child process outlives the benchmark. */
  exitOnSignals(log: (line: string) => void): void {
    let interrupted = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (interrupted) return;
      interrupted = true;
      log(`${signal}: cleaning up`);
      this.runAll().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  }

  async runAll(): Promise<void> {
    while (this.tasks.length) {
      const task = this.tasks.pop();
      if (!task) break;
      try {
        await task.run();
      } catch (error) {
        process.stderr.write(`cleanup of ${task.what} failed: ${(error as Error).message}\n`);
      }
    }
  }
}

export function tempDir(cleanup: Cleanup, prefix: string): { dir: string; remove: () => Promise<void> } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  const remove = cleanup.add(`temp dir ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
  return { dir, remove };
}

export async function startTemporal(cleanup: Cleanup): Promise<{ address: string; pid: number }> {
  const { dir } = tempDir(cleanup, "memory-bench-temporal-");
  const dev = await startTemporalDevServer({ dataDir: dir, port: 0, uiPort: 0 });
  cleanup.add(`Temporal dev server (pid ${dev.pid})`, () => dev.stop());
  return { address: dev.address, pid: dev.pid };
}

interface BenchService {
  url: string;
  /** The admin key the service was started with (for plain HTTP calls next to the SDK client). */
  apiKey: string;
  client: Supermemory;
  /** The buffer pool its embedded store started with (PGLITE_SHARED_BUFFERS, `auto` resolved). */
  sharedBuffers?: string;
  /** With the in-memory search index (the default): settled when it was built, before this service was handed out (null: it was not). */
  searchIndexBuilt?: Promise<{ chunks: number; ms: number } | null>;
  stop: () => Promise<void>;
}

/**
 * The real service in this process (store, Temporal worker, API) on the embedded default: PGlite in
 * `dataDir`, our Temporal dev server, a task queue of its own, the API on a free port.
 */
export async function startBenchService(
  cleanup: Cleanup,
  opts: {
    dataDir: string;
    temporalAddress: string;
    threads: number;
    embeddingModel?: string;
    /** SEARCH_INDEX for this start (the service's default, `memory`, when unset). */
    searchIndex?: "sql" | "memory";
  },
): Promise<BenchService> {
  const apiKey = `sm_bench_${randomBytes(16).toString("hex")}`;
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: opts.dataDir,
    TEMPORAL_ADDRESS: opts.temporalAddress,
    TEMPORAL_TASK_QUEUE: `bench-${randomBytes(4).toString("hex")}`,
    MEMORY_ADMIN_KEY: apiKey,
    EMBEDDING_THREADS: String(opts.threads),
    ...(opts.embeddingModel ? { EMBEDDING_MODEL: opts.embeddingModel } : {}),
    // The embedded store's buffer pool, for comparing sizes (PGLITE_SHARED_BUFFERS=32MB npm run bench ...).
    ...(process.env.PGLITE_SHARED_BUFFERS
      ? { PGLITE_SHARED_BUFFERS: process.env.PGLITE_SHARED_BUFFERS }
      : {}),
    // The query weights, for comparing them (EMBEDDING_QUERY_PRECISION=int8 npm run bench ...).
    ...(process.env.EMBEDDING_QUERY_PRECISION
      ? { EMBEDDING_QUERY_PRECISION: process.env.EMBEDDING_QUERY_PRECISION }
      : {}),
    // onnxruntime's threads in each query thread's model, likewise (EMBEDDING_QUERY_INTRA_OP_THREADS=1 npm run bench ...).
    ...(process.env.EMBEDDING_QUERY_INTRA_OP_THREADS
      ? { EMBEDDING_QUERY_INTRA_OP_THREADS: process.env.EMBEDDING_QUERY_INTRA_OP_THREADS }
      : {}),
    // The document weights, likewise (EMBEDDING_DOCUMENT_PRECISION=int8-block npm run eval ...).
    ...(process.env.EMBEDDING_DOCUMENT_PRECISION
      ? { EMBEDDING_DOCUMENT_PRECISION: process.env.EMBEDDING_DOCUMENT_PRECISION }
      : {}),
    ...(opts.searchIndex ? { SEARCH_INDEX: opts.searchIndex } : {}),
    LOG_LEVEL: "warn",
  });
  const service = await startService(config, createLogger("warn"), ["api", "worker"]);
  const stop = cleanup.add("service", () => service.stop());
  if (!service.url) throw new Error("the service started without an API");
  // Measured once its in-memory search index (the embedded default) is built: until then SQL answers, and a
  // scenario's rows would mix the two.
  await service.searchIndexBuilt;
  // No retries: a retried add would duplicate a document and a retried search would hide its latency.
  const client = new Supermemory({ apiKey, baseURL: service.url, maxRetries: 0, timeout: 300_000 });
  return {
    url: service.url,
    apiKey,
    client,
    ...(service.sharedBuffers ? { sharedBuffers: service.sharedBuffers } : {}),
    ...(service.searchIndexBuilt ? { searchIndexBuilt: service.searchIndexBuilt } : {}),
    stop,
  };
}

/**
 * The weights a service started by this benchmark embeds queries with (EMBEDDING_QUERY_PRECISION from the
 * environment, passed on by startBenchService, or its default resolved here), so that a scenario's in-process
 * query embedding matches the service's.
 */
export function serviceQueryPrecision(embedderName: string): QueryPrecision {
  const configured = process.env.EMBEDDING_QUERY_PRECISION;
  if (configured && configured !== "auto") return configured as QueryPrecision;
  return resolveQueryPrecision(embedderName).precision;
}
