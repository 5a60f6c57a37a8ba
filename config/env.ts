import { availableParallelism } from "node:os";
import path from "node:path";
import { z } from "zod";
import { parseDuration, parseLeadTimes } from "./durations.ts";

const flag = z
  .enum(["1", "0", "true", "false", "yes", "no", "on", "off", ""])
  .optional()
  .transform((v) => v === "1" || v === "true" || v === "yes" || v === "on");

const port = z.coerce.number().int().min(0).max(65_535);

/** A duration like 1h, 15m, 30s or 1d, as milliseconds; with `off`, the word off is 0 (switched off). */
function durationMs(fallback: string, opts: { off?: boolean } = {}) {
  return z
    .string()
    .default(fallback)
    .transform((raw, ctx) => {
      if (opts.off && raw.trim() === "off") return 0;
      const duration = parseDuration(raw);
      if (duration) return duration.ms;
      ctx.addIssue({
        code: "custom",
        message: `must be a duration like 1d, 1h, 15m or 30s${opts.off ? ", or off" : ""}`,
      });
      return z.NEVER;
    });
}

const ConnectorEndpoints = z.record(
  z.string(),
  z.object({
    authorizeUrl: z.url().optional(),
    tokenUrl: z.url().optional(),
    apiBaseUrl: z.url().optional(),
  }),
);
export type ConnectorEndpoints = z.infer<typeof ConnectorEndpoints>;

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/** Every setting the service reads, validated once at start-up. Names are the public contract (README). */
export const envSchema = z.object({
  PORT: port.default(8787),
  HOST: z.string().default("127.0.0.1"),
  DATA_DIR: z.string().default("./data"),
  DATABASE_URL: z.url().optional(),
  TEMPORAL_ADDRESS: z.string().optional(),
  TEMPORAL_NAMESPACE: z.string().default("default"),
  TEMPORAL_TASK_QUEUE: z.string().default("documents"),
  /** Temporal Cloud / a TLS cluster: TLS on, with an API key or a client certificate (mTLS). */
  TEMPORAL_TLS: flag,
  TEMPORAL_API_KEY: z.string().optional(),
  /** A client certificate and its key (PEM files) for mutual TLS; both or neither. */
  TEMPORAL_TLS_CERT_PATH: z.string().optional(),
  TEMPORAL_TLS_KEY_PATH: z.string().optional(),
  /** The CA (PEM file) that signed the server's certificate, for a cluster with a private CA. */
  TEMPORAL_TLS_CA_PATH: z.string().optional(),
  /** The name to check the server's certificate against (and to send as SNI), when not the address's host. */
  TEMPORAL_TLS_SERVER_NAME: z.string().optional(),
  TEMPORAL_DEV_PORT: port.default(7233),
  TEMPORAL_UI_PORT: port.default(8233),
  /** Temporal Web UI base URL for the console's workflow links; default: the local dev server's UI when started. */
  TEMPORAL_UI_URL: z.url().optional(),
  /** Signs web console session cookies (32+ characters). Unset → generated once and kept in the database. */
  SESSION_SECRET: z.string().min(32).optional(),
  MEMORY_ADMIN_KEY: z.string().min(16).optional(),
  /** Requests per window for admin keys; 0 = unlimited (scoped keys carry their own limit). */
  ADMIN_RATE_LIMIT_MAX: z.coerce.number().int().min(0).max(1_000_000).default(0),
  ADMIN_RATE_LIMIT_WINDOW_MS: z.coerce.number().int().min(1).max(3_600_000).default(60_000),
  /**
   * Reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed: addresses and CIDR blocks,
   * comma-separated (e.g. `127.0.0.1,10.0.0.0/8`). Empty: a request's address is its socket's peer.
   */
  TRUST_PROXY: z.string().default(""),
  /**
   * Failed authentications (unknown bearer keys, wrong sign-ins) per client address per window; past it that
   * address's failing attempts are answered 429 instead of 401. A valid key or password is never refused for
   * them (api/auth-throttle.ts). 0 = no counting.
   */
  AUTH_FAILURE_LIMIT: z.coerce.number().int().min(0).max(1_000_000).default(50),
  AUTH_FAILURE_WINDOW_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(300_000),
  /** The longest a failing attempt is held before its answer (the delay doubles per failure past the fifth). 0 = none. */
  AUTH_FAILURE_MAX_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
  /** How long a client may take to send a request's headers, and the whole request (body included). */
  HTTP_HEADERS_TIMEOUT: durationMs("20s"),
  HTTP_REQUEST_TIMEOUT: durationMs("5m"),
  /** 32 bytes, base64 or hex: encrypts connector secrets in settings. Unset → DATA_DIR/encryption-key. */
  MEMORY_ENCRYPTION_KEY: z.string().optional(),
  ALLOW_PRIVATE_NETWORK: flag,
  /** auto: bge-small-en-v1.5 when setup installed and verified it, else the bundled use-lite. */
  EMBEDDING_MODEL: z.enum(["auto", "bge-small", "use-lite"]).default("auto"),
  /**
   * Embedding threads for documents, each its own model copy splitting the cores with the others. Default two
   * (one on a single core): two copies with one onnxruntime thread each lose less to the rest of the pipeline
   * taking a core now and then than one copy whose two threads wait for each other at every operator
   * (the import rates are on docs/benchmarks.md, "Bulk imports").
   */
  EMBEDDING_THREADS: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(() => Math.min(2, availableParallelism())),
  /**
   * OS niceness of the embedding model's shared threads (Linux): while they embed an import, the API, the store
   * and query embedding get the cores first. 0 = the same priority as the rest of the process.
   */
  EMBEDDING_NICE: z.coerce.number().int().min(0).max(19).default(10),
  /** Extra embedding threads for search queries, then interactive work in small tasks (own model copy each); 0 = none. */
  EMBEDDING_QUERY_THREADS: z.coerce.number().int().min(0).max(16).default(1),
  /**
   * bge-small only: onnxruntime's native threads for each query thread's model. Unset: the embedder's default,
   * two (one on a single core): a query is a short text that one thread embeds in 10-16 ms, which caps 8 searching clients near
   * 65 searches a second; two threads cut that wall time by a third for the same CPU (docs/decisions/README.md#0004-query-thread).
   */
  EMBEDDING_QUERY_INTRA_OP_THREADS: z.coerce.number().int().min(1).max(64).optional(),
  /**
   * bge-small only: prepend BGE's retrieval instruction to search queries. Off by default: on SciFact it made no
   * better results (nDCG@10 hybrid 0.734 with, 0.731 without; vector-only 0.717 and 0.723) and a third more
   * model time per query (docs/configuration.md).
   */
  EMBEDDING_QUERY_INSTRUCTION: flag,
  /**
   * bge-small only: the weights that embed search queries; documents stay fp32 either way. auto: on a CPU with
   * int8 dot products int8-smooth (int8 weights and activations after calibrated per-channel scaling, about a
   * third of int8-block's time per query, hybrid nDCG@10 on SciFact 0.003 lower), else int8-block (int8 weights in
   * blocks); without such instructions fp32, the faster there. int8 (the Xenova int8 export) is as fast as
   * int8-smooth at a small cost in ranking (docs/configuration.md gives the figures).
   */
  EMBEDDING_QUERY_PRECISION: z.enum(["auto", "fp32", "int8", "int8-block", "int8-smooth"]).default("auto"),
  /**
   * bge-small only: the weights that embed documents and memories. fp32 (default) or int8-block (setup's int8
   * weights in blocks of 64, the same ones queries use by default): less time and memory per embedding thread;
   * its vectors stay within cosine 0.9997 of fp32's, so stores may hold both (docs/models.md gives the figures).
   */
  EMBEDDING_DOCUMENT_PRECISION: z.enum(["fp32", "int8-block"]).default("fp32"),
  /**
   * V8's heap growth between full collections, in percent (0 = V8's own, which lets the main heap reach about
   * three times its live size first). A lower bound keeps a long import's peak memory down, at the cost of more
   * full collections on the main thread (docs/processing.md#big-imports).
   */
  V8_HEAP_GROWING_PERCENT: z.coerce.number().int().min(0).max(400).default(30),
  /** Most texts per task handed to an embedding thread; concurrent calls are coalesced up to this. */
  EMBEDDING_BATCH_TEXTS: z.coerce.number().int().min(1).max(256).default(16),
  /** OpenAI-compatible chat endpoint (…/v1) for query rewriting and memory extraction; unset = no LLM. */
  LLM_BASE_URL: z.url().optional(),
  LLM_MODEL: z.string().min(1).default("gpt-4o-mini"),
  LLM_API_KEY: z.string().optional(),
  LLM_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  /** The LLM also sees images: a photo without text gets a caption besides what is known about it. */
  LLM_VISION: z
    .enum(["1", "0", "true", "false", "yes", "no", "on", "off"])
    .default("false")
    .transform((v) => v === "1" || v === "true" || v === "yes" || v === "on"),
  /** With an LLM: extract memories from every processed document (set false to only rewrite queries). */
  MEMORY_EXTRACTION: z
    .enum(["1", "0", "true", "false", "yes", "no", "on", "off"])
    .default("true")
    .transform((v) => v === "1" || v === "true" || v === "yes" || v === "on"),
  /** How much of a document the LLM reads for memories (characters from the start). */
  MEMORY_EXTRACTION_MAX_CHARS: z.coerce.number().int().min(500).max(500_000).default(12_000),
  /**
   * Without LLM memory extraction, a text of at most this many characters added through the API is kept
   * word for word as a memory too (0 turns it off).
   */
  SHORT_TEXT_MEMORY_MAX_CHARS: z.coerce.number().int().min(0).max(20_000).default(600),
  CHUNK_MAX_CHARS: z.coerce.number().int().min(200).max(20_000).default(1200),
  CHUNK_OVERLAP_SENTENCES: z.coerce.number().int().min(0).max(10).default(1),
  /**
   * Most characters of text kept from one document, its attachments (and theirs) included. Reading stops
   * there: the text so far is kept and searchable, and fileMetadata says the cap cut it. The default holds
   * about 5,000 dense pages (the Bible is 4.3 million characters); the upper bound is the PDF reader's own.
   */
  MAX_EXTRACTED_CHARS: z.coerce.number().int().min(10_000).max(50_000_000).default(10_000_000),
  /**
   * Most chunks made from one document; the text after the last one is kept but not searchable, and
   * fileMetadata says so. At CHUNK_MAX_CHARS 1200 the default text cap makes about 9,000, so this binds
   * only with small chunks (about 20 minutes of embedding at 16 chunks/s).
   */
  MAX_CHUNKS_PER_DOCUMENT: z.coerce.number().int().min(10).max(1_000_000).default(20_000),
  MAX_CONTENT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(10 * 1024 * 1024),
  MAX_FILE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(100 * 1024 * 1024),
  S3_BUCKET: z.string().optional(),
  S3_PREFIX: z.string().default(""),
  S3_REGION: z.string().default("us-east-1"),
  S3_ENDPOINT: z.url().optional(),
  S3_ACCESS_KEY_ID: z.string().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  TRANSCRIBER: z.enum(["whisper", "pocketsphinx", "openai"]).default("whisper"),
  TRANSCRIBE_API_URL: z.url().optional(),
  TRANSCRIBE_API_KEY: z.string().optional(),
  TRANSCRIBE_MODEL: z.string().default("whisper-1"),
  /** Which task queues this worker serves: both, only the main one, or only heavy extraction (OCR, transcription). */
  WORKER_QUEUES: z.enum(["all", "main", "heavy"]).default("all"),
  /** Activities at a time on the main queue (fetching, parsing, chunking, embedding, syncs). */
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(4),
  /**
   * Document runs in flight at once (admitted, not yet done or failed), across every process sharing the
   * store. The rest wait in the store, at no cost, and are admitted interactive first, fairly across
   * container tags and connections, as runs finish.
   */
  MAX_DOCUMENTS_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).default(32),
  /**
   * The embedded store's buffer pool (PostgreSQL's shared_buffers). PGlite's memory grows to hold it and never
   * gives it back, so it is a floor of the daemon's RSS once the data outgrows it, and the OS caches the data
   * files besides. `auto` (default) sizes it at start from the store: half its relation files, between 32MB and
   * 256MB and at most 1/16 of the memory (the machine's, or the container's limit; store/pglite-pool.ts); a size sets it. Ignored with
   * DATABASE_URL.
   */
  PGLITE_SHARED_BUFFERS: z
    .string()
    .regex(/^(auto|\d+(kB|MB|GB))$/, 'auto, or a size such as "32MB"')
    .default("auto"),
  /**
   * How the embedded store's searches rank chunks: `memory` (default), an in-memory copy of the chunks' tags,
   * lexemes and vectors (store/search/chunk-index) built in the background at start and kept in step through a change
   * log, SQL answering until it is built and for searches it cannot (metadata filters, a document, an end user,
   * a filepath); or `sql`, in PGlite alone (no copy: about 5 KB a chunk less memory, and slower under concurrent
   * searches). Ignored with DATABASE_URL: each process of a shared PostgreSQL ranks there.
   */
  SEARCH_INDEX: z.enum(["sql", "memory"]).default("memory"),
  /** Activities at a time on the heavy queue (OCR, transcription). */
  WORKER_HEAVY_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(1),
  CPU_THREADS: z.coerce.number().int().min(1).max(64).default(1),
  /**
   * Each CPU thread's heap limit in MB: a file whose parse needs more fails (unprocessable) and only its
   * thread is replaced; 0 = V8's own limit.
   */
  CPU_THREAD_MEMORY_MB: z.coerce
    .number()
    .int()
    .min(0)
    .max(16_384)
    .refine((mb) => mb === 0 || mb >= 64, "0 (V8's own limit) or at least 64")
    .default(256),
  FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).default(15_000),
  /** GET /metrics accepts `Authorization: Bearer <METRICS_TOKEN>` (Prometheus: `authorization.credentials`), or an admin key. */
  METRICS_TOKEN: z.string().min(16).optional(),
  /** true: GET /metrics answers anyone (a private network the operator trusts); default: a token or admin key. */
  METRICS_PUBLIC: flag,
  /** Where browsers reach this API (OAuth callbacks, picker links); default http://HOST:PORT. */
  PUBLIC_URL: z.url().optional(),
  /**
   * Browser origins (comma-separated, e.g. https://app.example.com; `*`: any) allowed to call /mcp
   * besides loopback ones and PUBLIC_URL's. Requests without an Origin header are not affected.
   */
  MCP_ALLOWED_ORIGINS: z
    .string()
    .default("")
    .transform((raw) =>
      raw
        .split(",")
        .map((o) => o.trim().replace(/\/+$/, ""))
        .filter(Boolean),
    ),
  /**
   * JSON: per provider, where its consent page, token endpoint and API are, e.g.
   * {"google-drive":{"authorizeUrl":"…","tokenUrl":"…","apiBaseUrl":"…"}}. For tests and private
   * deployments (GitHub Enterprise); set by the operator, never by API callers.
   */
  CONNECTOR_ENDPOINTS: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (!raw) return {};
      const parsed = ConnectorEndpoints.safeParse(safeJson(raw));
      if (parsed.success) return parsed.data;
      ctx.addIssue({
        code: "custom",
        message: "must be JSON: {provider: {authorizeUrl?, tokenUrl?, apiBaseUrl?}}",
      });
      return z.NEVER;
    }),
  /** Key-expiry notices: how long before a key's expiry each notice goes (units s, m, h, d; `off` = none). */
  KEY_EXPIRY_NOTICE_LEAD_TIMES: z
    .string()
    .default("7d,1d")
    .transform((raw, ctx) => {
      const leads = parseLeadTimes(raw);
      if (leads) return leads;
      ctx.addIssue({ code: "custom", message: "must be durations like 7d,1d,12h (units s, m, h, d) or off" });
      return z.NEVER;
    }),
  /** How often the key-expiry schedule looks for due notices. */
  KEY_EXPIRY_NOTICE_INTERVAL: durationMs("1h"),
  /** How often the sweep deletes stored files no document references (orphans a crash left); `off` = never. */
  FILE_SWEEP_INTERVAL: durationMs("1d", { off: true }),
  /** The sweep leaves files younger than this (an upload stores its bytes just before saving its document). */
  FILE_SWEEP_GRACE: durationMs("1h"),
  /**
   * How often a schedule refreshes the planner statistics of the searched tables (chunks, documents, memories) that grew or shrank by a
   * tenth (PGlite has no autovacuum; a pass over unchanged tables costs two small queries); `off` = never.
   */
  STATISTICS_INTERVAL: durationMs("2m", { off: true }),
  /**
   * How often a schedule maintains the tables that churn: on PGlite (no autovacuum) VACUUM (ANALYZE) of those
   * with a tenth of their rows dead, and on both drivers REINDEX of an HNSW index bloated past twice a fresh
   * build (a pass over a quiet store costs four small catalog reads); `off` = never.
   */
  MAINTENANCE_INTERVAL: durationMs("15m", { off: true }),
  /**
   * On PGlite a VACUUM or REINDEX holds the single connection, and with it the whole embedded service: a table
   * whose step would take longer than this (estimated from its dead and live rows) is left for a pass run with
   * a larger bound at a quiet hour, with a warning in the log. `off` = no bound. PostgreSQL is not affected.
   */
  MAINTENANCE_MAX_HOLD: durationMs("15s", { off: true }),
  /**
   * PGlite only: a step over MAINTENANCE_MAX_HOLD (a big table's VACUUM, REINDEX or compaction) runs in the
   * first pass after the API has served no request (health checks and metrics aside) for this long, so it
   * stops nobody's search; `off` = such steps wait for a pass with MAINTENANCE_MAX_HOLD=off.
   */
  MAINTENANCE_QUIET_AFTER: durationMs("10m", { off: true }),
  /** Mail for key-expiry notices: smtp(s)://user:password@host:port, or the SMTP_HOST… parts. Unset = notices are logged. */
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, "must start with smtp:// or smtps://")
    .optional(),
  SMTP_HOST: z.string().optional(),
  SMTP_PORT: port.optional(),
  SMTP_USER: z.string().optional(),
  SMTP_PASSWORD: z.string().optional(),
  /** TLS from the start (port 465); otherwise STARTTLS when the server offers it. */
  SMTP_SECURE: flag,
  SMTP_FROM: z.string().min(3).default("Memory service <no-reply@localhost>"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

export type Env = z.infer<typeof envSchema>;

/**
 * The service's own OAuth apps: `<PREFIX>_CLIENT_ID` and `<PREFIX>_CLIENT_SECRET` of every app a connector
 * declares (connectors/oauth-apps.ts names them: GOOGLE_, MICROSOFT_, NOTION_, GITHUB_). They are read by their
 * shape, so config/ holds no list of providers (a new one is its folder and its registry line) and imports none;
 * services/oauth.ts looks up the names its connector declares. A caller's own app comes from /v3/settings when
 * `<prefix>CustomKeyEnabled` is set.
 */
const OAUTH_APP_VARIABLE = /^[A-Z][A-Z0-9]*_CLIENT_(ID|SECRET)$/;

export interface Config extends Env {
  /** Absolute path of DATA_DIR. */
  dataDir: string;
  /** The OAuth app variables that are set, by name (`GOOGLE_CLIENT_ID` → its value). */
  oauthAppEnv: Readonly<Record<string, string>>;
}

export class ConfigError extends Error {}

/**
 * Whether this process is the store's only user: the embedded PGlite store is opened by one process (store/db.ts
 * locks it), so what the API writes to it is all that is written; a PostgreSQL (DATABASE_URL) is shared.
 */
export const storeHasOneProcess = (config: Pick<Config, "DATABASE_URL">): boolean => !config.DATABASE_URL;

export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable (`DATABASE_URL=`) means "not set", as in most twelve-factor tools.
  const present = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const issues = parsed.error.issues;
    const lines = issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  // A client certificate without its key (or the reverse) would silently connect without mutual TLS.
  if (Boolean(parsed.data.TEMPORAL_TLS_CERT_PATH) !== Boolean(parsed.data.TEMPORAL_TLS_KEY_PATH)) {
    throw new ConfigError(
      "Invalid configuration:\n  TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH: set both (mutual TLS) or neither",
    );
  }
  const oauthAppEnv = Object.fromEntries(
    Object.entries(present).filter((entry): entry is [string, string] => OAUTH_APP_VARIABLE.test(entry[0])),
  );
  return { ...parsed.data, dataDir: path.resolve(parsed.data.DATA_DIR), oauthAppEnv };
}
