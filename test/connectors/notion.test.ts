import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConnectorAuthError, ConnectorRateLimitError } from "../../connectors/errors.ts";
import {
  type BlockNode,
  blocksToMarkdown,
  richTextToMarkdown,
} from "../../connectors/notion/blocks-to-text.ts";
import { MAX_INLINE_RETRIES } from "../../connectors/notion/client.ts";
import { type NotionCursor, notionConnector, notionOAuth } from "../../connectors/notion/index.ts";
import {
  type NotionConfig,
  type NotionSecrets,
  notionConfigSchema,
} from "../../connectors/notion/settings.ts";
import { addRow, editVersion, SETTLE_MS } from "../../connectors/notion/sync.ts";
import { budgetFor, RequestBudget } from "../../connectors/request-budget.ts";
import type { OAuthSession, SourceItem, SyncContext } from "../../connectors/types.ts";
import {
  FAKE_NOTION_VERSION,
  type FakeBlock,
  type FakeNotion,
  type FakeRichText,
  startFakeNotion,
} from "../support/fake-notion.ts";

type Ctx = SyncContext<NotionConfig, NotionSecrets> & { heartbeats: () => number };

const REDIRECT_URI = "http://127.0.0.1:9/v3/connections/notion/callback";

let fake: FakeNotion;

beforeEach(async () => {
  fake = await startFakeNotion();
});

afterEach(async () => {
  await fake.stop();
});

function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;
}

async function tokenRequest(
  body: Record<string, string>,
  options: { secret?: string; form?: boolean } = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(fake.tokenUrl, {
    method: "POST",
    headers: {
      authorization: basic(fake.clientId, options.secret ?? fake.clientSecret),
      "content-type": options.form ? "application/x-www-form-urlencoded" : "application/json",
    },
    body: options.form ? new URLSearchParams(body).toString() : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/**
 * What the engine does: exchanges a consent code at the token endpoint, then hands out the access token
 * and refreshes it there when asked; a refused refresh is a ConnectorAuthError.
 */
async function oauthSession(): Promise<OAuthSession & { refreshes: () => number }> {
  const code = fake.issueCode(REDIRECT_URI);
  const granted = await tokenRequest({ grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI });
  if (granted.status !== 200) throw new Error(`token exchange failed: ${JSON.stringify(granted.json)}`);
  let access = granted.json.access_token as string;
  let refreshToken = granted.json.refresh_token as string | null;
  let refreshes = 0;
  return {
    accessToken: async () => access,
    refresh: async () => {
      refreshes++;
      if (!refreshToken) throw new ConnectorAuthError("Notion gave no refresh token");
      const answer = await tokenRequest({ grant_type: "refresh_token", refresh_token: refreshToken });
      if (answer.status !== 200) throw new ConnectorAuthError(`refresh refused: ${answer.json.error}`);
      access = answer.json.access_token as string;
      refreshToken = answer.json.refresh_token as string | null;
      return access;
    },
    refreshes: () => refreshes,
  };
}

function contextFor(metadata: Record<string, unknown>, oauth?: OAuthSession, signal?: AbortSignal): Ctx {
  let beats = 0;
  return {
    connectionId: "conn_notion_test",
    config: notionConfigSchema.parse(metadata),
    secrets: {},
    network: { allowPrivateNetwork: true, timeoutMs: 10_000, maxBytes: 1 << 24 },
    signal: signal ?? new AbortController().signal,
    heartbeat: () => {
      beats++;
    },
    heartbeats: () => beats,
    log: pino({ level: "silent" }),
    oauth,
    apiBaseUrl: fake.url,
  };
}

async function connected(metadata: Record<string, unknown> = {}): Promise<Ctx> {
  return contextFor(metadata, await oauthSession());
}

/** One complete pass the way the engine runs it. */
async function runPass(
  ctx: Ctx,
): Promise<{ versions: Map<string, string>; pages: number; items: SourceItem[] }> {
  const versions = new Map<string, string>();
  const items: SourceItem[] = [];
  let cursor: NotionCursor | null = await notionConnector.initialCursor(ctx);
  let pages = 0;
  while (cursor) {
    const page = await notionConnector.listPage(ctx, cursor);
    pages++;
    expect(page.deleted).toBeUndefined();
    for (const item of page.items) {
      expect(versions.has(item.id), `listed twice: ${item.id}`).toBe(false);
      versions.set(item.id, item.version);
      items.push(item);
    }
    // The cursor goes through Temporal as JSON between pages.
    cursor = JSON.parse(JSON.stringify(page.next)) as NotionCursor | null;
    if (pages > 200) throw new Error("pass does not end");
  }
  return { versions, pages, items };
}

async function fetchById(ctx: Ctx, items: SourceItem[], id: string) {
  const item = items.find((i) => i.id === id);
  if (!item) throw new Error(`not listed: ${id}`);
  return notionConnector.fetchItem(ctx, item);
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

/** A page exercising every block type the connector renders. */
function seedHandbook(): string {
  return fake.addPage({
    title: "Handbook",
    blocks: [
      { type: "heading_1", text: "Welcome" },
      {
        type: "paragraph",
        text: [
          "Read the ",
          { text: "rules ", bold: true },
          { text: "carefully", italic: true },
          " and run ",
          { text: "npm test", code: true },
          ", see ",
          { text: "the docs", href: "https://example.com/docs" },
          ".",
        ],
      },
      { type: "heading_2", text: "Lists" },
      {
        type: "bulleted_list_item",
        text: "Fruit",
        children: [
          {
            type: "bulleted_list_item",
            text: "Apple",
            children: [{ type: "bulleted_list_item", text: "Gala" }],
          },
          { type: "bulleted_list_item", text: "Pear" },
        ],
      },
      { type: "bulleted_list_item", text: "Vegetables" },
      {
        type: "numbered_list_item",
        text: "First",
        children: [{ type: "numbered_list_item", text: "Sub-step" }],
      },
      { type: "numbered_list_item", text: "Second" },
      { type: "heading_3", text: "Tasks" },
      { type: "to_do", text: "Ship it", checked: true },
      { type: "to_do", text: "Celebrate", children: [{ type: "paragraph", text: "with cake" }] },
      { type: "quote", text: "Simplicity is prerequisite for reliability." },
      { type: "code", text: 'const x = 1;\nconsole.log("x");', language: "javascript" },
      { type: "toggle", text: "Details", children: [{ type: "paragraph", text: "Hidden text" }] },
      { type: "callout", text: "Mind the gap", emoji: "💡" },
      { type: "divider" },
      { type: "equation", expression: "e = mc^2" },
      {
        type: "table",
        rows: [
          ["Name", "Role"],
          ["Ada", "Engineer"],
        ],
      },
      {
        type: "column_list",
        columns: [[{ type: "paragraph", text: "Left" }], [{ type: "paragraph", text: "Right" }]],
      },
      { type: "synced_block", children: [{ type: "paragraph", text: "Synced text" }] },
      { type: "bookmark", url: "https://example.com/blog", caption: "Our blog" },
      { type: "image", url: "https://cdn.example.com/diagram.png", caption: "Diagram" },
      { type: "image", url: "https://s3.notion.example/secret.png", caption: "Upload", hosted: true },
      { type: "table_of_contents" },
    ],
  });
}

const HANDBOOK_TEXT = `# Handbook

# Welcome

Read the **rules** _carefully_ and run \`npm test\`, see [the docs](https://example.com/docs).

## Lists

- Fruit
  - Apple
    - Gala
  - Pear
- Vegetables

1. First
   1. Sub-step
2. Second

### Tasks

- [x] Ship it
- [ ] Celebrate
  with cake

> Simplicity is prerequisite for reliability.

\`\`\`javascript
const x = 1;
console.log("x");
\`\`\`

▸ Details
  Hidden text

> 💡 Mind the gap

---

$$
e = mc^2
$$

| Name | Role |
| --- | --- |
| Ada | Engineer |

Left

Right

Synced text

[Our blog](https://example.com/blog)

[Diagram](https://cdn.example.com/diagram.png)

Upload

Page: Team`;

describe("notion connector", () => {
  it("declares the OAuth flow, the API root and its settings", () => {
    expect(notionConnector.provider).toBe("notion");
    expect(notionConnector.listing).toBe("full");
    expect(notionConnector.secretKeys).toEqual([]);
    expect(notionConnector.defaultApiBaseUrl).toBe("https://api.notion.com");
    expect(notionConnector.oauth).toBe(notionOAuth);
    expect(notionOAuth).toEqual({
      authorizeUrl: "https://api.notion.com/v1/oauth/authorize",
      tokenUrl: "https://api.notion.com/v1/oauth/token",
      scopes: [],
      pkce: false,
      tokenAuth: "basic",
      authorizeParams: { owner: "user", response_type: "code" },
      settingsPrefix: "notion",
      envPrefix: "NOTION",
    });
    expect(notionConfigSchema.parse({})).toEqual({ pageSize: 100, includeDatabases: true });
    expect(notionConfigSchema.parse({ pageSize: "5", includeDatabases: "false" })).toEqual({
      pageSize: 5,
      includeDatabases: false,
    });
    expect(notionConfigSchema.safeParse({ pageSize: 101 }).success).toBe(false);
    expect(notionConfigSchema.safeParse({ pageSize: 0 }).success).toBe(false);
    expect(notionConnector.secretsSchema.parse({})).toEqual({});
  });

  it("has a token endpoint that answers like Notion's: Basic client auth, single-use codes, rotating refresh tokens", async () => {
    // The consent page redirects back with a code and the state.
    const authorize = new URL(fake.authorizeUrl);
    for (const [key, value] of Object.entries({
      client_id: fake.clientId,
      redirect_uri: REDIRECT_URI,
      state: "xyz",
      ...notionOAuth.authorizeParams,
    })) {
      authorize.searchParams.set(key, value);
    }
    const consent = await fetch(authorize, { redirect: "manual" });
    expect(consent.status).toBe(302);
    const back = new URL(consent.headers.get("location") ?? "");
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT_URI);
    expect(back.searchParams.get("state")).toBe("xyz");
    const code = back.searchParams.get("code") ?? "";

    const wrongClient = await tokenRequest(
      { grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI },
      { secret: "nope" },
    );
    expect(wrongClient).toEqual({ status: 401, json: expect.objectContaining({ error: "invalid_client" }) });
    const wrongRedirect = await tokenRequest({
      grant_type: "authorization_code",
      code,
      redirect_uri: "http://127.0.0.1:9/elsewhere",
    });
    expect(wrongRedirect).toEqual({ status: 400, json: expect.objectContaining({ error: "invalid_grant" }) });

    // Form bodies are accepted as well as JSON.
    const granted = await tokenRequest(
      { grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI },
      { form: true },
    );
    expect(granted.status).toBe(200);
    expect(granted.json).toEqual({
      access_token: expect.any(String),
      token_type: "bearer",
      refresh_token: expect.any(String),
      bot_id: fake.botId,
      workspace_id: fake.workspaceId,
      workspace_name: fake.workspaceName,
      workspace_icon: null,
      owner: { type: "user", user: expect.objectContaining({ object: "user", type: "person" }) },
      duplicated_template_id: null,
      request_id: expect.any(String),
    });
    const reused = await tokenRequest({ grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI });
    expect(reused.status).toBe(400);

    const refreshed = await tokenRequest({
      grant_type: "refresh_token",
      refresh_token: granted.json.refresh_token as string,
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.json.access_token).not.toBe(granted.json.access_token);
    const again = await tokenRequest({
      grant_type: "refresh_token",
      refresh_token: granted.json.refresh_token as string,
    });
    expect(again).toEqual({ status: 400, json: expect.objectContaining({ error: "invalid_grant" }) });
  });

  it("lists pages, database rows and data sources with last_edited_time versions, through the configured API root", async () => {
    const handbook = seedHandbook();
    const team = fake.addPage({ title: "Team", parent: { pageId: handbook } });
    const { dataSourceId } = fake.addDataSource({
      title: "Tasks",
      description: "What we do next",
      columns: { Status: "status", Tags: "multi_select" },
    });
    const rowA = fake.addPage({
      title: "Write docs",
      parent: { dataSourceId },
      properties: { Status: { status: "In progress" } },
    });
    const rowB = fake.addPage({ title: "Fix bug", parent: { dataSourceId } });
    const ctx = await connected();

    const { versions } = await runPass(ctx);
    const rowsDigest = addRow(addRow(undefined, rowA, "Write docs"), rowB, "Fix bug");
    expect(Object.fromEntries(versions)).toEqual({
      [`page/${handbook}`]: fake.pageLastEditedTime(handbook),
      [`page/${team}`]: fake.pageLastEditedTime(team),
      [`page/${rowA}`]: fake.pageLastEditedTime(rowA),
      [`page/${rowB}`]: fake.pageLastEditedTime(rowB),
      [`data_source/${dataSourceId}`]: `${fake.dataSourceLastEditedTime(dataSourceId)}|rows ${rowsDigest}`,
    });
    // The digest does not depend on the order rows are met in.
    expect(addRow(addRow(undefined, rowB, "Fix bug"), rowA, "Write docs")).toBe(rowsDigest);
    // Every request went to the fake (apiBaseUrl), under /v1/, with a bearer token and Notion-Version.
    expect(fake.requests.filter((r) => r.path === "/v1/search").map((r) => r.status)).toEqual([200, 200]);
    expect(fake.requests.find((r) => r.path === "/v1/search")?.body).toEqual({
      filter: { property: "object", value: "page" },
      sort: { timestamp: "last_edited_time", direction: "ascending" },
      page_size: 100,
    });
    expect(
      new Set(
        fake.requests
          .filter((r) => r.path.startsWith("/v1/") && !r.path.startsWith("/v1/oauth/"))
          .map((r) => r.notionVersion),
      ),
    ).toEqual(new Set([FAKE_NOTION_VERSION]));
    expect(ctx.heartbeats()).toBeGreaterThan(0);
  });

  it("turns a page's blocks into Markdown-like text: headings, nested lists, to-dos, quotes, code, toggles, tables", async () => {
    const handbook = seedHandbook();
    const team = fake.addPage({
      title: "Team",
      parent: { pageId: handbook },
      blocks: [{ type: "paragraph", text: "Team page body" }],
    });
    const ctx = await connected();
    const { items } = await runPass(ctx);

    const fetched = await fetchById(ctx, items, `page/${handbook}`);
    expect(fetched).toEqual({
      title: "Handbook",
      text: HANDBOOK_TEXT,
      url: fake.pageUrl(handbook),
      metadata: {
        lastEditedTime: fake.pageLastEditedTime(handbook),
        parentType: "workspace",
        notionId: handbook,
        objectType: "page",
      },
    });
    // The sub-page is its own document, not inlined into its parent.
    expect(fetched?.text).not.toContain("Team page body");
    const sub = await fetchById(ctx, items, `page/${team}`);
    expect(sub).toMatchObject({
      title: "Team",
      text: "# Team\n\nTeam page body",
      metadata: { parentType: "page_id" },
    });
  });

  it("renders rows with their properties and a database as its title, columns and row titles", async () => {
    const { dataSourceId } = fake.addDataSource({
      title: "Roadmap",
      description: "Q3 plans",
      titleProperty: "Task",
      columns: { Status: "status", Tags: "multi_select", Due: "date", Points: "number", Done: "checkbox" },
    });
    const row = fake.addPage({
      title: "Launch",
      parent: { dataSourceId },
      properties: {
        Status: { status: "Planned" },
        Tags: { multi_select: ["web", "mobile"] },
        Due: { date: "2024-07-01" },
        Points: { number: 5 },
        Done: { checkbox: false },
      },
      blocks: [{ type: "paragraph", text: "Launch checklist" }],
    });
    fake.addPage({ title: "Retro", parent: { dataSourceId } });
    const ctx = await connected();
    const { items } = await runPass(ctx);

    const launch = await fetchById(ctx, items, `page/${row}`);
    expect(launch?.text).toBe(
      "# Launch\n\nStatus: Planned\nTags: web, mobile\nDue: 2024-07-01\nPoints: 5\nDone: No\n\nLaunch checklist",
    );
    expect(launch?.metadata).toMatchObject({ parentType: "data_source_id" });

    const database = await fetchById(ctx, items, `data_source/${dataSourceId}`);
    expect(database).toEqual({
      title: "Roadmap",
      text: "# Roadmap\n\nQ3 plans\n\nColumns: Task, Status, Tags, Due, Points, Done\n\n- Retro\n- Launch",
      url: expect.stringMatching(/^https:\/\/www\.notion\.so\/[0-9a-f]{32}$/),
      metadata: {
        lastEditedTime: fake.dataSourceLastEditedTime(dataSourceId),
        parentType: "workspace",
        notionId: dataSourceId,
        objectType: "data_source",
        rowCount: 2,
      },
    });
  });

  it("reads property values past Notion's 25 references through the property item endpoint", async () => {
    const { dataSourceId } = fake.addDataSource({
      title: "Meetings",
      columns: { Notes: "rich_text", Attendees: "people", Related: "relation", Room: "select" },
    });
    const people = Array.from({ length: 30 }, (_, i) => `Person ${i + 1}`);
    const notes: FakeRichText[] = ["Present: "];
    for (const name of people) notes.push({ mention: "user", name }, " ");
    const title: FakeRichText[] = ["Sync with "];
    for (let i = 1; i <= 27; i++) title.push({ mention: "page", name: `Team ${i}` }, " ");
    const targets = Array.from({ length: 30 }, (_, i) => fake.addPage({ title: `Target ${i}` }));
    const row = fake.addPage({
      title,
      parent: { dataSourceId },
      properties: {
        Notes: { rich_text: notes },
        Attendees: { people },
        Related: { relation: targets },
        Room: { select: "Blue" },
      },
    });
    const small = fake.addPage({
      title: "Small",
      parent: { dataSourceId },
      properties: { Attendees: { people: ["Ada"] } },
    });

    // What Retrieve a page gives: each value cut at 25 references, a relation saying it has more.
    const ctx = await connected({ pageSize: 10 });
    const { items } = await runPass(ctx);
    const token = await (ctx.oauth as OAuthSession).accessToken();
    const raw = (await (
      await fetch(`${fake.url}/v1/pages/${row}`, {
        headers: { authorization: `Bearer ${token}`, "notion-version": FAKE_NOTION_VERSION },
      })
    ).json()) as { properties: Record<string, Record<string, unknown>> };
    const mentions = (runs: unknown) =>
      (runs as { type: string }[]).filter((r) => r.type === "mention").length;
    expect(mentions(raw.properties.Notes?.rich_text)).toBe(25);
    expect(mentions(raw.properties.Name?.title)).toBe(25);
    expect(raw.properties.Attendees?.people).toHaveLength(25);
    expect(raw.properties.Related).toMatchObject({ has_more: true });
    expect(raw.properties.Related?.relation).toHaveLength(25);

    fake.requests.length = 0;
    const fetched = await fetchById(ctx, items, `page/${row}`);
    expect(fetched?.title).toBe(
      `Sync with ${Array.from({ length: 27 }, (_, i) => `Team ${i + 1}`).join(" ")}`,
    );
    expect(fetched?.text).toContain(`Attendees: ${people.join(", ")}`);
    expect(fetched?.text).toContain(`Notes: Present: ${people.map((p) => `@${p}`).join(" ")}`);
    expect(fetched?.text).toContain("Room: Blue");
    // Title, notes and attendees each paged through (30 or more references, 10 a page); the relation is
    // not rendered, so it is not fetched.
    const propertyCalls = fake.requests.filter((r) => r.path.includes("/properties/"));
    expect(propertyCalls.every((r) => r.status === 200)).toBe(true);
    expect(new Set(propertyCalls.map((r) => r.path)).size).toBe(3);
    expect(propertyCalls.length).toBeGreaterThanOrEqual(9);

    fake.requests.length = 0;
    expect((await fetchById(ctx, items, `page/${small}`))?.text).toContain("Attendees: Ada");
    expect(fake.requests.filter((r) => r.path.includes("/properties/"))).toEqual([]);
  });

  it("pages through search, block children and database queries with small page sizes", async () => {
    const ids: string[] = [];
    for (let i = 1; i <= 7; i++) ids.push(fake.addPage({ title: `Note ${i}` }));
    const long = fake.addPage({
      title: "Long",
      blocks: [
        ...Array.from({ length: 5 }, (_, i) => ({ type: "paragraph" as const, text: `Paragraph ${i + 1}` })),
        {
          type: "bulleted_list_item",
          text: "Parent",
          children: Array.from({ length: 3 }, (_, i) => ({
            type: "bulleted_list_item" as const,
            text: `Child ${i + 1}`,
          })),
        },
      ],
    });
    const { dataSourceId } = fake.addDataSource({ title: "Big table" });
    for (let i = 1; i <= 5; i++) fake.addPage({ title: `Row ${i}`, parent: { dataSourceId } });
    const ctx = await connected({ pageSize: 2 });

    const { versions, items, pages } = await runPass(ctx);
    // 7 notes + Long + 5 rows = 13 pages → 7 search pages, then one for the data source.
    expect(versions.size).toBe(14);
    expect(pages).toBe(8);
    const searches = fake.requests.filter((r) => r.path === "/v1/search");
    expect(searches).toHaveLength(8);
    expect(searches.every((r) => (r.body as { page_size: number }).page_size === 2)).toBe(true);
    expect(searches.filter((r) => (r.body as { start_cursor?: string }).start_cursor).length).toBe(6);

    const before = fake.requests.length;
    const text = (await fetchById(ctx, items, `page/${long}`))?.text;
    expect(text).toBe(
      "# Long\n\nParagraph 1\n\nParagraph 2\n\nParagraph 3\n\nParagraph 4\n\nParagraph 5\n\n- Parent\n  - Child 1\n  - Child 2\n  - Child 3",
    );
    const childrenCalls = fake.requests.slice(before).filter((r) => r.path.endsWith("/children"));
    // 6 top-level blocks in pages of 2, then 3 nested in pages of 2.
    expect(childrenCalls).toHaveLength(5);

    const table = await fetchById(ctx, items, `data_source/${dataSourceId}`);
    expect(table?.text).toBe("# Big table\n\nColumns: Name\n\n- Row 5\n- Row 4\n- Row 3\n- Row 2\n- Row 1");
    expect(fake.requests.filter((r) => r.path.endsWith("/query"))).toHaveLength(3);
  });

  it("gives an edited page a new version, drops a trashed page from the listing and keeps the rest unchanged", async () => {
    const stable = fake.addPage({ title: "Stable", blocks: [{ type: "paragraph", text: "same" }] });
    const edited = fake.addPage({ title: "Edited", blocks: [{ type: "paragraph", text: "v1" }] });
    const trashed = fake.addPage({ title: "Trashed" });
    const { dataSourceId } = fake.addDataSource({ title: "Board" });
    const card = fake.addPage({ title: "Card", parent: { dataSourceId } });
    const ctx = await connected();
    const first = await runPass(ctx);

    fake.editPage(edited, { blocks: [{ type: "paragraph", text: "v2" }] });
    fake.trashPage(trashed);
    // A row's content changes its own version, not its database's (whose document names rows only).
    fake.editPage(card, { blocks: [{ type: "paragraph", text: "details" }] });
    const second = await runPass(ctx);

    expect(second.versions.get(`page/${stable}`)).toBe(first.versions.get(`page/${stable}`));
    expect(second.versions.get(`page/${edited}`)).not.toBe(first.versions.get(`page/${edited}`));
    expect(second.versions.get(`page/${edited}`)).toBe(fake.pageLastEditedTime(edited));
    expect(second.versions.get(`page/${card}`)).not.toBe(first.versions.get(`page/${card}`));
    expect(second.versions.get(`data_source/${dataSourceId}`)).toBe(
      first.versions.get(`data_source/${dataSourceId}`),
    );
    expect(second.versions.has(`page/${trashed}`)).toBe(false);
    expect((await fetchById(ctx, second.items, `page/${edited}`))?.text).toBe("# Edited\n\nv2");

    // A search index that still returns the trashed page (in_trash: true) does not bring it back.
    fake.setSearchReturnsTrashed(true);
    const third = await runPass(ctx);
    expect(third.versions.has(`page/${trashed}`)).toBe(false);
    // A page trashed between listing and fetching is absent, not an empty document.
    fake.trashPage(stable);
    expect(await fetchById(ctx, third.items, `page/${stable}`)).toBeNull();
    // So is one the integration can no longer see (404).
    expect(
      await notionConnector.fetchItem(ctx, { id: "page/00000000-0000-4000-8000-000000000000", version: "x" }),
    ).toBeNull();

    // Adding and renaming rows changes the database's version.
    fake.setSearchReturnsTrashed(false);
    fake.addPage({ title: "New card", parent: { dataSourceId } });
    const fourth = await runPass(ctx);
    expect(fourth.versions.get(`data_source/${dataSourceId}`)).not.toBe(
      third.versions.get(`data_source/${dataSourceId}`),
    );
    fake.editPage(card, { title: "Card (renamed)" });
    const fifth = await runPass(ctx);
    expect(fifth.versions.get(`data_source/${dataSourceId}`)).not.toBe(
      fourth.versions.get(`data_source/${dataSourceId}`),
    );
    // A trashed database is no longer listed.
    fake.trashDataSource(dataSourceId);
    expect((await runPass(ctx)).versions.has(`data_source/${dataSourceId}`)).toBe(false);
  });

  it("marks versions of pages edited within the last minutes so they are fetched again once settled", async () => {
    const t = "2024-05-01T10:00:00.000Z";
    const at = Date.parse(t);
    expect(editVersion(t, at + 30_000)).toBe(`${t}~settling`);
    expect(editVersion(t, at + SETTLE_MS - 1)).toBe(`${t}~settling`);
    expect(editVersion(t, at + SETTLE_MS)).toBe(t);

    fake.setTime(new Date());
    const fresh = fake.addPage({ title: "Just edited" });
    fake.setTime(null);
    const old = fake.addPage({ title: "Old" });
    const ctx = await connected();
    const { versions } = await runPass(ctx);
    expect(versions.get(`page/${fresh}`)).toBe(`${fake.pageLastEditedTime(fresh)}~settling`);
    expect(versions.get(`page/${old}`)).toBe(fake.pageLastEditedTime(old));
  });

  it("leaves databases out when includeDatabases is false", async () => {
    const page = fake.addPage({ title: "Plain" });
    const { dataSourceId } = fake.addDataSource({ title: "Tasks" });
    fake.addPage({ title: "Row", parent: { dataSourceId } });
    const ctx = await connected({ includeDatabases: false });
    const { versions } = await runPass(ctx);
    expect([...versions.keys()]).toEqual([`page/${page}`]);
    expect(fake.requests.filter((r) => r.path === "/v1/search")).toHaveLength(1);
  });

  it("keeps what an incomplete search did not list instead of letting it be deleted", async () => {
    for (let i = 1; i <= 4; i++) fake.addPage({ title: `Page ${i}` });
    fake.setSearchResultLimit(3);
    const ctx = await connected({ pageSize: 2, includeDatabases: false });
    const first = await notionConnector.listPage(ctx, await notionConnector.initialCursor(ctx));
    expect(first.items).toHaveLength(2);
    expect(first.unchanged).toBeUndefined();
    const second = await notionConnector.listPage(ctx, first.next as NotionCursor);
    expect(second.items).toHaveLength(1);
    expect(second.unchanged).toEqual(["page/"]);
    expect(second.next).toBeNull();
  });

  it("meets a search that leaves out pages below the shared roots and shows new ones late, as documented", async () => {
    const root = fake.addPage({ title: "Wiki" });
    const children = Array.from({ length: 12 }, (_, i) =>
      fake.addPage({ title: `Topic ${i + 1}`, parent: { pageId: root } }),
    );
    fake.setSearchIndexing({ delaySearches: 2, dropFraction: 0.25, seed: 7 });
    const late = fake.addPage({ title: "Fresh", parent: { pageId: root } });
    const ctx = await connected({ includeDatabases: false });

    const passes: Set<string>[] = [];
    for (let i = 0; i < 4; i++) passes.push(new Set((await runPass(ctx)).versions.keys()));
    // The root, shared directly, is in every pass.
    for (const pass of passes) expect(pass.has(`page/${root}`)).toBe(true);
    // A new page is not in the index for the first two searches, then it is (when not dropped).
    expect(passes[0]?.has(`page/${late}`)).toBe(false);
    expect(passes[1]?.has(`page/${late}`)).toBe(false);
    expect(passes.slice(2).some((pass) => pass.has(`page/${late}`))).toBe(true);
    // Each pass misses some pages that are there all along, and not always the same ones.
    const missed = passes.map((pass) => children.filter((id) => !pass.has(`page/${id}`)));
    expect(missed.every((m) => m.length > 0 && m.length < children.length)).toBe(true);
    expect(new Set(missed.map((m) => m.join())).size).toBeGreaterThan(1);
    // A connection that trusted one pass would lose pages that still exist; together the passes hold them all.
    const seen = new Set(passes.flatMap((pass) => [...pass]));
    for (const id of children) expect(seen.has(`page/${id}`)).toBe(true);

    fake.setSearchIndexing(null);
    expect((await runPass(ctx)).versions.size).toBe(children.length + 2);
  });

  it("starts a phase over when Notion no longer takes its search cursor", async () => {
    const a = fake.addPage({ title: "A" });
    const b = fake.addPage({ title: "B" });
    const ctx = await connected({ includeDatabases: false });
    const page = await notionConnector.listPage(ctx, { phase: "pages", start: "expired-cursor", rows: {} });
    expect(page.items.map((i) => i.id)).toEqual([`page/${a}`, `page/${b}`]);
    expect(page.next).toBeNull();
    expect(fake.requests.filter((r) => r.path === "/v1/search").map((r) => r.status)).toEqual([400, 200]);
  });

  it("refreshes an expired token once and goes on", async () => {
    const page = fake.addPage({ title: "Doc", blocks: [{ type: "paragraph", text: "body" }] });
    const oauth = await oauthSession();
    const ctx = contextFor({}, oauth);
    const { items } = await runPass(ctx);
    fake.expireAccessTokens();
    expect((await fetchById(ctx, items, `page/${page}`))?.text).toBe("# Doc\n\nbody");
    expect(oauth.refreshes()).toBe(1);
    expect(fake.requests.filter((r) => r.status === 401)).toHaveLength(1);
    // The new token keeps working.
    await runPass(ctx);
    expect(oauth.refreshes()).toBe(1);
  });

  it("reports ConnectorAuthError when the refresh is refused or the refreshed token is refused too", async () => {
    fake.addPage({ title: "Doc" });
    const oauth = await oauthSession();
    const ctx = contextFor({}, oauth);
    fake.revoke();
    const revoked = await rejection(runPass(ctx));
    expect(revoked).toBeInstanceOf(ConnectorAuthError);
    expect(oauth.refreshes()).toBe(1);

    // A refresh that "works" but yields a token Notion still refuses: one retry, then auth error.
    let refreshes = 0;
    const stubborn = contextFor(
      {},
      {
        accessToken: async () => "ntn_invalid",
        refresh: async () => {
          refreshes++;
          return "ntn_still_invalid";
        },
      },
    );
    const refused = await rejection(runPass(stubborn));
    expect(refused).toBeInstanceOf(ConnectorAuthError);
    expect((refused as Error).message).toMatch(/Notion refused the token/);
    expect(refreshes).toBe(1);

    // No tokens at all (the consent flow never finished).
    expect(await rejection(runPass(contextFor({})))).toBeInstanceOf(ConnectorAuthError);
  });

  it("reports ConnectorAuthError for classic tokens without a refresh token once Notion refuses them", async () => {
    await fake.stop();
    fake = await startFakeNotion({ issueRefreshTokens: false });
    fake.addPage({ title: "Doc" });
    const oauth = await oauthSession();
    const ctx = contextFor({}, oauth);
    expect((await runPass(ctx)).versions.size).toBe(1);
    fake.expireAccessTokens();
    expect(await rejection(runPass(ctx))).toBeInstanceOf(ConnectorAuthError);
    expect(oauth.refreshes()).toBe(1);
  });

  it("waits out a 429 for the one request and goes on with the block walk where it was", async () => {
    const blocks: FakeBlock[] = [];
    for (let i = 1; i <= 6; i++) {
      blocks.push({
        type: "bulleted_list_item",
        text: `Item ${i}`,
        children: [{ type: "paragraph", text: `Note ${i}` }],
      });
    }
    const page = fake.addPage({ title: "Long", blocks });
    const ctx = await connected({ pageSize: 2 });
    const item = { id: `page/${page}`, version: "x" };
    const clean = await notionConnector.fetchItem(ctx, item);
    const reads = () =>
      fake.requests
        .filter((r) => r.status === 200 && r.path.startsWith("/v1/") && !r.path.startsWith("/v1/oauth"))
        .map((r) => `${r.method} ${r.path} ${r.query}`);
    const read = reads();
    fake.requests.length = 0;

    // The page, then three pages of top-level blocks, then the nested ones: 429 on the fifth request.
    fake.rateLimitNext({ after: 4, retryAfterSeconds: 1 });
    const again = await notionConnector.fetchItem(ctx, item);
    expect(again).toEqual(clean);
    expect(fake.requests.map((r) => r.status).filter((s) => s === 429)).toHaveLength(1);
    const limited = fake.requests.findIndex((r) => r.status === 429);
    // The request that got 429 is sent again once, and nothing read before it is read twice.
    expect(`${fake.requests[limited + 1]?.method} ${fake.requests[limited + 1]?.path}`).toBe(
      `${fake.requests[limited]?.method} ${fake.requests[limited]?.path}`,
    );
    expect(reads()).toEqual(read);
  });

  it("retries a 502 or 503 in place with backoff, and hands a persistent one to the engine", async () => {
    const page = fake.addPage({ title: "Doc", blocks: [{ type: "paragraph", text: "Body" }] });
    const ctx = await connected();
    const item = { id: `page/${page}`, version: "x" };
    const clean = await notionConnector.fetchItem(ctx, item);
    fake.requests.length = 0;
    // The page loads, then its blocks answer 503 and then 502: both retried, the page is read once.
    fake.rateLimitNext({ after: 1, status: 503 });
    const first = await notionConnector.fetchItem(ctx, item);
    expect(first).toEqual(clean);
    expect(fake.requests.map((r) => r.status)).toEqual([200, 503, 200]);
    expect(fake.requests[1]?.path).toBe(fake.requests[2]?.path);
    fake.requests.length = 0;
    fake.rateLimitNext({ status: 502 });
    expect(await notionConnector.fetchItem(ctx, item)).toEqual(clean);
    expect(fake.requests.map((r) => r.status)).toEqual([502, 200, 200]);

    fake.requests.length = 0;
    fake.rateLimitNext({ status: 503, times: MAX_INLINE_RETRIES + 1 });
    const refused = await rejection(notionConnector.fetchItem(ctx, item));
    expect(refused).toBeInstanceOf(ConnectorRateLimitError);
    expect(fake.requests.map((r) => r.status)).toEqual(Array(MAX_INLINE_RETRIES + 1).fill(503));
  });

  it("hands a long or persistent 429 to the engine as ConnectorRateLimitError with Retry-After", async () => {
    const page = fake.addPage({ title: "Doc" });
    // Longer than Notion's per-connection window: the engine waits, not the activity.
    const oauth = await oauthSession();
    const ctx = contextFor({}, oauth);
    fake.rateLimitNext({ retryAfterSeconds: 120 });
    const limited = await rejection(notionConnector.listPage(ctx, await notionConnector.initialCursor(ctx)));
    expect(limited).toBeInstanceOf(ConnectorRateLimitError);
    expect((limited as ConnectorRateLimitError).retryAfterMs).toBe(120_000);
    expect(fake.requests.filter((r) => r.path === "/v1/search").map((r) => r.status)).toEqual([429]);
    // Another connection with the same token waits too, without spending a request on it.
    const sibling = contextFor({}, oauth);
    const waiting = await rejection(notionConnector.fetchItem(sibling, { id: `page/${page}`, version: "x" }));
    expect(waiting).toBeInstanceOf(ConnectorRateLimitError);
    expect((waiting as ConnectorRateLimitError).retryAfterMs).toBeGreaterThan(60_000);
    expect(fake.requests.filter((r) => r.path.startsWith("/v1/pages"))).toEqual([]);

    const dated = await connected();
    fake.rateLimitNext({ retryAfterDate: new Date(Date.now() + 90_000) });
    const duringFetch = await rejection(
      notionConnector.fetchItem(dated, { id: `page/${page}`, version: "x" }),
    );
    expect(duringFetch).toBeInstanceOf(ConnectorRateLimitError);
    expect((duringFetch as ConnectorRateLimitError).retryAfterMs).toBeGreaterThan(80_000);
    expect((duringFetch as ConnectorRateLimitError).retryAfterMs).toBeLessThanOrEqual(90_000);

    // A short Retry-After that keeps coming back: retried MAX_INLINE_RETRIES times, then the engine's.
    const persistent = await connected();
    fake.requests.length = 0;
    fake.rateLimitNext({ retryAfterSeconds: 1, times: MAX_INLINE_RETRIES + 1 });
    const item = { id: `page/${page}`, version: "x" };
    const refused = await rejection(notionConnector.fetchItem(persistent, item));
    expect(refused).toBeInstanceOf(ConnectorRateLimitError);
    expect((refused as ConnectorRateLimitError).retryAfterMs).toBe(1000);
    expect(fake.requests.map((r) => r.status)).toEqual(Array(MAX_INLINE_RETRIES + 1).fill(429));
    // After the wait the same call goes through.
    expect(await notionConnector.fetchItem(persistent, item)).toMatchObject({ title: "Doc" });
  });

  it("stops when the activity is cancelled", async () => {
    fake.addPage({ title: "Doc" });
    const controller = new AbortController();
    const ctx = contextFor({}, await oauthSession(), controller.signal);
    controller.abort();
    const error = await rejection(runPass(ctx));
    expect((error as Error).name).toMatch(/AbortError/);
  });
});

describe("notion text conversion", () => {
  const rich = (text: string, annotations: Record<string, boolean> = {}, href: string | null = null) => ({
    type: "text" as const,
    text: { content: text, link: href ? { url: href } : null },
    annotations: {
      bold: false,
      italic: false,
      strikethrough: false,
      underline: false,
      code: false,
      color: "default" as const,
      ...annotations,
    },
    plain_text: text,
    href,
  });
  function node(type: string, data: Record<string, unknown>, children: BlockNode[] = []): BlockNode {
    return {
      block: { object: "block", id: type, type, [type]: data, has_children: children.length > 0 } as never,
      children,
    };
  }
  const item = (
    type: string,
    text: string,
    children: BlockNode[] = [],
    extra: Record<string, unknown> = {},
  ) => node(type, { rich_text: [rich(text)], color: "default", ...extra }, children);

  it("keeps spaces outside Markdown markers and links only web addresses", () => {
    expect(
      richTextToMarkdown([
        rich("a "),
        rich(" bold ", { bold: true }),
        rich("both", { bold: true, italic: true }),
        rich(" gone", { strikethrough: true }),
        rich("  ", { bold: true }),
        rich("x", {}, "https://x.example"),
        rich("y", {}, "/internal-page"),
      ]),
    ).toBe("a  **bold** _**both**_ ~~gone~~  [x](https://x.example)y");
  });

  it("numbers lists, restarts them after other blocks and honours list_start_index", () => {
    const text = blocksToMarkdown([
      item("numbered_list_item", "one"),
      item("numbered_list_item", "two", [item("bulleted_list_item", "nested bullet")]),
      item("paragraph", "break"),
      item("numbered_list_item", "again"),
      item("paragraph", "break"),
      item("numbered_list_item", "ten", [], { list_start_index: 10 }),
      item("numbered_list_item", "eleven"),
    ]);
    expect(text).toBe(
      "1. one\n2. two\n   - nested bullet\n\nbreak\n\n1. again\n\nbreak\n\n10. ten\n11. eleven",
    );
  });

  it("keeps nested content of quotes and callouts inside the quote and of toggleable headings after them", () => {
    const text = blocksToMarkdown([
      item("quote", "Quoted", [item("bulleted_list_item", "point")]),
      node("heading_2", { rich_text: [rich("Toggle heading")], is_toggleable: true, color: "default" }, [
        item("paragraph", "inside"),
      ]),
      node("callout", { rich_text: [rich("Note")], icon: null, color: "default" }),
      item("unsupported_future_block", "future text"),
    ]);
    expect(text).toBe("> Quoted\n>\n> - point\n\n## Toggle heading\n\ninside\n\n> Note\n\nfuture text");
  });
});

describe("notion request budget", () => {
  it("lets a burst through, then spaces requests to three a second", () => {
    const budget = new RequestBudget(3, 10);
    const waits = Array.from({ length: 13 }, () => budget.reserve(1_000_000));
    expect(waits.slice(0, 10)).toEqual(Array(10).fill(0));
    expect(waits.slice(10).map(Math.round)).toEqual([333, 667, 1000]);
    // A quiet second gives three requests back.
    const later = 1_000_000 + 1000 + 1000;
    expect([budget.reserve(later), budget.reserve(later), budget.reserve(later)]).toEqual([0, 0, 0]);
    expect(Math.round(budget.reserve(later))).toBe(333);
  });

  it("holds every request with the token until Retry-After has passed, then goes on at half the pace", () => {
    const budget = new RequestBudget(3, 10);
    budget.pauseUntil(5000);
    expect(budget.reserve(0)).toBe(5000);
    // No burst right after a 429, and 1.5 requests a second until answers come back unthrottled.
    expect(Math.round(budget.reserve(0))).toBe(5667);
    for (let i = 0; i < 100; i++) budget.answered();
    expect(budget.pace).toBeGreaterThan(0.99);
  });

  it("is one budget per token in the process, shared by the connections that use it", () => {
    expect(budgetFor("notion", "ntn_shared")).toBe(budgetFor("notion", "ntn_shared"));
    expect(budgetFor("notion", "ntn_shared")).not.toBe(budgetFor("notion", "ntn_other"));
  });
});
