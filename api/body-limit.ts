import type { Server } from "node:http";
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Config } from "../config/env.ts";
import { ApiError, errorBody } from "./errors.ts";

type Limits = Pick<Config, "MAX_CONTENT_BYTES" | "MAX_FILE_BYTES">;

/** Uploads and imports of an export (which carries files) may be as large as a file; the rest are JSON. */
export type BodyKind = "file" | "json";

export function bodyKindFor(pathname: string): BodyKind {
  const large =
    pathname.endsWith("/file") ||
    (pathname.startsWith("/v3/container-tags/") && pathname.endsWith("/import"));
  return large ? "file" : "json";
}

export const bodyLimitOf = (kind: BodyKind, limits: Limits) =>
  kind === "file" ? limits.MAX_FILE_BYTES : limits.MAX_CONTENT_BYTES;

export const tooLargeMessage = (limit: number) => `request body is larger than ${limit} bytes`;

/**
 * 413 for a body over `maxSize`. A declared length is compared as it stands; only a body sent without one
 * (chunked) goes through hono's bodyLimit, which counts it as it streams. Why not bodyLimit for all: it reads
 * `c.req.raw.body`, and on @hono/node-server that turns the lightweight request into a web Request with a
 * stream over the socket, so every JSON body then arrives through web streams (about a millisecond of the main
 * thread per search on 2 cores) instead of the adapter's direct read.
 */
export function sizeLimit(maxSize: number): MiddlewareHandler {
  const tooLarge = () => {
    throw new ApiError(413, "payload_too_large", tooLargeMessage(maxSize));
  };
  const streamed = bodyLimit({ maxSize, onError: tooLarge });
  return (c, next) => {
    const method = c.req.method;
    if (method === "GET" || method === "HEAD") return next();
    const declared = c.req.header("content-length");
    if (declared === undefined || c.req.header("transfer-encoding") !== undefined) return streamed(c, next);
    if (Number.parseInt(declared, 10) > maxSize) tooLarge();
    return next();
  };
}

/**
 * Answers `Expect: 100-continue` as HTTP means it: "100 Continue" only once the app reads the body.
 * A declared length over the route's limit gets 413 at once, and a request the app refuses without
 * reading (401, 403, 404…) gets its final answer while the client still holds the body back. Without
 * this, Node says 100 Continue to everything; the client then sends its body into a connection the
 * server is closing after its error answer, and may see only the reset, not the answer.
 */
export function answerExpectContinue(server: Pick<Server, "on" | "emit">, limits: Limits) {
  server.on("checkContinue", (req, res) => {
    const declared = Number(req.headers["content-length"]);
    const pathname = new URL(req.url ?? "/", "http://service").pathname;
    const limit = bodyLimitOf(bodyKindFor(pathname), limits);
    if (Number.isFinite(declared) && declared > limit) {
      const body = JSON.stringify(errorBody("payload_too_large", tooLargeMessage(limit)));
      res.writeHead(413, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        // The body the client held back is still owed on this connection: close it instead.
        connection: "close",
      });
      res.end(body);
      return;
    }
    // Reading the body (a data listener, or Node draining it after the answer) resumes the stream.
    // After a final answer the client sends nothing: the app's error answers close the connection.
    req.once("resume", () => {
      if (!res.headersSent) res.writeContinue();
    });
    server.emit("request", req, res);
  });
}
