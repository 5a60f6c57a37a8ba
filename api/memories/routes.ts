import { createRoute } from "@hono/zod-openapi";
import { ErrorResponse, errorResponses, jsonBody, jsonResponse, notFoundResponse } from "../schemas.ts";
import {
  CreateMemoriesBody,
  CreateMemoriesResponse,
  ForgetMatchingBody,
  ForgetMatchingResponse,
  ForgetMemoryBody,
  ForgetMemoryResponse,
  ListMemoriesBody,
  ListMemoriesResponse,
  MemoryIdParam,
  MemoryJson,
  UpdateMemoryBody,
  UpdateMemoryResponse,
} from "./schemas.ts";

const json = jsonResponse;
const body = jsonBody;
const security = [{ bearer: [] }];
const tags = ["memories"];

export const createMemories = createRoute({
  method: "post",
  path: "/",
  tags,
  security,
  summary: "Create 1–100 memories in a container; searchable as soon as this returns",
  request: body(CreateMemoriesBody),
  responses: { 201: json(CreateMemoriesResponse, "The memories created"), ...errorResponses },
});

export const forgetMemory = createRoute({
  method: "delete",
  path: "/",
  tags,
  security,
  summary: "Forget a memory (by id or exact content): kept, but left out of search and profiles",
  request: body(ForgetMemoryBody),
  responses: {
    200: json(ForgetMemoryResponse, "Forgotten"),
    ...errorResponses,
    ...notFoundResponse,
    409: json(ErrorResponse, "Already forgotten"),
  },
});

export const updateMemory = createRoute({
  method: "patch",
  path: "/",
  tags,
  security,
  summary: "Update a memory: a new version linked to the previous one, which stays in history",
  request: body(UpdateMemoryBody),
  responses: { 200: json(UpdateMemoryResponse, "The new version"), ...errorResponses, ...notFoundResponse },
});

export const listMemories = createRoute({
  method: "post",
  path: "/list",
  tags,
  security,
  summary: "List memories of container tags, a page at a time",
  description:
    "Latest versions of live memories by default; includeHistory adds earlier versions, includeForgotten adds " +
    "forgotten memories and those past their forgetAfter (checked at request time). A scoped key sees only " +
    "its own tags' memories; naming another tag is 403.",
  request: { body: { content: { "application/json": { schema: ListMemoriesBody } }, required: false } },
  responses: {
    200: json(ListMemoriesResponse, "One page of memories"),
    ...errorResponses,
    403: json(ErrorResponse, "A container tag outside the key's scope"),
  },
});

export const getMemory = createRoute({
  method: "get",
  path: "/{id}",
  tags,
  security,
  summary: "Get one memory (any version, also forgotten) by id",
  description: "A memory of a container tag outside the key's scope is 404, exactly like an unknown id.",
  request: { params: MemoryIdParam },
  responses: { 200: json(MemoryJson, "The memory"), ...errorResponses, ...notFoundResponse },
});

export const forgetMatching = createRoute({
  method: "post",
  path: "/forget-matching",
  tags,
  security,
  summary: "Forget the memories of a container matching a query (or these ids); dryRun previews",
  description:
    "Selects by search with the threshold (no LLM), best match first, at most maxForget (default 100, " +
    "at most 500): a dry run answers exactly the memories the same call would forget. Forgotten memories " +
    "leave search and profiles and come back with include.forgottenMemories. A scoped key may name only " +
    "its own tags (403 otherwise).",
  request: body(ForgetMatchingBody),
  responses: {
    200: json(ForgetMatchingResponse, "Forgotten (or previewed)"),
    ...errorResponses,
    403: json(ErrorResponse, "A container tag outside the key's scope"),
  },
});
