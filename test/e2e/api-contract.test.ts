import { request } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, TEST_ADMIN_KEY, type TestService } from "../support/service.ts";

// The HTTP contract beyond what the SDK shows: OpenAPI, auth on every route, one error shape.
describe("HTTP contract", () => {
  let service: TestService;
  const call = (path: string, init: RequestInit = {}, key: string | null = TEST_ADMIN_KEY) =>
    fetch(`${service.url}${path}`, {
      ...init,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(init.body ? { "content-type": "application/json" } : {}),
        ...init.headers,
      },
    });

  beforeAll(async () => {
    service = await startTestService({ env: { MAX_CONTENT_BYTES: "4096", MAX_FILE_BYTES: "8192" } });
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("serves an OpenAPI 3.1 document describing the routes", async () => {
    const res = await call("/openapi.json", {}, null);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toBe("3.1.0");
    for (const p of [
      "/v3/documents",
      "/v3/documents/list",
      "/v3/documents/{id}",
      "/v3/documents/bulk",
      "/v3/search",
    ]) {
      expect(Object.keys(doc.paths)).toContain(p);
    }
    expect(Object.keys(doc.paths["/v3/documents/{id}"] ?? {}).sort()).toEqual(["delete", "get", "patch"]);
    expect(JSON.stringify(doc)).toContain("containerTagsOperator");
  });

  it("requires a bearer key on every API route", async () => {
    for (const [method, path] of [
      ["POST", "/v3/documents"],
      ["POST", "/v3/documents/list"],
      ["GET", "/v3/documents/processing"],
      ["GET", "/v3/documents/x"],
      ["POST", "/v3/search"],
      ["POST", "/v3/memories/list"],
    ] as const) {
      const res = await call(path, { method, body: method === "POST" ? "{}" : undefined }, null);
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(await res.json()).toMatchObject({ code: "unauthorized" });
    }
    const bad = await call("/v3/documents/list", { method: "POST", body: "{}" }, "sm_not_a_key");
    expect(bad.status).toBe(401);
  });

  it("answers bad input with 400 naming the field, and never with a crash", async () => {
    const cases: [string, string, object | string, string][] = [
      ["POST", "/v3/documents", { content: 42 }, "content"],
      ["POST", "/v3/documents", { content: "x", containerTag: "bad tag!" }, "containerTag"],
      ["POST", "/v3/documents", { content: "x", metadata: { nested: { a: 1 } } }, "metadata.nested"],
      ["POST", "/v3/documents/list", { sort: "title" }, "sort"],
      ["POST", "/v3/documents/list", { page: 0 }, "page"],
      ["POST", "/v3/search", { q: "" }, "q"],
      ["POST", "/v3/search", { q: "x", chunkThreshold: 2 }, "chunkThreshold"],
      ["POST", "/v3/search", { q: "x", retrieval: "magic" }, "retrieval"],
      ["DELETE", "/v3/documents/bulk", { ids: [] }, "ids"],
      ["DELETE", "/v3/documents/bulk", { ids: ["a"], containerTags: ["bad tag!"] }, "containerTags.0"],
      ["POST", "/v3/documents/list", { filters: "{not json" }, "filters"],
    ];
    for (const [method, path, body, field] of cases) {
      const res = await call(path, { method, body: JSON.stringify(body) });
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400);
      const json = (await res.json()) as { error: string; code: string; field: string };
      expect(json.field, JSON.stringify(json)).toBe(field);
      expect(json.error.length).toBeGreaterThan(0);
    }
    const malformed = await call("/v3/documents", { method: "POST", body: "{oops" });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ code: expect.any(String) });
  });

  it("refuses bodies over the configured size with 413", async () => {
    const res = await call("/v3/documents", {
      method: "POST",
      body: JSON.stringify({ content: "x".repeat(10_000) }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ code: "payload_too_large" });
  });

  it("counts a body sent without a length (chunked) as it streams: 413 over the limit, accepted under it", async () => {
    // A declared length is compared as it stands; a chunked body goes through the streaming check.
    const chunked = (content: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const { hostname, port } = new URL(service.url);
        const req = request(
          {
            host: hostname,
            port,
            method: "POST",
            path: "/v3/documents",
            headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, "content-type": "application/json" },
          },
          (res) => {
            let body = "";
            res.on("data", (d: Buffer) => {
              body += d.toString("utf8");
            });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on("error", reject);
        const json = JSON.stringify({ content });
        // Two writes and no content-length: Node sends Transfer-Encoding: chunked.
        req.write(json.slice(0, 10));
        req.end(json.slice(10));
      });
    const big = await chunked("x".repeat(10_000));
    expect(big.status).toBe(413);
    expect(JSON.parse(big.body)).toMatchObject({ code: "payload_too_large" });
    const small = await chunked("a chunked body under the limit");
    expect(small.status).toBe(200);
    expect(JSON.parse(small.body)).toMatchObject({ id: expect.any(String), status: "queued" });
  });

  it("refuses uploads over MAX_FILE_BYTES with 413 and accepts smaller ones", async () => {
    const upload = (size: number) => {
      const form = new FormData();
      form.append("file", new Blob([Buffer.alloc(size, 65)]), "a.txt");
      return fetch(`${service.url}/v3/documents/file`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
        body: form,
      });
    };
    const big = await upload(20_000);
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ code: "payload_too_large" });
    const small = await upload(6_000);
    expect(small.status).toBe(200);
    expect(await small.json()).toMatchObject({ id: expect.any(String), status: "queued" });
  });

  it("answers Expect: 100-continue with 413 before the body when over the limit, and 100 only when the body is read", async () => {
    // A raw socket, so the test sees exactly what goes over the wire before any body byte is sent.
    const exchange = (path: string, length: number, key = TEST_ADMIN_KEY) =>
      new Promise<string>((resolve, reject) => {
        const { hostname, port } = new URL(service.url);
        const socket = connect(Number(port), hostname);
        let seen = "";
        socket.on("data", (chunk) => {
          seen += chunk.toString("latin1");
          // Enough to tell the two outcomes apart: an interim 100, or a whole final answer.
          if (/^HTTP\/1\.1 100 /.test(seen) || /\r\n\r\n\{.*\}$/s.test(seen)) {
            socket.destroy();
            resolve(seen);
          }
        });
        socket.on("error", reject);
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${key}\r\n` +
            `Content-Type: multipart/form-data; boundary=x\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`,
        );
      });
    const refused = await exchange("/v3/documents/file", 8193);
    expect(refused).toMatch(/^HTTP\/1\.1 413 /);
    expect(refused).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(refused.slice(refused.indexOf("\r\n\r\n") + 4))).toEqual({
      error: "request body is larger than 8192 bytes",
      code: "payload_too_large",
    });
    // The JSON routes have their own, smaller limit; within it the client is told to go on.
    expect(await exchange("/v3/documents", 4097)).toMatch(/^HTTP\/1\.1 413 /);
    expect(await exchange("/v3/documents/file", 8192)).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
    // A request refused without reading its body gets its final answer, never a 100 first: the
    // client then never sends a body into a connection that is closing.
    const unauthorized = await exchange("/v3/documents/file", 100, "sm_not_a_real_key_0000");
    expect(unauthorized).toMatch(/^HTTP\/1\.1 401 /);
    expect(unauthorized).not.toMatch(/100 Continue/);
  });

  it("answers a multipart upload without a file with 400", async () => {
    const form = new FormData();
    form.append("containerTag", "x");
    const res = await fetch(`${service.url}/v3/documents/file`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
      body: form,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ field: "file" });
  });

  it("answers unknown ids and routes with 404 in the same shape", async () => {
    for (const [method, path] of [
      ["GET", "/v3/documents/nope"],
      ["PATCH", "/v3/documents/nope"],
      ["DELETE", "/v3/documents/nope"],
      ["GET", "/v3/nothing-here"],
    ] as const) {
      const res = await call(path, {
        method,
        body: method === "PATCH" ? JSON.stringify({ title: "t" }) : undefined,
      });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(await res.json()).toMatchObject({ code: "not_found" });
    }
  });

  it("lists with several container tags in any or all mode", async () => {
    const add = async (tags: string[]) =>
      (
        (await (
          await call("/v3/documents", {
            method: "POST",
            body: JSON.stringify({ content: tags.join(" "), containerTags: tags }),
          })
        ).json()) as { id: string }
      ).id;
    const a = await add(["mode-a"]);
    const ab = await add(["mode-a", "mode-b"]);
    const list = async (op?: string) => {
      const res = await call("/v3/documents/list", {
        method: "POST",
        body: JSON.stringify({
          containerTags: ["mode-a", "mode-b"],
          containerTagsOperator: op,
          order: "asc",
        }),
      });
      return ((await res.json()) as { memories: { id: string }[] }).memories.map((m) => m.id);
    };
    expect(await list()).toEqual([a, ab]);
    expect(await list("any")).toEqual([a, ab]);
    expect(await list("all")).toEqual([ab]);
  });
});
