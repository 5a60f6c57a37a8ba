/** The console talks to the same REST API as everyone, authenticated by its session cookie. */

export interface SessionUser {
  kind: "key" | "user";
  id: string;
  name: string;
  email: string | null;
}

export interface Session {
  csrfToken: string;
  user: SessionUser;
  expiresAt: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let csrfToken = "";
let onSignedOut: () => void = () => {};

export function setSession(session: Session | null) {
  csrfToken = session?.csrfToken ?? "";
}

/** Called when the API says the session is gone (401), so the app can show the sign-in form. */
export function whenSignedOut(fn: () => void) {
  onSignedOut = fn;
}

async function errorOf(res: Response): Promise<ApiError> {
  let code = "http_error";
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = (await res.json()) as { error?: string; code?: string };
    if (typeof body.error === "string") message = body.error;
    if (body.code) code = body.code;
  } catch {
    // not JSON
  }
  return new ApiError(res.status, code, message);
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET" && method !== "HEAD") headers["x-csrf-token"] = csrfToken;
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  if (!res.ok) {
    const err = await errorOf(res);
    if (res.status === 401 && !path.startsWith("/v3/console/session")) onSignedOut();
    throw err;
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const get = <T>(path: string) => api<T>("GET", path);
export const post = <T>(path: string, body?: unknown) => api<T>("POST", path, body ?? {});
export const del = <T>(path: string) => api<T>("DELETE", path);

/** Uploads with XMLHttpRequest, which (unlike fetch) reports upload progress. */
export function uploadFile(
  form: FormData,
  onProgress: (sent: number, total: number) => void,
): Promise<{ id: string; status: string }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/v3/documents/file");
    xhr.setRequestHeader("x-csrf-token", csrfToken);
    xhr.setRequestHeader("accept", "application/json");
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded, e.total);
    };
    xhr.onload = () => {
      let body: { id?: string; status?: string; error?: string; code?: string } = {};
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        // not JSON
      }
      if (xhr.status >= 200 && xhr.status < 300 && body.id) {
        resolve({ id: body.id, status: body.status ?? "queued" });
      } else {
        if (xhr.status === 401) onSignedOut();
        reject(
          new ApiError(xhr.status, body.code ?? "http_error", body.error ?? `upload failed (${xhr.status})`),
        );
      }
    };
    xhr.onerror = () => reject(new ApiError(0, "network_error", "the upload could not reach the server"));
    xhr.send(form);
  });
}

// Shapes of the API responses the pages use.

export type DocumentStatus = "queued" | "extracting" | "chunking" | "embedding" | "done" | "failed";
export const documentStatuses: DocumentStatus[] = [
  "queued",
  "extracting",
  "chunking",
  "embedding",
  "done",
  "failed",
];
export const terminal = (s: string) => s === "done" || s === "failed";

export interface DocumentJson {
  id: string;
  customId: string | null;
  title: string | null;
  type: string;
  status: DocumentStatus;
  content?: string | null;
  summary: string | null;
  url: string | null;
  fileName: string | null;
  mimeType: string | null;
  fileSize: number | null;
  containerTags: string[];
  metadata: Record<string, unknown> | null;
  fileMetadata: Record<string, string | number | boolean> | null;
  connectionId: string | null;
  errorReason: string | null;
  embeddingModel: string | null;
  statusHistory?: { status: DocumentStatus; at: string; run: number }[];
  memoryExtraction?: { run: number; status: string; memories: number; reason?: string; at: string } | null;
  createdAt: string;
  updatedAt: string;
}

export interface Pagination {
  currentPage: number;
  totalPages: number;
  totalItems: number;
  limit: number;
}

export interface ApiKey {
  id: string;
  name: string;
  kind: "scoped" | "admin";
  keyPrefix: string;
  containerTags: string[];
  expiresAt: string | null;
  contactEmail: string | null;
  rateLimitMax: number | null;
  rateLimitTimeWindow: number | null;
  createdAt: string;
  disabledAt: string | null;
  status: "active" | "disabled" | "expired";
  /** The key from MEMORY_ADMIN_KEY: the API refuses to disable it. */
  fromEnvironment: boolean;
  notices?: {
    leadTime: string;
    expiresAt: string;
    channel: string;
    recipient: string | null;
    sentAt: string;
  }[];
}

export interface KeyNotice {
  keyId: string;
  keyName: string;
  leadTime: string;
  expiresAt: string;
  channel: string;
  recipient: string | null;
  sentAt: string;
}

export interface ConsoleConfig {
  temporalUiUrl: string | null;
  temporalNamespace: string;
  maxFileBytes: number;
}

export interface Connection {
  id: string;
  provider: string;
  createdAt: string;
  containerTags: string[];
  documentLimit?: number;
  email?: string;
  metadata: Record<string, unknown>;
  status: "pending" | "setup" | "active" | "auth_expired" | "paused";
  syncIntervalMinutes: number;
  lastSync: SyncRun | null;
}

export interface SyncRun {
  id: string;
  trigger: string;
  status: string;
  errorCode: string | null;
  error: string | null;
  startedAt: string;
  finishedAt: string | null;
  counts: {
    added: number;
    updated: number;
    deleted: number;
    unchanged: number;
    failed: number;
    skipped?: number;
    skippedReasons?: Record<string, number>;
    heldForReview?: number;
  };
  workflowId: string | null;
}

export interface Memory {
  id: string;
  memory: string;
  isStatic: boolean;
  createdAt: string;
  forgetAfter: string | null;
  version: number;
  containerTag: string;
  metadata: Record<string, unknown>;
  isForgotten: boolean;
  forgetReason: string | null;
  parentId: string | null;
  rootId: string | null;
  isLatest: boolean;
  relation: string | null;
  relatedTo: string | null;
  sourceDocumentId: string | null;
  updatedAt: string;
}

/** A workflow's page in the Temporal UI, when the service knows where that is. */
export function temporalWorkflowUrl(config: ConsoleConfig | null, workflowId: string): string | null {
  if (!config?.temporalUiUrl) return null;
  const namespace = encodeURIComponent(config.temporalNamespace);
  return `${config.temporalUiUrl}/namespaces/${namespace}/workflows/${encodeURIComponent(workflowId)}`;
}

/** Temporal workflow ids of document processing: doc/<document id>/<run> (temporal/processing-client.ts). */
export function workflowUrl(config: ConsoleConfig | null, documentId: string, run: number): string | null {
  return temporalWorkflowUrl(config, `doc/${documentId}/${run}`);
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function formatBytes(n: number | null | undefined): string {
  if (n == null) return "—";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export const splitTags = (text: string) =>
  text
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);

export const docName = (d: Pick<DocumentJson, "title" | "fileName" | "customId" | "id">) =>
  d.title || d.fileName || d.customId || d.id;
