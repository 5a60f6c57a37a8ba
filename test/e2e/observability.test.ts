import { Writable } from "node:stream";
import { Client, Connection } from "@temporalio/client";
import { Hono } from "hono";
import pino from "pino";
import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createObservability, type ObservabilityEnv, stageDurations } from "../../api/observability.ts";
import { findFreePort } from "../../runtime/temporal-dev-server.ts";
import { createKey } from "../../store/api-keys.ts";
import { openStore, type Store } from "../../store/db.ts";
import { caller } from "../support/http.ts";
import {
  freshDatabase,
  startTestService,
  TEST_ADMIN_KEY,
  type TestService,
  untilProcessed,
} from "../support/service.ts";

/** The value of one sample in Prometheus text output, found by name and (a subset of) its labels. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const match = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [
        m[1],
        m[2],
      ]),
    );
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

describe("observability of the running service", () => {
  let service: TestService;
  let client: Supermemory;
  const call = caller(() => service.url);

  beforeAll(async () => {
    service = await startTestService();
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("echoes a sane x-request-id and generates one otherwise", async () => {
    const given = await fetch(`${service.url}/health`, { headers: { "x-request-id": "trace-abc.123" } });
    expect(given.headers.get("x-request-id")).toBe("trace-abc.123");

    const absent = await fetch(`${service.url}/health`);
    const generated = absent.headers.get("x-request-id");
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);

    const insane = await fetch(`${service.url}/health`, {
      headers: { "x-request-id": `bad id ${"x".repeat(200)}` },
    });
    const replaced = insane.headers.get("x-request-id");
    expect(replaced).toMatch(/^[0-9a-f-]{36}$/);
    expect(replaced).not.toBe(generated);

    // Errors (here an unknown key) carry it too: they are the responses people come asking about.
    const refused = await call("GET", "/v3/documents/nope", undefined, "sm_unknown_key_0123456789");
    expect(refused.status).toBe(401);
    expect(refused.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("exposes request metrics by route pattern and documents by status at /metrics", async () => {
    const { id } = await client.documents.add({
      content: "Prometheus scrapes the metrics endpoint every fifteen seconds.",
      containerTag: "observability",
    });
    const doc = await untilProcessed((i) => client.documents.get(i), id);
    expect(doc.status).toBe("done");
    expect((await call("GET", `/v3/documents/${id}`)).status).toBe(200);
    expect((await call("GET", "/v3/documents/another-id-that-does-not-exist")).status).toBe(404);
    expect((await call("GET", `/v3/documents/${id}`, undefined, null)).status).toBe(401);
    expect((await call("GET", "/no/such/route")).status).toBe(404);

    // Not for anyone who can reach the port: an admin key (or METRICS_TOKEN) scrapes it.
    expect((await fetch(`${service.url}/metrics`)).status).toBe(401);
    const res = await fetch(`${service.url}/metrics`, {
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();

    const route = "/v3/documents/:id";
    expect(
      sample(text, "memory_http_requests_total", { method: "GET", route, status: "200" }),
    ).toBeGreaterThanOrEqual(2);
    expect(sample(text, "memory_http_requests_total", { method: "GET", route, status: "404" })).toBe(1);
    // Refused by the auth middleware, still counted under the route it was for.
    expect(
      sample(text, "memory_http_requests_total", { method: "GET", route, status: "401" }),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(text, "memory_http_requests_total", { route: "unmatched", status: "404" })).toBe(1);
    expect(
      sample(text, "memory_http_request_duration_seconds_count", { method: "GET", route, status: "200" }),
    ).toBe(sample(text, "memory_http_requests_total", { method: "GET", route, status: "200" }));
    // Raw paths never become labels.
    expect(text).not.toContain(id);
    expect(text).not.toContain("another-id-that-does-not-exist");

    expect(sample(text, "memory_documents", { status: "done" })).toBe(1);
    expect(sample(text, "memory_documents", { status: "queued" })).toBe(0);
    expect(sample(text, "memory_documents_pending")).toBe(0);
    for (const stage of ["queued", "extracting", "chunking", "embedding", "total"]) {
      expect(sample(text, "memory_document_stage_samples", { stage })).toBe(1);
      expect(
        sample(text, "memory_document_stage_seconds", { stage, quantile: "0.5" }),
      ).toBeGreaterThanOrEqual(0);
    }
    // Approximate and cached by Temporal: that each series is there is what can be relied on.
    for (const labels of [
      { task_queue: service.taskQueue, type: "workflow" },
      { task_queue: service.taskQueue, type: "activity" },
      { task_queue: `${service.taskQueue}-heavy`, type: "activity" },
    ]) {
      expect(sample(text, "memory_temporal_task_queue_backlog", labels)).toBeGreaterThanOrEqual(0);
    }
    expect(sample(text, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
  });

  it("answers /ready with 200 when the store and Temporal answer", async () => {
    const res = await call("GET", "/ready", undefined, null);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: "ready", checks: { store: "ok", temporal: "ok" } });
  });
});

// The observability middleware and routes on a bare app: log lines captured from pino, and
// dependencies that can be made to fail.
describe("request log and readiness", () => {
  let store: Store;
  let temporal: Client;
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { level: "debug" },
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    }),
  );
  const config = { TEMPORAL_NAMESPACE: "default", TEMPORAL_TASK_QUEUE: "observability-test" };

  function appWith(deps: {
    store?: Store;
    temporal?: Client;
    metricsToken?: string;
    metricsPublic?: boolean;
  }) {
    const observability = createObservability({
      db: (deps.store ?? store).db,
      log,
      // Open unless a test asks otherwise: most of these tests are about what the scrape contains.
      config: {
        ...config,
        METRICS_TOKEN: deps.metricsToken,
        METRICS_PUBLIC: deps.metricsPublic ?? !deps.metricsToken,
      },
      temporal: deps.temporal,
    });
    const app = new Hono<ObservabilityEnv>();
    app.use("*", observability.middleware);
    app.route("/", observability.routes);
    const things = new Hono<ObservabilityEnv>();
    things.get("/:id", (c) => {
      c.var.log.info({ thing: c.req.param("id") }, "looked at a thing");
      return c.json({ id: c.req.param("id") });
    });
    app.route("/v3/things", things);
    return app;
  }

  beforeAll(async () => {
    store = await openStore({ databaseUrl: await freshDatabase(), dataDir: "unused" });
    temporal = new Client({
      connection: await Connection.connect({ address: inject("TEST_TEMPORAL_ADDRESS") }),
    });
  });
  afterAll(async () => {
    await temporal?.connection.close();
    await store?.close();
  });

  it("logs one JSON line per request with method, route pattern, status, duration and request id", async () => {
    const app = appWith({ temporal });
    const res = await app.request("/v3/things/42", { headers: { "x-request-id": "req-from-proxy" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe("req-from-proxy");

    const mine = lines.filter((l) => l.requestId === "req-from-proxy");
    // The handler's own line carries the id too: everything logged for a request can be found by it.
    expect(mine.find((l) => l.msg === "looked at a thing")).toMatchObject({ thing: "42" });
    const line = mine.find((l) => l.msg === "request");
    expect(line).toMatchObject({
      level: 30,
      method: "GET",
      route: "/v3/things/:id",
      path: "/v3/things/42",
      status: 200,
    });
    expect(typeof line?.durationMs).toBe("number");
    expect(mine.filter((l) => l.msg === "request")).toHaveLength(1);

    const generated = (await app.request("/v3/things/43")).headers.get("x-request-id");
    expect(lines.find((l) => l.msg === "request" && l.path === "/v3/things/43")?.requestId).toBe(generated);
  });

  it("keeps a registry per app, so two apps in one process count their own requests", async () => {
    const first = appWith({ temporal });
    const second = appWith({ temporal });
    await first.request("/v3/things/1");
    await first.request("/v3/things/2");
    await second.request("/v3/things/3");
    const count = async (app: Hono<ObservabilityEnv>) =>
      sample(await (await app.request("/metrics")).text(), "memory_http_requests_total", {
        route: "/v3/things/:id",
        status: "200",
      });
    expect(await count(first)).toBe(2);
    expect(await count(second)).toBe(1);
    // The store and Temporal parts of the scrape worked on PostgreSQL too (a failing part is only logged).
    expect(lines.filter((l) => l.msg === "could not collect metrics")).toEqual([]);
  });

  it("asks for METRICS_TOKEN or an admin key at /metrics unless METRICS_PUBLIC opens it", async () => {
    const token = "scrape-token-0123456789";
    const app = appWith({ temporal, metricsToken: token });
    const refused = await app.request("/metrics");
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: "unauthorized" });
    expect((await app.request("/metrics", { headers: { authorization: "Bearer wrong-token" } })).status).toBe(
      401,
    );
    const scraped = await app.request("/metrics", { headers: { authorization: `Bearer ${token}` } });
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain("memory_http_requests_total");
    // An admin key scrapes too; a scoped key does not.
    const admin = "sm_metrics_admin_0123456789abcdef";
    await createKey(store.db, { name: "metrics admin", kind: "admin" }, admin);
    const scoped = "sm_metrics_scoped_0123456789abcdef";
    await createKey(store.db, { name: "metrics scoped", kind: "scoped", containerTags: ["t"] }, scoped);
    expect((await app.request("/metrics", { headers: { authorization: `Bearer ${admin}` } })).status).toBe(
      200,
    );
    expect((await app.request("/metrics", { headers: { authorization: `Bearer ${scoped}` } })).status).toBe(
      401,
    );
    // Without METRICS_TOKEN the same holds; METRICS_PUBLIC=true opens it to anyone.
    const noToken = appWith({ temporal, metricsPublic: false });
    expect((await noToken.request("/metrics")).status).toBe(401);
    expect(
      (await noToken.request("/metrics", { headers: { authorization: `Bearer ${admin}` } })).status,
    ).toBe(200);
    expect((await appWith({ temporal, metricsPublic: true }).request("/metrics")).status).toBe(200);
    // Probes stay open: a load balancer has no token.
    expect((await app.request("/ready")).status).toBe(200);
  });

  it("answers /ready with 503 and the reason when Temporal is unreachable", async () => {
    const closedPort = await findFreePort();
    const unreachable = new Client({ connection: Connection.lazy({ address: `127.0.0.1:${closedPort}` }) });
    try {
      const res = await appWith({ temporal: unreachable }).request("/ready");
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({
        status: "not_ready",
        reason: "temporal unreachable",
        checks: { store: "ok", temporal: "temporal unreachable" },
      });
      // The probe's failure is logged even though probe successes are not logged at info.
      expect(lines.find((l) => l.msg === "request" && l.path === "/ready" && l.status === 503)).toMatchObject(
        {
          level: 30,
        },
      );
    } finally {
      await unreachable.connection.close();
    }
  });

  it("answers /ready with 503 when the store does not answer", async () => {
    const broken = await openStore({ databaseUrl: await freshDatabase(), dataDir: "unused" });
    await broken.close();
    const res = await appWith({ store: broken, temporal }).request("/ready");
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ reason: "store unavailable", checks: { temporal: "ok" } });
  });

  it("computes stage durations from the latest run of a finished document", () => {
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
    const history = [
      { status: "queued" as const, at: at(0), run: 1 },
      { status: "failed" as const, at: at(1), run: 1 },
      { status: "queued" as const, at: at(10), run: 2 },
      { status: "extracting" as const, at: at(12), run: 2 },
      // An activity retried: the stage counts from its first entry.
      { status: "extracting" as const, at: at(15), run: 2 },
      { status: "chunking" as const, at: at(20), run: 2 },
      { status: "embedding" as const, at: at(21), run: 2 },
      { status: "done" as const, at: at(30), run: 2 },
    ];
    expect(stageDurations(history, 2, 0)).toEqual({
      queued: 2,
      extracting: 8,
      chunking: 1,
      embedding: 9,
      total: 20,
    });
    // Finished before the window, or not finished at all: nothing.
    expect(stageDurations(history, 2, Date.parse(at(31)))).toEqual({});
    expect(stageDurations(history.slice(0, -1), 2, 0)).toEqual({});
  });
});
