import { createRoute } from "@hono/zod-openapi";
import { ErrorResponse, errorResponses, jsonBody, jsonResponse, notFoundResponse } from "../schemas.ts";
import {
  DeletedTag,
  ExportQuery,
  ImportResult,
  JsonLines,
  TagList,
  TagParam,
  TagSettings,
  TagSettingsBody,
} from "./schemas.ts";

const security = [{ bearer: [] }];
const tags = ["container tags"];
const forbidden = {
  403: { description: "Not an admin key", content: { "application/json": { schema: ErrorResponse } } },
} as const;

export const deleteContainerTag = createRoute({
  method: "delete",
  path: "/{containerTag}",
  tags,
  security,
  summary: "Delete a container tag with its content (admin only)",
  description:
    "Deletes, in one transaction: every document that carries only this tag (its chunks with it); the tag " +
    "from documents shared with other tags (they stay, and stay searchable, under their other tags); every " +
    "memory of the tag, all versions. Stored files no remaining document uses are then deleted from the " +
    "file store. Scoped API keys restricted to the tag are NOT deleted: they are credentials, not content " +
    "(disable them with DELETE /v3/auth/scoped-key/{id}). 404 when the tag has no documents and no memories.",
  request: { params: TagParam },
  responses: {
    200: jsonResponse(DeletedTag, "What was deleted"),
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
  },
});

export const exportContainerTag = createRoute({
  method: "get",
  path: "/{containerTag}/export",
  tags,
  security,
  summary: "Export a container tag as JSON Lines (admin only)",
  description:
    "Streams the tag's documents (stored fields and, unless files=false, the original file in base64) and " +
    "memories (every version, forget state, links; no vectors) as application/x-ndjson, read page by page. " +
    "Shared documents are exported with all their tags listed; an import gives them only the import's tag. " +
    "404 when the tag has no documents and no memories.",
  request: { params: TagParam, query: ExportQuery },
  responses: {
    200: { description: "The export", content: { "application/x-ndjson": { schema: JsonLines } } },
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
  },
});

export const importContainerTag = createRoute({
  method: "post",
  path: "/{containerTag}/import",
  tags,
  security,
  summary: "Import an export into a container tag (admin only)",
  description:
    "Takes the JSON Lines of an export; the tag in the path is where it goes (it may differ from the " +
    "exported one). Every line is validated first: a bad line is 400 naming its line number and nothing is " +
    "written. Documents keep their ids (an existing id is skipped, so importing twice is idempotent), their " +
    "files go back into the file store and they are processed again with this instance's embedding model " +
    "(URL documents are fetched again). Memories keep ids, versions, links, forget state and timestamps and " +
    "are embedded with this instance's model; a sourceDocumentId is kept only if that document exists. A " +
    "customId held by another document is 409 and nothing is written. The body may be up to MAX_FILE_BYTES.",
  request: {
    params: TagParam,
    body: { content: { "application/x-ndjson": { schema: JsonLines } }, required: true },
  },
  responses: {
    200: jsonResponse(ImportResult, "What was imported and skipped"),
    ...errorResponses,
    ...forbidden,
    409: jsonResponse(ErrorResponse, "A customId is held by another document"),
    413: jsonResponse(ErrorResponse, "Body larger than MAX_FILE_BYTES"),
  },
});

export const listContainerTags = createRoute({
  method: "get",
  path: "/list",
  tags,
  security,
  summary: "List the container tags with their counts (admin only)",
  description:
    "Every tag that documents or live memories carry, or whose settings were saved, the most used first " +
    "(at most 1,000). A tag named `list` is read through the list, not GET /v3/container-tags/list.",
  responses: { 200: jsonResponse(TagList, "The container tags"), ...errorResponses, ...forbidden },
});

export const getContainerTag = createRoute({
  method: "get",
  path: "/{containerTag}",
  tags,
  security,
  summary: "A container tag's settings (admin only)",
  description: "404 when nothing carries the tag and it has no settings.",
  request: { params: TagParam },
  responses: {
    200: jsonResponse(TagSettings, "The settings"),
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
  },
});

export const updateContainerTag = createRoute({
  method: "patch",
  path: "/{containerTag}",
  tags,
  security,
  summary: "Change a container tag's settings (admin only)",
  description:
    "Only the fields sent change. A tag may be given settings before anything carries it; its settings go " +
    "when the tag is deleted.",
  request: { params: TagParam, ...jsonBody(TagSettingsBody) },
  responses: {
    200: jsonResponse(TagSettings, "The settings as saved"),
    ...errorResponses,
    ...forbidden,
  },
});
