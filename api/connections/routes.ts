import { createRoute, z } from "@hono/zod-openapi";
import { ErrorResponse, errorResponses, notFoundResponse } from "../schemas.ts";
import {
  ConfigureBody,
  ConnectionDocument,
  ConnectionIdParam,
  ConnectionJson,
  CreateBody,
  CreateResponse,
  DeleteQuery,
  Provider,
  RequiredTagsBody,
  ResourcesQuery,
  RunsQuery,
  SyncRun,
  TagsBody,
} from "./schemas.ts";

const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});
const body = <T extends z.ZodType>(schema: T, required = true) => ({
  body: { content: { "application/json": { schema } }, required },
});
const common = { tags: ["connections"], security: [{ bearer: [] }] };
const ProviderParam = z.object({ provider: Provider });
const Deleted = z.object({ id: z.string(), provider: z.string() });

export const list = createRoute({
  ...common,
  method: "post",
  path: "/list",
  summary: "List connections, optionally those holding any of the container tags",
  request: body(TagsBody, false),
  responses: { 200: json(z.array(ConnectionJson), "Connections"), ...errorResponses },
});

export const create = createRoute({
  ...common,
  method: "post",
  path: "/{provider}",
  summary: "Create a connection; its first sync starts at once and a schedule keeps it in sync",
  description:
    "Providers without OAuth (s3, web-crawler, imap, github with a token) are ready at once: authLink is the connection's own URL and expiresIn is 0.",
  request: { params: ProviderParam, ...body(CreateBody) },
  responses: { 200: json(CreateResponse, "Created"), ...errorResponses },
});

export const getById = createRoute({
  ...common,
  method: "get",
  path: "/{connectionId}",
  summary: "A connection with its last sync run",
  request: { params: ConnectionIdParam },
  responses: { 200: json(ConnectionJson, "The connection"), ...errorResponses },
});

export const runs = createRoute({
  ...common,
  method: "get",
  path: "/{connectionId}/runs",
  summary: "The connection's sync runs, newest first",
  request: { params: ConnectionIdParam, query: RunsQuery },
  responses: {
    200: json(z.object({ runs: z.array(SyncRun) }), "Sync runs"),
    ...errorResponses,
    ...notFoundResponse,
  },
});

export const syncOne = createRoute({
  ...common,
  method: "post",
  path: "/{connectionId}/sync",
  summary: "Sync this connection now (a sync already running takes one more pass after its current one)",
  description:
    "409 when the connection is not active (waiting for consent or the picker, or its credentials expired).",
  request: { params: ConnectionIdParam },
  responses: {
    200: json(z.object({ id: z.string(), message: z.string() }), "Started"),
    ...errorResponses,
    ...notFoundResponse,
    409: json(ErrorResponse, "The connection is not active"),
  },
});

export const getByTag = createRoute({
  ...common,
  method: "post",
  path: "/{provider}/connection",
  summary: "The provider's connection holding any of the container tags",
  request: { params: ProviderParam, ...body(RequiredTagsBody) },
  responses: { 200: json(ConnectionJson, "The connection"), ...errorResponses },
});

export const importNow = createRoute({
  ...common,
  method: "post",
  path: "/{provider}/import",
  summary: "Sync the provider's connections now (those holding any of the container tags, if given)",
  request: { params: ProviderParam, ...body(TagsBody, false) },
  // 202 with a text body, as Supermemory's OpenAPI document gives it (SDK 5 checks status and media type).
  responses: {
    202: { description: "What was started", content: { "text/plain": { schema: z.string() } } },
    ...errorResponses,
  },
});

export const listDocuments = createRoute({
  ...common,
  method: "post",
  path: "/{provider}/documents",
  summary: "Documents imported by the provider's connections",
  request: { params: ProviderParam, ...body(TagsBody, false) },
  responses: { 200: json(z.array(ConnectionDocument), "Documents"), ...errorResponses },
});

export const resources = createRoute({
  ...common,
  method: "get",
  path: "/{connectionId}/resources",
  summary: "Resources the connection can sync (GitHub: repositories)",
  request: { params: ConnectionIdParam, query: ResourcesQuery },
  responses: {
    200: json(
      z.object({ resources: z.array(z.record(z.string(), z.unknown())), total_count: z.number().optional() }),
      "Resources",
    ),
    ...errorResponses,
  },
});

export const configure = createRoute({
  ...common,
  method: "post",
  path: "/{connectionId}/configure",
  summary: "Choose the resources to sync (GitHub: repositories); a sync follows",
  request: { params: ConnectionIdParam, ...body(ConfigureBody) },
  responses: {
    200: json(z.object({ message: z.string(), success: z.boolean() }), "Configured"),
    ...errorResponses,
  },
});

export const remove = createRoute({
  ...common,
  method: "delete",
  path: "/{connectionIdOrProvider}",
  summary:
    "Delete a connection by id (with its documents unless deleteDocuments=false), or a provider's connections by container tags",
  request: {
    params: z.object({
      connectionIdOrProvider: z
        .string()
        .min(1)
        .max(100)
        .openapi({ param: { name: "connectionIdOrProvider", in: "path" } }),
    }),
    query: DeleteQuery,
    body: { content: { "application/json": { schema: TagsBody } }, required: false },
  },
  responses: { 200: json(Deleted, "Deleted"), ...errorResponses },
});

export const pickerLink = createRoute({
  ...common,
  method: "post",
  path: "/{connectionId}/picker-link",
  summary: "A new hosted-picker link for a drive connection (to change what it syncs); valid for an hour",
  request: { params: ConnectionIdParam },
  responses: { 200: json(z.object({ pickerUrl: z.string() }), "The link"), ...errorResponses },
});
