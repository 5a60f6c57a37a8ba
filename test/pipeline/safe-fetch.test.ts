import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FetchFailedError,
  FetchRefusedError,
  fetchUrl,
  isPublicAddress,
  type Resolver,
} from "../../pipeline/safe-fetch.ts";

// A real server on loopback; each path exercises one behaviour.
let server: http.Server;
let base: string;
let port: number;
let hits = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    hits++;
    const path = req.url ?? "/";
    if (path === "/page") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(`<p>hello from ${req.headers.host} as ${req.headers["user-agent"]}</p>`);
    } else if (path === "/redirect-chain") {
      res.writeHead(302, { location: "/redirect-relative" });
      res.end();
    } else if (path === "/redirect-relative") {
      res.writeHead(301, { location: "page" });
      res.end();
    } else if (path === "/redirect-loopback-v6") {
      res.writeHead(302, { location: `http://[::1]:${port}/page` });
      res.end();
    } else if (path === "/redirect-other-loopback") {
      res.writeHead(307, { location: `http://127.0.0.2:${port}/page` });
      res.end();
    } else if (path === "/redirect-file") {
      res.writeHead(302, { location: "file:///etc/passwd" });
      res.end();
    } else if (path.startsWith("/loop/")) {
      const n = Number(path.slice(6));
      res.writeHead(302, { location: `/loop/${n + 1}` });
      res.end();
    } else if (path === "/big-declared") {
      res.writeHead(200, { "content-type": "text/plain", "content-length": String(2048) });
      res.end("x".repeat(2048));
    } else if (path === "/big-chunked") {
      // No content-length: the limit must be enforced while streaming.
      res.writeHead(200, { "content-type": "text/plain" });
      for (let i = 0; i < 64; i++) res.write("y".repeat(1024));
      res.end();
    } else if (path === "/gzip-bomb") {
      res.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" });
      res.end(gzipSync(Buffer.alloc(1024 * 1024, 0x61)));
    } else if (path === "/gzip") {
      res.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" });
      res.end(gzipSync("compressed hello"));
    } else if (path === "/stall-body") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("the start of a body that never ends");
    } else if (path === "/hang") {
      // Headers never arrive; only the deadline ends this.
    } else if (path === "/missing") {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("nope");
    } else {
      res.writeHead(500);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function refusal(promise: Promise<unknown>): Promise<FetchRefusedError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FetchRefusedError);
  return error as FetchRefusedError;
}

async function failure(promise: Promise<unknown>): Promise<FetchFailedError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FetchFailedError);
  return error as FetchFailedError;
}

describe("address policy", () => {
  it("classifies public and internal addresses", () => {
    for (const a of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
      expect(isPublicAddress(a), a).toBe(true);
    }
    const internal = [
      "127.0.0.1",
      "10.1.2.3",
      "172.16.0.1",
      "192.168.1.1",
      "169.254.169.254", // cloud metadata
      "100.64.0.1", // CGNAT
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "::1",
      "::",
      "fe80::1",
      "fd00::1",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:10.0.0.1",
      "64:ff9b::7f00:1", // NAT64 of 127.0.0.1
      "2002:7f00:1::", // 6to4 of 127.0.0.1
      "not-an-ip",
    ];
    for (const a of internal) expect(isPublicAddress(a), a).toBe(false);
  });
});

describe("fetchUrl refusals", () => {
  it("refuses loopback literals without connecting", async () => {
    const before = hits;
    const error = await refusal(fetchUrl(`${base}/page`));
    expect(error.detail).toBe("127.0.0.1 is a loopback address");
    const v6 = await refusal(fetchUrl(`http://[::1]:${port}/page`));
    expect(v6.detail).toBe("::1 is a loopback address");
    expect(hits).toBe(before);
  });

  it("refuses localhost through real DNS resolution", async () => {
    const error = await refusal(fetchUrl(`http://localhost:${port}/page`));
    expect(error.detail).toMatch(/^(127\.0\.0\.1|::1) is a loopback address \(localhost resolves to it\)$/);
    // The reason (what a document's errorReason shows) names the host, never what it resolves to.
    expect(error.reason).toBe("the host localhost is not allowed (refused: private or internal network)");
    expect(error.message).not.toMatch(/127\.0\.0\.1|::1/);
  });

  it("refuses private, link-local, CGNAT and mapped addresses", async () => {
    expect((await refusal(fetchUrl("http://10.0.0.1/"))).detail).toBe(
      "10.0.0.1 is a private-network address",
    );
    expect((await refusal(fetchUrl("http://169.254.169.254/latest/meta-data"))).detail).toBe(
      "169.254.169.254 is a link-local address",
    );
    expect((await refusal(fetchUrl("http://100.64.1.1/"))).detail).toBe(
      "100.64.1.1 is a carrier-grade NAT address",
    );
    expect((await refusal(fetchUrl("http://[::ffff:7f00:1]/"))).detail).toMatch(/loopback/);
    expect((await refusal(fetchUrl("http://[fd12::1]/"))).detail).toMatch(/unique-local/);
    // Decimal spelling of 127.0.0.1: URL parsing normalises it before the check.
    expect((await refusal(fetchUrl("http://2130706433/"))).detail).toMatch(/loopback/);
  });

  it("refuses a name if any of its addresses is internal", async () => {
    const resolve: Resolver = async () => [
      { address: "93.184.216.34", family: 4 },
      { address: "10.0.0.5", family: 4 },
    ];
    const error = await refusal(fetchUrl("http://mixed.test/", { resolve }));
    expect(error.detail).toBe("10.0.0.5 is a private-network address (mixed.test resolves to it)");
    expect(error.message).toBe(
      "refused to fetch http://mixed.test/: the host mixed.test is not allowed (refused: private or internal network)",
    );
  });

  it("refuses non-http schemes and credentials", async () => {
    expect((await refusal(fetchUrl("file:///etc/passwd"))).reason).toMatch(/scheme file is not allowed/);
    expect((await refusal(fetchUrl("ftp://example.com/x"))).reason).toMatch(/scheme ftp/);
    expect((await refusal(fetchUrl("not a url"))).reason).toBe("not a valid URL");
    expect((await refusal(fetchUrl("http://u:p@example.com/"))).reason).toMatch(/credentials/);
  });

  it("re-checks every redirect hop and refuses one into loopback", async () => {
    // Only 127.0.0.1 itself is permitted (as a deployment would permit one internal host); the
    // redirect targets other loopback addresses, which the default policy must refuse.
    const onlyThisHost = (a: string) => a === "127.0.0.1" || isPublicAddress(a);
    const v6 = await refusal(fetchUrl(`${base}/redirect-loopback-v6`, { isAllowedAddress: onlyThisHost }));
    expect(v6.detail).toBe("::1 is a loopback address");
    expect(v6.url).toBe(`http://[::1]:${port}/page`);
    const other = await refusal(
      fetchUrl(`${base}/redirect-other-loopback`, { isAllowedAddress: onlyThisHost }),
    );
    expect(other.detail).toBe("127.0.0.2 is a loopback address");
  });

  it("refuses a redirect to a non-http scheme even on a private network", async () => {
    const error = await refusal(fetchUrl(`${base}/redirect-file`, { allowPrivateNetwork: true }));
    expect(error.reason).toMatch(/scheme file is not allowed/);
  });

  it("stops after 5 redirects", async () => {
    const before = hits;
    const error = await refusal(fetchUrl(`${base}/loop/0`, { allowPrivateNetwork: true }));
    expect(error.reason).toBe("more than 5 redirects");
    expect(hits - before).toBe(6); // the original request plus 5 followed hops
  });
});

describe("fetchUrl on an allowed private network", () => {
  it("fetches from a local server", async () => {
    const result = await fetchUrl(`${base}/page`, { allowPrivateNetwork: true, userAgent: "test-agent/1" });
    expect(result.status).toBe(200);
    expect(result.finalUrl).toBe(`${base}/page`);
    expect(result.contentType).toBe("text/html; charset=utf-8");
    expect(result.body.toString("utf8")).toBe(`<p>hello from 127.0.0.1:${port} as test-agent/1</p>`);
  });

  it("follows relative redirects and reports the final URL", async () => {
    const result = await fetchUrl(`${base}/redirect-chain`, { allowPrivateNetwork: true });
    expect(result.finalUrl).toBe(`${base}/page`);
    expect(result.body.toString()).toContain("hello from");
  });

  it("connects to the address it checked, resolving each hop once", async () => {
    // The name exists only in the injected resolver: reaching the server proves the socket used the
    // checked address rather than a second, independent DNS lookup.
    const calls: string[] = [];
    const resolve: Resolver = async (host) => {
      calls.push(host);
      return [{ address: "127.0.0.1", family: 4 }];
    };
    const result = await fetchUrl(`http://pinned.invalid:${port}/page`, {
      allowPrivateNetwork: true,
      resolve,
    });
    expect(result.body.toString()).toContain(`hello from pinned.invalid:${port}`);
    expect(calls).toEqual(["pinned.invalid"]);
  });

  it("speaks TLS to the pinned address with the host name as SNI", async () => {
    // A self-signed certificate for the name: the handshake reaches our server (proving https goes
    // through the pinned address) and verification then fails, as it must for an untrusted cert.
    const dir = mkdtempSync(join(tmpdir(), "safe-fetch-tls-"));
    try {
      execFileSync(
        "openssl",
        [
          "req",
          "-x509",
          "-newkey",
          "ec",
          "-pkeyopt",
          "ec_paramgen_curve:prime256v1",
          "-nodes",
          "-days",
          "1",
          "-subj",
          "/CN=pinned.invalid",
          "-addext",
          "subjectAltName=DNS:pinned.invalid",
          "-keyout",
          join(dir, "key.pem"),
          "-out",
          join(dir, "cert.pem"),
        ],
        { stdio: "ignore" },
      );
      const context = tls.createSecureContext({
        key: readFileSync(join(dir, "key.pem")),
        cert: readFileSync(join(dir, "cert.pem")),
      });
      const servernames: string[] = [];
      const tlsServer = https.createServer({
        SNICallback: (name, done) => {
          servernames.push(name);
          done(null, context);
        },
      });
      await new Promise<void>((resolve) => tlsServer.listen(0, "127.0.0.1", resolve));
      const tlsPort = (tlsServer.address() as AddressInfo).port;
      try {
        const resolve: Resolver = async () => [{ address: "127.0.0.1", family: 4 }];
        const error = await failure(
          fetchUrl(`https://pinned.invalid:${tlsPort}/`, { allowPrivateNetwork: true, resolve }),
        );
        expect(error.reason).toBe("self-signed TLS certificate");
        expect(servernames).toEqual(["pinned.invalid"]);
      } finally {
        tlsServer.closeAllConnections();
        await new Promise((resolve) => tlsServer.close(resolve));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("decompresses gzip bodies", async () => {
    const result = await fetchUrl(`${base}/gzip`, { allowPrivateNetwork: true });
    expect(result.body.toString()).toBe("compressed hello");
  });
});

describe("fetchUrl limits and failures", () => {
  it("rejects a body over maxBytes by declared length", async () => {
    const error = await failure(
      fetchUrl(`${base}/big-declared`, { allowPrivateNetwork: true, maxBytes: 1000 }),
    );
    expect(error.reason).toBe("body is 2048 bytes, over the 1000-byte limit");
  });

  it("rejects a streamed body once it passes maxBytes", async () => {
    const error = await failure(
      fetchUrl(`${base}/big-chunked`, { allowPrivateNetwork: true, maxBytes: 10_000 }),
    );
    expect(error.reason).toBe("body exceeds the 10000-byte limit");
    const ok = await fetchUrl(`${base}/big-chunked`, { allowPrivateNetwork: true, maxBytes: 64 * 1024 });
    expect(ok.body.length).toBe(64 * 1024);
  });

  it("measures the limit after decompression", async () => {
    const error = await failure(
      fetchUrl(`${base}/gzip-bomb`, { allowPrivateNetwork: true, maxBytes: 100_000 }),
    );
    expect(error.reason).toBe("body exceeds the 100000-byte limit");
  });

  it("reports non-2xx statuses", async () => {
    const error = await failure(fetchUrl(`${base}/missing`, { allowPrivateNetwork: true }));
    expect(error.status).toBe(404);
    expect(error.reason).toBe("HTTP 404 Not Found");
  });

  it("aborts at the deadline", async () => {
    // /hang never answers: the fetch ends only because of its deadline, which the reason names.
    const error = await failure(fetchUrl(`${base}/hang`, { allowPrivateNetwork: true, timeoutMs: 300 }));
    expect(error.reason).toBe("timed out after 300 ms");
    // Also while the body is still arriving.
    const stalled = await failure(
      fetchUrl(`${base}/stall-body`, { allowPrivateNetwork: true, timeoutMs: 300 }),
    );
    expect(stalled.reason).toBe("timed out after 300 ms");
  });

  it("reports a refused connection", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await failure(fetchUrl(`http://127.0.0.1:${closedPort}/`, { allowPrivateNetwork: true }));
    expect(error.reason).toBe("connection refused");
  });

  it("reports a name that does not resolve", async () => {
    // Injected so the test never queries a real DNS server.
    const resolve: Resolver = async (host) => {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    };
    const error = await failure(fetchUrl("http://no-such-host.invalid/", { resolve }));
    expect(error.reason).toBe("could not resolve no-such-host.invalid: host not found");
  });
});
