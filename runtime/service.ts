import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { serve } from "@hono/node-server";
import { Client, Connection } from "@temporalio/client";
import { DefaultLogger, NativeConnection, Runtime, type Worker } from "@temporalio/worker";
import type { ExtractionRunner } from "../activities/extract.ts";
import { ensureAdminKey } from "../api/admin-key.ts";
import { createApp } from "../api/app.ts";
import { answerExpectContinue, lingerOnEarlyClose } from "../api/body-limit.ts";
import { createBlobStore } from "../blobs/index.ts";
import type { Config } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import { shutdownConnectors } from "../connectors/registry.ts";
import { createCpuPool } from "../pipeline/cpu-pool.ts";
import {
  createEmbedder,
  type QueryPrecision,
  resolveDefaultEmbedder,
  resolveQueryPrecision,
} from "../pipeline/embedder/index.ts";
import { createMediaExtractors } from "../pipeline/extract/media.ts";
import { captionImage } from "../pipeline/llm/caption.ts";
import { createChatModel } from "../pipeline/llm/chat.ts";
import { createReranker, resolveReranker } from "../pipeline/rerank/index.ts";
import { createTranscriber } from "../pipeline/transcribe/index.ts";
import { sweepStaleTempDirs } from "../pipeline/transcribe/support.ts";
import { RESCORER_MODEL } from "../services/rescorer.ts";
import { openStore } from "../store/db.ts";
import { detachChunkIndex, startChunkIndex, withoutChunkIndex } from "../store/search/chunk-index/index.ts";
import { ensureVectorIndexes } from "../store/search/vector-index.ts";
import { loadSecretBox } from "../store/secrets.ts";
import { ensureKeyNoticeSchedule } from "../temporal/key-notice-schedule.ts";
import { DocumentProcessing } from "../temporal/processing-client.ts";
import { startReembedIfNeeded } from "../temporal/reembed-client.ts";
import {
  ensureFileSweepSchedule,
  ensureMaintenanceSchedule,
  ensureStatisticsSchedule,
} from "../temporal/schedules.ts";
import { ConnectionSyncs } from "../temporal/sync-client.ts";
import { connectTemporal, temporalConnectionOptions } from "../temporal/temporal-connection.ts";
import { createDocumentWorker, createHeavyWorker } from "../worker/create-worker.ts";
import { reconcileUnfinished, startReconcileLoop } from "../worker/reconciler.ts";
import { startTemporalDevServer } from "./temporal-dev-server.ts";

export type Role = "api" | "worker";

export interface RunningService {
  /** Base URL of the API, when this process serves it. */
  url?: string;
  temporalAddress: string;
  temporalUiUrl?: string;
  /** Document workflows this process started, and how many went straight to its own worker (eager start). */
  processingStarts(): { total: number; eager: number };
  /** The embedded store's buffer pool as started (PGLITE_SHARED_BUFFERS, `auto` resolved); unset on PostgreSQL. */
  sharedBuffers?: string;
  /**
   * SEARCH_INDEX=memory (the embedded default): settles when the in-memory search index is built (with its size and build time), or
   * with null when it failed or the service stopped first (searches then use SQL).
   */
  searchIndexBuilt?: Promise<{ chunks: number; ms: number } | null>;
  stop(): Promise<void>;
}

/**
 * Starts the roles this process plays. The embedded default plays both against PGlite and a
 * Temporal dev server it owns; with DATABASE_URL and TEMPORAL_ADDRESS, `api` and `worker` can
 * run as separate processes against shared services.
 */
export async function startService(config: Config, log: Logger, roles: Role[]): Promise<RunningService> {
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch((err) => log.warn({ err }, "error during shutdown"));
    stops.length = 0;
  };
  try {
    const store = await openStore({
      databaseUrl: config.DATABASE_URL,
      dataDir: config.dataDir,
      pgliteSharedBuffers: config.PGLITE_SHARED_BUFFERS,
    });
    stops.push(() => store.close());
    if (store.sharedBuffers)
      log.info(
        { sharedBuffers: store.sharedBuffers, setting: config.PGLITE_SHARED_BUFFERS },
        "embedded store opened",
      );

    let temporalAddress = config.TEMPORAL_ADDRESS;
    let temporalUiUrl: string | undefined;
    if (!temporalAddress) {
      const dev = await startTemporalDevServer({
        dataDir: path.join(config.dataDir, "temporal"),
        port: config.TEMPORAL_DEV_PORT,
        uiPort: config.TEMPORAL_UI_PORT,
        namespace: config.TEMPORAL_NAMESPACE,
        log: (line) => log.debug({ temporal: line }),
      });
      stops.push(() => dev.stop());
      temporalAddress = dev.address;
      temporalUiUrl = dev.uiUrl;
      // The console links documents to their workflows in this UI.
      if (!config.TEMPORAL_UI_URL) config.TEMPORAL_UI_URL = temporalUiUrl;
    }

    const blobs = createBlobStore(config);
    const embedderName = chooseEmbedder(config.EMBEDDING_MODEL, log);
    const embedder = createEmbedder(embedderName, {
      threads: config.EMBEDDING_THREADS,
      niceness: config.EMBEDDING_NICE,
      queryThreads: config.EMBEDDING_QUERY_THREADS,
      queryIntraOpThreads: config.EMBEDDING_QUERY_INTRA_OP_THREADS,
      batchTexts: config.EMBEDDING_BATCH_TEXTS,
      queryInstruction: config.EMBEDDING_QUERY_INSTRUCTION,
      queryPrecision: chooseQueryPrecision(config.EMBEDDING_QUERY_PRECISION, embedderName, log),
      documentPrecision: config.EMBEDDING_DOCUMENT_PRECISION,
    });
    stops.push(() => embedder.close());
    // Each model has its own vector index; building it over existing rows can take a while.
    const indexStarted = Date.now();
    await ensureVectorIndexes(store.db, { model: embedder.model, dimension: embedder.dimension });
    log.info({ model: embedder.model, ms: Date.now() - indexStarted }, "embedding model ready");
    const searchIndexBuilt =
      store.driver === "pglite"
        ? (await startSearchIndex(config, store, embedder, log, stops))?.built
        : undefined;

    const temporalOptions = temporalConnectionOptions(config, temporalAddress);
    const connection = await connectTemporal(temporalOptions, (o) => Connection.connect(o));
    stops.push(() => connection.close());
    const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
    // When the API last served a request (probes aside): table maintenance on PGlite runs its long steps only
    // once the service has been quiet for MAINTENANCE_QUIET_AFTER. Counted from start-up.
    let lastRequestAt = Date.now();
    const processing = new DocumentProcessing(
      client,
      config.TEMPORAL_TASK_QUEUE,
      store.background,
      { maxInFlight: config.MAX_DOCUMENTS_IN_FLIGHT },
      log,
    );
    // Stops run in reverse: this one after the workers (whose finishing runs ask for passes), before the store.
    stops.push(() => processing.close());

    const syncs = new ConnectionSyncs(client, config.TEMPORAL_TASK_QUEUE);
    const secrets = loadSecretBox({ envKey: config.MEMORY_ENCRYPTION_KEY, dataDir: config.dataDir });
    const network = {
      allowPrivateNetwork: config.ALLOW_PRIVATE_NETWORK,
      timeoutMs: config.FETCH_TIMEOUT_MS,
      maxBytes: config.MAX_CONTENT_BYTES,
    };
    const llm = config.LLM_BASE_URL
      ? createChatModel({
          baseUrl: config.LLM_BASE_URL,
          model: config.LLM_MODEL,
          apiKey: config.LLM_API_KEY,
          timeoutMs: config.LLM_TIMEOUT_MS,
        })
      : undefined;
    if (roles.includes("worker")) {
      installTemporalLogger(log);
      sweepStaleTempDirs(["memory-media-", "memory-speech-"])
        .then((removed) => removed && log.info({ removed }, "removed temp dirs left by a killed worker"))
        .catch((err) => log.warn({ err }, "could not sweep old temp dirs"));
      const cpu = createCpuPool(config.CPU_THREADS, { memoryMb: config.CPU_THREAD_MEMORY_MB });
      stops.push(() => cpu.close());
      const media = createMediaExtractors({
        transcriber: createConfiguredTranscriber(config),
        ocr: (png) => cpu.ocr(png),
      });
      const extract: ExtractionRunner = (type, input, ctx) => {
        if (type === "audio") return media.extractAudio(input, ctx);
        if (type === "video") return media.extractVideo(input, ctx);
        return cpu.extract(type, input, ctx.signal, ctx.maxChars);
      };
      const workerConnection = await connectTemporal(temporalOptions, (o) => NativeConnection.connect(o));
      stops.push(() => workerConnection.close());
      const workerOptions = {
        connection: workerConnection,
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        maxConcurrentActivities: config.WORKER_CONCURRENCY,
        maxConcurrentLocalActivities: Math.max(config.MAX_DOCUMENTS_IN_FLIGHT, 8),
        maxConcurrentHeavy: config.WORKER_HEAVY_CONCURRENCY,
        deps: {
          db: store.background,
          embedder,
          cpu,
          blobs,
          extract,
          chunking: { maxChars: config.CHUNK_MAX_CHARS, overlapSentences: config.CHUNK_OVERLAP_SENTENCES },
          limits: {
            maxExtractedChars: config.MAX_EXTRACTED_CHARS,
            maxChunks: config.MAX_CHUNKS_PER_DOCUMENT,
          },
          fetching: {
            allowPrivateNetwork: config.ALLOW_PRIVATE_NETWORK,
            timeoutMs: config.FETCH_TIMEOUT_MS,
            maxBytes: config.MAX_CONTENT_BYTES,
          },
          log,
          llm: config.MEMORY_EXTRACTION ? llm : undefined,
          memoryExtraction: { maxChars: config.MEMORY_EXTRACTION_MAX_CHARS },
          shortTextMemoryMaxChars: config.SHORT_TEXT_MEMORY_MAX_CHARS,
          maintenanceMaxHoldMs: config.MAINTENANCE_MAX_HOLD,
          maintenanceQuietAfterMs: config.MAINTENANCE_QUIET_AFTER,
          // Only an API in this process can tell (PGlite, the store those long steps stop, is never shared).
          quietForMs: roles.includes("api") ? () => Date.now() - lastRequestAt : undefined,
          caption:
            llm && config.LLM_VISION
              ? (bytes: Buffer, mimeType: string, signal: AbortSignal) =>
                  captionImage(llm, bytes, mimeType, signal)
              : undefined,
          admission: processing,
        },
        sync: { config, db: store.background, blobs, secrets, processing, syncs, network, log },
        keyNotices: { config, db: store.background, log },
      };
      // One process serves both queues by default; WORKER_QUEUES splits them across processes.
      const workers: Worker[] = [];
      if (config.WORKER_QUEUES !== "heavy") workers.push(await createDocumentWorker(workerOptions));
      if (config.WORKER_QUEUES !== "main") workers.push(await createHeavyWorker(workerOptions));
      stops.push(() => shutdownConnectors());
      for (const worker of workers) {
        const running = worker.run().catch((err) => log.error({ err }, "worker stopped with an error"));
        stops.push(async () => {
          if (worker.getState() === "RUNNING") worker.shutdown();
          await running;
        });
      }
      if (config.WORKER_QUEUES !== "heavy") {
        // Runs this process admits start on its own worker when it has room (eager start); pushed last, so at
        // shutdown starts go back to the plain client before the workers stop and their connection closes.
        processing.startThroughLocalWorker(
          new Client({ connection: workerConnection, namespace: config.TEMPORAL_NAMESPACE }),
        );
        stops.push(async () => processing.startThroughLocalWorker(undefined));
      }
      // Whatever a stopped process left admitted but unstarted is started now; then admission resumes.
      await reconcileUnfinished(store.background, processing, log, 0).catch((err) =>
        log.warn({ err }, "could not resume processing yet; the reconcile loop will retry"),
      );
      await startReembedIfNeeded(client, config.TEMPORAL_TASK_QUEUE, store.background, embedder.model, log);
      // The schedule's workflow runs where workflows run: with the main queue's worker.
      if (config.WORKER_QUEUES !== "heavy") {
        await ensureKeyNoticeSchedule(client, {
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          everyMs: config.KEY_EXPIRY_NOTICE_INTERVAL,
          enabled: config.KEY_EXPIRY_NOTICE_LEAD_TIMES.length > 0,
          log,
        });
        await ensureFileSweepSchedule(client, {
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          everyMs: config.FILE_SWEEP_INTERVAL,
          graceMs: config.FILE_SWEEP_GRACE,
          log,
        });
        await ensureStatisticsSchedule(client, {
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          everyMs: config.STATISTICS_INTERVAL,
          log,
        });
        await ensureMaintenanceSchedule(client, {
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          everyMs: config.MAINTENANCE_INTERVAL,
          log,
        });
      }
      const stopReconciling = startReconcileLoop(store.background, processing, log);
      stops.push(async () => stopReconciling());
    }

    let url: string | undefined;
    if (roles.includes("api")) {
      await ensureAdminKey(store.db, config, log);
      // rerank: true uses a cross-encoder when one is installed, else the BM25 + dense rescorer.
      const rerankerChoice = resolveReranker();
      const reranker = rerankerChoice.available ? createReranker() : undefined;
      if (reranker) stops.push(() => reranker.close());
      log.info({ reranker: reranker?.model ?? RESCORER_MODEL }, rerankerChoice.reason);
      const app = createApp({
        onRequest: () => {
          lastRequestAt = Date.now();
        },
        db: store.db,
        processing,
        syncs,
        embedder,
        blobs,
        config,
        log,
        secrets,
        llm,
        reranker,
        temporal: client,
      });
      const server = serve({
        fetch: app.fetch,
        port: config.PORT,
        hostname: config.HOST,
        // A client that trickles its headers or body holds a socket only this long; the check runs every
        // second so the bound is what the setting says, not up to Node's default 30 s later.
        serverOptions: {
          headersTimeout: config.HTTP_HEADERS_TIMEOUT,
          requestTimeout: config.HTTP_REQUEST_TIMEOUT,
          connectionsCheckingInterval: 1_000,
        },
      });
      answerExpectContinue(server as Server, config);
      lingerOnEarlyClose(server as Server);
      await new Promise<void>((resolve, reject) => {
        server.once("listening", resolve);
        server.once("error", reject);
      });
      const address = server.address() as AddressInfo;
      url = `http://${config.HOST}:${address.port}`;
      // OAuth callbacks and picker links need the address browsers reach; PORT=0 picks it only now.
      if (!config.PUBLIC_URL) config.PUBLIC_URL = url;
      stops.push(
        () =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
          }),
      );
    }
    return {
      url,
      temporalAddress,
      temporalUiUrl,
      processingStarts: () => ({ ...processing.starts }),
      ...(store.sharedBuffers ? { sharedBuffers: store.sharedBuffers } : {}),
      ...(searchIndexBuilt ? { searchIndexBuilt } : {}),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

let temporalLoggerInstalled = false;
const EXPECTED_TEMPORAL_WARNINGS = /^No workflows registered, not polling for workflow tasks$/;

/** The SDK logs every worker state change at INFO; route its warnings and errors to our logger instead. */
function installTemporalLogger(log: Logger) {
  if (temporalLoggerInstalled) return;
  temporalLoggerInstalled = true;
  const level = log.isLevelEnabled("debug") ? "DEBUG" : "WARN";
  Runtime.install({
    logger: new DefaultLogger(level, (entry) => {
      const fields = { temporal: entry.meta };
      if (entry.level === "ERROR") log.error(fields, entry.message);
      // The heavy-extraction worker runs activities only, by design: the SDK's warning about it is not news.
      else if (entry.level === "WARN" && !EXPECTED_TEMPORAL_WARNINGS.test(entry.message))
        log.warn(fields, entry.message);
      else log.debug(fields, entry.message);
    }),
  });
}

function createConfiguredTranscriber(config: Config) {
  if (config.TRANSCRIBER === "openai") {
    if (!config.TRANSCRIBE_API_URL) throw new Error("TRANSCRIBER=openai needs TRANSCRIBE_API_URL");
    return createTranscriber({
      engine: "openai",
      openai: {
        baseUrl: config.TRANSCRIBE_API_URL,
        apiKey: config.TRANSCRIBE_API_KEY,
        model: config.TRANSCRIBE_MODEL,
      },
    });
  }
  return createTranscriber({ engine: config.TRANSCRIBER });
}

/** The configured embedding model; `auto` takes the best one installed here and says which and why. */
function chooseQueryPrecision(
  configured: Config["EMBEDDING_QUERY_PRECISION"],
  embedderName: string,
  log: Logger,
): QueryPrecision {
  if (configured !== "auto") return configured;
  const { precision, reason, preferred } = resolveQueryPrecision(embedderName);
  if (preferred) log.info({ queryPrecision: precision }, reason);
  else log.warn({ queryPrecision: precision }, reason);
  return precision;
}

function chooseEmbedder(configured: Config["EMBEDDING_MODEL"], log: Logger): string {
  if (configured !== "auto") return configured;
  const { name, reason } = resolveDefaultEmbedder();
  if (name === "bge-small") log.info({ embedder: name }, reason);
  else log.warn({ embedder: name }, reason);
  return name;
}

/**
 * SEARCH_INDEX=memory (the default) on the embedded store: the in-memory chunk index is built in the background,
 * its graph on a thread of its own (searches use SQL until it is ready); with `sql` the change log such an index
 * reads is dropped, so it never grows unread.
 */
async function startSearchIndex(
  config: Config,
  store: Awaited<ReturnType<typeof openStore>>,
  embedder: { model: string; dimension: number },
  log: Logger,
  stops: (() => Promise<void>)[],
): Promise<{ built: Promise<{ chunks: number; ms: number } | null> } | undefined> {
  if (config.SEARCH_INDEX !== "memory") {
    await withoutChunkIndex(store.db);
    return undefined;
  }
  const started = Date.now();
  let stopping = false;
  log.info("building the in-memory search index (SEARCH_INDEX=memory); searches use SQL until it is ready");
  const { index, built } = startChunkIndex(store.db, store.background, {
    model: embedder.model,
    dimension: embedder.dimension,
  });
  stops.push(async () => {
    stopping = true;
    detachChunkIndex(store.db);
  });
  const settled = built.then(
    (index) => {
      const ms = Date.now() - started;
      log.info(
        { chunks: index.size, ms, rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20) },
        "in-memory search index ready",
      );
      return { chunks: index.size, ms };
    },
    (err) => {
      // Searches keep using SQL: the index is only ever a faster way to the same rows.
      if (!index.ready && stopping) return null;
      detachChunkIndex(store.db);
      log.error({ err }, "in-memory search index failed to build; searches use SQL");
      return null;
    },
  );
  return { built: settled };
}
