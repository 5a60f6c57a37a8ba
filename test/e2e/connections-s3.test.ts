import { readFileSync } from "node:fs";
import path from "node:path";
import { Client, Connection } from "@temporalio/client";
import Supermemory, { BadRequestError } from "supermemory";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { caller } from "../support/http.ts";
import { type S3TestServer, startS3Server } from "../support/s3-server.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, waitFor } from "../support/service.ts";

// The connector engine end to end with a real S3-compatible server: a connection created through the
// SDK, synced by the real Temporal workflow, its objects found as documents, then changes at the source.
describe("S3 connections through the sync engine", () => {
  let service: TestService;
  let s3: S3TestServer;
  let client: Supermemory;
  let temporal: Client;
  let connectionId: string;
  const call = caller(() => service.url);
  const BUCKET = "team-notes";

  beforeAll(async () => {
    s3 = await startS3Server({ buckets: [BUCKET] });
    await s3.putObject(
      BUCKET,
      "notes/garden.txt",
      "The greenhouse tomatoes need watering every morning in July.",
    );
    await s3.putObject(
      BUCKET,
      "notes/boat.md",
      "# Boat\nThe sailing boat is moored at pier seven in Lisbon.",
    );
    await s3.putObject(
      BUCKET,
      "notes/report.docx",
      readFileSync(path.join(FIXTURES_DIR, "docx", "simple.docx")),
    );
    await s3.putObject(BUCKET, "elsewhere/ignored.txt", "Outside the prefix: never synced.");
    service = await startTestService();
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    temporal = new Client({
      connection: await Connection.connect({ address: inject("TEST_TEMPORAL_ADDRESS") }),
    });
  });

  afterAll(async () => {
    await service?.stop();
    await s3?.stop();
    await temporal?.connection.close();
  });

  const metadata = () => ({
    bucket: BUCKET,
    prefix: "notes/",
    endpoint: s3.endpoint,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
  });

  async function syncFinished(previousRunId?: string) {
    return waitFor(async () => {
      const c = (await call("GET", `/v3/connections/${connectionId}`)).json;
      const run = c.lastSync;
      return run && run.id !== previousRunId && run.status !== "running" ? c : undefined;
    }, "the sync run to finish");
  }

  async function documentsDone() {
    return waitFor(async () => {
      const docs = await client.connections.listDocuments("s3", { containerTags: ["team"] });
      return docs.every((d) => d.status === "done" || d.status === "failed") ? docs : undefined;
    }, "documents to be processed");
  }

  const searchTitles = async (q: string) =>
    (await client.search.documents({ q, containerTags: ["team"], limit: 10 })).results.map((r) => r.title);

  it("creates a connection whose first sync imports the objects as searchable documents", async () => {
    // The picker sends the browser to redirectUrl: a script URL would run on this service's origin.
    for (const redirectUrl of [
      "javascript:alert(document.cookie)//",
      "data:text/html,hi",
      "ftp://example.com/",
    ]) {
      const refused = await client.connections
        .create("s3", { containerTag: "team", metadata: metadata(), redirectUrl })
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(BadRequestError);
      expect((refused as BadRequestError).message).toContain("redirectUrl must be an http or https URL");
    }
    const created = await client.connections.create("s3", {
      containerTag: "team",
      metadata: metadata(),
      redirectUrl: "http://127.0.0.1:9/done",
    });
    connectionId = created.id;
    expect(created.authLink).toContain(`/v3/connections/${created.id}`);
    expect(created.redirectsTo).toBe("http://127.0.0.1:9/done");

    const connection = await syncFinished();
    expect(connection.lastSync).toMatchObject({
      status: "done",
      trigger: "create",
      counts: { added: 3, updated: 0, deleted: 0, failed: 0 },
    });
    // Secrets are never returned, only that they are set.
    expect(connection.metadata).toMatchObject({
      bucket: BUCKET,
      accessKeyIdSet: true,
      secretAccessKeySet: true,
    });
    expect(JSON.stringify(connection)).not.toContain(
      s3.secretAccessKey === "S3RVER" ? '"secretAccessKey"' : s3.secretAccessKey,
    );

    const docs = await documentsDone();
    expect(docs).toHaveLength(3);
    expect(docs.every((d) => d.status === "done")).toBe(true);
    expect(await searchTitles("greenhouse tomatoes watering")).toContain("garden.txt");
    const sdkGet = await client.connections.getByID(connectionId);
    expect(sdkGet).toMatchObject({ id: connectionId, provider: "s3", containerTags: ["team"] });
    const byTag = await client.connections.getByTag("s3", { containerTags: ["team"] });
    expect(byTag.id).toBe(connectionId);
    expect((await client.connections.list({})).map((c) => c.id)).toContain(connectionId);
  });

  it("shows the sync and its schedule in Temporal under readable ids, and the schedule syncs", async () => {
    const schedule = temporal.schedule.getHandle(`sync-schedule/${connectionId}`);
    const described = await schedule.describe();
    expect(described.action).toMatchObject({
      workflowType: "scheduledSync",
      workflowId: `sync-schedule/${connectionId}`,
      args: [connectionId],
    });
    expect(described.spec.intervals?.[0]?.every).toBe(60 * 60 * 1000);
    const run = await temporal.workflow.getHandle(`sync/${connectionId}`).describe();
    expect(run.type).toBe("syncConnection");
    expect(run.status.name).toBe("COMPLETED");

    // Fire the schedule now: its trigger starts sync/<id> itself.
    const before = (await call("GET", `/v3/connections/${connectionId}`)).json.lastSync.id;
    await schedule.trigger();
    const scheduled = await syncFinished(before);
    expect(scheduled.lastSync).toMatchObject({
      trigger: "schedule",
      status: "done",
      counts: { unchanged: 3 },
    });
  });

  it("syncs exactly the changes at the source: added, modified, deleted", async () => {
    const before = (await call("GET", `/v3/connections/${connectionId}`)).json.lastSync.id;
    const docsBefore = await client.connections.listDocuments("s3", { containerTags: ["team"] });
    const garden = docsBefore.find((d) => d.title === "garden.txt");
    await s3.putObject(BUCKET, "notes/garden.txt", "The greenhouse cucumbers need shade netting in August.");
    await s3.deleteObject(BUCKET, "notes/boat.md");
    await s3.putObject(BUCKET, "notes/kitchen.txt", "The kitchen kettle descaler is under the sink.");

    const started = await client.connections.import("s3", { containerTags: ["team"] });
    expect(started).toMatch(/started for 1/);
    const connection = await syncFinished(before);
    expect(connection.lastSync).toMatchObject({
      status: "done",
      trigger: "import",
      counts: { added: 1, updated: 1, deleted: 1, unchanged: 1, failed: 0 },
    });
    const docs = await documentsDone();
    expect(docs.map((d) => d.title).sort()).toEqual(["report.docx", "garden.txt", "kitchen.txt"].sort());
    // The modified object updated its document in place: same id, new content.
    expect(docs.find((d) => d.title === "garden.txt")?.id).toBe(garden?.id);
    expect(await searchTitles("cucumbers shade netting")).toContain("garden.txt");
    expect(await searchTitles("sailing boat pier Lisbon")).not.toContain("boat.md");
    expect(await searchTitles("kettle descaler")).toContain("kitchen.txt");

    // A sync with nothing changed touches nothing.
    const quiet = (await call("GET", `/v3/connections/${connectionId}`)).json.lastSync.id;
    await client.connections.import("s3", {});
    const again = await syncFinished(quiet);
    expect(again.lastSync.counts).toEqual({
      added: 0,
      updated: 0,
      deleted: 0,
      unchanged: 3,
      failed: 0,
      skipped: 0,
      skippedReasons: {},
      heldForReview: 0,
    });
    const all = await client.documents.list({ containerTags: ["team"], limit: 100 });
    expect(all.memories).toHaveLength(3);
  });

  it("skips one object S3 refuses (403 AccessDenied), syncs the rest and keeps the connection active", async () => {
    const before = (await call("GET", `/v3/connections/${connectionId}`)).json.lastSync.id;
    await s3.putObject(BUCKET, "notes/locked.txt", "Payroll figures that these credentials may not read.");
    await s3.denyObject(BUCKET, "notes/locked.txt");
    await s3.putObject(BUCKET, "notes/kitchen.txt", "The kitchen kettle descaler moved to the pantry shelf.");

    expect((await call("POST", `/v3/connections/${connectionId}/sync`)).status).toBe(200);
    const connection = await syncFinished(before);
    expect(connection.status).toBe("active");
    expect(connection.lastSync).toMatchObject({
      status: "done",
      errorCode: null,
      counts: {
        added: 0,
        updated: 1,
        deleted: 0,
        unchanged: 2,
        failed: 0,
        skipped: 1,
        skippedReasons: { no_permission: 1 },
      },
    });
    const docs = await documentsDone();
    expect(docs.map((d) => d.title).sort()).toEqual(["garden.txt", "kitchen.txt", "report.docx"]);
    expect(await searchTitles("kettle descaler pantry shelf")).toContain("kitchen.txt");

    // Still refused at the next sync: skipped again, nothing deleted, still active.
    const previous = (await call("GET", `/v3/connections/${connectionId}`)).json.lastSync.id;
    expect((await call("POST", `/v3/connections/${connectionId}/sync`)).status).toBe(200);
    const again = await syncFinished(previous);
    expect(again.status).toBe("active");
    expect(again.lastSync.counts).toMatchObject({ deleted: 0, unchanged: 3, skipped: 1 });
    await s3.deleteObject(BUCKET, "notes/locked.txt");
  });

  it("keeps the document of an object that grew past maxObjectBytes and counts it skipped too_large", async () => {
    await s3.putObject(BUCKET, "sizes/small.txt", "The lighthouse keeper logs the fog horn hours.");
    const created = await client.connections.create("s3", {
      containerTag: "sizes",
      metadata: { ...metadata(), prefix: "sizes/", maxObjectBytes: 2048 },
    });
    const sized = (run: string | undefined) =>
      waitFor(async () => {
        const c = (await call("GET", `/v3/connections/${created.id}`)).json;
        return c.lastSync && c.lastSync.id !== run && c.lastSync.status !== "running" ? c : undefined;
      }, "the sync run to finish");
    const first = await sized(undefined);
    expect(first.lastSync).toMatchObject({ status: "done", counts: { added: 1, skipped: 0 } });
    const [doc] = await client.connections.listDocuments("s3", { containerTags: ["sizes"] });
    expect(doc?.title).toBe("small.txt");

    // The object grows past the limit: it is not gone, so its document stays, and the run says why.
    await s3.putObject(BUCKET, "sizes/small.txt", `The lighthouse log. ${"fog horn ".repeat(400)}`);
    expect((await call("POST", `/v3/connections/${created.id}/sync`)).status).toBe(200);
    const grown = await sized(first.lastSync.id);
    expect(grown.status).toBe("active");
    expect(grown.lastSync).toMatchObject({
      status: "done",
      counts: { added: 0, updated: 0, deleted: 0, skipped: 1, skippedReasons: { too_large: 1 } },
    });
    const after = await client.connections.listDocuments("s3", { containerTags: ["sizes"] });
    expect(after.map((d) => d.id)).toEqual([doc?.id]);
    await client.connections.deleteByID(created.id);
  });

  it("continues a long sync as new, carrying its run, cursor and counts", async () => {
    // One object per listing page, and (below) one page per workflow run: every page continues as new.
    const { id } = await client.connections.create("s3", {
      containerTag: "team-long",
      metadata: { ...metadata(), pageSize: 1 },
      syncIntervalMinutes: 0,
    } as Parameters<typeof client.connections.create>[1]);
    const first = await waitFor(async () => {
      const run = (await call("GET", `/v3/connections/${id}`)).json.lastSync;
      return run && run.status !== "running" ? run : undefined;
    }, "the first sync to finish");
    expect(first.counts.added).toBe(3);
    // The run is recorded as finished just before its workflow completes.
    await temporal.workflow.getHandle(`sync/${id}`).result();
    const handle = await temporal.workflow.start("syncConnection", {
      workflowId: `sync/${id}`,
      taskQueue: service.taskQueue,
      args: [{ connectionId: id, trigger: "import", pagesPerRun: 1 }],
    });
    expect(await handle.result()).toBe("done");
    const latest = await temporal.workflow.getHandle(`sync/${id}`).describe();
    expect(latest.runId).not.toBe(handle.firstExecutionRunId);
    const run = (await call("GET", `/v3/connections/${id}`)).json.lastSync;
    expect(run.id).not.toBe(first.id);
    expect(run).toMatchObject({ status: "done", counts: { added: 0, updated: 0, deleted: 0, unchanged: 3 } });
    await client.connections.deleteByID(id);
  });

  it("refuses bad settings and credentials at creation with a 400", async () => {
    const wrongKey = await call("POST", "/v3/connections/s3", {
      containerTag: "team",
      metadata: { ...metadata(), accessKeyId: "NOT-S3RVER" },
    });
    expect(wrongKey.status).toBe(400);
    expect(wrongKey.json.error).toMatch(/refused the credentials/);
    const noBucket = await call("POST", "/v3/connections/s3", {
      containerTag: "team",
      metadata: { prefix: "x" },
    });
    expect(noBucket.status).toBe(400);
    expect(noBucket.json.field).toBe("metadata.bucket");
    const unknown = await call("POST", "/v3/connections/dropbox", { containerTag: "team" });
    expect(unknown.status).toBe(400);
  });

  it("deletes a connection with its documents and its schedule", async () => {
    const removed = await client.connections.deleteByID(connectionId);
    expect(removed).toEqual({ id: connectionId, provider: "s3" });
    expect((await call("GET", `/v3/connections/${connectionId}`)).status).toBe(404);
    expect((await client.documents.list({ containerTags: ["team"] })).memories).toHaveLength(0);
    await expect(temporal.schedule.getHandle(`sync-schedule/${connectionId}`).describe()).rejects.toThrow();
  });

  it("deleting a container tag deletes the connections that synced only into it", async () => {
    const { id } = await client.connections.create("s3", { containerTag: "team-temp", metadata: metadata() });
    await waitFor(async () => {
      const run = (await call("GET", `/v3/connections/${id}`)).json.lastSync;
      return run && run.status !== "running" ? run : undefined;
    }, "the sync to finish");
    const deleted = await call("DELETE", "/v3/container-tags/team-temp");
    expect(deleted.status).toBe(200);
    expect(deleted.json.deletedDocuments).toBe(3);
    expect((await call("GET", `/v3/connections/${id}`)).status).toBe(404);
    await expect(temporal.schedule.getHandle(`sync-schedule/${id}`).describe()).rejects.toThrow();
  });
});
