import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeGitHub, startFakeGitHub } from "../support/fake-github.ts";
import { htmlPage, type LocalSite, startLocalSite } from "../support/local-site.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";
import {
  conformanceProblems,
  type Operation,
  operation,
  operationsOf,
  supermemoryDocument,
} from "../support/supermemory-openapi.ts";

// SDK 5 (supermemory 5.0.0-rc.4) checks every response against Supermemory's OpenAPI document with zod at run
// time. Each operation of that document we serve is called here for real: its success answer, then the
// documented errors a client can provoke (401 without a key, 404 for an unknown id, 400 for a bad body), and
// every answer's status and body are validated against the document (test/support/supermemory-openapi.ts).

/** Operations of the document we do not serve yet: each must still answer 404 "no route" here. */
const NOT_SERVED = [
  "POST /v3/settings/suggest-buckets",
  "POST /v3/container-tags/merge",
  "GET /v3/container-tags/merge/{mergeId}",
  "POST /v4/profile/buckets",
  "POST /v4/conversations",
];

let service: TestService;
let site: LocalSite;
let github: FakeGitHub;
const tag = "oas-conformance";

/** Every (operation, status) validated so far, to prove coverage at the end. */
const checked = new Map<string, Set<number>>();

interface Answer {
  status: number;
  body: unknown;
}

async function call(
  method: string,
  path: string,
  opts: { body?: unknown; raw?: string; form?: FormData; key?: string | null } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (opts.key !== null) headers.authorization = `Bearer ${opts.key ?? TEST_ADMIN_KEY}`;
  let body: BodyInit | undefined;
  if (opts.form) body = opts.form;
  else if (opts.raw !== undefined || opts.body !== undefined) {
    headers["content-type"] = "application/json";
    body = opts.raw ?? JSON.stringify(opts.body);
  }
  const res = await fetch(`${service.url}${path}`, { method, headers, body });
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  const parsed = text === "" ? undefined : type.includes("application/json") ? JSON.parse(text) : text;
  return { status: res.status, body: parsed };
}

const getDocument = async (id: string) =>
  (await call("GET", `/v3/documents/${id}`)).body as { status: string; dreamingStatus: string };

/** Calls one operation of the document and asserts its answer has `status` and conforms to the document. */
async function conforms(
  key: string,
  status: number,
  path: string,
  opts: Parameters<typeof call>[2] = {},
): Promise<Answer> {
  const method = key.split(" ")[0] as string;
  const answer = await call(method, path, opts);
  expect(answer.status, `${key} answered ${JSON.stringify(answer.body)?.slice(0, 400)}`).toBe(status);
  const problems = conformanceProblems(key, answer.status, answer.body);
  expect(problems, `${problems.join("\n")}\n${JSON.stringify(answer.body)?.slice(0, 600)}`).toEqual([]);
  const seen = checked.get(key) ?? new Set<number>();
  seen.add(status);
  checked.set(key, seen);
  return answer;
}

beforeAll(async () => {
  service = await startTestService();
  github = await startFakeGitHub();
  github.addRepository("harbour/logbook", { description: "The harbour's logbook" });
  site = await startLocalSite({
    "/": htmlPage("Harbour Lights", ["The lighthouse keeper logs every ship at dusk."]),
  });
});
afterAll(async () => {
  await site?.stop();
  await github?.stop();
  await service?.stop();
});

const allOperations = operationsOf(supermemoryDocument);
const served = allOperations.filter((k) => !NOT_SERVED.includes(k));

describe("documents", () => {
  let id: string;

  it("POST /v3/documents, then GET, PATCH, chunks, list and processing of the document", async () => {
    const added = await conforms("POST /v3/documents", 200, "/v3/documents", {
      body: {
        content: "The harbour master rings the bell twice when the tide turns at the north pier.",
        containerTag: tag,
        customId: "harbour-bell",
        metadata: { source: "logbook", page: 3 },
      },
    });
    id = (added.body as { id: string }).id;
    await conforms("GET /v3/documents/processing", 200, "/v3/documents/processing");
    await untilProcessed(getDocument, id);
    await conforms("GET /v3/documents/{id}", 200, `/v3/documents/${id}`);
    await conforms("GET /v3/documents/{id}/chunks", 200, `/v3/documents/${id}/chunks`);
    await conforms("PATCH /v3/documents/{id}", 200, `/v3/documents/${id}`, {
      body: { metadata: { source: "logbook", reviewed: true } },
    });
    await conforms("POST /v3/documents/list", 200, "/v3/documents/list", {
      body: { containerTags: [tag], includeContent: true },
    });
  });

  it("POST /v3/documents/batch and POST /v3/documents/file", async () => {
    await conforms("POST /v3/documents/batch", 200, "/v3/documents/batch", {
      body: {
        documents: [
          { content: "Ferries leave on the hour." },
          { content: "Gulls gather at the fish market." },
        ],
        containerTag: tag,
      },
    });
    const form = new FormData();
    form.set("file", new Blob(["Lamp oil is ordered every spring."], { type: "text/plain" }), "lamp.txt");
    form.set("containerTags", JSON.stringify([tag]));
    const uploaded = await conforms("POST /v3/documents/file", 200, "/v3/documents/file", { form });
    const fileId = (uploaded.body as { id: string }).id;
    const link = await conforms("GET /v3/documents/{id}/file-url", 200, `/v3/documents/${fileId}/file-url`);
    const download = await fetch((link.body as { url: string }).url);
    expect(await download.text()).toBe("Lamp oil is ordered every spring.");
  });

  it("POST /v3/search, plain and with every document option", async () => {
    await conforms("POST /v3/search", 200, "/v3/search", {
      body: { q: "when does the bell ring", containerTags: [tag] },
    });
    await conforms("POST /v3/search", 200, "/v3/search", {
      body: {
        q: "when does the bell ring",
        containerTags: [tag],
        includeFullDocs: true,
        includeSummary: true,
        onlyMatchingChunks: true,
        rerank: true,
        rewriteQuery: true,
      },
    });
  });

  it("GET /v3/documents/{id} while the document is still being processed", async () => {
    const added = await call("POST", "/v3/documents", {
      body: { content: "The foghorn sounds every thirty seconds in thick fog.", containerTag: tag },
    });
    const id = (added.body as { id: string }).id;
    const doc = (await conforms("GET /v3/documents/{id}", 200, `/v3/documents/${id}`)).body as {
      status: string;
      dreamingStatus: string;
    };
    expect(doc.dreamingStatus).toBe(["done", "failed"].includes(doc.status) ? "done" : "dreaming");
    const done = await untilProcessed(getDocument, id);
    expect(done).toMatchObject({ status: "done", dreamingStatus: "done" });
  });

  it("DELETE /v3/documents/bulk and DELETE /v3/documents/{id}", async () => {
    const extra = await call("POST", "/v3/documents", {
      body: { content: "A spare buoy.", containerTag: tag },
    });
    await conforms("DELETE /v3/documents/bulk", 200, "/v3/documents/bulk", {
      body: { ids: [(extra.body as { id: string }).id] },
    });
    const other = await call("POST", "/v3/documents", {
      body: { content: "A spare rope.", containerTag: tag },
    });
    await conforms("DELETE /v3/documents/{id}", 204, `/v3/documents/${(other.body as { id: string }).id}`);
  });
});

describe("memories, profile and v4 search", () => {
  it("POST, PATCH, list and DELETE /v4/memories; POST /v4/profile; POST /v4/search", async () => {
    const created = await conforms("POST /v4/memories", 201, "/v4/memories", {
      body: { containerTag: tag, memories: [{ content: "Prefers the night shift at the lighthouse." }] },
    });
    const memoryId = (created.body as { memories: { id: string }[] }).memories[0]?.id as string;
    const updated = await conforms("PATCH /v4/memories", 200, "/v4/memories", {
      body: { containerTag: tag, id: memoryId, newContent: "Prefers the dawn shift at the lighthouse." },
    });
    await conforms("POST /v4/memories/list", 200, "/v4/memories/list", { body: { containerTags: [tag] } });
    await conforms("POST /v4/profile", 200, "/v4/profile", { body: { containerTag: tag, q: "shift" } });
    await conforms("POST /v4/search", 200, "/v4/search", { body: { q: "which shift", containerTag: tag } });
    for (const searchMode of ["hybrid", "documents"]) {
      await conforms("POST /v4/search", 200, "/v4/search", {
        body: {
          q: "when does the bell ring",
          containerTag: tag,
          searchMode,
          rerank: true,
          include: { documents: true, summaries: true, relatedMemories: true, forgottenMemories: true },
        },
      });
    }
    const withHistory = await conforms("POST /v4/memories/list", 200, "/v4/memories/list", {
      body: { containerTags: [tag], includeHistory: true, includeForgotten: true },
    });
    const entries = (withHistory.body as { memoryEntries: { id: string; history: { id: string }[] }[] })
      .memoryEntries;
    // The new version carries the first one in its history.
    expect(entries.find((e) => e.id === (updated.body as { id: string }).id)?.history).toEqual([
      expect.objectContaining({ id: memoryId, version: 1, isLatest: false }),
    ]);
    await conforms("DELETE /v4/memories", 200, "/v4/memories", {
      body: { containerTag: tag, id: (updated.body as { id: string }).id },
    });
  });

  it("POST /v4/memories/forget-matching, dry run and real run", async () => {
    await call("POST", "/v4/memories", {
      body: { containerTag: tag, memories: [{ content: "Keeps the spare lamp wicks in the blue tin." }] },
    });
    const forget = { containerTag: tag, query: "spare lamp wicks blue tin", threshold: 0.5 };
    const preview = await conforms("POST /v4/memories/forget-matching", 200, "/v4/memories/forget-matching", {
      body: { ...forget, dryRun: true },
    });
    const done = await conforms("POST /v4/memories/forget-matching", 200, "/v4/memories/forget-matching", {
      body: forget,
    });
    expect((done.body as { count: number }).count).toBe((preview.body as { count: number }).count);
  });
});

describe("settings and container tags", () => {
  it("GET and PATCH /v3/settings", async () => {
    await conforms("GET /v3/settings", 200, "/v3/settings");
    await conforms("PATCH /v3/settings", 200, "/v3/settings", { body: { shouldLLMFilter: false } });
  });

  it("list, GET and PATCH /v3/container-tags", async () => {
    await conforms("GET /v3/container-tags/list", 200, "/v3/container-tags/list");
    await conforms("PATCH /v3/container-tags/{containerTag}", 200, `/v3/container-tags/${tag}`, {
      body: { name: "Harbour", entityContext: "The harbour's logbook and its keepers." },
    });
    await conforms("GET /v3/container-tags/{containerTag}", 200, `/v3/container-tags/${tag}`);
  });

  it("DELETE /v3/container-tags/{containerTag}", async () => {
    await call("POST", "/v4/memories", {
      body: { containerTag: `${tag}-gone`, memories: [{ content: "Old rota." }] },
    });
    await conforms("DELETE /v3/container-tags/{containerTag}", 200, `/v3/container-tags/${tag}-gone`);
  });
});

describe("connections", () => {
  let connectionId: string;
  const crawlTag = `${tag}-crawl`;

  it("create, list, get, by tag, documents and import", async () => {
    const created = await conforms("POST /v3/connections/{provider}", 200, "/v3/connections/web-crawler", {
      body: {
        containerTags: [crawlTag],
        metadata: { startUrls: `${site.url}/`, maxPages: 2, maxDepth: 0, useSitemaps: false },
      },
    });
    connectionId = (created.body as { id: string }).id;
    await conforms("POST /v3/connections/list", 200, "/v3/connections/list", { body: {} });
    await conforms("GET /v3/connections/{connectionId}", 200, `/v3/connections/${connectionId}`);
    await conforms(
      "POST /v3/connections/{provider}/connection",
      200,
      "/v3/connections/web-crawler/connection",
      {
        body: { containerTags: [crawlTag] },
      },
    );
    await conforms(
      "POST /v3/connections/{provider}/documents",
      200,
      "/v3/connections/web-crawler/documents",
      {
        body: { containerTags: [crawlTag] },
      },
    );
    await conforms("POST /v3/connections/{provider}/import", 202, "/v3/connections/web-crawler/import", {
      body: { containerTags: [crawlTag] },
    });
  });

  it("resources and configure of a GitHub connection (the fake GitHub of test/support)", async () => {
    const created = await call("POST", "/v3/connections/github", {
      body: { containerTag: `${tag}-github`, metadata: { baseUrl: github.url, token: github.token } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = (created.body as { id: string }).id;
    const listed = await conforms(
      "GET /v3/connections/{connectionId}/resources",
      200,
      `/v3/connections/${id}/resources`,
    );
    expect(listed.body).toMatchObject({
      resources: [expect.objectContaining({ full_name: "harbour/logbook" })],
    });
    await conforms("POST /v3/connections/{connectionId}/configure", 200, `/v3/connections/${id}/configure`, {
      body: { resources: [{ full_name: "harbour/logbook" }] },
    });
    await conforms("DELETE /v3/connections/{connectionId}", 200, `/v3/connections/${id}`);
  });

  it("resources and configure are refused for a crawler with a documented 400", async () => {
    await conforms(
      "GET /v3/connections/{connectionId}/resources",
      400,
      `/v3/connections/${connectionId}/resources`,
    );
    await conforms(
      "POST /v3/connections/{connectionId}/configure",
      400,
      `/v3/connections/${connectionId}/configure`,
      {
        body: { resources: [{ id: 1, name: "club/site" }] },
      },
    );
  });

  it("DELETE by id and by provider", async () => {
    await conforms("DELETE /v3/connections/{connectionId}", 200, `/v3/connections/${connectionId}`);
    await call("POST", "/v3/connections/web-crawler", {
      body: { containerTags: [crawlTag], metadata: { startUrls: `${site.url}/`, maxPages: 1, maxDepth: 0 } },
    });
    await conforms("DELETE /v3/connections/{provider}", 200, "/v3/connections/web-crawler", {
      body: { containerTags: [crawlTag] },
    });
  });
});

/** A concrete path for an operation: each path parameter an id nothing has. */
const concrete = (path: string) =>
  path.replace(/\{(\w+)\}/g, (_, name) => (name === "provider" ? "web-crawler" : `unknown-${name}`));

describe("errors", () => {
  it("every served operation answers 401 without a key, in the document's error shape", async () => {
    for (const key of served) {
      const [method, path] = key.split(" ") as [string, string];
      const body = method === "GET" || method === "DELETE" ? undefined : {};
      await conforms(key, 401, concrete(path), { key: null, body });
    }
  });

  it("every served operation with an id in its path and a documented 404 answers 404 for an unknown id", async () => {
    const withId = served.filter(
      (k) => /\{(id|connectionId|containerTag)\}/.test(k) && operation(k).responses["404"],
    );
    expect(withId.length).toBeGreaterThan(5);
    for (const key of withId) {
      const [method, path] = key.split(" ") as [string, string];
      const body =
        key === "PATCH /v3/documents/{id}"
          ? { metadata: { a: "b" } }
          : key.includes("configure")
            ? { resources: [{ id: 1, name: "x" }] }
            : undefined;
      await conforms(key, 404, concrete(path), {
        body: method === "GET" || method === "DELETE" ? undefined : body,
      });
    }
  });

  it("every served operation with a JSON body and a documented 400 answers 400 to a malformed body", async () => {
    const withBody = served.filter(
      (k) => operation(k).requestBody?.content?.["application/json"] && operation(k).responses["400"],
    );
    expect(withBody.length).toBeGreaterThan(5);
    for (const key of withBody) {
      const [, path] = key.split(" ") as [string, string];
      await conforms(key, 400, concrete(path), { raw: '{"q": ' });
    }
  });

  it("fields the document requires are refused with 400 when missing", async () => {
    await conforms("POST /v3/search", 400, "/v3/search", { body: {} });
    await conforms("POST /v4/search", 400, "/v4/search", { body: {} });
    await conforms("POST /v4/memories", 400, "/v4/memories", { body: { containerTag: tag } });
    await conforms("POST /v4/memories/list", 400, "/v4/memories/list", { body: { limit: "many" } });
    await conforms("POST /v4/profile", 400, "/v4/profile", { body: {} });
  });
});

// Last before the coverage checks: it empties the organisation.
describe("settings reset", () => {
  it("POST /v3/settings/reset with the confirmation", async () => {
    await conforms("POST /v3/settings/reset", 200, "/v3/settings/reset", {
      body: { confirmation: "default" },
    });
  });
});

describe("coverage", () => {
  it("the operations not served yet are exactly the listed ones, and each answers 404 no route", async () => {
    const unserved: string[] = [];
    for (const key of allOperations) {
      const [method, path] = key.split(" ") as [string, string];
      const body = method === "GET" || method === "DELETE" ? undefined : {};
      const answer = await call(method, concrete(path), { body });
      const message = (answer.body as { error?: unknown } | undefined)?.error;
      if (answer.status === 404 && String(message).startsWith("no route for")) unserved.push(key);
    }
    expect(unserved.sort()).toEqual([...NOT_SERVED].sort());
  });

  it("every served operation's documented success was validated, and its 401", () => {
    const missing = served.flatMap((key) => {
      const success = Object.keys(operation(key).responses)
        .map(Number)
        .filter((s) => s < 300);
      const seen = checked.get(key) ?? new Set<number>();
      const problems: string[] = [];
      if (!success.some((s) => seen.has(s))) problems.push(`${key} success`);
      if (!seen.has(401) && operation(key).responses["401"]) problems.push(`${key} 401`);
      return problems;
    });
    expect(missing).toEqual([]);
  });
});

// Our /openapi.json against Supermemory's document, on each operation both serve (path templates compared
// without parameter names). The rule: an SDK 5 call made from their document must be one ours describes as
// accepted and answered. So, per shared path, every method of theirs is ours (or listed in NOT_SERVED); per
// shared operation, their documented success status is declared by ours with the same media type, every
// request field they require is a field of our request body, and every field we require they require too
// (else an SDK 5 call that leaves it out would be refused). Extra fields, statuses and methods of ours are
// allowed: they are our extensions.
describe("our /openapi.json agrees with Supermemory's document", () => {
  type Schema = Record<string, unknown>;
  let ours: {
    paths: Record<string, Record<string, Operation>>;
    components?: { schemas?: Record<string, Schema> };
  };
  const template = (path: string) => path.replace(/\{[^}]+\}/g, "{}");

  beforeAll(async () => {
    ours = (await (await fetch(`${service.url}/openapi.json`)).json()) as typeof ours;
  });

  function resolve(schema: Schema | undefined, doc: { components?: { schemas?: Record<string, Schema> } }) {
    const ref = schema?.$ref;
    if (typeof ref !== "string") return schema;
    return doc.components?.schemas?.[ref.replace("#/components/schemas/", "")];
  }
  /** Properties and required fields of a request body schema, through $ref, allOf, anyOf and oneOf. */
  function fieldsOf(schema: Schema | undefined, doc: Parameters<typeof resolve>[1]) {
    const properties = new Set<string>();
    const required = new Set<string>();
    const walk = (node: Schema | undefined, mustHold: boolean) => {
      const s = resolve(node, doc);
      if (!s) return;
      for (const name of Object.keys((s.properties as Schema | undefined) ?? {})) properties.add(name);
      if (mustHold) for (const name of (s.required as string[] | undefined) ?? []) required.add(name);
      for (const sub of (s.allOf as Schema[] | undefined) ?? []) walk(sub, mustHold);
      for (const sub of [...((s.anyOf as Schema[]) ?? []), ...((s.oneOf as Schema[]) ?? [])])
        walk(sub, false);
    };
    walk(schema, true);
    return { properties, required };
  }
  const jsonBody = (op: Operation | undefined) => op?.requestBody?.content?.["application/json"]?.schema;

  function ourOperation(key: string): Operation | undefined {
    const [method, path] = key.split(" ") as [string, string];
    // Several of our paths may share a template (/v3/connections/{provider} and /{connectionId}).
    return Object.entries(ours.paths)
      .filter(([p]) => template(p) === template(path))
      .map(([, item]) => item[method.toLowerCase()])
      .find(Boolean);
  }

  it("describes every served operation of the document, and no operation listed as not served", () => {
    expect(served.filter((key) => !ourOperation(key))).toEqual([]);
    expect(NOT_SERVED.filter((key) => ourOperation(key))).toEqual([]);
  });

  it("declares the documented success status of each shared operation, with the same media type", () => {
    const problems = served.flatMap((key) => {
      const mine = ourOperation(key);
      if (!mine) return [];
      return Object.entries(operation(key).responses)
        .filter(([status]) => Number(status) < 300)
        .flatMap(([status, theirs]) => {
          const declared = mine.responses[status];
          if (!declared) return [`${key}: ${status} not declared (ours: ${Object.keys(mine.responses)})`];
          const types = Object.keys(theirs.content ?? {});
          const missing = types.filter((t) => !(t in (declared.content ?? {})));
          return missing.length ? [`${key} ${status}: media type ${missing} not declared`] : [];
        });
    });
    expect(problems).toEqual([]);
  });

  it("takes every request field the document requires, and requires only fields it requires", () => {
    const problems = served.flatMap((key) => {
      const theirs = fieldsOf(jsonBody(operation(key)), supermemoryDocument as never);
      const mine = fieldsOf(jsonBody(ourOperation(key)), ours);
      return [
        ...[...theirs.required].filter((f) => !mine.properties.has(f)).map((f) => `${key}: ${f} is not ours`),
        ...[...mine.required].filter((f) => !theirs.required.has(f)).map((f) => `${key}: we require ${f}`),
      ];
    });
    expect(problems).toEqual([]);
  });
});
