import type { DocumentRow } from "../../store/schema/index.ts";
import { type TagScope, tagsWithin } from "../../store/tag-scope.ts";

/**
 * The public shape of a document (field names as in the official SDK), as the caller of `scope` sees it: a scoped
 * key is shown only the container tags within its scope (store/tag-scope.ts tagsWithin).
 */
export function presentDocument(
  row: DocumentRow,
  opts: { content: boolean; history?: boolean; scope: TagScope },
) {
  return {
    id: row.id,
    customId: row.customId,
    title: row.title,
    type: row.type,
    status: row.status,
    ...(opts.content ? { content: row.content ?? (row.url || row.fileKey ? null : row.source) } : {}),
    summary: row.summary,
    url: row.url,
    filepath: row.filepath,
    fileName: row.fileName,
    mimeType: row.mimeType,
    fileSize: row.fileSize,
    containerTags: tagsWithin(row.containerTags, opts.scope),
    metadata: row.metadata,
    fileMetadata: row.fileMetadata,
    connectionId: row.connectionId,
    errorReason: row.errorReason,
    embeddingModel: row.embeddingModel,
    ...(opts.history ? { statusHistory: row.statusHistory, memoryExtraction: row.memoryExtraction } : {}),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/**
 * One document as GET /v3/documents/{id} answers: the full shape plus the fields the official SDK's
 * `DocumentGetResponse` requires. Nothing here makes Open Graph images, raw payloads or map points, so
 * those are null; every document is processed the same way, which the SDK calls `taskType: "memory"`
 * (`superrag` is accepted on writes and processed the same); `source` names the connector a synced
 * document came from, and is null for documents added through the API. `dreamingStatus` (required by
 * Supermemory's OpenAPI document, checked by SDK 5) is `dreaming` until the run, memory extraction
 * included, has finished, done or failed.
 */
export function presentFullDocument(row: DocumentRow, scope: TagScope) {
  const provider = row.connectionId ? row.metadata.source : undefined;
  return {
    ...presentDocument(row, { content: true, history: true, scope }),
    source: typeof provider === "string" ? provider : null,
    ogImage: null,
    raw: null,
    spatialPoint: null,
    taskType: "memory" as const,
    dreamingStatus:
      row.status === "done" || row.status === "failed" ? ("done" as const) : ("dreaming" as const),
  };
}
