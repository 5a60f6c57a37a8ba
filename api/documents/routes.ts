import { createRoute } from "@hono/zod-openapi";
import { ErrorResponse, errorResponses, jsonBody, jsonResponse, notFoundResponse } from "../schemas.ts";
import {
  AddDocumentBody,
  AddDocumentResponse,
  BatchBody,
  BatchResponse,
  BulkDeleteBody,
  BulkDeleteResponse,
  ChunksResponse,
  FileLinkQuery,
  FileUrlQuery,
  FileUrlResponse,
  FullDocumentJson,
  IdParam,
  ListBody,
  ListResponse,
  ProcessingResponse,
  UpdateBody,
  UploadForm,
} from "./schemas.ts";

const json = jsonResponse;
const body = jsonBody;
const security = [{ bearer: [] }];
const tags = ["documents"];

export const addDocument = createRoute({
  method: "post",
  path: "/",
  tags,
  security,
  summary: "Add a document (text, markdown or URL); re-adding a customId updates it",
  request: body(AddDocumentBody),
  responses: { 200: json(AddDocumentResponse, "Queued for processing"), ...errorResponses },
});

export const batchAdd = createRoute({
  method: "post",
  path: "/batch",
  tags,
  security,
  summary: "Add up to 500 documents at once",
  request: body(BatchBody),
  responses: { 200: json(BatchResponse, "One result per document, in order"), ...errorResponses },
});

export const listDocuments = createRoute({
  method: "post",
  path: "/list",
  tags,
  security,
  summary: "List documents, filtered by container tags and metadata",
  request: { body: { content: { "application/json": { schema: ListBody } }, required: false } },
  responses: { 200: json(ListResponse, "One page of documents"), ...errorResponses },
});

export const listProcessing = createRoute({
  method: "get",
  path: "/processing",
  tags,
  security,
  summary: "Documents whose processing has not finished",
  responses: { 200: json(ProcessingResponse, "Documents in processing"), ...errorResponses },
});

export const getDocument = createRoute({
  method: "get",
  path: "/{id}",
  tags,
  security,
  summary: "Get a document with its status and content (by id or customId)",
  request: { params: IdParam },
  responses: { 200: json(FullDocumentJson, "The document"), ...errorResponses, ...notFoundResponse },
});

export const updateDocument = createRoute({
  method: "patch",
  path: "/{id}",
  tags,
  security,
  summary: "Update a document: new content is reprocessed, metadata alone is not",
  request: { params: IdParam, ...body(UpdateBody) },
  responses: { 200: json(AddDocumentResponse, "Updated"), ...errorResponses, ...notFoundResponse },
});

export const deleteBulk = createRoute({
  method: "delete",
  path: "/bulk",
  tags,
  security,
  summary: "Delete documents by ids (or customIds), by container tags, or by filepath",
  request: body(BulkDeleteBody),
  responses: { 200: json(BulkDeleteResponse, "What was deleted"), ...errorResponses },
});

export const deleteDocument = createRoute({
  method: "delete",
  path: "/{id}",
  tags,
  security,
  summary: "Delete a document permanently (by id or customId)",
  request: { params: IdParam },
  responses: { 204: { description: "Deleted" }, ...errorResponses, ...notFoundResponse },
});

export const uploadFile = createRoute({
  method: "post",
  path: "/file",
  tags,
  security,
  summary:
    "Upload a file (PDF, image, audio, video, docx, pptx, eml, html, text); its type is detected from the bytes",
  request: { body: { content: { "multipart/form-data": { schema: UploadForm } }, required: true } },
  responses: {
    200: json(AddDocumentResponse, "Stored and queued for processing"),
    413: { description: "File too large", content: { "application/json": { schema: ErrorResponse } } },
    ...errorResponses,
  },
});

export const listChunks = createRoute({
  method: "get",
  path: "/{id}/chunks",
  tags,
  security,
  summary: "Extension: the chunks of a document's latest processing, in order (by id or customId)",
  request: { params: IdParam },
  responses: { 200: json(ChunksResponse, "The chunks"), ...errorResponses, ...notFoundResponse },
});

export const reprocessDocument = createRoute({
  method: "post",
  path: "/{id}/reprocess",
  tags,
  security,
  summary: "Extension: process a document again as it is (a new run; a running one is stopped)",
  request: { params: IdParam },
  responses: { 200: json(AddDocumentResponse, "Queued again"), ...errorResponses, ...notFoundResponse },
});

export const documentFileUrl = createRoute({
  method: "get",
  path: "/{id}/file-url",
  tags,
  security,
  summary:
    "A time-limited link (24 hours unless expiresIn says less) that downloads the document's original file without an API key",
  request: { params: IdParam, query: FileUrlQuery },
  responses: {
    200: json(FileUrlResponse, "The link"),
    ...errorResponses,
    404: {
      description: "Document not found or has no file",
      content: { "application/json": { schema: ErrorResponse } },
    },
  },
});

/** Reached with the link alone: its signature, not a key, is the authority (mounted outside bearer auth). */
export const downloadDocumentFile = createRoute({
  method: "get",
  path: "/{id}/file",
  tags,
  summary:
    "The original file of a document, through a link from GET /v3/documents/{id}/file-url (no API key)",
  request: { params: IdParam, query: FileLinkQuery },
  responses: {
    200: {
      description: "The file's bytes, as an attachment, with its stored content type",
      content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
    },
    400: errorResponses[400],
    403: {
      description: "The link expired or its signature does not match (e.g. the file was replaced)",
      content: { "application/json": { schema: ErrorResponse } },
    },
    404: {
      description: "The document was deleted",
      content: { "application/json": { schema: ErrorResponse } },
    },
  },
});
