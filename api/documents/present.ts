import type { DocumentRow } from "../../store/schema/index.ts";

/** The public shape of a document (field names as in the official SDK). */
export function presentDocument(row: DocumentRow, opts: { content: boolean; history?: boolean }) {
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
    containerTags: row.containerTags,
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
