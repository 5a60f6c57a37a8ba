import { createHmac, timingSafeEqual } from "node:crypto";
import http, { type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { Client, Connection, WorkflowNotFoundError } from "@temporalio/client";
import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createLogger } from "../../config/logger.ts";
import { deliveryWorkflowId } from "../../contracts/workflows.ts";
import {
  checkWebhookUrl,
  deliveryId,
  emitEvent,
  verifyWebhookSignature,
  WebhookUrlError,
} from "../../services/webhooks.ts";
import { openStore, type Store } from "../../store/db.ts";
import { startWebhookDelivery } from "../../temporal/webhook-deliveries.ts";
import { caller } from "../support/http.ts";
import {
  freshDatabase,
  startTestService,
  TEST_ADMIN_KEY,
  type TestService,
  waitFor,
} from "../support/service.ts";

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  answered: number;
}

/**
 * A client's receiver on 127.0.0.1: records every POST and answers it with the next status planned for
 * its path (200 once the plan is used up). GETs serve a tiny site (for the crawler) or 404.
 */
async function startReceiver() {
  const received: Received[] = [];
  const plans = new Map<string, number[]>();
  const server = http.createServer((req, res) => {
    const path = req.url ?? "/";
    if (req.method === "GET") {
      if (path === "/site/") {
        res.writeHead(200, { "content-type": "text/html" });
        res.end(
          "<html><head><title>Harbour notes</title></head><body><p>The ferry leaves at nine.</p></body></html>",
        );
      } else {
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("not here");
      }
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const answered = plans.get(path)?.shift() ?? 200;
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), answered });
      res.writeHead(answered, { "content-type": "text/plain" });
      res.end(answered === 200 ? "ok" : "try later");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    at: (path: string) => received.filter((r) => r.path === path),
    plan: (path: string, statuses: number[]) => plans.set(path, statuses),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** What the README tells a receiver to do, written independently of the service's own helper. */
function verify(secret: string, header: string | string[] | undefined, body: string): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(typeof header === "string" ? header : "");
  if (!match) return false;
  const expected = createHmac("sha256", secret).update(`${match[1]}.${body}`).digest("hex");
  return timingSafeEqual(Buffer.from(expected), Buffer.from(match[2] as string));
}

const timestampOf = (header: string | string[] | undefined) =>
  Number(/^t=(\d+),/.exec(String(header))?.[1] ?? Number.NaN);

interface Hook {
  id: string;
  secret: string;
}

describe("webhooks: signed deliveries of document and sync events", () => {
  let service: TestService;
  let store: Store;
  let temporal: Client;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let client: Supermemory;
  const call = caller(() => service.url);
  const hooks: Record<"a" | "b" | "flaky" | "sync", Hook> = {} as never;
  let docA = "";
  let docB = "";

  beforeAll(async () => {
    receiver = await startReceiver();
    // PostgreSQL, so the test can open the service's database beside it (PGlite allows one process).
    const databaseUrl = await freshDatabase();
    service = await startTestService({ env: { DATABASE_URL: databaseUrl } });
    store = await openStore({ databaseUrl, dataDir: service.dataDir });
    temporal = new Client({
      connection: await Connection.connect({ address: inject("TEST_TEMPORAL_ADDRESS") }),
    });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });

  afterAll(async () => {
    await service?.stop();
    await store?.close();
    await temporal?.connection.close();
    await receiver?.stop();
  });

  /** The document's processing workflow has returned, so its webhook emission has run too. */
  // A document's workflow starts when admission lets it in: wait for it to exist, then for its outcome.
  const processed = async (id: string) => {
    const handle = temporal.workflow.getHandle(`doc/${id}/1`);
    await waitFor(
      () =>
        handle.describe().then(
          () => true,
          (error) => {
            if (error instanceof WorkflowNotFoundError) return undefined;
            throw error;
          },
        ),
      `the workflow of ${id}`,
    );
    return handle.result();
  };
  const deliveriesOf = async (hook: Hook) => (await call("GET", `/v3/webhooks/${hook.id}/deliveries`)).json;

  it("refuses URLs that are not http(s), private addresses unless allowed, and non-admin keys", async () => {
    const ftp = await call("POST", "/v3/webhooks", { url: "ftp://example.com/hook" });
    expect(ftp.status).toBe(400);
    expect(ftp.json).toMatchObject({ code: "validation_error", field: "url" });
    expect((await call("POST", "/v3/webhooks", { url: "http://user:pw@example.com/" })).status).toBe(400);

    // The service under test allows private addresses (its receivers are local); the default does not.
    for (const url of [
      "http://127.0.0.1:8080/hook",
      "http://localhost/hook",
      "http://10.1.2.3/",
      "http://[::1]/",
    ])
      await expect(checkWebhookUrl(url, { allowPrivateNetwork: false }), url).rejects.toBeInstanceOf(
        WebhookUrlError,
      );
    await expect(
      checkWebhookUrl("http://127.0.0.1:8080/hook", { allowPrivateNetwork: true }),
    ).resolves.toMatchObject({ address: "127.0.0.1" });
    await expect(
      checkWebhookUrl("https://93.184.216.34/hook", { allowPrivateNetwork: false }),
    ).resolves.toMatchObject({ address: "93.184.216.34" });

    const scoped = await call("POST", "/v3/auth/scoped-key", { containerTag: "hooks-a" });
    expect(scoped.status).toBe(200);
    const asScoped = await call("GET", "/v3/webhooks", undefined, scoped.json.key);
    expect(asScoped.status).toBe(403);
  });

  it("registers webhooks per container tag or globally and shows the signing secret only once", async () => {
    const create = async (body: object): Promise<Hook> => {
      const res = await call("POST", "/v3/webhooks", body);
      expect(res.status, res.text).toBe(200);
      expect(res.json.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
      return { id: res.json.id, secret: res.json.secret };
    };
    hooks.a = await create({ url: `${receiver.url}/a`, containerTag: "hooks-a" });
    hooks.b = await create({
      url: `${receiver.url}/b`,
      containerTags: ["hooks-b"],
      events: ["document.failed"],
    });
    hooks.flaky = await create({ url: `${receiver.url}/flaky`, containerTag: "hooks-c" });
    hooks.sync = await create({ url: `${receiver.url}/sync`, events: ["connection.sync"] });

    const one = await call("GET", `/v3/webhooks/${hooks.a.id}`);
    expect(one.json).toMatchObject({
      id: hooks.a.id,
      url: `${receiver.url}/a`,
      containerTags: ["hooks-a"],
      events: ["document.done", "document.failed", "connection.sync"],
      enabled: true,
    });
    const list = await call("GET", "/v3/webhooks");
    expect(list.json.webhooks.map((w: { id: string }) => w.id).sort()).toEqual(
      Object.values(hooks)
        .map((h) => h.id)
        .sort(),
    );
    expect(list.json.webhooks.find((w: { id: string }) => w.id === hooks.sync.id).containerTags).toEqual([]);
    for (const hook of Object.values(hooks)) expect(list.text).not.toContain(hook.secret);
    expect(list.text).not.toContain("sealed");
  });

  it("sends exactly one signed document.done for a document of its tag, and none for another tag", async () => {
    docA = (
      await client.documents.add({
        content: "The lighthouse keeper logs every passing ship.",
        containerTag: "hooks-a",
      })
    ).id;
    docB = (
      await client.documents.add({ content: "The orchard has forty apple trees.", containerTag: "hooks-b" })
    ).id;
    expect(await processed(docA)).toBe("done");
    expect(await processed(docB)).toBe("done");

    const [delivery] = await waitFor(async () => {
      const got = receiver.at("/a");
      return got.length ? got : undefined;
    }, "the document.done delivery");
    const body = JSON.parse(delivery?.body ?? "{}");
    expect(body).toMatchObject({
      event: "document.done",
      data: { document: { id: docA, status: "done", containerTags: ["hooks-a"], run: 1 } },
    });
    expect(delivery?.headers["x-memory-event"]).toBe("document.done");
    expect(delivery?.headers["x-memory-delivery"]).toBe(body.id);
    expect(delivery?.headers["content-type"]).toBe("application/json");
    expect(verify(hooks.a.secret, delivery?.headers["x-memory-signature"], delivery?.body ?? "")).toBe(true);
    const sentAt = timestampOf(delivery?.headers["x-memory-signature"]);
    expect(Math.abs(Date.now() / 1000 - sentAt)).toBeLessThan(300);

    // Both workflows have returned, so every delivery their events caused is stored by now.
    const ofA = await deliveriesOf(hooks.a);
    expect(ofA.deliveries).toHaveLength(1);
    expect(ofA.deliveries[0]).toMatchObject({
      id: body.id,
      event: "document.done",
      status: "delivered",
      attempts: 1,
      responseStatus: 200,
    });
    expect((await deliveriesOf(hooks.b)).deliveries).toEqual([]);
    expect(receiver.received.filter((r) => r.body.includes(docB))).toEqual([]);
  });

  it("stores and sends an event once even when it is emitted again (a retried activity)", async () => {
    const log = createLogger("warn");
    const deps = {
      db: store.db,
      log,
      startDelivery: (id: string) => startWebhookDelivery(temporal, service.taskQueue, id),
    };
    await emitEvent(deps, { event: "document.done", documentId: docA, run: 1 });
    await emitEvent(deps, { event: "document.done", documentId: docA, run: 1 });

    const id = deliveryId(hooks.a.id, "document.done", `${docA}/1`);
    expect(receiver.at("/a")[0]?.headers["x-memory-delivery"]).toBe(id);
    expect((await deliveriesOf(hooks.a)).deliveries.map((d: { id: string }) => d.id)).toEqual([id]);
    const runs = [];
    for await (const run of temporal.workflow.list({ query: `WorkflowId = '${deliveryWorkflowId(id)}'` }))
      runs.push(run.status.name);
    expect(runs).toEqual(["COMPLETED"]);
    expect(receiver.at("/a")).toHaveLength(1);
  });

  it("sends document.failed with the reason to a webhook of the document's tag", async () => {
    const failing = await client.documents.add({
      content: `${receiver.url}/missing`,
      containerTag: "hooks-b",
    });
    expect(await processed(failing.id)).toBe("failed");
    const [delivery] = await waitFor(async () => {
      const got = receiver.at("/b");
      return got.length ? got : undefined;
    }, "the document.failed delivery");
    expect(verify(hooks.b.secret, delivery?.headers["x-memory-signature"], delivery?.body ?? "")).toBe(true);
    expect(JSON.parse(delivery?.body ?? "{}")).toMatchObject({
      event: "document.failed",
      data: { document: { id: failing.id, status: "failed", errorReason: expect.stringContaining("404") } },
    });
    expect(receiver.at("/b")).toHaveLength(1);
  });

  it("shows a webhook of some tags only those tags of a document another tenant shares", async () => {
    const shared = await client.documents.add({
      content: `${receiver.url}/missing-shared`,
      containerTags: ["hooks-b", "hooks-other-tenant"],
    });
    expect(await processed(shared.id)).toBe("failed");
    const delivery = await waitFor(
      async () => receiver.at("/b").find((r) => r.body.includes(shared.id)),
      "the shared document's document.failed delivery",
    );
    const body = JSON.parse(delivery.body);
    expect(body.data.document).toMatchObject({ id: shared.id, containerTags: ["hooks-b"] });
    expect(delivery.body).not.toContain("hooks-other-tenant");
  });

  it("retries with backoff until the receiver answers 2xx", async () => {
    receiver.plan("/flaky", [500, 500]);
    const doc = await client.documents.add({
      content: "Snow closed the mountain pass in March.",
      containerTag: "hooks-c",
    });
    expect(await processed(doc.id)).toBe("done");
    const attempts = await waitFor(async () => {
      const got = receiver.at("/flaky");
      return got.some((r) => r.answered === 200) ? got : undefined;
    }, "a delivery answered 200");
    expect(attempts.map((r) => r.answered)).toEqual([500, 500, 200]);
    // Every attempt is the same delivery and body, each signed afresh.
    expect(new Set(attempts.map((r) => r.headers["x-memory-delivery"])).size).toBe(1);
    expect(new Set(attempts.map((r) => r.body)).size).toBe(1);
    for (const a of attempts)
      expect(verify(hooks.flaky.secret, a.headers["x-memory-signature"], a.body)).toBe(true);

    const stored = await waitFor(async () => {
      const [d] = (await deliveriesOf(hooks.flaky)).deliveries;
      return d?.status === "delivered" ? d : undefined;
    }, "the delivery to be recorded");
    expect(stored).toMatchObject({ attempts: 3, responseStatus: 200, lastError: null });
  });

  it("a verifier rejects a tampered body, another secret and a stale timestamp", () => {
    const delivery = receiver.at("/a")[0] as Received;
    const header = delivery.headers["x-memory-signature"] as string;
    const tampered = delivery.body.replace('"status":"done"', '"status":"failed"');
    expect(tampered).not.toBe(delivery.body);

    expect(verify(hooks.a.secret, header, delivery.body)).toBe(true);
    expect(verify(hooks.a.secret, header, tampered)).toBe(false);
    expect(verify(hooks.b.secret, header, delivery.body)).toBe(false);

    const t = timestampOf(header);
    expect(verifyWebhookSignature(hooks.a.secret, header, delivery.body, { nowSeconds: t })).toBe(true);
    expect(verifyWebhookSignature(hooks.a.secret, header, tampered, { nowSeconds: t })).toBe(false);
    expect(verifyWebhookSignature(hooks.b.secret, header, delivery.body, { nowSeconds: t })).toBe(false);
    expect(verifyWebhookSignature(hooks.a.secret, header, delivery.body, { nowSeconds: t + 3600 })).toBe(
      false,
    );
    expect(verifyWebhookSignature(hooks.a.secret, undefined, delivery.body)).toBe(false);
  });

  it("pings a webhook at once through the test endpoint and reports a receiver that cannot be reached", async () => {
    const ping = await call("POST", `/v3/webhooks/${hooks.a.id}/test`);
    expect(ping.status).toBe(200);
    expect(ping.json).toMatchObject({ delivered: true, responseStatus: 200, error: null });
    const got = receiver.received.find((r) => r.headers["x-memory-delivery"] === ping.json.deliveryId);
    expect(got?.headers["x-memory-event"]).toBe("ping");
    expect(JSON.parse(got?.body ?? "{}")).toMatchObject({
      event: "ping",
      data: { webhook: { id: hooks.a.id } },
    });
    expect(verify(hooks.a.secret, got?.headers["x-memory-signature"], got?.body ?? "")).toBe(true);

    // A port nobody listens on: the one attempt fails and says why.
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const dead = await call("POST", "/v3/webhooks", {
      url: `http://127.0.0.1:${deadPort}/gone`,
      containerTag: "hooks-z",
    });
    const failed = await call("POST", `/v3/webhooks/${dead.json.id}/test`);
    expect(failed.json).toMatchObject({ delivered: false, responseStatus: null });
    expect(failed.json.error).toMatch(/ECONNREFUSED|refused/);
    expect((await call("DELETE", `/v3/webhooks/${dead.json.id}`)).status).toBe(200);
  });

  it("sends connection.sync to a global webhook when a sync run ends", async () => {
    const created = await client.connections.create("web-crawler", {
      containerTag: "hooks-crawl",
      metadata: { startUrls: `${receiver.url}/site/`, maxDepth: 1, maxPages: 5 },
    });
    const [event] = await waitFor(async () => {
      const got = receiver.at("/sync");
      return got.length ? got : undefined;
    }, "the connection.sync delivery");
    expect(verify(hooks.sync.secret, event?.headers["x-memory-signature"], event?.body ?? "")).toBe(true);
    expect(JSON.parse(event?.body ?? "{}")).toMatchObject({
      event: "connection.sync",
      data: {
        connection: { id: created.id, provider: "web-crawler", containerTags: ["hooks-crawl"] },
        sync: { status: "done", trigger: "create", counts: { added: 1, failed: 0 } },
      },
    });
    // Subscribed to connection.sync only: the crawled document's own events are not sent here.
    expect(receiver.at("/sync").every((r) => r.headers["x-memory-event"] === "connection.sync")).toBe(true);
  });

  it("disables and deletes webhooks: nothing more is stored or sent for them", async () => {
    const disabled = await call("PATCH", `/v3/webhooks/${hooks.flaky.id}`, { enabled: false });
    expect(disabled.json).toMatchObject({ id: hooks.flaky.id, enabled: false });
    expect((await call("DELETE", `/v3/webhooks/${hooks.a.id}`)).status).toBe(200);
    expect((await call("GET", `/v3/webhooks/${hooks.a.id}`)).status).toBe(404);
    expect((await call("DELETE", `/v3/webhooks/${hooks.a.id}`)).status).toBe(404);
    expect((await call("GET", `/v3/webhooks/${hooks.a.id}/deliveries`)).status).toBe(404);

    const before = receiver.received.length;
    const a = await client.documents.add({
      content: "Fog horns sound twice a minute.",
      containerTag: "hooks-a",
    });
    const c = await client.documents.add({
      content: "Rock salt keeps the steps clear.",
      containerTag: "hooks-c",
    });
    expect(await processed(a.id)).toBe("done");
    expect(await processed(c.id)).toBe("done");
    expect((await deliveriesOf(hooks.flaky)).deliveries).toHaveLength(1);
    expect(receiver.received.slice(before)).toEqual([]);
  });
});
