import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seededRandom } from "../../bench/lib/random.ts";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService } from "../support/service.ts";

// At least 5,000 malformed requests across every endpoint: wrong types, huge strings, deep JSON,
// invalid UTF-8, wrong methods, bad content types, odd ids and headers. Zero 5xx, every error in the
// one error shape without stack traces or SQL, the server stays up and a valid request still works.
const TOTAL = Number(process.env.FUZZ_TOTAL ?? 5_200);
const CONCURRENCY = 4;
const MAX_BODY = 64 * 1024;

const ROUTES: [string, string][] = [
  ["POST", "/v3/documents"],
  ["POST", "/v3/documents/batch"],
  ["POST", "/v3/documents/list"],
  ["GET", "/v3/documents/processing"],
  ["GET", "/v3/documents/{id}"],
  ["PATCH", "/v3/documents/{id}"],
  ["DELETE", "/v3/documents/{id}"],
  ["DELETE", "/v3/documents/bulk"],
  ["POST", "/v3/documents/file"],
  ["POST", "/v3/memories"],
  ["POST", "/v3/memories/list"],
  ["PATCH", "/v3/memories/{id}"],
  ["POST", "/v3/search"],
  ["POST", "/v3/auth/scoped-key"],
  ["DELETE", "/v3/auth/scoped-key/{id}"],
  ["GET", "/v3/settings"],
  ["PATCH", "/v3/settings"],
  ["GET", "/health"],
  ["GET", "/openapi.json"],
  ["POST", "/v4/search"],
  ["GET", "/nothing"],
];

/** Valid bodies to mutate, by path. */
const VALID: Record<string, Record<string, unknown>> = {
  "/v3/documents": { content: "hello", containerTag: "fuzz", customId: "c1", metadata: { a: 1 } },
  "/v3/memories": { content: "hello", containerTags: ["fuzz"] },
  "/v3/documents/batch": { documents: [{ content: "x" }, "y"], containerTag: "fuzz" },
  "/v3/documents/list": {
    containerTags: ["fuzz"],
    limit: 10,
    page: 1,
    filters: { AND: [{ key: "a", value: "1" }] },
  },
  "/v3/memories/list": { containerTags: ["fuzz"], sort: "createdAt", order: "asc" },
  "/v3/documents/{id}": { content: "new", metadata: { b: true }, containerTags: ["fuzz"] },
  "/v3/memories/{id}": { title: "t" },
  "/v3/documents/bulk": { ids: ["a", "b"] },
  "/v3/search": { q: "hello", limit: 5, chunkThreshold: 0.1, containerTags: ["fuzz"] },
  "/v4/search": { q: "hello" },
  "/v3/auth/scoped-key": { containerTag: "fuzz", expiresInDays: 3, rateLimitMax: 10 },
  "/v3/settings": { chunkSize: 500, notionClientSecret: "s", githubCustomKeyEnabled: true },
};

function asText(v: unknown): string {
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v) ?? "undefined";
  } catch {
    return "[unprintable]";
  }
}

interface Fuzzed {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array | FormData;
  what: string;
}

describe("fuzzing every endpoint", () => {
  let service: TestService;
  let scopedKey = "";
  const call = caller(() => service.url);

  beforeAll(async () => {
    service = await startTestService({
      roles: ["api"],
      // Every fuzzed request comes from 127.0.0.1, and about one in eighty carries a wrong key: with the default
      // per-address limit the address would be shut out halfway (test/security/sign-in.test.ts tests that limit).
      env: { MAX_CONTENT_BYTES: String(MAX_BODY), AUTH_FAILURE_LIMIT: "0" },
    });
    const res = await call("POST", "/v3/auth/scoped-key", { containerTag: "fuzz", rateLimitMax: 10_000 });
    scopedKey = res.json.key;
  });
  afterAll(async () => {
    await service?.stop();
  });

  it(`answers ${TOTAL} malformed requests without a single 5xx`, async () => {
    const seed = Number(process.env.FUZZ_SEED ?? 20261122);
    const rand = seededRandom(seed); // deterministic, so a failure can be replayed
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
    const anything = fc.sample(fc.anything({ maxDepth: 4, withBigInt: false }), { numRuns: 400, seed });
    const strings = fc.sample(fc.string({ unit: "binary", maxLength: 200 }), { numRuns: 200, seed });
    const weird = () =>
      pick<unknown>([
        ...anything.slice(0, 5).map(() => pick(anything)),
        pick(strings),
        "x".repeat(Math.floor(rand() * 200_000)),
        -1,
        1e308,
        Number.MAX_SAFE_INTEGER,
        0.5,
        "",
        null,
        [],
        {},
        true,
        "../../etc/passwd",
        "'; DROP TABLE documents; --",
        { __proto__: { admin: true } },
        { constructor: { prototype: { polluted: 1 } } },
        ["a", 1, null, { b: [] }],
        "\u0000\ud800\udfff\uffff",
      ]);
    const deep = (depth: number, kind: number) =>
      kind === 0
        ? "[".repeat(depth) + "]".repeat(depth)
        : kind === 1
          ? `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`
          : `{"q":"x","filters":${'{"AND":['.repeat(depth)}{"key":"a","value":"b"}${"]}".repeat(depth)}}`;
    const badUtf8 = () => {
      const bytes = [
        0xff, 0xfe, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1, 0xf0, 0x28, 0x8c, 0xbc, 0xed, 0xa0, 0x80, 0x00,
      ];
      const head = Buffer.from('{"content":"', "utf8");
      const mid = Buffer.from(Array.from({ length: 1 + Math.floor(rand() * 40) }, () => pick(bytes)));
      return new Uint8Array(
        Buffer.concat([head, mid, Buffer.from('","q":"', "utf8"), mid, Buffer.from('"}', "utf8")]),
      );
    };
    const oddIds = [
      "%00",
      "%ff%fe",
      "a".repeat(5000),
      "..%2F..%2Fx",
      "%E2%80%AE",
      "null",
      "undefined",
      "0",
      "-1",
      "%20",
    ];
    const methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"];
    const contentTypes = [
      "application/json",
      "application/json; charset=utf-16",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data",
      "multipart/form-data; boundary=",
      "application/xml",
      "",
      "application/json; charset=utf-8; boundary=x",
    ];

    function generate(i: number): Fuzzed {
      const [validMethod, template] = pick(ROUTES);
      const idPath = template.replace("{id}", rand() < 0.3 ? pick(oddIds) : `doc-${i}`);
      const path = rand() < 0.05 ? `${idPath}/${pick(oddIds)}` : idPath;
      const method = rand() < 0.15 ? pick(methods) : validMethod;
      const key = rand();
      const headers: Record<string, string> = {};
      if (key < 0.7) headers.authorization = `Bearer ${TEST_ADMIN_KEY}`;
      else if (key < 0.9) headers.authorization = `Bearer ${scopedKey}`;
      else if (key < 0.95)
        headers.authorization = pick(["Bearer", "Basic abc", `Bearer ${"k".repeat(3000)}`, "bearer  x y"]);
      const valid = VALID[template] ?? {};
      const kind = Math.floor(rand() * 9);
      if (method === "GET" || method === "HEAD") return { method, path, headers, what: `plain ${method}` };
      headers["content-type"] = "application/json";
      switch (kind) {
        case 0: {
          // One field of a valid body replaced by something of the wrong type.
          const body: Record<string, unknown> = { ...valid };
          const fields = Object.keys(body);
          const field =
            fields.length && rand() < 0.8 ? pick(fields) : pick(["x", "__proto__", "constructor", "limit"]);
          body[field] = weird();
          return { method, path, headers, body: JSON.stringify(body), what: `field ${field}` };
        }
        case 1:
          return { method, path, headers, body: JSON.stringify(weird()), what: "whole body wrong" };
        case 2: {
          const size = pick([MAX_BODY - 100, MAX_BODY + 1, 2 * MAX_BODY, 1_000_000]);
          return {
            method,
            path,
            headers,
            body: JSON.stringify({ ...valid, content: "y".repeat(size), q: "z".repeat(size) }),
            what: `huge ${size}`,
          };
        }
        case 3: {
          const depth = pick([64, 1000, 5000, 20_000]);
          return { method, path, headers, body: deep(depth, Math.floor(rand() * 3)), what: `deep ${depth}` };
        }
        case 4:
          return { method, path, headers, body: badUtf8(), what: "invalid utf-8" };
        case 5:
          headers["content-type"] = pick(contentTypes);
          if (!headers["content-type"]) delete headers["content-type"];
          return {
            method,
            path,
            headers,
            body: JSON.stringify(valid),
            what: `content-type ${headers["content-type"]}`,
          };
        case 6: {
          const text = pick(['{"a":', "{oops", "[1,2,", "\u0000", "", "nul", '{"content":"x"}}', "1e999999"]);
          return { method, path, headers, body: text, what: `broken json ${text.slice(0, 10)}` };
        }
        case 7: {
          // Multipart with odd parts, for the upload route and everyone else.
          delete headers["content-type"];
          const form = new FormData();
          if (rand() < 0.7)
            form.append(
              "file",
              new Blob([Buffer.from(pick(strings))]),
              pick(["a.txt", "", "x".repeat(300), "../../x"]),
            );
          for (const f of ["containerTag", "containerTags", "metadata", "customId", "fileType", "mimeType"]) {
            if (rand() < 0.4) form.append(f, asText(weird()).slice(0, 5000));
          }
          return { method, path, headers, body: form, what: "multipart" };
        }
        default: {
          const body = { ...valid, ...Object.fromEntries(Object.keys(valid).map((k) => [k, weird()])) };
          return { method, path, headers, body: JSON.stringify(body), what: "all fields wrong" };
        }
      }
    }

    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let next = 0;
    const started = Date.now();
    async function worker() {
      while (next < TOTAL) {
        const i = next++;
        const req = generate(i);
        let status = 0;
        let text = "";
        try {
          const res = await fetch(`${service.url}${req.path}`, {
            method: req.method,
            headers: req.headers,
            body: req.body as BodyInit | undefined,
          });
          status = res.status;
          text = await res.text();
        } catch (err) {
          failures.push(
            `#${i} ${req.method} ${req.path} (${req.what}): request failed: ${(err as Error).message} ${String((err as Error).cause)}`,
          );
          continue;
        }
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status >= 500)
          failures.push(`#${i} ${req.method} ${req.path} (${req.what}): ${status} ${text.slice(0, 300)}`);
        if (status >= 400 && req.method !== "HEAD") {
          let ok = false;
          try {
            const json = JSON.parse(text);
            ok = typeof json?.code === "string" && typeof json?.error === "string";
          } catch {}
          if (!ok)
            failures.push(
              `#${i} ${req.method} ${req.path} (${req.what}): not the error shape: ${text.slice(0, 200)}`,
            );
          if (/\n\s+at |node_modules|\bSELECT\b|\bINSERT\b|\bUPDATE\b.*\bSET\b|pg_|drizzle/i.test(text)) {
            failures.push(
              `#${i} ${req.method} ${req.path} (${req.what}): internals in the body: ${text.slice(0, 300)}`,
            );
          }
        }
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    console.log(
      `fuzz: ${TOTAL} requests in ${Date.now() - started} ms (seed ${seed}); statuses`,
      Object.fromEntries([...statuses.entries()].sort((a, b) => a[0] - b[0])),
    );
    expect(failures.slice(0, 20)).toEqual([]);
    expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBe(TOTAL);

    // Still up, still right.
    expect((await call("GET", "/health", undefined, null)).status).toBe(200);
    const added = await call(
      "POST",
      "/v3/documents",
      { content: "after the storm", containerTag: "fuzz" },
      scopedKey,
    );
    expect(added.status).toBe(200);
    const got = await call("GET", `/v3/documents/${added.json.id}`, undefined, scopedKey);
    expect(got.json).toMatchObject({
      id: added.json.id,
      content: "after the storm",
      containerTags: ["fuzz"],
    });
  });
});
