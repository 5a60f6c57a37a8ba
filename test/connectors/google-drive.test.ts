import { createHash, randomBytes } from "node:crypto";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ConnectorAuthError,
  ConnectorRateLimitError,
  ItemSkippedError,
  type SkipReason,
} from "../../connectors/errors.ts";
import {
  type DriveCarry,
  type DriveCursor,
  googleDriveConnector,
} from "../../connectors/google-drive/index.ts";
import {
  type GoogleDriveConfig,
  type GoogleDriveSecrets,
  googleDriveConfigSchema,
} from "../../connectors/google-drive/settings.ts";
import { driveCarrySchema } from "../../connectors/google-drive/sync.ts";
import type { FetchedItem, OAuthSession, PickedItem, SyncContext } from "../../connectors/types.ts";
import { extractPdf } from "../../pipeline/extract/pdf.ts";
import { EXPORT_LIMIT_BYTES, type FakeGoogle, FORM_MIME, startFakeGoogle } from "../support/fake-google.ts";

/** The fake's requests other than about.get, which the client sends once per token to find the user. */
function calls(google: FakeGoogle) {
  return google.requests.filter((r) => !r.path.startsWith("/drive/v3/about"));
}

type Ctx = SyncContext<GoogleDriveConfig, GoogleDriveSecrets>;

let fake: FakeGoogle;

beforeEach(async () => {
  fake = await startFakeGoogle();
});

afterEach(async () => {
  await fake.stop();
});

const REDIRECT_URI = "http://127.0.0.1:8787/v3/connections/oauth/callback";

/** What the engine would hold after the consent flow: tokens from the fake's token endpoint, refreshed through it. */
async function oauthSession(scope?: string): Promise<OAuthSession & { refreshes: () => number }> {
  const verifier = randomBytes(32).toString("base64url");
  const code = fake.issueCode({
    redirectUri: REDIRECT_URI,
    codeChallenge: createHash("sha256").update(verifier).digest("base64url"),
    ...(scope ? { scope } : {}),
  });
  const post = (form: Record<string, string>) =>
    fetch(fake.tokenUrl, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: fake.clientId, client_secret: fake.clientSecret, ...form }),
    });
  const first = await post({
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  });
  expect(first.status).toBe(200);
  const tokens = (await first.json()) as { access_token: string; refresh_token: string };
  let access = tokens.access_token;
  let refreshes = 0;
  return {
    accessToken: async () => access,
    refresh: async () => {
      refreshes++;
      const res = await post({ grant_type: "refresh_token", refresh_token: tokens.refresh_token });
      const body = (await res.json()) as { access_token?: string; error?: string };
      if (!res.ok || !body.access_token) throw new ConnectorAuthError(`refresh refused: ${body.error}`);
      access = body.access_token;
      return access;
    },
    refreshes: () => refreshes,
  };
}

interface LogLine {
  msg: string;
  [key: string]: unknown;
}

async function contextFor(
  metadata: Record<string, string | number> = {},
  selection?: PickedItem[],
): Promise<
  Ctx & { session: Awaited<ReturnType<typeof oauthSession>>; logs: LogLine[]; heartbeats: () => number }
> {
  const session = await oauthSession();
  const logs: LogLine[] = [];
  let beats = 0;
  return {
    connectionId: `conn_gdrive_${randomBytes(4).toString("hex")}`,
    config: googleDriveConfigSchema.parse(metadata),
    secrets: {},
    network: { allowPrivateNetwork: true, timeoutMs: 10_000, maxBytes: 1 << 24 },
    signal: new AbortController().signal,
    heartbeat: () => {
      beats++;
    },
    log: pino({ level: "info" }, { write: (line: string) => logs.push(JSON.parse(line)) }),
    oauth: session,
    ...(selection ? { selection } : {}),
    apiBaseUrl: fake.url,
    session,
    logs,
    heartbeats: () => beats,
  };
}

/** The engine's view of a connection: item versions and documents, and the carry of the last complete sync. */
class Mirror {
  versions = new Map<string, string>();
  docs = new Map<string, FetchedItem>();
  carry: DriveCarry | undefined;

  /** One sync as the engine runs it: pages until `next` is null, fetch changed items, apply deletions. */
  async sync(ctx: Ctx) {
    const listed: string[] = [];
    const deleted: string[] = [];
    const fetched: string[] = [];
    const skipped: Record<string, SkipReason> = {};
    let carry: unknown;
    let cursor: DriveCursor | null = await googleDriveConnector.initialCursor(ctx, this.carry);
    let pages = 0;
    while (cursor) {
      // The engine stores cursors as JSON between pages.
      const page = await googleDriveConnector.listPage(ctx, JSON.parse(JSON.stringify(cursor)));
      pages++;
      for (const item of page.items) {
        listed.push(item.id);
        if (this.versions.get(item.id) === item.version) continue;
        let doc: FetchedItem | null;
        try {
          doc = await googleDriveConnector.fetchItem(ctx, item);
        } catch (error) {
          // One item the source will not give: skipped with its reason, an earlier document kept.
          if (!(error instanceof ItemSkippedError)) throw error;
          skipped[item.id] = error.reason;
          continue;
        }
        fetched.push(item.id);
        if (!doc) continue;
        this.versions.set(item.id, item.version);
        this.docs.set(item.id, doc);
      }
      for (const id of page.deleted ?? []) {
        deleted.push(id);
        this.versions.delete(id);
        this.docs.delete(id);
      }
      if (page.carry !== undefined) carry = page.carry;
      cursor = page.next;
      if (pages > 500) throw new Error("the pass does not end");
    }
    expect(carry, "a completed pass hands over its position").toBeDefined();
    // Stored as JSON, and read back with the connector's schema (which must accept what it wrote).
    this.carry = driveCarrySchema.parse(JSON.parse(JSON.stringify(carry)));
    return { listed, deleted, fetched, skipped, pages };
  }

  ids(): string[] {
    return [...this.versions.keys()].sort();
  }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

const sorted = (ids: string[]) => [...ids].sort();

/** The text the extraction pipeline reads out of a PDF. */
async function pdfText(bytes: Buffer | undefined): Promise<string> {
  if (!bytes) throw new Error("no PDF");
  const result = await extractPdf(
    { bytes, mimeType: "application/pdf" },
    { heartbeat: () => {}, signal: new AbortController().signal },
  );
  return result.segments.map((segment) => segment.text).join("\n");
}

/** A My Drive with every kind of file the connector meets. */
function seedDrive() {
  const projects = fake.addFolder("Projects");
  const deep = fake.addFolder("Deep", projects);
  const archive = fake.addFolder("Archive");
  const ids = {
    projects,
    deep,
    archive,
    notes: fake.addFile({ name: "notes.txt", content: "Top-level notes" }),
    plan: fake.addDoc("Plan", "Roadmap\nShip the connector.\n", projects),
    budget: fake.addSheet("Budget", "item,cost\nlaptop,1200\n", projects),
    deck: fake.addSlides("Kickoff", "Welcome\n\nAgenda", projects),
    report: fake.addFile({
      name: "report.pdf",
      mimeType: "application/pdf",
      content: Buffer.from("%PDF-1.4 fake pdf bytes"),
      parent: projects,
    }),
    nested: fake.addFile({ name: "nested.md", mimeType: "text/markdown", content: "# Deep", parent: deep }),
    old: fake.addFile({ name: "old.txt", content: "archived", parent: archive }),
    huge: fake.addFile({
      name: "huge.bin",
      mimeType: "application/octet-stream",
      content: Buffer.alloc(5000, 1),
      parent: archive,
    }),
    form: fake.addFile({ name: "Survey", mimeType: FORM_MIME, parent: projects }),
    trashed: fake.addFile({ name: "gone.txt", content: "in the bin" }),
    shared: fake.addFile({ name: "shared.txt", content: "someone else's", sharedWithMe: true }),
  };
  fake.addShortcut("Plan shortcut", ids.plan);
  fake.trashFile(ids.trashed);
  return ids;
}

describe("google-drive connector", () => {
  it("declares its OAuth spec, settings and listing", () => {
    expect(googleDriveConnector.provider).toBe("google-drive");
    expect(googleDriveConnector.listing).toBe("delta");
    expect(googleDriveConnector.secretKeys).toEqual([]);
    expect(googleDriveConnector.defaultApiBaseUrl).toBe("https://www.googleapis.com");
    expect(googleDriveConnector.oauth).toMatchObject({
      authorizeUrl: "https://accounts.google.com/o/oauth2/v2/auth",
      tokenUrl: "https://oauth2.googleapis.com/token",
      scopes: ["https://www.googleapis.com/auth/drive.readonly"],
      pkce: true,
      tokenAuth: "body",
      authorizeParams: { access_type: "offline", prompt: "consent", include_granted_scopes: "true" },
      settingsPrefix: "googleDrive",
      envPrefix: "GOOGLE",
    });
    expect(googleDriveConfigSchema.parse({})).toEqual({
      syncScope: "selected",
      maxFileBytes: 50 * 1024 * 1024,
      pageSize: 100,
    });
    expect(googleDriveConfigSchema.parse({ syncScope: "full", maxFileBytes: "10", pageSize: "2" })).toEqual({
      syncScope: "full",
      maxFileBytes: 10,
      pageSize: 2,
    });
    expect(googleDriveConfigSchema.safeParse({ syncScope: "everything" }).success).toBe(false);
    expect(googleDriveConfigSchema.safeParse({ pageSize: 5000 }).success).toBe(false);
  });

  it("syncs all of My Drive on a first full sync, exporting Google files and downloading the others", async () => {
    const ids = seedDrive();
    const ctx = await contextFor({ syncScope: "full", maxFileBytes: 4096, pageSize: 2 });
    const mirror = new Mirror();
    const first = await mirror.sync(ctx);

    expect(mirror.ids()).toEqual(
      sorted([ids.notes, ids.plan, ids.budget, ids.deck, ids.report, ids.nested, ids.old]),
    );
    for (const id of mirror.ids()) expect(mirror.versions.get(id)).toBe(fake.versionOf(id));
    expect(first.pages).toBeGreaterThan(3);
    // Over maxFileBytes: listed, and refused by fetchItem so the run counts it.
    expect(first.skipped).toEqual({ [ids.huge]: "too_large" });
    expect(ctx.heartbeats()).toBeGreaterThan(0);

    expect(mirror.docs.get(ids.plan)).toEqual({
      title: "Plan",
      text: "Roadmap\nShip the connector.\n",
      url: `https://docs.google.com/document/d/${ids.plan}/edit?usp=drivesdk`,
      filepath: "/My Drive/Projects/",
      metadata: {
        mimeType: "application/vnd.google-apps.document",
        modifiedTime: fake.file(ids.plan).modifiedTime,
      },
    });
    const budget = mirror.docs.get(ids.budget);
    expect(budget).toMatchObject({
      title: "Budget",
      file: { name: "Budget.pdf", mimeType: "application/pdf" },
      url: `https://docs.google.com/spreadsheets/d/${ids.budget}/edit?usp=drivesdk`,
      metadata: { mimeType: "application/vnd.google-apps.spreadsheet" },
    });
    expect(await pdfText(budget?.file?.bytes)).toMatch(/laptop\s+1200/);
    expect(mirror.docs.get(ids.deck)).toMatchObject({ title: "Kickoff", text: "Welcome\n\nAgenda" });
    const report = mirror.docs.get(ids.report);
    expect(report?.text).toBeUndefined();
    expect(report?.file?.bytes.toString()).toBe("%PDF-1.4 fake pdf bytes");
    expect(report).toMatchObject({
      title: "report.pdf",
      file: { name: "report.pdf", mimeType: "application/pdf" },
      url: `https://drive.google.com/file/d/${ids.report}/view?usp=drivesdk`,
      filepath: "/My Drive/Projects/",
      metadata: { mimeType: "application/pdf" },
    });
    expect(mirror.docs.get(ids.nested)).toMatchObject({ filepath: "/My Drive/Projects/Deep/" });
    expect(mirror.docs.get(ids.notes)).toMatchObject({ filepath: "/My Drive/", file: { name: "notes.txt" } });

    // Every request went to the fake's API root, with the session's bearer token.
    const api = calls(fake).filter((r) => r.path.startsWith("/drive/v3/"));
    expect(api.length).toBeGreaterThan(10);
    expect(api.every((r) => /^Bearer ya29\./.test(r.authorization ?? ""))).toBe(true);
    const params = api.map((r) => new URL(r.path, fake.url).searchParams);
    expect(params.some((p) => p.get("alt") === "media")).toBe(true);
    const exports = api.filter((r) => r.path.includes("/export?")).map((r) => new URL(r.path, fake.url));
    expect(exports.map((u) => u.searchParams.get("mimeType")).sort()).toEqual([
      "application/pdf",
      "text/plain",
      "text/plain",
    ]);
    const listings = api
      .filter((r) => r.path.startsWith("/drive/v3/files?"))
      .map((r) => new URL(r.path, fake.url));
    expect(listings.every((u) => u.searchParams.get("pageSize") === "2")).toBe(true);
    expect(listings.some((u) => u.searchParams.has("pageToken"))).toBe(true);
    expect(listings[0]?.searchParams.get("q")).toBe(`'${fake.rootId}' in parents and trashed = false`);
    // The changes token is taken before anything is listed.
    expect(api[0]?.path).toMatch(/^\/drive\/v3\/changes\/startPageToken/);

    // A second sync with nothing changed reads the changes feed once and fetches nothing.
    const before = calls(fake).length;
    const second = await mirror.sync(ctx);
    expect(second).toMatchObject({ listed: [], deleted: [], fetched: [], pages: 1 });
    expect(
      calls(fake)
        .slice(before)
        .map((r) => r.path.split("?")[0]),
    ).toEqual(["/drive/v3/changes"]);
  });

  it("syncs only the picked files and folders (recursively), and nothing while none are picked", async () => {
    const ids = seedDrive();
    const none = await contextFor();
    const empty = new Mirror();
    const driveRequests = () => calls(fake).filter((r) => r.path.startsWith("/drive/"));
    expect(await empty.sync(none)).toMatchObject({ listed: [], deleted: [], pages: 1 });
    expect(driveRequests()).toEqual([]);
    // Nothing picked, nothing changes: still nothing to ask Google.
    await empty.sync(none);
    expect(driveRequests()).toEqual([]);

    const ctx = await contextFor({ pageSize: 3 }, [
      { id: ids.projects, name: "Projects", kind: "folder" },
      { id: ids.notes, name: "notes.txt", kind: "file" },
    ]);
    const mirror = new Mirror();
    await mirror.sync(ctx);
    expect(mirror.ids()).toEqual(sorted([ids.notes, ids.plan, ids.budget, ids.deck, ids.report, ids.nested]));
    expect(mirror.docs.get(ids.nested)?.filepath).toBe("/My Drive/Projects/Deep/");
    const carry = mirror.carry as DriveCarry;
    expect(carry.scope).toMatch(/^selected:/);
    expect(carry.folders).toEqual({ [ids.projects]: null, [ids.deep]: ids.projects });
    expect(carry.files).toEqual([ids.notes]);
    expect(carry.pageToken).toMatch(/^\d+$/);
  });

  it("follows changes in a selection: edits, new files and folders, deletions, trash, moves in and out", async () => {
    const ids = seedDrive();
    const other = fake.addFolder("Other");
    const outside = fake.addFile({ name: "outside.txt", content: "not picked", parent: other });
    const ctx = await contextFor({ pageSize: 2 }, [{ id: ids.projects, name: "Projects", kind: "folder" }]);
    const mirror = new Mirror();
    await mirror.sync(ctx);
    expect(mirror.ids()).toEqual(sorted([ids.plan, ids.budget, ids.deck, ids.report, ids.nested]));

    fake.updateFile(ids.plan, { content: "Roadmap v2" });
    const added = fake.addDoc("Minutes", "Decisions", ids.deep);
    const newFolder = fake.addFolder("Q3", ids.projects);
    const inNew = fake.addFile({ name: "q3.txt", content: "third quarter", parent: newFolder });
    fake.deleteFile(ids.budget);
    fake.trashFile(ids.deck);
    fake.moveFile(ids.report, other);
    fake.moveFile(outside, ids.projects);
    fake.updateFile(ids.old, { content: "changed outside the selection" });

    const second = await mirror.sync(ctx);
    expect(mirror.ids()).toEqual(sorted([ids.plan, ids.nested, added, inNew, outside]));
    expect(sorted([...new Set(second.fetched)])).toEqual(sorted([ids.plan, added, inNew, outside]));
    expect(mirror.docs.get(ids.plan)?.text).toBe("Roadmap v2");
    expect(mirror.docs.get(inNew)?.filepath).toBe("/My Drive/Projects/Q3/");
    expect(mirror.docs.get(outside)?.filepath).toBe("/My Drive/Projects/");
    expect(second.deleted).toEqual(expect.arrayContaining([ids.budget, ids.deck, ids.report]));
    expect((mirror.carry as DriveCarry).folders).toEqual({
      [ids.projects]: null,
      [ids.deep]: ids.projects,
      [newFolder]: ids.projects,
    });

    // A folder moved out takes its files (and subfolders) along; one moved in brings its own.
    const sub = fake.addFolder("Sub", ids.deep);
    const subFile = fake.addFile({ name: "sub.txt", content: "below deep", parent: sub });
    await mirror.sync(ctx);
    expect(mirror.ids()).toContain(subFile);
    fake.moveFile(ids.deep, other);
    const third = await mirror.sync(ctx);
    expect(mirror.ids()).toEqual(sorted([ids.plan, inNew, outside]));
    expect(third.deleted).toEqual(expect.arrayContaining([ids.nested, added, subFile]));
    expect(Object.keys((mirror.carry as DriveCarry).folders).sort()).toEqual(
      sorted([ids.projects, newFolder]),
    );

    fake.moveFile(other, newFolder);
    const fourth = await mirror.sync(ctx);
    expect(mirror.ids()).toEqual(sorted([ids.plan, inNew, outside, ids.report, ids.nested, added, subFile]));
    expect(sorted(fourth.fetched)).toEqual(sorted([ids.report, ids.nested, added, subFile]));
    expect(mirror.docs.get(ids.report)?.filepath).toBe("/My Drive/Projects/Q3/Other/");
    expect(mirror.docs.get(subFile)?.filepath).toBe("/My Drive/Projects/Q3/Other/Deep/Sub/");
    expect((mirror.carry as DriveCarry).folders).toEqual({
      [ids.projects]: null,
      [newFolder]: ids.projects,
      [other]: newFolder,
      [ids.deep]: other,
      [sub]: ids.deep,
    });
  });

  it("drops a trashed or deleted folder's files and takes in a restored selection", async () => {
    const ids = seedDrive();
    const ctx = await contextFor({ pageSize: 50 }, [{ id: ids.projects, name: "Projects", kind: "folder" }]);
    const mirror = new Mirror();
    await mirror.sync(ctx);
    fake.trashFile(ids.deep);
    await mirror.sync(ctx);
    expect(mirror.ids()).toEqual(sorted([ids.plan, ids.budget, ids.deck, ids.report]));
    expect((mirror.carry as DriveCarry).folders).toEqual({ [ids.projects]: null });

    fake.deleteFile(ids.projects);
    const gone = await mirror.sync(ctx);
    expect(mirror.ids()).toEqual([]);
    expect(gone.fetched).toEqual([]);
    expect((mirror.carry as DriveCarry).folders).toEqual({});
  });

  it("follows changes across all of My Drive, leaving out files only shared with the account", async () => {
    const ids = seedDrive();
    const ctx = await contextFor({ syncScope: "full", maxFileBytes: 4096, pageSize: 3 });
    const mirror = new Mirror();
    await mirror.sync(ctx);
    const before = mirror.ids();

    fake.updateFile(ids.notes, { content: "Edited notes", name: "notes-v2.txt" });
    const folder = fake.addFolder("New");
    const inFolder = fake.addDoc("Inside", "fresh", folder);
    const sharedNow = fake.addFile({ name: "shared-later.txt", content: "not mine", sharedWithMe: true });
    fake.trashFile(ids.archive);
    fake.deleteFile(ids.report);
    // Grown past maxFileBytes: skipped as too_large, the document of the earlier sync kept.
    fake.updateFile(ids.nested, { content: "x".repeat(5000) });

    const second = await mirror.sync(ctx);
    expect(mirror.ids()).toEqual(
      sorted([...before.filter((id) => ![ids.old, ids.report].includes(id)), inFolder]),
    );
    expect(mirror.ids()).not.toContain(sharedNow);
    expect(second.skipped).toEqual({ [ids.nested]: "too_large" });
    expect(mirror.docs.get(ids.nested)?.file?.bytes.toString()).toBe("# Deep");
    expect(sorted(second.fetched)).toEqual(sorted([ids.notes, inFolder]));
    expect(mirror.docs.get(ids.notes)).toMatchObject({
      title: "notes-v2.txt",
      file: { name: "notes-v2.txt" },
    });
    expect(mirror.docs.get(inFolder)).toMatchObject({ text: "fresh", filepath: "/My Drive/New/" });
    expect(second.deleted).toEqual(expect.arrayContaining([ids.old, ids.report, sharedNow]));
  });

  it("pages through the changes feed with small pages", async () => {
    const folder = fake.addFolder("Inbox");
    const ctx = await contextFor({ pageSize: 2 }, [{ id: folder, name: "Inbox", kind: "folder" }]);
    const mirror = new Mirror();
    await mirror.sync(ctx);
    const added = [1, 2, 3, 4, 5, 6, 7].map((n) =>
      fake.addFile({ name: `note-${n}.txt`, content: `note ${n}`, parent: folder }),
    );
    const start = calls(fake).length;
    const second = await mirror.sync(ctx);
    expect(mirror.ids()).toEqual(sorted(added));
    expect(second.pages).toBeGreaterThanOrEqual(4);
    const changePages = calls(fake)
      .slice(start)
      .filter((r) => r.path.startsWith("/drive/v3/changes?"))
      .map((r) => new URL(r.path, fake.url).searchParams);
    expect(changePages.length).toBe(4);
    expect(changePages.every((p) => p.get("pageSize") === "2")).toBe(true);
    // Each page starts where the one before ended.
    expect(new Set(changePages.map((p) => p.get("pageToken"))).size).toBe(4);
    expect((mirror.carry as DriveCarry).pageToken).toBe(String(Number(changePages[3]?.get("pageToken")) + 1));
  });

  it("lists the new scope and deletes what only the old one held when the selection or scope changes", async () => {
    const ids = seedDrive();
    const projects = { id: ids.projects, name: "Projects", kind: "folder" as const };
    const archive = { id: ids.archive, name: "Archive", kind: "folder" as const };
    const notes = { id: ids.notes, name: "notes.txt", kind: "file" as const };
    const small = { pageSize: 4, maxFileBytes: 4096 };
    const mirror = new Mirror();
    await mirror.sync(await contextFor(small, [projects, notes]));
    expect(mirror.ids()).toEqual(sorted([ids.notes, ids.plan, ids.budget, ids.deck, ids.report, ids.nested]));

    // Deep picked on its own, Projects and notes no longer: only Deep's file stays, Archive's join.
    const deep = { id: ids.deep, name: "Deep", kind: "folder" as const };
    const narrowed = await mirror.sync(await contextFor(small, [deep, archive]));
    expect(mirror.ids()).toEqual(sorted([ids.nested, ids.old]));
    expect(narrowed.fetched).toEqual([ids.old]);

    // All of My Drive: nothing to delete, the rest comes in.
    await mirror.sync(await contextFor({ ...small, syncScope: "full" }));
    expect(mirror.ids()).toEqual(
      sorted([ids.notes, ids.plan, ids.budget, ids.deck, ids.report, ids.nested, ids.old]),
    );

    // Back to a selection: everything outside it goes.
    await mirror.sync(await contextFor(small, [archive]));
    expect(mirror.ids()).toEqual([ids.old]);

    // Nothing picked: everything goes, and the empty selection is followed without asking Google.
    await mirror.sync(await contextFor(small, []));
    expect(mirror.ids()).toEqual([]);
    const count = calls(fake).length;
    await mirror.sync(await contextFor(small, []));
    expect(
      calls(fake)
        .slice(count)
        .filter((r) => r.path.startsWith("/drive/")),
    ).toEqual([]);
  });

  it("refreshes an expired access token once and carries on", async () => {
    const ids = seedDrive();
    const ctx = await contextFor({ pageSize: 10 }, [{ id: ids.projects, name: "Projects", kind: "folder" }]);
    const mirror = new Mirror();
    await mirror.sync(ctx);
    expect(ctx.session.refreshes()).toBe(0);

    fake.expireAccessTokens();
    fake.updateFile(ids.plan, { content: "after refresh" });
    await mirror.sync(ctx);
    expect(mirror.docs.get(ids.plan)?.text).toBe("after refresh");
    expect(ctx.session.refreshes()).toBe(1);
    expect(fake.tokenGrants.refresh_token).toBe(1);
    const statuses = calls(fake)
      .filter((r) => r.path.startsWith("/drive/"))
      .map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(1);

    // fetchItem and browse refresh the same way.
    fake.expireAccessTokens();
    expect(await googleDriveConnector.fetchItem(ctx, { id: ids.plan, version: "x" })).toMatchObject({
      text: "after refresh",
    });
    fake.expireAccessTokens();
    expect((await googleDriveConnector.browse?.(ctx, null))?.length).toBeGreaterThan(0);
    expect(ctx.session.refreshes()).toBe(3);
  });

  it("reports a revoked grant, or a token refused even after a refresh, as ConnectorAuthError", async () => {
    const ids = seedDrive();
    const ctx = await contextFor({ syncScope: "full" });
    const cursor = await googleDriveConnector.initialCursor(ctx);

    // An API that refuses the token even after a refresh that worked.
    const other = await startFakeGoogle();
    try {
      const elsewhere = { ...ctx, apiBaseUrl: other.url };
      expect(await rejection(googleDriveConnector.listPage(elsewhere, cursor))).toBeInstanceOf(
        ConnectorAuthError,
      );
      expect(ctx.session.refreshes()).toBe(1);
      expect(calls(other).map((r) => r.status)).toEqual([401, 401]);
    } finally {
      await other.stop();
    }

    fake.revoke();
    const listing = await rejection(googleDriveConnector.listPage(ctx, cursor));
    expect(listing).toBeInstanceOf(ConnectorAuthError);
    expect(
      await rejection(googleDriveConnector.fetchItem(ctx, { id: ids.notes, version: "1" })),
    ).toBeInstanceOf(ConnectorAuthError);
    expect(await rejection(googleDriveConnector.browse?.(ctx, null) ?? Promise.resolve())).toBeInstanceOf(
      ConnectorAuthError,
    );
    expect(await rejection(googleDriveConnector.verify?.(ctx) ?? Promise.resolve())).toBeInstanceOf(
      ConnectorAuthError,
    );
    expect(ctx.session.refreshes()).toBe(5);
  });

  it("stops with ConnectorAuthError when the grant lacks Drive access, but not for one refused file", async () => {
    const file = fake.addFile({ name: "a.txt", content: "A" });
    // Granular consent lets the user untick the Drive scope: the grant as a whole is of no use.
    const ctx = { ...(await contextFor({ syncScope: "full" })), oauth: await oauthSession("openid email") };
    const cursor = await googleDriveConnector.initialCursor(ctx);
    expect(await rejection(googleDriveConnector.listPage(ctx, cursor))).toBeInstanceOf(ConnectorAuthError);
    expect(await rejection(googleDriveConnector.fetchItem(ctx, { id: file, version: "1" }))).toBeInstanceOf(
      ConnectorAuthError,
    );
    expect(
      calls(fake)
        .filter((r) => r.path.startsWith("/drive/"))
        .map((r) => r.status),
    ).toEqual([403, 403]);
    // The same status for one file's content is that file's problem only.
    fake.refuseContent(file, "insufficientFilePermissions");
    const granted = await contextFor({ syncScope: "full" });
    expect(
      await rejection(googleDriveConnector.fetchItem(granted, { id: file, version: "1" })),
    ).toMatchObject({
      name: "ItemSkippedError",
      reason: "no_permission",
    });
  });

  it("waits out 429 and 403 rate limits in place, and hands a long one to the engine", async () => {
    seedDrive();
    const ctx = await contextFor({ syncScope: "full", pageSize: 50 });
    const cursor = await googleDriveConnector.initialCursor(ctx);
    const clean = await googleDriveConnector.listPage(ctx, cursor);

    // A 429 with Retry-After, then a 403 userRateLimitExceeded without (exponential backoff): the same
    // request goes again after each wait, and the page comes back whole.
    fake.rateLimitNext({ retryAfterSeconds: 1 });
    fake.rateLimitNext({ status: 403 });
    const start = calls(fake).length;
    const page = await googleDriveConnector.listPage(ctx, cursor);
    expect(page.items).toEqual(clean.items);
    const sent = calls(fake).slice(start);
    expect(sent.slice(0, 3).map((r) => r.status)).toEqual([429, 403, 200]);
    expect(new Set(sent.slice(0, 3).map((r) => r.path)).size).toBe(1);
    expect(sent.slice(3).every((r) => r.status === 200)).toBe(true);

    // Longer than an activity may wait: the engine's, and the user's other requests hold back meanwhile.
    fake.rateLimitNext({ retryAfterDate: new Date(Date.now() + 120_000).toUTCString() });
    const dated = (await rejection(googleDriveConnector.listPage(ctx, cursor))) as ConnectorRateLimitError;
    expect(dated).toBeInstanceOf(ConnectorRateLimitError);
    expect(dated.retryAfterMs).toBeGreaterThan(100_000);
    expect(dated.retryAfterMs).toBeLessThanOrEqual(120_000);
    const count = calls(fake).length;
    const held = (await rejection(googleDriveConnector.listPage(ctx, cursor))) as ConnectorRateLimitError;
    expect(held).toBeInstanceOf(ConnectorRateLimitError);
    expect(held.retryAfterMs).toBeGreaterThan(60_000);
    expect(calls(fake).length).toBe(count);
    expect(ctx.session.refreshes()).toBe(0);
  });

  it("browses folders and files inside a folder, folders first", async () => {
    const ids = seedDrive();
    const zeta = fake.addFolder("zeta", ids.projects);
    fake.addFolder("alpha", ids.projects);
    const ctx = await contextFor();
    const browse = googleDriveConnector.browse;
    if (!browse) throw new Error("google-drive offers browse");

    const root = await browse(ctx, null);
    expect(root).toEqual([
      { id: ids.archive, name: "Archive", kind: "folder", mimeType: "application/vnd.google-apps.folder" },
      { id: ids.projects, name: "Projects", kind: "folder", mimeType: "application/vnd.google-apps.folder" },
      { id: ids.notes, name: "notes.txt", kind: "file", mimeType: "text/plain" },
    ]);
    const inside = await browse(ctx, ids.projects);
    expect(inside.map((e) => [e.name, e.kind])).toEqual([
      ["alpha", "folder"],
      ["Deep", "folder"],
      ["zeta", "folder"],
      ["Budget", "file"],
      ["Kickoff", "file"],
      ["Plan", "file"],
      ["report.pdf", "file"],
    ]);
    expect(inside.find((e) => e.id === zeta)?.kind).toBe("folder");
    expect(await browse(ctx, zeta)).toEqual([]);
    const query = calls(fake)
      .filter((r) => r.path.startsWith("/drive/v3/files?"))
      .map((r) => new URL(r.path, fake.url).searchParams.get("q"));
    expect(query).toEqual([
      "'root' in parents and trashed = false",
      `'${ids.projects}' in parents and trashed = false`,
      `'${zeta}' in parents and trashed = false`,
    ]);
  });

  it("exports every tab of a Google Sheet, where CSV would have kept only the first", async () => {
    const sheet = fake.addSheet("Household", [
      { title: "Groceries", csv: "item,price\nbread,2\n" },
      { title: "Repairs", csv: 'job,cost\n"boiler service, annual",180\n' },
    ]);
    // What Drive documents and the fake does: CSV is the first sheet only.
    const token = await (await oauthSession()).accessToken();
    const csv = await fetch(`${fake.url}/drive/v3/files/${sheet}/export?mimeType=text/csv`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await csv.text()).toBe("item,price\nbread,2\n");

    const ctx = await contextFor({ syncScope: "full" });
    const mirror = new Mirror();
    await mirror.sync(ctx);
    const doc = mirror.docs.get(sheet);
    expect(doc?.file).toMatchObject({ name: "Household.pdf", mimeType: "application/pdf" });
    const text = await pdfText(doc?.file?.bytes);
    expect(text).toContain("bread");
    expect(text).toContain("boiler service, annual");
  });

  it("skips one file Google will not give with its reason, and syncs the others", async () => {
    const ok = fake.addFile({ name: "ok.txt", content: "Readable." });
    const big = fake.addDoc("Big export", "word ".repeat(Math.ceil(EXPORT_LIMIT_BYTES / 5) + 10));
    const locked = fake.addFile({ name: "locked.txt", content: "Viewers may not download." });
    fake.refuseContent(locked, "insufficientFilePermissions");
    const abusive = fake.addFile({ name: "flagged.exe", mimeType: "application/octet-stream", content: "x" });
    fake.refuseContent(abusive, "cannotDownloadAbusiveFile");
    // The owner turned off downloads for viewers; another domain's policy keeps this one from the user.
    const noDownload = fake.addFile({ name: "view-only.txt", content: "Viewers may only look." });
    fake.refuseContent(noDownload, "cannotDownloadFile");
    const policy = fake.addFile({ name: "partner.txt", content: "Kept in the partner's domain." });
    fake.refuseContent(policy, "domainPolicy");
    const racing = fake.addFile({ name: "racing.txt", content: "Deleted while the sync ran." });
    fake.deleteAfterListing(racing);

    // One file per page: the racing file is fetched before the changes feed reports it deleted.
    const ctx = await contextFor({ syncScope: "full", pageSize: 1 });
    const mirror = new Mirror();
    const run = await mirror.sync(ctx);
    expect(run.deleted).toContain(racing);
    expect(run.skipped).toEqual({
      [big]: "export_limit",
      [locked]: "no_permission",
      [abusive]: "no_permission",
      [noDownload]: "no_permission",
      [policy]: "no_permission",
      [racing]: "not_found",
    });
    expect(mirror.ids()).toEqual([ok]);
    // Google's own bodies came back (403 with the documented reasons, 404 for the racing one).
    const refusals = calls(fake)
      .filter((r) => r.status === 403)
      .map((r) => r.path.split("?")[0]);
    expect(refusals.sort()).toEqual(
      [
        `/drive/v3/files/${abusive}`,
        `/drive/v3/files/${big}/export`,
        `/drive/v3/files/${locked}`,
        `/drive/v3/files/${noDownload}`,
        `/drive/v3/files/${policy}`,
      ].sort(),
    );
    // The token was never doubted: no refresh for a per-file refusal.
    expect(ctx.session.refreshes()).toBe(0);
  });

  it("leaves shared drives out: Drive lists their files only to apps that ask for all drives", async () => {
    const mine = fake.addFile({ name: "mine.txt", content: "In My Drive." });
    const team = fake.addSharedDrive("Team");
    const teamFile = fake.addFile({ name: "team.txt", content: "In a shared drive.", parent: team });
    const ctx = await contextFor({ syncScope: "full" });
    const mirror = new Mirror();
    await mirror.sync(ctx);
    fake.updateFile(teamFile, { content: "Changed in the shared drive." });
    const second = await mirror.sync(ctx);
    expect(mirror.ids()).toEqual([mine]);
    expect(second.listed).toEqual([]);
    // The exclusion is the connector's choice: it never asks for other drives' items.
    const listings = calls(fake)
      .map((r) => new URL(r.path, fake.url))
      .filter((u) => u.pathname === "/drive/v3/files" || u.pathname === "/drive/v3/changes");
    expect(listings.some((u) => u.searchParams.has("includeItemsFromAllDrives"))).toBe(false);

    // The fake honours the parameters as documented: both flags, or the shared drive stays out of sight.
    const token = await ctx.session.accessToken();
    const names = async (query: string) => {
      const res = await fetch(`${fake.url}/drive/v3/files?${query}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return ((await res.json()) as { files: { name: string }[] }).files.map((f) => f.name).sort();
    };
    expect(await names("supportsAllDrives=true")).toEqual(["mine.txt"]);
    expect(await names("includeItemsFromAllDrives=true")).toEqual(["mine.txt"]);
    expect(await names("supportsAllDrives=true&includeItemsFromAllDrives=true&corpora=allDrives")).toEqual([
      "mine.txt",
      "team.txt",
    ]);
  });

  it("skips a file gone since it was listed as not_found, and verifies the connection", async () => {
    const ids = seedDrive();
    const ctx = await contextFor({ syncScope: "full" });
    await googleDriveConnector.verify?.(ctx);
    fake.deleteFile(ids.notes);
    expect(
      await rejection(googleDriveConnector.fetchItem(ctx, { id: ids.notes, version: "1" })),
    ).toMatchObject({
      name: "ItemSkippedError",
      reason: "not_found",
    });
    // Trashed: the changes feed reports it deleted, so the fetch has nothing to say.
    fake.trashFile(ids.plan);
    expect(await googleDriveConnector.fetchItem(ctx, { id: ids.plan, version: "1" })).toBeNull();
    // Before the consent flow there are no tokens: nothing to verify, but a sync cannot run.
    const { oauth: _, ...pending } = ctx;
    await expect(googleDriveConnector.verify?.(pending)).resolves.toBeUndefined();
    expect(
      await rejection(
        googleDriveConnector.listPage(pending, await googleDriveConnector.initialCursor(pending)),
      ),
    ).toBeInstanceOf(ConnectorAuthError);
  });

  it("answers the OAuth token endpoint as Google does", async () => {
    const post = (form: Record<string, string>, auth?: string) =>
      fetch(fake.tokenUrl, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          ...(auth ? { authorization: auth } : {}),
        },
        body: new URLSearchParams(form),
      });
    const client = { client_id: fake.clientId, client_secret: fake.clientSecret };
    const code = fake.issueCode({ redirectUri: REDIRECT_URI });
    const wrongClient = await post({
      ...client,
      client_secret: "nope",
      grant_type: "authorization_code",
      code,
    });
    expect(wrongClient.status).toBe(401);
    expect(await wrongClient.json()).toEqual({ error: "invalid_client", error_description: "Unauthorized" });

    const basic = `Basic ${Buffer.from(`${fake.clientId}:${fake.clientSecret}`).toString("base64")}`;
    const ok = await post({ grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI }, basic);
    expect(ok.status).toBe(200);
    const tokens = (await ok.json()) as Record<string, unknown>;
    expect(tokens).toEqual({
      access_token: expect.stringMatching(/^ya29\./),
      expires_in: 3599,
      refresh_token: expect.stringMatching(/^1\/\//),
      scope: "https://www.googleapis.com/auth/drive.readonly",
      token_type: "Bearer",
    });
    const reused = await post({
      ...client,
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT_URI,
    });
    expect(reused.status).toBe(400);
    expect(((await reused.json()) as { error: string }).error).toBe("invalid_grant");

    const verifier = randomBytes(32).toString("base64url");
    const pkce = fake.issueCode({ codeChallenge: createHash("sha256").update(verifier).digest("base64url") });
    const missing = await post({ ...client, grant_type: "authorization_code", code: pkce });
    expect(((await missing.json()) as { error: string }).error).toBe("invalid_grant");

    // The consent page redirects back with a code bound to the redirect and challenge it was given.
    const consent = new URL(fake.authorizeUrl);
    consent.search = new URLSearchParams({
      client_id: fake.clientId,
      redirect_uri: REDIRECT_URI,
      response_type: "code",
      scope: "https://www.googleapis.com/auth/drive.readonly",
      state: "s1",
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      code_challenge_method: "S256",
      access_type: "offline",
    }).toString();
    const redirect = await fetch(consent, { redirect: "manual" });
    expect(redirect.status).toBe(302);
    const back = new URL(redirect.headers.get("location") ?? "");
    expect(back.origin + back.pathname).toBe(REDIRECT_URI);
    expect(back.searchParams.get("state")).toBe("s1");
    expect(fake.authorizeRequests[0]?.get("access_type")).toBe("offline");
    const exchanged = await post({
      ...client,
      grant_type: "authorization_code",
      code: back.searchParams.get("code") ?? "",
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    });
    expect(exchanged.status).toBe(200);

    const refresh = await post({
      ...client,
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token as string,
    });
    expect(await refresh.json()).toEqual({
      access_token: expect.stringMatching(/^ya29\./),
      expires_in: 3599,
      scope: "https://www.googleapis.com/auth/drive.readonly",
      token_type: "Bearer",
    });
    fake.revoke();
    const refused = await post({
      ...client,
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token as string,
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: "invalid_grant",
      error_description: "Token has been expired or revoked.",
    });
  });
});
