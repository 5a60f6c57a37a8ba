import { createRoute, z } from "@hono/zod-openapi";
import { ErrorResponse, errorResponses, jsonBody, jsonResponse, notFoundResponse } from "../schemas.ts";
import {
  ConsoleConfig,
  ConsoleSession,
  ConsoleUser,
  NewConsoleUser,
  SignInBody,
  UserIdParam,
} from "./schemas.ts";

const tags = ["console"];
const security = [{ bearer: [] }];
const forbidden = {
  403: {
    description: "Not an admin (or a console request without its CSRF token)",
    content: { "application/json": { schema: ErrorResponse } },
  },
} as const;
const unauthorized = {
  401: { description: "Not signed in", content: { "application/json": { schema: ErrorResponse } } },
} as const;

export const signIn = createRoute({
  method: "post",
  path: "/session",
  tags,
  summary: "Sign in to the web console; sets an http-only session cookie",
  description:
    "With an admin API key or a console user's email and password. The cookie is signed, HttpOnly and SameSite=Strict " +
    "(Secure when PUBLIC_URL is https) and lasts 12 hours; requests other than GET/HEAD made with it must send the " +
    "returned csrfToken as x-csrf-token.",
  request: jsonBody(SignInBody),
  responses: {
    200: jsonResponse(ConsoleSession, "Signed in"),
    ...errorResponses,
    403: { description: "Not an admin key", content: { "application/json": { schema: ErrorResponse } } },
    429: { description: "Too many attempts", content: { "application/json": { schema: ErrorResponse } } },
  },
});

export const getSession = createRoute({
  method: "get",
  path: "/session",
  tags,
  summary: "Who is signed in to the console (by the session cookie), with the CSRF token",
  responses: { 200: jsonResponse(ConsoleSession, "The session"), ...unauthorized },
});

export const signOut = createRoute({
  method: "delete",
  path: "/session",
  tags,
  summary: "Sign out of the console (clears the session cookie)",
  responses: { 200: jsonResponse(z.object({ success: z.literal(true) }), "Signed out") },
});

export const createUser = createRoute({
  method: "post",
  path: "/users",
  tags,
  security,
  summary: "Create a console user (admin only); the password is stored as a scrypt hash",
  request: jsonBody(NewConsoleUser),
  responses: {
    200: jsonResponse(ConsoleUser, "The user"),
    ...errorResponses,
    ...forbidden,
    409: { description: "Email taken", content: { "application/json": { schema: ErrorResponse } } },
  },
});

export const listUsers = createRoute({
  method: "get",
  path: "/users",
  tags,
  security,
  summary: "List console users (admin only)",
  responses: {
    200: jsonResponse(z.object({ users: z.array(ConsoleUser) }), "Users"),
    ...errorResponses,
    ...forbidden,
  },
});

export const disableUser = createRoute({
  method: "delete",
  path: "/users/{id}",
  tags,
  security,
  summary: "Disable a console user at once (admin only)",
  request: { params: UserIdParam },
  responses: {
    200: jsonResponse(z.object({ success: z.literal(true) }), "Disabled"),
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
  },
});

export const getConfig = createRoute({
  method: "get",
  path: "/config",
  tags,
  security,
  summary: "What the console needs to know about this deployment (admin only)",
  responses: {
    200: jsonResponse(ConsoleConfig, "Settings for the console"),
    ...errorResponses,
    ...forbidden,
  },
});
