import type { Server } from "node:http";
import type { Config } from "../config/env.ts";
import { errorBody } from "./errors.ts";

type Limits = Pick<Config, "MAX_CONTENT_BYTES" | "MAX_FILE_BYTES">;

/** Uploads and imports of an export (which carries files) may be as large as a file; the rest are JSON. */
export function bodyLimitFor(pathname: string, limits: Limits): number {
  const large =
    pathname.endsWith("/file") ||
    (pathname.startsWith("/v3/container-tags/") && pathname.endsWith("/import"));
  return large ? limits.MAX_FILE_BYTES : limits.MAX_CONTENT_BYTES;
}

export const tooLargeMessage = (limit: number) => `request body is larger than ${limit} bytes`;

/**
 * Answers `Expect: 100-continue` before the body is sent: 413 when the declared length is over the
 * route's limit, so a client uploading a huge file learns it at once and the connection never carries
 * the body. (Without this, Node says 100 Continue to everything; the app then refuses the body while
 * it arrives, and a busy client may see only the broken pipe, not the answer.)
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
    res.writeContinue();
    server.emit("request", req, res);
  });
}
