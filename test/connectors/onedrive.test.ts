import { createHash, randomBytes } from "node:crypto";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import {
  ConnectorAuthError,
  ConnectorConfigError,
  ConnectorRateLimitError,
  ItemSkippedError,
  type SkipReason,
} from "../../connectors/errors.ts";
import { downloadItem, getItem, retryAfterMs } from "../../connectors/onedrive/graph.ts";
import {
  DEFAULT_GRAPH_API,
  type OnedriveCarry,
  onedriveConnector,
  onedriveOAuth,
} from "../../connectors/onedrive/index.ts";
import {
  type OnedriveConfig,
  type OnedriveSecrets,
  onedriveConfigSchema,
} from "../../connectors/onedrive/settings.ts";
import { onedriveCarrySchema } from "../../connectors/onedrive/sync.ts";
import type {
  FetchedItem,
  OAuthSession,
  PickedItem,
  SourceItem,
  SyncContext,
} from "../../connectors/types.ts";
import { type FakeGraph, type FakeGraphOptions, startFakeGraph } from "../support/fake-graph.ts";

type Ctx = SyncContext<OnedriveConfig, OnedriveSecrets> & { heartbeats: () => number };
type Session = OAuthSession & { refreshes: () => number };

let fake: FakeGraph | undefined;

afterEach(async () => {
  await fake?.stop();
  fake = undefined;
});

async function startFake(options?: FakeGraphOptions): Promise<FakeGraph> {
  fake = await startFakeGraph(options);
  return fake;
}

const REDIRECT_URI = "http://127.0.0.1:8788/v3/connections/oauth/callback";

async function tokenRequest(graph: FakeGraph, params: Record<string, string>) {
  const response = await fetch(graph.tokenUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: new URLSearchParams({ ...params, client_id: graph.clientId, client_secret: graph.clientSecret }),
  });
  const body = (await response.json()) as Record<string, string>;
  if (!response.ok) {
    if (response.status < 500)
      throw new ConnectorAuthError(`token endpoint: ${body.error}: ${body.error_description}`);
    throw new Error(`token endpoint: HTTP ${response.status}`);
  }
  return body as { access_token: string; refresh_token: string; expires_in: string; token_type: string };
}

/** The session the engine would hand over: a code exchanged with PKCE, refreshed through the token endpoint. */
async function connect(graph: FakeGraph): Promise<Session> {
  const verifier = randomBytes(32).toString("base64url");
  const code = graph.issueCode({
    redirectUri: REDIRECT_URI,
    codeChallenge: createHash("sha256").update(verifier).digest("base64url"),
    scope: onedriveOAuth.scopes.join(" "),
  });
  let tokens = await tokenRequest(graph, {
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  });
  let refreshes = 0;
  return {
    accessToken: async () => tokens.access_token,
    async refresh() {
      refreshes++;
      tokens = await tokenRequest(graph, {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token,
      });
      return tokens.access_token;
    },
    refreshes: () => refreshes,
  };
}

function contextFor(
  graph: FakeGraph,
  session: OAuthSession | undefined,
  metadata: Record<string, unknown> = {},
  selection?: PickedItem[],
): Ctx {
  let beats = 0;
  return {
    connectionId: "conn_onedrive_test",
    config: onedriveConfigSchema.parse({ maxFileBytes: 1000, ...metadata }),
    secrets: {},
    network: { allowPrivateNetwork: true, timeoutMs: 10_000, maxBytes: 1 << 24 },
    signal: new AbortController().signal,
    heartbeat: () => {
      beats++;
    },
    heartbeats: () => beats,
    log: pino({ level: "silent" }),
    ...(session ? { oauth: session } : {}),
    ...(selection ? { selection } : {}),
    apiBaseUrl: graph.url,
  };
}

const folder = (id: string, name = id): PickedItem => ({ id, name, kind: "folder" });
const file = (id: string, name = id): PickedItem => ({ id, name, kind: "file" });

interface SyncResult {
  fetched: string[];
  deleted: string[];
  listed: string[];
  skipped: { id: string; reason: SkipReason }[];
  pages: number;
  fullResync: boolean;
}

/**
 * What the engine does with a delta connector: initialCursor with the carry of the last complete sync,
 * listPage until next is null (every cursor through JSON, as Temporal stores it), fetchItem for new
 * versions (an ItemSkippedError skips that one item, keeping what was held), deletions as reported; the
 * carry of the last page is kept when the sync completes. A pass with a `fullResync` page removes, once
 * complete, what it did not list: the engine hook the connector asks for (ListPage.fullResync).
 */
class Engine {
  readonly held = new Map<string, { version: string; doc: FetchedItem }>();
  carry: OnedriveCarry | undefined;

  async sync(ctx: Ctx): Promise<SyncResult> {
    const result: SyncResult = {
      fetched: [],
      deleted: [],
      listed: [],
      skipped: [],
      pages: 0,
      fullResync: false,
    };
    let cursor = JSON.parse(JSON.stringify(await onedriveConnector.initialCursor(ctx, this.carry)));
    let carry: unknown;
    for (;;) {
      const page = await onedriveConnector.listPage(ctx, cursor);
      result.pages++;
      if (page.carry !== undefined) carry = page.carry;
      if (page.fullResync) result.fullResync = true;
      const ids = page.items.map((i) => i.id);
      expect(new Set(ids).size, "an id listed twice on one page").toBe(ids.length);
      for (const id of page.deleted ?? []) expect(ids, `${id} both listed and deleted`).not.toContain(id);
      for (const item of page.items) {
        result.listed.push(item.id);
        if (this.held.get(item.id)?.version === item.version) continue;
        let doc: FetchedItem | null;
        try {
          doc = await onedriveConnector.fetchItem(ctx, item);
        } catch (error) {
          if (!(error instanceof ItemSkippedError)) throw error;
          result.skipped.push({ id: item.id, reason: error.reason });
          continue;
        }
        if (!doc) continue;
        this.held.set(item.id, { version: item.version, doc });
        result.fetched.push(item.id);
      }
      for (const id of page.deleted ?? []) if (this.held.delete(id)) result.deleted.push(id);
      if (page.next === null) break;
      cursor = JSON.parse(JSON.stringify(page.next));
      if (result.pages > 500) throw new Error("the pass does not end");
    }
    if (result.fullResync) {
      const listed = new Set(result.listed);
      for (const id of [...this.held.keys()])
        if (!listed.has(id)) {
          this.held.delete(id);
          result.deleted.push(id);
        }
    }
    // Stored as JSON, and read back with the connector's schema (which must accept what it wrote).
    if (carry !== undefined) this.carry = onedriveCarrySchema.parse(JSON.parse(JSON.stringify(carry)));
    return result;
  }

  ids(): string[] {
    return [...this.held.keys()].sort();
  }

  doc(id: string): FetchedItem {
    const held = this.held.get(id);
    if (!held) throw new Error(`not held: ${id}`);
    return held.doc;
  }
}

const sorted = (ids: string[]) => [...ids].sort();

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

const PDF = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n");

/**
 * root/
 *   Projects/ plan.md, 2024/ (report.txt, notes.pdf)
 *   Archive/ old.txt
 *   Notebook (OneNote package with a .one section)
 *   readme.txt, huge.bin (over maxFileBytes)
 */
function seed(graph: FakeGraph) {
  const projects = graph.addFolder("Projects");
  const archive = graph.addFolder("Archive");
  const y2024 = graph.addFolder("2024", projects);
  const ids = {
    projects,
    archive,
    y2024,
    plan: graph.addFile("plan.md", "# Plan\n\nShip it.", { parentId: projects }),
    report: graph.addFile("report.txt", "quarterly report", { parentId: y2024 }),
    notes: graph.addFile("notes.pdf", PDF, { parentId: y2024 }),
    old: graph.addFile("old.txt", "old things", { parentId: archive }),
    notebook: graph.addNotebook("Notebook"),
    readme: graph.addFile("readme.txt", "read me first"),
    huge: graph.addFile("huge.bin", Buffer.alloc(2000, 1)),
  };
  return ids;
}

const deltaRequests = (graph: FakeGraph) => graph.requests.filter((r) => /\/delta(\?|$)/.test(r.path));

describe("onedrive connector: declaration", () => {
  it("declares the Microsoft OAuth app, the Graph API root and its settings", () => {
    expect(onedriveConnector.provider).toBe("onedrive");
    expect(onedriveConnector.listing).toBe("delta");
    expect(onedriveConnector.oauth).toEqual({
      authorizeUrl: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
      tokenUrl: "https://login.microsoftonline.com/common/oauth2/v2.0/token",
      scopes: ["offline_access", "Files.Read", "User.Read"],
      pkce: true,
      tokenAuth: "body",
      settingsPrefix: "onedrive",
      envPrefix: "MICROSOFT",
    });
    expect(onedriveConnector.defaultApiBaseUrl).toBe("https://graph.microsoft.com/v1.0");
    expect(DEFAULT_GRAPH_API).toBe("https://graph.microsoft.com/v1.0");
    expect(onedriveConnector.secretKeys).toEqual([]);
    expect(onedriveConnector.secretsSchema.parse({ oauth: { accessToken: "x" } })).toEqual({
      oauth: { accessToken: "x" },
    });
    expect(onedriveConfigSchema.parse({})).toEqual({
      syncScope: "selected",
      maxFileBytes: 100 * 1024 * 1024,
      pageSize: 200,
    });
    expect(onedriveConfigSchema.parse({ syncScope: "full", maxFileBytes: "5000", pageSize: "50" })).toEqual({
      syncScope: "full",
      maxFileBytes: 5000,
      pageSize: 50,
    });
    expect(onedriveConfigSchema.safeParse({ syncScope: "everything" }).success).toBe(false);
    expect(onedriveConfigSchema.safeParse({ pageSize: 0 }).success).toBe(false);
  });

  it("reads Retry-After as seconds or an HTTP date, 30 s without one", () => {
    expect(retryAfterMs("7")).toBe(7000);
    expect(retryAfterMs("0")).toBe(1000);
    const now = Date.parse("2025-01-01T00:00:00Z");
    expect(retryAfterMs("Wed, 01 Jan 2025 00:00:45 GMT", now)).toBe(45_000);
    expect(retryAfterMs(null)).toBe(30_000);
    expect(retryAfterMs("soon")).toBe(30_000);
  });
});

describe("onedrive connector: whole drive", () => {
  it("enumerates every file page by page and fetches bytes, name, type, link and folder", async () => {
    const graph = await startFake();
    const ids = seed(graph);
    const ctx = contextFor(graph, await connect(graph), { syncScope: "full", pageSize: 2 });
    const engine = new Engine();

    const first = await engine.sync(ctx);
    // Folders, the notebook and its section, and the oversized file are not documents.
    expect(engine.ids()).toEqual(sorted([ids.plan, ids.report, ids.notes, ids.old, ids.readme]));
    expect(sorted(first.fetched)).toEqual(engine.ids());
    // 12 items in the drive (with the root) at 2 per page: the enumeration follows 5 nextLinks.
    const deltas = deltaRequests(graph);
    expect(deltas).toHaveLength(6);
    expect(deltas[0]?.path).toBe("/v1.0/me/drive/root/delta?$top=2");
    expect(deltas.slice(1).every((r) => r.path.startsWith("/v1.0/me/drive/root/delta?token="))).toBe(true);
    expect(deltas.every((r) => r.deltaExcludeParent === "true" && r.authorized && r.status === 200)).toBe(
      true,
    );

    const notes = engine.doc(ids.notes);
    expect(notes.title).toBe("notes.pdf");
    expect(notes.file?.name).toBe("notes.pdf");
    expect(notes.file?.mimeType).toBe("application/pdf");
    expect(notes.file?.bytes.equals(PDF)).toBe(true);
    expect(notes.text).toBeUndefined();
    expect(notes.filepath).toBe("/Projects/2024/");
    expect(notes.url).toBe(
      "https://contoso-my.sharepoint.com/personal/meganb_contoso_onmicrosoft_com/Documents/Projects/2024/notes.pdf",
    );
    expect(notes.metadata).toMatchObject({
      driveItemId: ids.notes,
      driveId: graph.driveId,
      size: PDF.length,
      author: "Megan Bowen",
      lastModified: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(engine.doc(ids.readme).filepath).toBe("/");
    expect(engine.doc(ids.plan).file?.bytes.toString()).toBe("# Plan\n\nShip it.");
    expect(engine.held.get(ids.plan)?.version).toBe(`hash:${graph.item(ids.plan).quickXorHash}`);
    // Bytes come from the pre-authenticated download URL, which never gets the token.
    const downloads = graph.requests.filter((r) => r.path.startsWith("/download/"));
    expect(downloads).toHaveLength(5);
    expect(downloads.every((r) => !r.authorized)).toBe(true);
    expect(ctx.heartbeats()).toBeGreaterThanOrEqual(graph.requests.length);
  });

  it("follows the delta link: modified, added, renamed, moved and deleted files", async () => {
    const graph = await startFake();
    const ids = seed(graph);
    const ctx = contextFor(graph, await connect(graph), { syncScope: "full" });
    const engine = new Engine();
    await engine.sync(ctx);

    // Nothing changed: one delta request, nothing fetched.
    const before = graph.requests.length;
    const quiet = await engine.sync(ctx);
    expect(quiet).toMatchObject({ fetched: [], deleted: [], listed: [] });
    expect(graph.requests.slice(before).map((r) => r.path)).toEqual([
      expect.stringMatching(/^\/v1\.0\/me\/drive\/root\/delta\?token=/),
    ]);

    graph.updateFile(ids.plan, "# Plan\n\nShip it twice.");
    const added = graph.addFile("new.md", "brand new", { parentId: ids.archive });
    graph.rename(ids.readme, "README.txt");
    graph.move(ids.old, ids.projects);
    graph.remove(ids.y2024);
    const second = await engine.sync(ctx);
    expect(sorted(second.fetched)).toEqual(sorted([ids.plan, added]));
    expect(sorted(second.deleted)).toEqual(sorted([ids.report, ids.notes]));
    expect(engine.ids()).toEqual(sorted([ids.plan, ids.old, ids.readme, added]));
    expect(engine.doc(ids.plan).file?.bytes.toString()).toBe("# Plan\n\nShip it twice.");
    expect(engine.doc(added).filepath).toBe("/Archive/");

    graph.remove(ids.plan);
    const third = await engine.sync(ctx);
    expect(third.deleted).toEqual([ids.plan]);
    expect(third.fetched).toEqual([]);
  });

  it("enumerates again from Graph's Location after a 410 and removes what was deleted meanwhile", async () => {
    const graph = await startFake();
    const ids = seed(graph);
    const ctx = contextFor(graph, await connect(graph), { syncScope: "full", pageSize: 3 });
    const engine = new Engine();
    await engine.sync(ctx);

    graph.expireDeltaTokens();
    const added = graph.addFile("after.txt", "written while the token was stale");
    graph.updateFile(ids.old, "changed meanwhile");
    // Deleted while the token was stale: the fresh enumeration cannot report it, only leave it out.
    graph.remove(ids.readme);
    const resync = await engine.sync(ctx);
    expect(resync.fullResync).toBe(true);
    expect(sorted(resync.fetched)).toEqual(sorted([added, ids.old]));
    expect(resync.deleted).toEqual([ids.readme]);
    expect(engine.ids()).toEqual(sorted([ids.plan, ids.report, ids.notes, ids.old, added]));
    const gone = deltaRequests(graph).find((r) => r.status === 410);
    expect(gone?.path).toMatch(/^\/v1\.0\/me\/drive\/root\/delta\?token=/);
    // The enumeration went on from the Location Graph gave, with the same page size.
    const after = deltaRequests(graph).slice(deltaRequests(graph).indexOf(gone as never) + 1);
    expect(after.length).toBeGreaterThan(1);
    expect(after.every((r) => r.status === 200)).toBe(true);

    // The new link works, and the next pass is an ordinary delta again.
    const before = graph.requests.length;
    expect(await engine.sync(ctx)).toMatchObject({ fetched: [], deleted: [], fullResync: false });
    expect(graph.requests.slice(before).every((r) => r.status === 200)).toBe(true);
  });

  for (const driveType of ["business", "personal"] as const) {
    it(`after a 410 on picked folders (${driveType}), enumerates every pick again and removes what left`, async () => {
      const graph = await startFake({ driveType });
      const ids = seed(graph);
      const ctx = contextFor(graph, await connect(graph), { pageSize: 2 }, [
        folder(ids.projects),
        folder(ids.archive),
        file(ids.readme),
      ]);
      const engine = new Engine();
      await engine.sync(ctx);
      expect(engine.ids()).toEqual(sorted([ids.plan, ids.report, ids.notes, ids.old, ids.readme]));

      graph.expireDeltaTokens();
      graph.remove(ids.report);
      graph.move(ids.notes, graph.rootId); // out of the picks
      graph.move(ids.plan, ids.archive); // from one pick to another
      const added = graph.addFile("fresh.txt", "new in projects", { parentId: ids.projects });
      const resync = await engine.sync(ctx);
      expect(resync.fullResync).toBe(true);
      expect(resync.fetched).toEqual([added]);
      expect(sorted(resync.deleted)).toEqual(sorted([ids.report, ids.notes]));
      expect(engine.ids()).toEqual(sorted([ids.plan, ids.old, ids.readme, added]));
      expect(await engine.sync(ctx)).toMatchObject({ fetched: [], deleted: [], fullResync: false });
    });
  }
});

describe("onedrive connector: picked folders and files", () => {
  for (const driveType of ["business", "personal"] as const) {
    it(`syncs only the picked folders (with their subfolders) and files; nothing picked lists nothing (${driveType})`, async () => {
      const graph = await startFake({ driveType });
      const ids = seed(graph);
      const session = await connect(graph);

      const none = new Engine();
      const empty = await none.sync(contextFor(graph, session, {}, []));
      expect(empty).toMatchObject({ fetched: [], listed: [], pages: 1 });
      const unset = await none.sync(contextFor(graph, session));
      expect(unset.listed).toEqual([]);
      expect(graph.requests).toEqual([]);

      const engine = new Engine();
      const ctx = contextFor(graph, session, { pageSize: 2 }, [
        folder(ids.projects, "Projects"),
        file(ids.readme, "readme.txt"),
      ]);
      await engine.sync(ctx);
      expect(engine.ids()).toEqual(sorted([ids.plan, ids.report, ids.notes, ids.readme]));
      expect(engine.doc(ids.report).filepath).toBe("/Projects/2024/");
      const folderDelta = `/v1.0/me/drive/items/${ids.projects}/delta`;
      if (driveType === "personal") {
        // A personal OneDrive has a delta per folder: nothing outside the pick is listed.
        expect(graph.requests.some((r) => r.path.startsWith(`${folderDelta}?$top=2`))).toBe(true);
        expect(graph.requests.some((r) => r.path.includes("/me/drive/root/delta"))).toBe(false);
      } else {
        // OneDrive for Business has a delta at the root only: the connector never asks for a folder's.
        expect(graph.requests.some((r) => r.path.startsWith("/v1.0/me/drive/root/delta?$top=2"))).toBe(true);
        expect(graph.requests.some((r) => r.path.startsWith(folderDelta))).toBe(false);
        expect(graph.requests.every((r) => r.status < 400)).toBe(true);
      }
      // The drive's type is read once, then carried.
      const rootReads = () => graph.requests.filter((r) => r.path === "/v1.0/me/drive/root").length;
      expect(rootReads()).toBe(1);
      expect(engine.carry?.drive).toEqual({ rootId: graph.rootId, deltaAtRoot: driveType === "business" });
      await engine.sync(ctx);
      expect(rootReads()).toBe(1);
    });
  }

  it("answers a folder's delta on a business drive with 501 notSupported, and the connector follows the root", async () => {
    const graph = await startFake();
    const ids = seed(graph);
    const session = await connect(graph);
    const raw = await fetch(`${graph.url}/me/drive/items/${ids.projects}/delta`, {
      headers: { authorization: `Bearer ${await session.accessToken()}` },
    });
    expect(raw.status).toBe(501);
    expect(await raw.json()).toMatchObject({
      error: {
        code: "notSupported",
        message: "view.delta can only be called on the root.",
        innerError: { "request-id": expect.any(String), date: expect.any(String) },
      },
    });

    // A carry that took the drive for a personal one: the folder delta is refused, the root's followed.
    const ctx = contextFor(graph, session, {}, [folder(ids.projects)]);
    const engine = new Engine();
    engine.carry = {
      v: 1,
      mode: "selected",
      roots: [ids.projects],
      files: [],
      links: {},
      drive: { rootId: graph.rootId, deltaAtRoot: false },
    };
    await engine.sync(ctx);
    expect(engine.ids()).toEqual(sorted([ids.plan, ids.report, ids.notes]));
    expect(graph.requests.filter((r) => r.status === 501)).toHaveLength(2);
    expect(engine.carry?.drive).toEqual({ rootId: graph.rootId, deltaAtRoot: true });
    expect(Object.keys(engine.carry?.links ?? {})).toEqual(["root"]);

    // A carry from before the drive was looked at (no `drive`): read once, then the root's delta.
    const old = new Engine();
    old.carry = { v: 1, mode: "selected", roots: [ids.projects], files: [], links: {} };
    const before = graph.requests.length;
    await old.sync(ctx);
    expect(old.ids()).toEqual(engine.ids());
    expect(graph.requests.slice(before).every((r) => r.status === 200)).toBe(true);
  });

  const variants: FakeGraphOptions[] = [
    { driveType: "business" },
    { driveType: "business", honorDeltaExcludeParent: false },
    { driveType: "personal", movedOutOfScope: "moved" },
    { driveType: "personal", movedOutOfScope: "deleted" },
    { driveType: "personal", movedOutOfScope: "moved", honorDeltaExcludeParent: false },
  ];
  for (const variant of variants) {
    it(`follows changes in picked folders, moves in, out and between them (${JSON.stringify(variant)})`, async () => {
      const graph = await startFake(variant);
      const ids = seed(graph);
      const boxes = graph.addFolder("Boxes");
      const box = graph.addFile("box.txt", "a box", { parentId: boxes });
      const sub = graph.addFolder("Sub", ids.archive);
      const s1 = graph.addFile("s1.txt", "sub one", { parentId: sub });
      const deep = graph.addFolder("Deep", sub);
      const s2 = graph.addFile("s2.txt", "sub two", { parentId: deep });
      const ctx = contextFor(graph, await connect(graph), { pageSize: 3 }, [
        folder(ids.projects),
        folder(boxes),
        file(ids.readme),
      ]);
      const engine = new Engine();
      await engine.sync(ctx);
      expect(engine.ids()).toEqual(sorted([ids.plan, ids.report, ids.notes, box, ids.readme]));

      graph.updateFile(ids.plan, "# Plan v2");
      const added = graph.addFile("added.txt", "new in 2024", { parentId: ids.y2024 });
      graph.remove(ids.report);
      graph.move(ids.notes, ids.archive); // out of the picks
      graph.move(ids.old, ids.projects); // in from outside
      graph.move(sub, ids.projects); // a folder in: its files are not in the delta, the connector walks it
      graph.move(box, ids.projects); // from one picked folder to another
      graph.updateFile(ids.readme, "read me again");
      const second = await engine.sync(ctx);
      expect(sorted(second.fetched)).toEqual(sorted([ids.plan, added, ids.old, s1, s2, ids.readme]));
      expect(sorted(second.deleted)).toEqual(sorted([ids.report, ids.notes]));
      expect(engine.ids()).toEqual(sorted([ids.plan, added, ids.old, s1, s2, box, ids.readme]));
      expect(engine.doc(s2).filepath).toBe("/Projects/Sub/Deep/");

      graph.move(ids.y2024, ids.archive); // a folder out: its files go
      graph.move(box, boxes); // back again: still picked
      graph.remove(ids.readme); // the picked file itself
      const third = await engine.sync(ctx);
      expect(sorted(third.deleted)).toEqual(sorted([added, ids.readme]));
      expect(third.fetched).toEqual([]);
      expect(engine.ids()).toEqual(sorted([ids.plan, ids.old, s1, s2, box]));

      expect(await engine.sync(ctx)).toMatchObject({ fetched: [], deleted: [] });
    });
  }

  for (const driveType of ["business", "personal"] as const) {
    it(`carries on with the other picks when a picked folder is deleted (${driveType})`, async () => {
      const graph = await startFake({ driveType });
      const ids = seed(graph);
      const ctx = contextFor(graph, await connect(graph), {}, [folder(ids.archive), folder(ids.projects)]);
      const engine = new Engine();
      await engine.sync(ctx);
      expect(engine.ids()).toEqual(sorted([ids.plan, ids.report, ids.notes, ids.old]));

      graph.remove(ids.archive);
      graph.updateFile(ids.plan, "# Plan v3");
      const second = await engine.sync(ctx);
      expect(second.fetched).toEqual([ids.plan]);
      if (driveType === "personal") {
        // Its own delta answers 404; its files keep their documents.
        expect(deltaRequests(graph).at(-2)).toMatchObject({ status: 404 });
        expect((engine.carry as { links: Record<string, string> }).links).not.toHaveProperty(ids.archive);
      } else {
        // The root's delta reports the folder's files deleted.
        expect(second.deleted).toEqual([ids.old]);
      }
    });
  }

  for (const driveType of ["business", "personal"] as const) {
    it(`removes what is no longer picked, keeps what another pick still covers, and switches scopes (${driveType})`, async () => {
      const graph = await startFake({ driveType });
      const ids = seed(graph);
      const session = await connect(graph);
      const extra = graph.addFile("extra.txt", "in archive", { parentId: ids.archive });
      const engine = new Engine();

      await engine.sync(
        contextFor(graph, session, {}, [
          folder(ids.projects),
          folder(ids.y2024),
          folder(ids.archive),
          file(ids.readme),
        ]),
      );
      expect(engine.ids()).toEqual(sorted([ids.plan, ids.report, ids.notes, ids.old, extra, ids.readme]));

      // 2024 is still under Projects; old.txt is picked on its own; Archive's other file and readme go.
      const narrowed = await engine.sync(
        contextFor(graph, session, {}, [folder(ids.projects), file(ids.old)]),
      );
      expect(sorted(narrowed.deleted)).toEqual(sorted([extra, ids.readme]));
      expect(narrowed.fetched).toEqual([]);
      expect(engine.ids()).toEqual(sorted([ids.plan, ids.report, ids.notes, ids.old]));

      // A folder picked again: its files come back (on a business drive the root's deltaLink does not list
      // them, so the connector walks the folder).
      const widened = await engine.sync(
        contextFor(graph, session, {}, [folder(ids.projects), file(ids.old), folder(ids.archive)]),
      );
      expect(widened).toMatchObject({ fetched: [extra], deleted: [] });

      // The whole drive: everything is in scope, nothing removed.
      const full = await engine.sync(contextFor(graph, session, { syncScope: "full" }));
      expect(full.deleted).toEqual([]);
      expect(full.fetched).toEqual([ids.readme]);

      // Back to one picked folder: the rest of the drive goes.
      const archiveOnly = await engine.sync(contextFor(graph, session, {}, [folder(ids.archive)]));
      expect(sorted(archiveOnly.deleted)).toEqual(sorted([ids.plan, ids.report, ids.notes, ids.readme]));
      expect(engine.ids()).toEqual(sorted([ids.old, extra]));
      expect(await engine.sync(contextFor(graph, session, {}, [folder(ids.archive)]))).toMatchObject({
        fetched: [],
        deleted: [],
      });
    });
  }
});

describe("onedrive connector: tokens and limits", () => {
  it("refreshes the access token once after a 401 and carries on", async () => {
    const graph = await startFake();
    const ids = seed(graph);
    const session = await connect(graph);
    const ctx = contextFor(graph, session, { syncScope: "full" });
    const engine = new Engine();
    await engine.sync(ctx);
    expect(session.refreshes()).toBe(0);

    graph.expireAccessTokens();
    graph.updateFile(ids.readme, "new words");
    const before = graph.requests.length;
    const second = await engine.sync(ctx);
    expect(second.fetched).toEqual([ids.readme]);
    expect(session.refreshes()).toBe(1);
    expect(graph.tokenRequests.map((t) => [t.grantType, t.status])).toEqual([
      ["authorization_code", 200],
      ["refresh_token", 200],
    ]);
    expect(graph.requests.slice(before).map((r) => r.status)).toContain(401);
  });

  it("reports a revoked grant as ConnectorAuthError", async () => {
    const graph = await startFake();
    const ids = seed(graph);
    const session = await connect(graph);
    const ctx = contextFor(graph, session, { syncScope: "full" });
    graph.revoke();
    const error = await rejection(
      onedriveConnector.listPage(ctx, await onedriveConnector.initialCursor(ctx, undefined)),
    );
    expect(error).toBeInstanceOf(ConnectorAuthError);
    expect(String((error as Error).message)).toMatch(/invalid_grant/);
    expect(graph.tokenRequests.at(-1)).toEqual({ grantType: "refresh_token", status: 400 });
    const item: SourceItem = { id: ids.readme, version: "x" };
    expect(await rejection(onedriveConnector.fetchItem(ctx, item))).toBeInstanceOf(ConnectorAuthError);
    expect(await rejection(onedriveConnector.browse?.(ctx, null) ?? Promise.resolve())).toBeInstanceOf(
      ConnectorAuthError,
    );

    const unauthorized = contextFor(graph, undefined, { syncScope: "full" });
    expect(
      await rejection(
        onedriveConnector.listPage(
          unauthorized,
          await onedriveConnector.initialCursor(unauthorized, undefined),
        ),
      ),
    ).toBeInstanceOf(ConnectorAuthError);
  });

  it("waits out a short 429 or 503 in place, and reports a long one as ConnectorRateLimitError", async () => {
    const graph = await startFake();
    seed(graph);
    const ctx = contextFor(graph, await connect(graph), { syncScope: "full" });
    const cursor = await onedriveConnector.initialCursor(ctx, undefined);

    await onedriveConnector.listPage(ctx, cursor);
    // Within a minute: the same request is sent again after the wait, and the page comes back.
    graph.rateLimitNext({ retryAfterSeconds: 1 });
    graph.rateLimitNext({ status: 503, retryAfterSeconds: 1 });
    const seen = graph.requests.length;
    const waited = await onedriveConnector.listPage(ctx, cursor);
    expect(waited.items.length).toBeGreaterThan(0);
    const sent = graph.requests.slice(seen).filter((r) => r.path.includes("/delta"));
    expect(sent.map((r) => r.status)).toEqual([429, 503, 200]);
    expect(new Set(sent.map((r) => r.path)).size).toBe(1);

    // Longer than the activity may wait: the engine's, with the wait Graph asked for, and the user's
    // other connections hold back too (no request is sent for them).
    graph.rateLimitNext({ retryAfterDate: new Date(Date.now() + 90_000) });
    const dated = (await rejection(onedriveConnector.listPage(ctx, cursor))) as ConnectorRateLimitError;
    expect(dated).toBeInstanceOf(ConnectorRateLimitError);
    expect(dated.retryAfterMs).toBeGreaterThan(80_000);
    expect(dated.retryAfterMs).toBeLessThanOrEqual(90_000);
    const sibling = contextFor(graph, await connect(graph), { syncScope: "full" });
    const before = graph.requests.filter((r) => r.path.includes("/delta")).length;
    const held = (await rejection(
      onedriveConnector.listPage(sibling, await onedriveConnector.initialCursor(sibling, undefined)),
    )) as ConnectorRateLimitError;
    expect(held).toBeInstanceOf(ConnectorRateLimitError);
    expect(held.retryAfterMs).toBeGreaterThan(60_000);
    expect(graph.requests.filter((r) => r.path.includes("/delta")).length).toBe(before);
  });
});

describe("onedrive connector: content and browsing", () => {
  it("downloads through /content (302 without the token, or the bytes) and after a download URL expired", async () => {
    for (const contentRedirect of [true, false]) {
      const graph = await startFake({ downloadUrls: false, contentRedirect });
      const ids = seed(graph);
      const ctx = contextFor(graph, await connect(graph), { syncScope: "full" });
      const doc = await onedriveConnector.fetchItem(ctx, { id: ids.notes, version: "v" });
      expect(doc?.file?.bytes.equals(PDF)).toBe(true);
      const content = graph.requests.find((r) => r.path.endsWith(`/items/${ids.notes}/content`));
      expect(content).toMatchObject({ authorized: true, status: contentRedirect ? 302 : 200 });
      const downloads = graph.requests.filter((r) => r.path.startsWith("/download/"));
      expect(downloads).toHaveLength(contentRedirect ? 1 : 0);
      expect(downloads.every((r) => !r.authorized)).toBe(true);
      await graph.stop();
      fake = undefined;
    }

    const graph = await startFake();
    const ids = seed(graph);
    const ctx = contextFor(graph, await connect(graph), { syncScope: "full" });
    const meta = await getItem(ctx, ids.plan);
    expect(meta?.["@microsoft.graph.downloadUrl"]).toMatch(/\/download\//);
    graph.expireDownloadUrls();
    const bytes = meta ? await downloadItem(ctx, meta, 1000) : null;
    expect(bytes?.toString()).toBe("# Plan\n\nShip it.");
    expect(graph.requests.map((r) => r.status)).toContain(401);
    // More bytes than allowed: the download stops there.
    const fresh = await getItem(ctx, ids.plan);
    expect(fresh ? await downloadItem(ctx, fresh, 5) : "no item").toBeNull();
  });

  it("skips one file with its reason (deleted, no permission, too large) and treats non-files as absent", async () => {
    const graph = await startFake();
    const ids = seed(graph);
    const ctx = contextFor(graph, await connect(graph), { syncScope: "full" });
    const reason = async (id: string) => {
      const error = await rejection(onedriveConnector.fetchItem(ctx, { id, version: "v" }));
      expect(error).toBeInstanceOf(ItemSkippedError);
      return (error as ItemSkippedError).reason;
    };
    graph.remove(ids.old);
    expect(await reason(ids.old)).toBe("not_found");
    graph.forbid(ids.notes);
    expect(await reason(ids.notes)).toBe("no_permission");
    expect(await reason(ids.huge)).toBe("too_large");
    expect(await onedriveConnector.fetchItem(ctx, { id: ids.projects, version: "v" })).toBeNull();
    expect(await onedriveConnector.fetchItem(ctx, { id: ids.notebook, version: "v" })).toBeNull();
    // Grown past the limit after listing.
    graph.updateFile(ids.plan, "x".repeat(1500));
    expect(await reason(ids.plan)).toBe("too_large");
  });

  for (const driveType of ["business", "personal"] as const) {
    it(`syncs the rest when one file answers 403 and another 404 after the listing (${driveType})`, async () => {
      const graph = await startFake({ driveType });
      const ids = seed(graph);
      const ctx = contextFor(graph, await connect(graph), {}, [folder(ids.projects), file(ids.readme)]);
      graph.afterListing(ids.report, "forbid");
      graph.afterListing(ids.plan, "remove");
      const engine = new Engine();
      const first = await engine.sync(ctx);
      expect(sorted(first.skipped.map((s) => `${s.id}:${s.reason}`))).toEqual(
        sorted([`${ids.report}:no_permission`, `${ids.plan}:not_found`]),
      );
      expect(engine.ids()).toEqual(sorted([ids.notes, ids.readme]));
      expect(graph.requests.filter((r) => r.status === 403)).toHaveLength(1);

      // A picked file the user can no longer read keeps its document; the next delta reports the deletion.
      graph.forbid(ids.readme);
      const second = await engine.sync(ctx);
      expect(second).toMatchObject({ fetched: [], deleted: [] });
      expect(engine.ids()).toEqual(sorted([ids.notes, ids.readme]));
    });
  }

  it("carries on with the other picks when a picked folder can no longer be read (personal)", async () => {
    const graph = await startFake({ driveType: "personal" });
    const ids = seed(graph);
    const ctx = contextFor(graph, await connect(graph), {}, [folder(ids.archive), folder(ids.projects)]);
    const engine = new Engine();
    await engine.sync(ctx);

    graph.forbid(ids.archive);
    graph.updateFile(ids.plan, "# Plan v4");
    const second = await engine.sync(ctx);
    expect(second).toMatchObject({ fetched: [ids.plan], deleted: [] });
    // Its files keep their documents; the connection is not treated as refused.
    expect(engine.ids()).toEqual(sorted([ids.plan, ids.report, ids.notes, ids.old]));
    expect(deltaRequests(graph).filter((r) => r.status === 403)).toHaveLength(1);
  });

  it("reports a 403 on the drive itself (its root, its delta) as ConnectorAuthError", async () => {
    const graph = await startFake();
    const ids = seed(graph);
    const session = await connect(graph);
    graph.denyDrive();
    for (const ctx of [
      contextFor(graph, session, { syncScope: "full" }),
      contextFor(graph, session, {}, [folder(ids.projects)]),
    ]) {
      const error = await rejection(
        onedriveConnector.listPage(ctx, await onedriveConnector.initialCursor(ctx, undefined)),
      );
      expect(error).toBeInstanceOf(ConnectorAuthError);
      expect(String((error as Error).message)).toMatch(/accessDenied/);
    }
    const verify = onedriveConnector.verify;
    if (!verify) throw new Error("the onedrive connector offers verify");
    expect(await rejection(verify(contextFor(graph, session)))).toBeInstanceOf(ConnectorAuthError);
    expect(
      await rejection(onedriveConnector.browse?.(contextFor(graph, session), null) ?? Promise.resolve()),
    ).toBeInstanceOf(ConnectorAuthError);
    // No token refresh for a 403: the token is fine, the drive is not readable.
    expect(session.refreshes()).toBe(0);
  });

  it("browses a folder: folders first, then files, by name; root for null; paged", async () => {
    const graph = await startFake();
    const ids = seed(graph);
    graph.addFolder("zeta", ids.projects);
    graph.addFile("Alpha.txt", "a", { parentId: ids.projects });
    const ctx = contextFor(graph, await connect(graph), { pageSize: 2 });
    const browse = onedriveConnector.browse;
    if (!browse) throw new Error("the onedrive connector offers browse");

    const root = await browse(ctx, null);
    expect(root).toEqual([
      { id: ids.archive, name: "Archive", kind: "folder" },
      { id: ids.projects, name: "Projects", kind: "folder" },
      { id: ids.huge, name: "huge.bin", kind: "file", mimeType: "application/octet-stream" },
      { id: ids.readme, name: "readme.txt", kind: "file", mimeType: "text/plain" },
    ]);
    expect(graph.requests.filter((r) => r.path.includes("/me/drive/root/children")).length).toBe(3);

    const projects = await browse(ctx, ids.projects);
    expect(projects.map((p) => [p.name, p.kind])).toEqual([
      ["2024", "folder"],
      ["zeta", "folder"],
      ["Alpha.txt", "file"],
      ["plan.md", "file"],
    ]);
    expect(await rejection(browse(ctx, "01NOSUCHFOLDER"))).toBeInstanceOf(ConnectorConfigError);
  });

  it("checks the drive when tokens exist and skips the check before the consent", async () => {
    const graph = await startFake();
    const verify = onedriveConnector.verify;
    if (!verify) throw new Error("the onedrive connector offers verify");
    await verify(contextFor(graph, undefined));
    expect(graph.requests).toEqual([]);
    await verify(contextFor(graph, await connect(graph)));
    // The user's id once (for the request budget its connections share), then the drive.
    expect(graph.requests.map((r) => [r.path, r.status])).toEqual([
      ["/v1.0/me?$select=id", 200],
      ["/v1.0/me/drive", 200],
    ]);
  });
});
