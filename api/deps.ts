import type { Client } from "@temporalio/client";
import type { BlobStore } from "../blobs/index.ts";
import type { Config } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import type { Embedder } from "../pipeline/embedder/types.ts";
import type { ChatModel } from "../pipeline/llm/chat.ts";
import type { Reranker } from "../services/search-documents.ts";
import type { Database } from "../store/db.ts";
import type { SecretBox } from "../store/secrets.ts";
import type { DocumentProcessing } from "../temporal/processing-client.ts";
import type { ConnectionSyncs } from "../temporal/sync-client.ts";
import type { AuthEnv } from "./auth.ts";

export interface ApiDeps {
  db: Database;
  processing: DocumentProcessing;
  /** Starts, schedules and stops connection syncs in Temporal. */
  syncs: ConnectionSyncs;
  /** Embeds search queries; the worker has its own for documents when run apart. */
  embedder: Embedder;
  /** Uploaded files; the worker reads them back to extract text. */
  blobs: BlobStore;
  config: Config;
  log: Logger;
  /** Encrypts connector client secrets kept in settings. */
  secrets: SecretBox;
  /** Second-stage scorer for `rerank: true`; absent when no model is installed. */
  reranker?: Reranker;
  /** OpenAI-compatible chat model when LLM_BASE_URL is set. */
  llm?: ChatModel;
  /** For /ready and the task queue backlog metric; both skip Temporal without it. */
  temporal?: Client;
  /** Told of every request but the probes (/health, /ready, /metrics): the runtime's quiet clock for maintenance. */
  onRequest?: () => void;
}

export type AppEnv = AuthEnv;
