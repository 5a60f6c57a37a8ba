import { createRoute } from "@hono/zod-openapi";
import { ErrorResponse, errorResponses, jsonBody, jsonResponse, notFoundResponse } from "../schemas.ts";
import {
  CreateMemoriesBody,
  CreateMemoriesResponse,
  ForgetMemoryBody,
  ForgetMemoryResponse,
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
  responses: { 200: json(CreateMemoriesResponse, "The memories created"), ...errorResponses },
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
