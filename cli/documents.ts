import { type ApiClient, mapLimit } from "./client.ts";
import { type Output, table } from "./output.ts";
import { progressBar } from "./progress.ts";

export const STATUSES = ["queued", "extracting", "chunking", "embedding", "done", "failed"] as const;
export type Status = (typeof STATUSES)[number];
export const isTerminal = (status: string) => status === "done" || status === "failed";

/** The fields of the service's document shape that the CLI reads. */
export interface DocumentJson {
  id: string;
  customId: string | null;
  title: string | null;
  type: string;
  status: Status;
  content?: string | null;
  url: string | null;
  filepath: string | null;
  fileName: string | null;
  mimeType: string | null;
  fileSize: number | null;
  containerTags: string[];
  connectionId: string | null;
  errorReason: string | null;
  statusHistory?: { status: Status; at: string; run: number }[];
  createdAt: string;
  updatedAt: string;
}

interface ListPage {
  memories: DocumentJson[];
  pagination: { currentPage: number; totalPages: number; totalItems: number; limit: number };
}

/** The list endpoint's largest page. */
const PAGE_SIZE = 200;

/**
 * Every document of the tags, page by page. POST /v3/documents/list has no status filter, so callers
 * filter here. A document added or deleted while paging can shift the pages; ids are deduplicated,
 * and oldest-first paging (what a full scan uses) only appends new documents at the end.
 */
export async function* scanDocuments(
  client: ApiClient,
  opts: { containerTag?: string; order: "asc" | "desc"; pageSize?: number },
): AsyncGenerator<DocumentJson, void, undefined> {
  const seen = new Set<string>();
  for (let page = 1; ; page++) {
    const res = await client.request<ListPage>("POST", "/v3/documents/list", {
      body: {
        limit: opts.pageSize ?? PAGE_SIZE,
        page,
        sort: "createdAt",
        order: opts.order,
        ...(opts.containerTag ? { containerTags: [opts.containerTag] } : {}),
      },
    });
    for (const doc of res.memories) {
      if (seen.has(doc.id)) continue;
      seen.add(doc.id);
      yield doc;
    }
    if (page >= res.pagination.totalPages || res.memories.length === 0) return;
  }
}

export interface DocumentsResult {
  documents: DocumentJson[];
  /** Documents looked at; with --status every page is read until `limit` matches are found. */
  scanned: number;
  /** The status filter runs in the CLI: the list endpoint has none. */
  statusFilter?: { status: Status; appliedBy: "client" };
}

export async function listDocumentsCommand(
  client: ApiClient,
  out: Output,
  opts: { status?: Status; containerTag?: string; limit: number },
): Promise<void> {
  const documents: DocumentJson[] = [];
  let scanned = 0;
  // Unfiltered, one page of `limit` is enough; filtered, matches may be anywhere, so read full pages.
  const pageSize = opts.status ? PAGE_SIZE : Math.min(opts.limit, PAGE_SIZE);
  for await (const doc of scanDocuments(client, {
    containerTag: opts.containerTag,
    order: "desc",
    pageSize,
  })) {
    scanned++;
    if (!opts.status || doc.status === opts.status) documents.push(doc);
    if (documents.length >= opts.limit) break;
  }
  const result: DocumentsResult = {
    documents,
    scanned,
    ...(opts.status ? { statusFilter: { status: opts.status, appliedBy: "client" as const } } : {}),
  };
  if (opts.status && !out.json) {
    out.note(`(status filtered by the CLI: ${scanned} document(s) read, newest first)`);
  }
  out.result(result, () => {
    if (!documents.length) return "No documents.";
    return table(
      ["ID", "STATUS", "TITLE", "SOURCE", "TAGS", "UPDATED", "REASON"],
      documents.map((d) => [
        d.id,
        d.status,
        d.title ?? "",
        d.url ?? d.fileName ?? "(text)",
        d.containerTags.join(","),
        d.updatedAt.slice(0, 16).replace("T", " "),
        d.errorReason ?? "",
      ]),
      [24, 10, 36, 36, 30, 16, 90],
    );
  });
}

/** What a person recognises a document by: its title, else its file name, URL or id. */
export function displayName(d: Pick<DocumentJson, "id" | "title" | "fileName" | "url">): string {
  return d.title ?? d.fileName ?? d.url ?? d.id;
}

export interface WaitResult {
  finished: Map<string, DocumentJson>;
  /** Still unfinished when the time ran out. */
  pending: string[];
}

const WAIT_POLL_MS = 1_000;
/** GET /v3/documents/processing returns at most this many; a full page may be hiding some. */
const PROCESSING_CAP = 500;

/**
 * Polls until every document is done or failed (or the time is up). One call to the processing list
 * tells which ids are still unfinished; only the others are fetched, once, to read their outcome.
 */
export async function waitUntilFinished(
  client: ApiClient,
  ids: string[],
  opts: { timeoutMs: number; onProgress?: (finished: number, failed: number) => void },
): Promise<WaitResult> {
  const pending = new Set(ids);
  const finished = new Map<string, DocumentJson>();
  const deadline = Date.now() + opts.timeoutMs;
  while (pending.size) {
    const processing = await client.request<{ documents: { id: string }[]; totalCount: number }>(
      "GET",
      "/v3/documents/processing",
    );
    const unfinished = new Set(processing.documents.map((d) => d.id));
    const complete = processing.documents.length < PROCESSING_CAP;
    const candidates = [...pending].filter((id) => !complete || !unfinished.has(id));
    await mapLimit(candidates, 8, async (id) => {
      const doc = await getDocument(client, id);
      if (!doc) {
        finished.set(id, goneDocument(id));
        pending.delete(id);
      } else if (isTerminal(doc.status)) {
        finished.set(id, doc);
        pending.delete(id);
      }
    });
    opts.onProgress?.(finished.size, [...finished.values()].filter((d) => d.status === "failed").length);
    if (!pending.size || Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
  }
  return { finished, pending: [...pending] };
}

/** waitUntilFinished with a progress bar that counts finished documents and failures. */
export async function waitWithProgress(client: ApiClient, ids: string[], timeoutSeconds: number) {
  const bar = progressBar("processing", ids.length);
  try {
    return await waitUntilFinished(client, ids, {
      timeoutMs: timeoutSeconds * 1000,
      onProgress: (n, failed) => bar.update(n, failed ? `${failed} failed` : ""),
    });
  } finally {
    bar.stop();
  }
}

export async function getDocument(client: ApiClient, id: string): Promise<DocumentJson | undefined> {
  try {
    return await client.request<DocumentJson>("GET", `/v3/documents/${encodeURIComponent(id)}`);
  } catch (error) {
    if ((error as { status?: number }).status === 404) return undefined;
    throw error;
  }
}

/** Someone deleted the document while we waited: it will never finish, so it counts as failed. */
function goneDocument(id: string): DocumentJson {
  const now = new Date().toISOString();
  return {
    id,
    customId: null,
    title: null,
    type: "unknown",
    status: "failed",
    url: null,
    filepath: null,
    fileName: null,
    mimeType: null,
    fileSize: null,
    containerTags: [],
    connectionId: null,
    errorReason: "the document was deleted while waiting for it",
    createdAt: now,
    updatedAt: now,
  };
}
