import { request } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sampleRss } from "../support/memory.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService } from "../support/service.ts";

// What a caller with no key can cost the service: every route stops reading a body at its limit, declared or
// chunked, so memory does not grow with what is sent; a client that trickles its headers or body is cut off;
// and a flood of wrong keys from one address never refuses the right key from that address.

const MiB = 1024 * 1024;

interface Streamed {
  status: number;
  body: string;
  /** Bytes the client had written when the answer came or the connection ended. */
  sent: number;
}

/**
 * POSTs a chunked body of up to `total` bytes, written as fast as the server takes it, and stops at the answer.
 * The bytes come from one reused buffer, so the client itself holds almost nothing.
 */
function streamUntilAnswered(
  base: string,
  path: string,
  headers: Record<string, string>,
  total: number,
): Promise<Streamed> {
  const { hostname, port } = new URL(base);
  const piece = Buffer.alloc(256 * 1024, "a");
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = request({ host: hostname, port, method: "POST", path, headers }, (res) => {
      answered = true;
      let body = "";
      res.on("data", (d: Buffer) => {
        body += d.toString("utf8");
      });
      res.on("end", () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body, sent });
      });
    });
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    const pump = () => {
      while (!answered && sent < total) {
        sent += piece.length;
        if (!req.write(piece)) {
          req.once("drain", pump);
          return;
        }
      }
      if (!answered) req.end();
    };
    pump();
  });
}

describe("hostile requests", () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({
      env: {
        HTTP_HEADERS_TIMEOUT: "2s",
        HTTP_REQUEST_TIMEOUT: "4s",
        AUTH_FAILURE_MAX_DELAY_MS: "200",
        // Failures are counted in fixed windows of the clock; a day's keeps the flood's count in one.
        AUTH_FAILURE_WINDOW_MS: "86400000",
      },
    });
  });

  afterAll(async () => {
    await service?.stop();
  });

  it("stops reading a chunked body at the route's limit on every route a caller reaches without a key", async () => {
    const json = { "content-type": "application/json" };
    const routes: { path: string; headers: Record<string, string>; status: number[] }[] = [
      { path: "/v3/console/session", headers: json, status: [413] },
      { path: "/v3/connections/conn_unknown/picker/selection?t=token", headers: json, status: [413] },
      { path: "/v3/documents", headers: json, status: [401] },
      { path: "/v3/documents", headers: { ...json, authorization: "Bearer sm_made_up" }, status: [401] },
      {
        path: "/v3/documents/file",
        headers: { "content-type": "multipart/form-data; boundary=x" },
        status: [401],
      },
      { path: "/mcp", headers: json, status: [401] },
      { path: "/v3/webhooks", headers: json, status: [401] },
      { path: "/no/such/route", headers: json, status: [401, 404] },
    ];
    let peak = 0;
    const attempted = 256 * MiB;
    const before = process.memoryUsage.rss();
    const rss = sampleRss();
    try {
      for (const route of routes) {
        const answer = await streamUntilAnswered(service.url, route.path, route.headers, attempted);
        expect(route.status, `${route.path}: ${answer.status} ${answer.body}`).toContain(answer.status);
        expect(JSON.parse(answer.body).code).toEqual(expect.any(String));
        // The server stopped reading long before the end: what got through is the limit plus socket buffers.
        expect(answer.sent, route.path).toBeLessThan(32 * MiB);
      }
    } finally {
      peak = rss.stop();
    }
    // Eight bodies of 256 MiB offered; the process grew by far less than one of them.
    expect((peak - before) / MiB).toBeLessThan(128);
  });

  it("refuses a GET or HEAD that carries a body instead of reading it", async () => {
    const answer = await streamUntilAnswered(
      service.url,
      "/health",
      { "content-type": "text/plain" },
      64 * MiB,
    );
    // A POST to /health is no route; what matters is that the body was not read to its end.
    expect(answer.sent).toBeLessThan(32 * MiB);
    const get = (headers: Record<string, string>, path = "/health") =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const { hostname, port } = new URL(service.url);
        const req = request({ host: hostname, port, method: "GET", path, headers }, (res) => {
          let body = "";
          res.on("data", (d: Buffer) => {
            body += d.toString("utf8");
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on("error", reject);
        req.end("a body a GET should not have");
      });
    for (const path of ["/health", "/v3/connections/oauth/callback?state=s&code=c"]) {
      const declared = await get({ "content-length": "28" }, path);
      expect(declared.status, declared.body).toBe(413);
      expect(JSON.parse(declared.body).code).toBe("payload_too_large");
    }
    // Sent chunked, Node's own parser refuses it before the service sees it.
    const chunked = await get({ "transfer-encoding": "chunked" });
    expect([400, 413]).toContain(chunked.status);
  });

  it("cuts off a client that trickles its headers, and one that trickles its body", async () => {
    const { hostname, port } = new URL(service.url);
    const trickle = (head: string, then: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), hostname);
        let seen = "";
        let timer: NodeJS.Timeout | undefined;
        socket.on("data", (d) => {
          seen += d.toString("latin1");
        });
        socket.on("error", () => {});
        socket.on("close", () => {
          clearInterval(timer);
          resolve(seen);
        });
        socket.on("connect", () => {
          socket.write(head);
          // One byte every 200 ms, for as long as the server keeps the connection.
          timer = setInterval(() => {
            if (!socket.destroyed) socket.write(then);
          }, 200);
        });
        setTimeout(() => reject(new Error("the server kept a trickling client for 60 s")), 60_000).unref();
      });
    const slowHeaders = await trickle("GET /health HTTP/1.1\r\nHost: x\r\n", "X");
    expect(slowHeaders).toMatch(/^HTTP\/1\.1 408/);
    const slowBody = await trickle(
      'POST /v3/console/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{"email":"',
      "a",
    );
    expect(slowBody).toMatch(/^HTTP\/1\.1 408/);
  });

  it("answers the right key normally after 1,000 wrong keys from its address, during and after the flood", async () => {
    const call = (key: string) =>
      fetch(`${service.url}/v3/documents/list`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: "{}",
      }).then(async (res) => ({ status: res.status, text: await res.text() }));
    const wrong: number[] = [];
    const right: number[] = [];
    // 1,000 made-up keys, 20 at a time, and the admin key once per 50 of them, all from 127.0.0.1.
    for (let round = 0; round < 50; round++) {
      const answers = await Promise.all([
        ...Array.from({ length: 20 }, (_, i) => call(`sm_made_up_${round}_${i}`)),
        call(TEST_ADMIN_KEY),
      ]);
      wrong.push(...answers.slice(0, 20).map((a) => a.status));
      right.push(answers[20]?.status ?? 0);
    }
    expect(wrong).toHaveLength(1_000);
    // Each wrong key is refused: 401 up to the address's limit (50 by default), 429 past it.
    expect(wrong.filter((s) => s === 401).length).toBeLessThanOrEqual(50);
    expect(wrong.filter((s) => s === 401 || s === 429)).toHaveLength(1_000);
    expect(right).toEqual(Array(50).fill(200));
    const after = await call(TEST_ADMIN_KEY);
    expect(after.status, after.text).toBe(200);
  });
});
