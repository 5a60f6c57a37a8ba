import type { Server } from "node:http";
import type { MiddlewareHandler } from "hono";
import type { Config } from "../config/env.ts";
import { ApiError, errorBody } from "./errors.ts";

type Limits = Pick<Config, "MAX_CONTENT_BYTES" | "MAX_FILE_BYTES">;

/**
 * The routes a caller reaches without a key take small bodies only: a sign-in is an e-mail and a password or a
 * key, and a picker selection at most 1,000 items (about 1.7 MB at the schema's longest fields). Their limits
 * are fixed, not MAX_CONTENT_BYTES, so what an anonymous request can make the service hold stays small whatever
 * an operator allows tenants.
 */
export const SIGN_IN_BODY_BYTES = 16 * 1024;
export const PICKER_SELECTION_BODY_BYTES = 2 * 1024 * 1024;

/** The most a request to `pathname` may send: uploads and imports (which carry files) a file's size, the rest less. */
export function bodyLimitFor(pathname: string, limits: Limits): number {
  if (pathname === "/v3/console/session") return SIGN_IN_BODY_BYTES;
  if (pathname.startsWith("/v3/connections/") && pathname.endsWith("/picker/selection"))
    return PICKER_SELECTION_BODY_BYTES;
  const file =
    pathname.endsWith("/file") ||
    (pathname.startsWith("/v3/container-tags/") && pathname.endsWith("/import"));
  return file ? limits.MAX_FILE_BYTES : limits.MAX_CONTENT_BYTES;
}

export const tooLargeMessage = (limit: number) => `request body is larger than ${limit} bytes`;

/**
 * 413 for a body over its route's limit, on every route, before authentication. A declared length is compared as
 * it stands. A body sent without one (chunked) is counted as the route reads it, through a stream that errors past
 * the limit: nothing is read ahead, so a request refused before its body is needed (no key, no route) costs no
 * read at all. (hono's bodyLimit reads the whole body first, up to the limit, before any other check: an anonymous
 * caller could make the service hold MAX_FILE_BYTES per request.) Only chunked requests pay for the web stream:
 * turning the adapter's lightweight request into a web Request costs about a millisecond of the main thread.
 */
export function sizeLimit(limits: Limits): MiddlewareHandler {
  return async (c, next) => {
    const method = c.req.method;
    const declared = c.req.header("content-length");
    const streamed = c.req.header("transfer-encoding") !== undefined;
    if (method === "GET" || method === "HEAD") {
      // No route reads one; answered at once (and the connection closed) rather than drained after the answer.
      if (streamed || Number(declared ?? 0) > 0)
        throw new ApiError(413, "payload_too_large", `${method} requests take no body`);
      return next();
    }
    const maxSize = bodyLimitFor(c.req.path, limits);
    if (!streamed) {
      if (declared !== undefined && Number.parseInt(declared, 10) > maxSize)
        throw new ApiError(413, "payload_too_large", tooLargeMessage(maxSize));
      return next();
    }
    const raw = c.req.raw;
    if (!raw.body) return next();
    let size = 0;
    let over = false;
    const counted = raw.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          size += chunk.byteLength;
          if (size > maxSize) {
            over = true;
            controller.error(new ApiError(413, "payload_too_large", tooLargeMessage(maxSize)));
          } else controller.enqueue(chunk);
        },
      }),
    );
    c.req.raw = new Request(raw, { body: counted, duplex: "half" } as RequestInit);
    await next();
    // Whatever the reader made of the cut body (a JSON parser says "malformed"), the answer is 413.
    if (over) {
      // Cleared first: hono copies the headers of the response it replaces (a content-length among them).
      c.res = undefined;
      c.res = new Response(JSON.stringify(errorBody("payload_too_large", tooLargeMessage(maxSize))), {
        status: 413,
        headers: { "content-type": "application/json", connection: "close" },
      });
    }
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
    const limit = bodyLimitFor(pathname, limits);
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

/** How long, and how many bytes, a connection is read and discarded after an answer that closes it early. */
const LINGER_MS = 2_000;
const LINGER_BYTES = 8 * 1024 * 1024;

/**
 * A lingering close, as nginx does it: after an answer that closes the connection while the client is still
 * sending its body (a 413, a 401 to an upload), the socket's write side is ended but its read side is drained
 * for up to LINGER_MS and LINGER_BYTES before it is destroyed. Closing a socket with unread data makes the kernel
 * reset the connection, and a client still writing then often sees the reset (EPIPE, ECONNRESET) instead of the
 * answer. What is read is discarded: it costs time on the socket, never memory.
 */
export function lingerOnEarlyClose(server: Pick<Server, "on">) {
  server.on("request", (req, res) => {
    res.once("finish", () => {
      const socket = req.socket;
      // Node's own 'finish' handler ran first: for a closing answer it ended the socket and will destroy it once
      // the answer is flushed. Only a request whose body is still arriving needs the drain instead.
      if (req.complete || res.shouldKeepAlive || socket.destroyed) return;
      socket.removeListener("finish", socket.destroy);
      const timer = setTimeout(() => socket.destroy(), LINGER_MS);
      timer.unref();
      let drained = 0;
      socket.on("data", (chunk: Buffer) => {
        drained += chunk.length;
        if (drained > LINGER_BYTES) socket.destroy();
      });
      socket.once("close", () => clearTimeout(timer));
      socket.once("end", () => socket.destroy());
    });
  });
}
