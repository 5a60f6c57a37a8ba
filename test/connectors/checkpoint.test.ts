// The engine's handling of connector checkpoints: stored carries and page cursors are parsed with the
// connector's own schemas before the connector sees them (connectors/checkpoint.ts, activities/sync.ts).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ApplicationFailure } from "@temporalio/activity";
import { Client, Connection } from "@temporalio/client";
import { MockActivityEnvironment } from "@temporalio/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BeganSync, createSyncActivities, type SyncStart } from "../../activities/sync.ts";
import { createDiskBlobStore } from "../../blobs/disk.ts";
import { createLogger } from "../../config/logger.ts";
import { InvalidCursorError, parsePageCursor, parseStoredCarry } from "../../connectors/checkpoint.ts";
import { githubConnector } from "../../connectors/github/index.ts";
import type { GithubCarry, GithubCursor } from "../../connectors/github/sync.ts";
import { googleDriveConnector } from "../../connectors/google-drive/index.ts";
import { onedriveConnector } from "../../connectors/onedrive/index.ts";
import { s3Connector } from "../../connectors/s3/index.ts";
import { createConnection, updateConnection } from "../../store/connections.ts";
import { openMemoryPglite, type Store } from "../../store/db.ts";
import { SecretBox } from "../../store/secrets.ts";
import { DocumentProcessing } from "../../temporal/processing-client.ts";
import { ConnectionSyncs } from "../../temporal/sync-client.ts";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger("info", { write: (line: string) => lines.push(JSON.parse(line)) });
  return { log, lines };
}

// Carries exactly as the connectors wrote them before their checkpoints had schemas (stored as JSON in
// `connections.cursor`): an upgrade must keep reading them, or every connection would list in full.
const storedGithubCarry = JSON.parse(
  '{"treeEtags":{"octo/hello":"W/\\"5f3e\\""},"issuesListedAt":{"octo/hello":"Tue, 25 Nov 2026 10:00:00 GMT"},"passesSinceFullIssues":3}',
);
const storedDriveCarry = JSON.parse(
  '{"scope":"selected:0123456789abcdef","pageToken":"1234","rootId":"0AROOT","folders":{"F1":null,"F2":"F1"},"files":["D1"]}',
);
const storedDriveCarryOfNothingPicked = JSON.parse(
  '{"scope":"selected:fedcba9876543210","pageToken":null,"rootId":null,"folders":{},"files":[]}',
);
const storedOnedriveCarry = JSON.parse(
  '{"v":1,"mode":"selected","roots":["F1"],"files":["X1"],"links":{"F1":"https://graph.microsoft.com/v1.0/me/drive/items/F1/delta?token=abc"}}',
);

describe("parseStoredCarry", () => {
  it("reads carries of the shape the connectors stored before, unchanged", () => {
    const { log, lines } = capture();
    expect(parseStoredCarry(githubConnector, storedGithubCarry, log)).toEqual(storedGithubCarry);
    expect(parseStoredCarry(googleDriveConnector, storedDriveCarry, log)).toEqual(storedDriveCarry);
    expect(parseStoredCarry(googleDriveConnector, storedDriveCarryOfNothingPicked, log)).toEqual(
      storedDriveCarryOfNothingPicked,
    );
    expect(parseStoredCarry(onedriveConnector, storedOnedriveCarry, log)).toEqual(storedOnedriveCarry);
    expect(lines).toEqual([]);
  });

  it("hands over nothing when no pass has completed yet, or the connector carries nothing", () => {
    const { log, lines } = capture();
    expect(parseStoredCarry(githubConnector, null, log)).toBeUndefined();
    expect(parseStoredCarry(githubConnector, undefined, log)).toBeUndefined();
    expect(parseStoredCarry(s3Connector, { continuationToken: null }, log)).toBeUndefined();
    expect(lines).toEqual([]);
  });

  it("drops a carry whose shape changed, with a warning, so the pass lists everything", () => {
    const { log, lines } = capture();
    const olderShape = { etags: { "octo/hello": 'W/"5f3e"' } };
    expect(parseStoredCarry(githubConnector, olderShape, log)).toBeUndefined();
    const wrongVersion = { ...storedOnedriveCarry, v: 2 };
    expect(parseStoredCarry(onedriveConnector, wrongVersion, log)).toBeUndefined();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: 40, provider: "github" });
    expect(String(lines[0]?.msg)).toContain("lists the source in full");
    expect(String(lines[0]?.issues)).toContain("treeEtags");
    expect(lines[1]).toMatchObject({ level: 40, provider: "onedrive" });
    expect(String(lines[1]?.issues)).toContain("v");
  });
});

describe("parsePageCursor", () => {
  it("returns the cursor typed, as the workflow handed it over", () => {
    const cursor: GithubCursor = {
      repositories: ["octo/hello"],
      index: 0,
      phase: "issues",
      tree: null,
      offset: 0,
      page: 2,
      learnt: storedGithubCarry as GithubCarry,
    };
    const fromHistory: unknown = JSON.parse(JSON.stringify(cursor));
    expect(parsePageCursor(githubConnector, fromHistory)).toEqual(cursor);
    expect(parsePageCursor(s3Connector, { continuationToken: "token-2" })).toEqual({
      continuationToken: "token-2",
    });
  });

  it("refuses a cursor that does not fit, naming the provider and the field", () => {
    let refused: unknown;
    try {
      parsePageCursor(githubConnector, { repositories: ["octo/hello"], index: 0, phase: "wiki" });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(InvalidCursorError);
    expect((refused as Error).message).toContain("github page cursor");
    expect((refused as Error).message).toContain("phase");
  });
});

describe("the sync activities with stored checkpoints", () => {
  let store: Store;
  let dataDir: string;
  let activities: ReturnType<typeof createSyncActivities>;
  let logs: ReturnType<typeof capture>;

  beforeAll(async () => {
    store = await openMemoryPglite();
    dataDir = mkdtempSync(path.join(tmpdir(), "checkpoint-test-"));
    logs = capture();
    // Never dialled: these activities start no document processing.
    const client = new Client({ connection: Connection.lazy({ address: "127.0.0.1:1" }) });
    activities = createSyncActivities({
      config: { HOST: "127.0.0.1", PORT: 8787, CONNECTOR_ENDPOINTS: {} },
      db: store.db,
      blobs: createDiskBlobStore(path.join(dataDir, "files")),
      secrets: SecretBox.fromKey(Buffer.alloc(32, 7)),
      processing: new DocumentProcessing(client, "documents", store.db, { maxInFlight: 1 }),
      syncs: new ConnectionSyncs(client, "documents"),
      network: { allowPrivateNetwork: false, timeoutMs: 1000, maxBytes: 1_000_000 },
      log: logs.log,
    });
  });

  afterAll(async () => {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function githubConnection(carry: unknown) {
    const connection = await createConnection(store.db, {
      provider: "github",
      containerTags: ["checkpoints"],
      metadata: { repositories: "octo/hello" },
      sealedSecrets: null,
      syncIntervalMinutes: 0,
    });
    if (carry !== undefined) await updateConnection(store.db, connection.id, { cursor: carry as never });
    return connection;
  }

  const begin = (connectionId: string): Promise<BeganSync> => {
    const start: SyncStart = { connectionId, trigger: "import", workflowId: `sync/${connectionId}` };
    return new MockActivityEnvironment().run(activities.beginSync, start);
  };

  it("starts the pass from a carry stored before the upgrade", async () => {
    const connection = await githubConnection(storedGithubCarry);
    const began = await begin(connection.id);
    if ("skipped" in began) throw new Error(`the sync was skipped: ${began.skipped}`);
    const cursor = began.cursor as GithubCursor;
    expect(cursor.previous?.treeEtags).toEqual(storedGithubCarry.treeEtags);
    expect(cursor.learnt?.passesSinceFullIssues).toBe(4);
  });

  it("starts a full pass, with a warning, from a carry that no longer fits", async () => {
    const connection = await githubConnection({ treeEtags: "not a map" });
    const warningsBefore = logs.lines.length;
    const began = await begin(connection.id);
    if ("skipped" in began) throw new Error(`the sync was skipped: ${began.skipped}`);
    const cursor = began.cursor as GithubCursor;
    expect(cursor.previous).toBeUndefined();
    expect(cursor.learnt?.passesSinceFullIssues).toBe(0);
    const warning = logs.lines.slice(warningsBefore).find((l) => l.provider === "github" && l.level === 40);
    expect(warning?.connectionId).toBe(connection.id);
  });

  it("fails a page whose cursor does not fit without retrying", async () => {
    const connection = await githubConnection(undefined);
    const began = await begin(connection.id);
    if ("skipped" in began) throw new Error(`the sync was skipped: ${began.skipped}`);
    const failure = await new MockActivityEnvironment()
      .run(activities.syncPage, {
        connectionId: connection.id,
        runId: began.runId,
        cursor: { ...(began.cursor as GithubCursor), index: -1 },
      })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: "InvalidCursor", nonRetryable: true });
    expect((failure as Error).message).toContain("index");
  });
});
