// A local stand-in for the Notion API (the endpoints the notion connector and the OAuth flow use), on
// 127.0.0.1. Shapes follow Notion's API reference for Notion-Version 2025-09-03 (the version
// @notionhq/client 5 sends): databases hold data sources, search filters on "page" | "data_source", rows
// are queried with POST /v1/data_sources/{id}/query and have a `data_source_id` parent.
//
// - OAuth: GET /v1/oauth/authorize (the consent page: redirects back with a code at once), POST
//   /v1/oauth/token with HTTP Basic client authentication and a JSON body (form bodies are taken too),
//   grants authorization_code and refresh_token (rotating refresh tokens), errors as
//   `{error, error_description}`.
// - API: Bearer tokens, a Notion-Version header (400 missing_version without one), errors as
//   `{object: "error", status, code, message, request_id}`: 401 unauthorized, 404 object_not_found,
//   429 rate_limited with Retry-After, 400 validation_error.
// - POST /v1/search (filter, sort by last_edited_time, start_cursor/page_size/has_more/next_cursor),
//   GET /v1/pages/{id} (properties cut at 25 references, as Notion does), GET
//   /v1/pages/{id}/properties/{property id} (the full value, paginated), GET /v1/blocks/{id}/children
//   (paginated; next_cursor is the next block's id, as on Notion), GET /v1/data_sources/{id}, POST
//   /v1/data_sources/{id}/query.
// - Times are rounded down to the minute, as Notion does; the fake clock advances one minute per change
//   unless a test pins it with setTime.
//
// Content lives in memory; tests add, edit and trash pages between passes.

import { createHash, randomUUID } from "node:crypto";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { seededRandom } from "../../bench/lib/random.ts";

export const FAKE_NOTION_VERSION = "2025-09-03";

/** A piece of rich text: a string, or a run with annotations and a link. */
export type FakeRichText =
  | string
  | {
      text: string;
      bold?: boolean;
      italic?: boolean;
      strikethrough?: boolean;
      code?: boolean;
      href?: string;
    }
  | { equation: string }
  /** An inline mention of a person or a page, shown as its name. */
  | { mention: "user" | "page"; name: string };

type Rich = string | FakeRichText[];

/** Blocks as a test writes them; turned into Notion block objects with ids. */
export type FakeBlock =
  | {
      type:
        | "paragraph"
        | "heading_1"
        | "heading_2"
        | "heading_3"
        | "heading_4"
        | "bulleted_list_item"
        | "numbered_list_item"
        | "quote"
        | "toggle";
      text: Rich;
      children?: FakeBlock[];
    }
  | { type: "to_do"; text: Rich; checked?: boolean; children?: FakeBlock[] }
  | { type: "callout"; text: Rich; emoji?: string; children?: FakeBlock[] }
  | { type: "code"; text: string; language?: string }
  | { type: "divider" }
  | { type: "equation"; expression: string }
  | { type: "table"; rows: string[][]; header?: boolean }
  | { type: "column_list"; columns: FakeBlock[][] }
  | { type: "synced_block"; children: FakeBlock[] }
  | { type: "image" | "bookmark"; url: string; caption?: string; hosted?: boolean }
  | { type: "child_database"; title: string }
  | { type: "table_of_contents" };

/** Row property values as a test writes them. */
export type FakePropertyValue =
  | { select: string | null }
  | { status: string | null }
  | { multi_select: string[] }
  | { rich_text: Rich }
  /** People by name. */
  | { people: string[] }
  /** Related page ids. */
  | { relation: string[] }
  | { number: number | null }
  | { checkbox: boolean }
  | { date: string | null }
  | { url: string | null };

export interface FakePageInput {
  /** The title; runs may hold mentions (a title is rich text). */
  title: Rich;
  /** Where the page lives: the workspace (default), under a page, or a row of a data source. */
  parent?: { pageId: string } | { dataSourceId: string };
  blocks?: FakeBlock[];
  /** Row properties (pages in a data source), besides the title. */
  properties?: Record<string, FakePropertyValue>;
}

export interface FakeDataSourceInput {
  title: string;
  description?: string;
  /** The title property's name (default "Name"). */
  titleProperty?: string;
  /** Other columns: name → type. */
  columns?: Record<string, string>;
  /** The page the database sits on; the workspace when left out. */
  parentPageId?: string;
}

export interface FakeRequest {
  method: string;
  path: string;
  /** The query string, with its `?` ("" when none). */
  query: string;
  status: number;
  body?: unknown;
  /** The Notion-Version header sent. */
  notionVersion?: string;
}

export interface FakeNotion {
  /** API root, used as the connector's apiBaseUrl (the client adds `/v1/`). */
  url: string;
  tokenUrl: string;
  authorizeUrl: string;
  clientId: string;
  clientSecret: string;
  workspaceId: string;
  workspaceName: string;
  botId: string;
  /** Every API and token request answered, in order. */
  requests: FakeRequest[];
  /** A code the consent page would redirect with; bound to redirectUri when given. */
  issueCode(redirectUri?: string): string;
  /** Current access tokens now answer 401; refresh still works. */
  expireAccessTokens(): void;
  /** The user removed the integration: refresh answers 400 invalid_grant and every API call 401. */
  revoke(): void;
  /**
   * The next API call(s) answer 429 with Retry-After: `times` of them (default 1), after letting `after`
   * calls through (default 0). With `status` 502 or 503 they answer bad_gateway or service_unavailable
   * instead, without Retry-After.
   */
  rateLimitNext(options?: {
    retryAfterSeconds?: number;
    retryAfterDate?: Date;
    times?: number;
    after?: number;
    status?: 429 | 502 | 503;
  }): void;
  /** Whether search also returns pages in the trash (with in_trash: true), as a lagging index can. */
  setSearchReturnsTrashed(value: boolean): void;
  /**
   * Search as Notion documents it beyond its guarantees: pages and databases below the shared roots show
   * only from the `delaySearches`-th search after they were created, and each search leaves out each of
   * them with probability `dropFraction` (a seeded RNG, so a test sees the same drops every run). Roots
   * (workspace-level pages and databases, the ones shared directly) are always returned. null: off.
   */
  setSearchIndexing(options: { delaySearches?: number; dropFraction?: number; seed?: number } | null): void;
  /** Search stops after this many results of a query, reporting request_status incomplete; null: no limit. */
  setSearchResultLimit(limit: number | null): void;
  /** Pins the clock for the next changes (rounded down to the minute); null: back to the ticking clock. */
  setTime(at: Date | null): void;
  addPage(input: FakePageInput): string;
  /** Replaces what is given (title, blocks, properties) and bumps last_edited_time. */
  editPage(id: string, patch: Partial<Omit<FakePageInput, "parent">>): void;
  trashPage(id: string): void;
  restorePage(id: string): void;
  /**
   * The page is no longer shared with the integration, but search's index still lists it: retrieving it
   * answers 404 object_not_found, which Notion also uses for "not shared with the bearer token's owner"
   * (https://developers.notion.com/reference/status-codes), and indexing lags such changes
   * (https://developers.notion.com/reference/search-optimizations-and-limitations).
   */
  unsharePage(id: string): void;
  addDataSource(input: FakeDataSourceInput): { dataSourceId: string; databaseId: string };
  editDataSource(id: string, patch: { title?: string; description?: string }): void;
  trashDataSource(id: string): void;
  pageLastEditedTime(id: string): string;
  dataSourceLastEditedTime(id: string): string;
  pageUrl(id: string): string;
  stop(): Promise<void>;
}

interface Block {
  id: string;
  type: string;
  data: Record<string, unknown>;
  children: string[];
  parent: { type: "page_id"; page_id: string } | { type: "block_id"; block_id: string };
  createdTime: string;
  lastEditedTime: string;
  /** child_page blocks stand for a page and list that page's content. */
  pageId?: string;
}

interface Page {
  id: string;
  /** Plain text of the title (what search matches and child_page blocks show). */
  title: string;
  titleRuns: Rich;
  parent:
    | { type: "workspace"; workspace: true }
    | { type: "page_id"; page_id: string }
    | { type: "data_source_id"; data_source_id: string; database_id: string };
  properties: Record<string, FakePropertyValue>;
  content: string[];
  createdTime: string;
  lastEditedTime: string;
  inTrash: boolean;
  /** Search order among equal times: creation order. */
  seq: number;
  /** The search count from which search's index holds it. */
  indexedFrom: number;
}

interface DataSource {
  id: string;
  databaseId: string;
  title: string;
  description: string;
  titleProperty: string;
  columns: Record<string, string>;
  parentPageId?: string;
  createdTime: string;
  lastEditedTime: string;
  inTrash: boolean;
  seq: number;
  indexedFrom: number;
}

interface Grant {
  accessToken: string;
  refreshToken: string | null;
}

class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const USER_ID = "5a4b0c1e-0000-4000-8000-0000000000aa";
const BASE_TIME = Date.parse("2024-03-01T09:00:00.000Z");

const bare = (id: string) => id.replace(/-/g, "").toLowerCase();

/** A column's id: short and opaque like Notion's, and stable when the name is. */
function propertyId(name: string): string {
  return createHash("sha256").update(name).digest("base64url").slice(0, 6);
}

function minute(at: number): string {
  return new Date(Math.floor(at / 60_000) * 60_000).toISOString();
}

function richText(value: Rich): Record<string, unknown>[] {
  const runs = typeof value === "string" ? (value ? [value] : []) : value;
  return runs.map((run) => {
    if (typeof run !== "string" && "mention" in run) {
      // https://developers.notion.com/reference/rich-text#mention
      const id = bare(createHash("sha256").update(run.name).digest("hex")).slice(0, 32);
      const uuid = `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`;
      return {
        type: "mention",
        mention:
          run.mention === "user"
            ? { type: "user", user: { object: "user", id: uuid } }
            : { type: "page", page: { id: uuid } },
        annotations: annotations({}),
        plain_text: run.mention === "user" ? `@${run.name}` : run.name,
        href: run.mention === "page" ? `https://www.notion.so/${id}` : null,
      };
    }
    if (typeof run !== "string" && "equation" in run) {
      return {
        type: "equation",
        equation: { expression: run.equation },
        annotations: annotations({}),
        plain_text: run.equation,
        href: null,
      };
    }
    const r = typeof run === "string" ? { text: run } : run;
    return {
      type: "text",
      text: { content: r.text, link: r.href ? { url: r.href } : null },
      annotations: annotations(r),
      plain_text: r.text,
      href: r.href ?? null,
    };
  });
}

function plain(value: Rich): string {
  const runs = typeof value === "string" ? [value] : value;
  return runs
    .map((run) =>
      typeof run === "string" ? run : "text" in run ? run.text : "equation" in run ? run.equation : run.name,
    )
    .join("");
}

/**
 * What Retrieve a page shows of a property that refers to pages or people: "Page properties are limited to
 * up to 25 references per page property"; the rest only through Retrieve a page property item
 * (https://developers.notion.com/reference/retrieve-a-page,
 * https://developers.notion.com/reference/page-property-values). Rich text keeps its text and its first 25
 * mentions.
 */
export const PAGE_REFERENCE_LIMIT = 25;

function truncatedRuns(items: Record<string, unknown>[]): Record<string, unknown>[] {
  let mentions = 0;
  return items.filter((item) => item.type !== "mention" || ++mentions <= PAGE_REFERENCE_LIMIT);
}

function annotations(r: { bold?: boolean; italic?: boolean; strikethrough?: boolean; code?: boolean }) {
  return {
    bold: r.bold ?? false,
    italic: r.italic ?? false,
    strikethrough: r.strikethrough ?? false,
    underline: false,
    code: r.code ?? false,
    color: "default",
  };
}

export async function startFakeNotion(
  options: { issueRefreshTokens?: boolean; workspaceName?: string } = {},
): Promise<FakeNotion> {
  const issueRefreshTokens = options.issueRefreshTokens ?? true;
  const clientId = randomUUID();
  const clientSecret = `secret_${randomUUID().replace(/-/g, "")}`;
  const workspaceId = randomUUID();
  const workspaceName = options.workspaceName ?? "Acme Workspace";
  const botId = randomUUID();
  const requests: FakeRequest[] = [];

  const pages = new Map<string, Page>();
  /** Pages taken out of the integration's sharing that search still lists (`unsharePage`). */
  const unshared = new Set<string>();
  const blocks = new Map<string, Block>();
  const dataSources = new Map<string, DataSource>();
  const codes = new Map<string, { redirectUri?: string }>();
  let grants: Grant[] = [];
  const validAccess = new Set<string>();
  let revoked = false;
  let rateLimit: { after: number; times: number; retryAfter: string; status: 429 | 502 | 503 } | null = null;
  let searchReturnsTrashed = false;
  let searchResultLimit: number | null = null;
  let indexing: { delaySearches: number; dropFraction: number; random: () => number } | null = null;
  /** Search requests answered so far. */
  let searches = 0;
  let pinned: number | null = null;
  let ticks = 0;
  let seq = 0;
  /** Search cursors: the (time, seq) key the next page starts at. */
  const searchCursors = new Map<string, { time: string; seq: number }>();

  const now = () => (pinned !== null ? minute(pinned) : minute(BASE_TIME + ++ticks * 60_000));

  // ---- content ----

  function buildBlocks(inputs: FakeBlock[], parent: Block["parent"], time: string): string[] {
    return inputs.map((input) => buildBlock(input, parent, time).id);
  }

  function buildBlock(input: FakeBlock, parent: Block["parent"], time: string): Block {
    const id = randomUUID();
    const block: Block = {
      id,
      type: input.type,
      data: {},
      children: [],
      parent,
      createdTime: time,
      lastEditedTime: time,
    };
    blocks.set(id, block);
    const under: Block["parent"] = { type: "block_id", block_id: id };
    const kids = (list: FakeBlock[] | undefined) => {
      block.children = buildBlocks(list ?? [], under, time);
    };
    switch (input.type) {
      case "paragraph":
      case "bulleted_list_item":
      case "numbered_list_item":
      case "quote":
      case "toggle":
        block.data = { rich_text: richText(input.text), color: "default" };
        if (input.type === "paragraph") block.data.icon = null;
        kids(input.children);
        break;
      case "heading_1":
      case "heading_2":
      case "heading_3":
      case "heading_4":
        block.data = {
          rich_text: richText(input.text),
          color: "default",
          is_toggleable: Boolean(input.children?.length),
        };
        kids(input.children);
        break;
      case "to_do":
        block.data = { rich_text: richText(input.text), color: "default", checked: input.checked ?? false };
        kids(input.children);
        break;
      case "callout":
        block.data = {
          rich_text: richText(input.text),
          color: "gray_background",
          icon: input.emoji ? { type: "emoji", emoji: input.emoji } : null,
        };
        kids(input.children);
        break;
      case "code":
        block.data = {
          rich_text: richText(input.text),
          caption: [],
          language: input.language ?? "plain text",
        };
        break;
      case "divider":
      case "table_of_contents":
        block.data = input.type === "divider" ? {} : { color: "default" };
        break;
      case "equation":
        block.data = { expression: input.expression };
        break;
      case "table": {
        const width = Math.max(0, ...input.rows.map((r) => r.length));
        block.data = { table_width: width, has_column_header: input.header ?? true, has_row_header: false };
        block.children = input.rows.map((row) => {
          const rowId = randomUUID();
          blocks.set(rowId, {
            id: rowId,
            type: "table_row",
            data: { cells: row.map((cell) => richText(cell)) },
            children: [],
            parent: under,
            createdTime: time,
            lastEditedTime: time,
          });
          return rowId;
        });
        break;
      }
      case "column_list":
        block.data = {};
        block.children = input.columns.map((column) => {
          const columnId = randomUUID();
          const columnBlock: Block = {
            id: columnId,
            type: "column",
            data: { width_ratio: 1 / input.columns.length },
            children: [],
            parent: under,
            createdTime: time,
            lastEditedTime: time,
          };
          blocks.set(columnId, columnBlock);
          columnBlock.children = buildBlocks(column, { type: "block_id", block_id: columnId }, time);
          return columnId;
        });
        break;
      case "synced_block":
        block.data = { synced_from: null };
        kids(input.children);
        break;
      case "image":
      case "bookmark": {
        const caption = richText(input.caption ?? "");
        if (input.type === "bookmark") block.data = { url: input.url, caption };
        else if (input.hosted)
          block.data = {
            type: "file",
            file: {
              url: `${input.url}?X-Amz-Signature=${randomUUID()}`,
              expiry_time: new Date(Date.now() + 3600_000).toISOString(),
            },
            caption,
          };
        else block.data = { type: "external", external: { url: input.url }, caption };
        break;
      }
      case "child_database":
        block.data = { title: input.title };
        break;
    }
    return block;
  }

  function dropBlocks(ids: string[]): void {
    for (const id of ids) {
      const block = blocks.get(id);
      if (!block || block.pageId) continue;
      dropBlocks(block.children);
      blocks.delete(id);
    }
  }

  function pageById(id: string): Page | undefined {
    for (const page of pages.values()) if (bare(page.id) === bare(id)) return page;
    return undefined;
  }

  function dataSourceById(id: string): DataSource | undefined {
    for (const ds of dataSources.values()) if (bare(ds.id) === bare(id)) return ds;
    return undefined;
  }

  function blockById(id: string): Block | undefined {
    for (const block of blocks.values()) if (bare(block.id) === bare(id)) return block;
    return undefined;
  }

  function slug(title: string): string {
    return title
      .replace(/[^A-Za-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 60);
  }

  function pageUrl(page: Page): string {
    const s = slug(page.title);
    return `https://www.notion.so/${s ? `${s}-` : ""}${bare(page.id)}`;
  }

  function pageJson(page: Page): Record<string, unknown> {
    const user = { object: "user", id: USER_ID };
    const properties: Record<string, unknown> = {};
    if (page.parent.type === "data_source_id") {
      const ds = dataSources.get(page.parent.data_source_id);
      for (const [name, type] of Object.entries(ds?.columns ?? {})) {
        properties[name] = propertyJson(name, type, page.properties[name]);
      }
      properties[ds?.titleProperty ?? "Name"] = titleJson(page);
    } else {
      properties.title = titleJson(page);
    }
    return {
      object: "page",
      id: page.id,
      created_time: page.createdTime,
      last_edited_time: page.lastEditedTime,
      created_by: user,
      last_edited_by: user,
      cover: null,
      icon: null,
      parent: page.parent,
      archived: page.inTrash,
      in_trash: page.inTrash,
      is_locked: false,
      properties,
      url: pageUrl(page),
      public_url: null,
    };
  }

  function titleJson(page: Page): Record<string, unknown> {
    return { id: "title", type: "title", title: truncatedRuns(richText(page.titleRuns)) };
  }

  function personJson(name: string): Record<string, unknown> {
    const id = bare(createHash("sha256").update(`person ${name}`).digest("hex"));
    return {
      object: "user",
      id: `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20, 32)}`,
      name,
      avatar_url: null,
      type: "person",
      person: { email: `${name.toLowerCase().replace(/[^a-z0-9]+/g, ".")}@example.com` },
    };
  }

  /** A property's full value as Retrieve a page property item pages through it; undefined: not paginated. */
  function propertyItems(page: Page, name: string, type: string): Record<string, unknown>[] | undefined {
    const v = (page.properties[name] ?? {}) as Record<string, unknown>;
    if (type === "title") return richText(page.titleRuns);
    if (type === "rich_text") return richText((v.rich_text as Rich) ?? "");
    if (type === "people") return ((v.people as string[]) ?? []).map(personJson);
    if (type === "relation") return ((v.relation as string[]) ?? []).map((id) => ({ id }));
    return undefined;
  }

  function propertyJson(
    name: string,
    type: string,
    value: FakePropertyValue | undefined,
  ): Record<string, unknown> {
    const id = propertyId(name);
    const v = (value ?? {}) as Record<string, unknown>;
    const option = (optionName: unknown) =>
      typeof optionName === "string"
        ? { id: bare(randomUUID()).slice(0, 8), name: optionName, color: "default" }
        : null;
    switch (type) {
      case "select":
      case "status":
        return { id, type, [type]: option(v[type]) };
      case "multi_select":
        return { id, type, multi_select: ((v.multi_select as string[]) ?? []).map(option) };
      case "rich_text":
        return { id, type, rich_text: truncatedRuns(richText((v.rich_text as Rich) ?? "")) };
      case "people":
        return {
          id,
          type,
          people: ((v.people as string[]) ?? []).slice(0, PAGE_REFERENCE_LIMIT).map(personJson),
        };
      case "relation": {
        // "If a relation has more than 25 references, then the has_more value for the relation in the
        // response object is true" (https://developers.notion.com/reference/page-property-values#relation).
        const ids = (v.relation as string[]) ?? [];
        return {
          id,
          type,
          relation: ids.slice(0, PAGE_REFERENCE_LIMIT).map((page) => ({ id: page })),
          has_more: ids.length > PAGE_REFERENCE_LIMIT,
        };
      }
      case "number":
        return { id, type, number: (v.number as number | null) ?? null };
      case "checkbox":
        return { id, type, checkbox: (v.checkbox as boolean) ?? false };
      case "date":
        return {
          id,
          type,
          date: typeof v.date === "string" ? { start: v.date, end: null, time_zone: null } : null,
        };
      case "url":
        return { id, type, url: (v.url as string | null) ?? null };
      case "last_edited_time":
        return { id, type, last_edited_time: new Date().toISOString() };
      default:
        return { id, type, [type]: null };
    }
  }

  function dataSourceJson(ds: DataSource): Record<string, unknown> {
    const user = { object: "user", id: USER_ID };
    const properties: Record<string, unknown> = {
      [ds.titleProperty]: {
        id: "title",
        name: ds.titleProperty,
        description: null,
        type: "title",
        title: {},
      },
    };
    for (const [name, type] of Object.entries(ds.columns)) {
      properties[name] = {
        id: propertyId(name),
        name,
        description: null,
        type,
        [type]: {},
      };
    }
    return {
      object: "data_source",
      id: ds.id,
      created_time: ds.createdTime,
      last_edited_time: ds.lastEditedTime,
      created_by: user,
      last_edited_by: user,
      title: richText(ds.title),
      description: richText(ds.description),
      is_inline: false,
      properties,
      parent: { type: "database_id", database_id: ds.databaseId },
      database_parent: ds.parentPageId
        ? { type: "page_id", page_id: ds.parentPageId }
        : { type: "workspace", workspace: true },
      archived: ds.inTrash,
      in_trash: ds.inTrash,
      url: `https://www.notion.so/${bare(ds.databaseId)}`,
      public_url: null,
      icon: null,
      cover: null,
    };
  }

  function blockJson(block: Block): Record<string, unknown> {
    const user = { object: "user", id: USER_ID };
    const page = block.pageId ? pages.get(block.pageId) : undefined;
    const data = page ? { title: page.title } : block.data;
    return {
      object: "block",
      id: block.id,
      parent: block.parent,
      created_time: block.createdTime,
      last_edited_time: page?.lastEditedTime ?? block.lastEditedTime,
      created_by: user,
      last_edited_by: user,
      has_children: page ? page.content.length > 0 : block.children.length > 0,
      archived: page?.inTrash ?? false,
      in_trash: page?.inTrash ?? false,
      type: block.type,
      [block.type]: data,
    };
  }

  function childIds(parentId: string): string[] | undefined {
    const page = pageById(parentId);
    if (page) return page.content;
    const block = blockById(parentId);
    if (!block) return undefined;
    if (block.pageId) return pages.get(block.pageId)?.content;
    return block.children;
  }

  function visibleChildren(ids: string[]): Block[] {
    return ids
      .map((id) => blocks.get(id))
      .filter((b): b is Block => Boolean(b))
      .filter((b) => !(b.pageId && pages.get(b.pageId)?.inTrash));
  }

  // ---- HTTP ----

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        send(res, 500, {
          object: "error",
          status: 500,
          code: "internal_server_error",
          message: String(error),
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  function send(
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ): void {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      "content-type": "application/json; charset=utf-8",
      "content-length": String(Buffer.byteLength(text)),
      "x-request-id": randomUUID(),
      ...headers,
    });
    res.end(text);
  }

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? "GET";
    const parsed = new URL(req.url ?? "/", url);
    const path = parsed.pathname;
    const raw = await readBody(req);
    const version = req.headers["notion-version"];
    const record = (status: number, body?: unknown) =>
      requests.push({
        method,
        path,
        query: parsed.search,
        status,
        body,
        ...(typeof version === "string" ? { notionVersion: version } : {}),
      });

    if (path === "/v1/oauth/authorize" && method === "GET") {
      const q = parsed.searchParams;
      const redirectUri = q.get("redirect_uri");
      if (q.get("client_id") !== clientId || q.get("response_type") !== "code" || !redirectUri) {
        record(400);
        send(res, 400, { error: "invalid_request", error_description: "Invalid authorization request." });
        return;
      }
      const target = new URL(redirectUri);
      target.searchParams.set("code", issueCode(redirectUri));
      const state = q.get("state");
      if (state !== null) target.searchParams.set("state", state);
      record(302);
      res.writeHead(302, { location: target.href });
      res.end();
      return;
    }

    if (path === "/v1/oauth/token") {
      const result = token(req, method, raw);
      record(result.status, result.body);
      send(res, result.status, result.body);
      return;
    }

    let body: Record<string, unknown> = {};
    try {
      if (raw) body = JSON.parse(raw) as Record<string, unknown>;
      const answer = api(req, method, path, parsed.searchParams, body);
      record(200, raw ? body : undefined);
      send(res, 200, { ...answer, request_id: randomUUID() });
    } catch (error) {
      if (error instanceof SyntaxError) {
        record(400);
        send(res, 400, {
          object: "error",
          status: 400,
          code: "invalid_json",
          message: "Error parsing JSON body.",
        });
        return;
      }
      if (!(error instanceof HttpProblem)) throw error;
      record(error.status, raw ? body : undefined);
      send(
        res,
        error.status,
        {
          object: "error",
          status: error.status,
          code: error.code,
          message: error.message,
          request_id: randomUUID(),
        },
        error.headers,
      );
    }
  }

  function token(req: IncomingMessage, method: string, raw: string): { status: number; body: unknown } {
    if (method !== "POST") return { status: 405, body: { error: "invalid_request" } };
    const header = req.headers.authorization ?? "";
    const basic = header.startsWith("Basic ") ? Buffer.from(header.slice(6), "base64").toString("utf8") : "";
    if (basic !== `${clientId}:${clientSecret}`) {
      return {
        status: 401,
        body: { error: "invalid_client", error_description: "Client authentication failed." },
      };
    }
    let params: Record<string, unknown>;
    const type = req.headers["content-type"] ?? "";
    try {
      params = type.includes("application/x-www-form-urlencoded")
        ? Object.fromEntries(new URLSearchParams(raw))
        : (JSON.parse(raw || "{}") as Record<string, unknown>);
    } catch {
      return {
        status: 400,
        body: { error: "invalid_request", error_description: "Body failed validation." },
      };
    }
    if (params.grant_type === "authorization_code") {
      const code = typeof params.code === "string" ? codes.get(params.code) : undefined;
      if (!code || (code.redirectUri && code.redirectUri !== params.redirect_uri)) {
        return { status: 400, body: { error: "invalid_grant", error_description: "Invalid code." } };
      }
      codes.delete(params.code as string);
      return { status: 200, body: grantBody(newGrant()) };
    }
    if (params.grant_type === "refresh_token") {
      const grant = grants.find((g) => g.refreshToken !== null && g.refreshToken === params.refresh_token);
      if (revoked || !grant) {
        return { status: 400, body: { error: "invalid_grant", error_description: "Invalid refresh token." } };
      }
      // Rotation: the old refresh token and access token stop working.
      grants = grants.filter((g) => g !== grant);
      validAccess.delete(grant.accessToken);
      return { status: 200, body: grantBody(newGrant()) };
    }
    return {
      status: 400,
      body: { error: "unsupported_grant_type", error_description: "Unsupported grant type." },
    };
  }

  function newGrant(): Grant {
    const grant: Grant = {
      accessToken: `ntn_${randomUUID().replace(/-/g, "")}`,
      refreshToken: issueRefreshTokens ? `nrt_${randomUUID().replace(/-/g, "")}` : null,
    };
    grants.push(grant);
    validAccess.add(grant.accessToken);
    return grant;
  }

  function grantBody(grant: Grant): Record<string, unknown> {
    return {
      access_token: grant.accessToken,
      token_type: "bearer",
      refresh_token: grant.refreshToken,
      bot_id: botId,
      workspace_id: workspaceId,
      workspace_name: workspaceName,
      workspace_icon: null,
      owner: {
        type: "user",
        user: {
          object: "user",
          id: USER_ID,
          name: "Ada Lovelace",
          avatar_url: null,
          type: "person",
          person: { email: "ada@example.com" },
        },
      },
      duplicated_template_id: null,
      request_id: randomUUID(),
    };
  }

  function api(
    req: IncomingMessage,
    method: string,
    path: string,
    query: URLSearchParams,
    body: Record<string, unknown>,
  ): Record<string, unknown> {
    // Notion answers an exceeded limit with 429, code rate_limited and a Retry-After header in whole
    // seconds (https://developers.notion.com/reference/request-limits,
    // https://developers.notion.com/reference/status-codes).
    if (rateLimit && rateLimit.after > 0) rateLimit.after--;
    else if (rateLimit && rateLimit.times > 0) {
      rateLimit.times--;
      const retryAfter = rateLimit.retryAfter;
      const status = rateLimit.status;
      if (rateLimit.times === 0) rateLimit = null;
      // 502 bad_gateway and 503 service_unavailable ("Notion is unavailable... Try again later") come
      // without Retry-After (https://developers.notion.com/reference/status-codes).
      if (status === 502)
        throw new HttpProblem(
          502,
          "bad_gateway",
          "Notion encountered an issue while attempting to complete this request. Please try again.",
        );
      if (status === 503)
        throw new HttpProblem(503, "service_unavailable", "Notion is unavailable, please try again later.");
      throw new HttpProblem(
        429,
        "rate_limited",
        "You have been rate limited. Please try again in a few minutes.",
        {
          "retry-after": retryAfter,
        },
      );
    }
    const header = req.headers.authorization ?? "";
    const bearer = header.startsWith("Bearer ") ? header.slice(7) : "";
    if (revoked || !validAccess.has(bearer))
      throw new HttpProblem(401, "unauthorized", "API token is invalid.");
    if (!req.headers["notion-version"]) {
      throw new HttpProblem(
        400,
        "missing_version",
        "Notion-Version header failed validation: Notion-Version header should be defined, instead was `undefined`.",
      );
    }

    /** The id in a path of this method and shape, decoded; undefined when the request is another one. */
    const route = (verb: string, shape: RegExp): string | undefined => {
      const id = verb === method ? path.match(shape)?.[1] : undefined;
      return id === undefined ? undefined : decodeURIComponent(id);
    };
    if (method === "POST" && path === "/v1/search") return search(body);
    const pageId = route("GET", /^\/v1\/pages\/([^/]+)$/);
    if (pageId !== undefined) {
      const page = pageById(pageId);
      if (!page || unshared.has(page.id)) throw notFound("page", pageId);
      return pageJson(page);
    }
    const property = method === "GET" ? path.match(/^\/v1\/pages\/([^/]+)\/properties\/([^/]+)$/) : null;
    if (property) return pageProperty(decodeURIComponent(property[1] ?? ""), property[2] ?? "", query);
    const id = route("GET", /^\/v1\/blocks\/([^/]+)\/children$/);
    if (id !== undefined) {
      const ids = childIds(id);
      if (!ids) throw notFound("block", id);
      const children = visibleChildren(ids);
      return paginate(children, query.get("start_cursor"), query.get("page_size"), (b) => b.id, blockJson, {
        type: "block",
        block: {},
      });
    }
    const sourceId = route("GET", /^\/v1\/data_sources\/([^/]+)$/);
    if (sourceId !== undefined) {
      const ds = dataSourceById(sourceId);
      if (!ds) throw notFound("data_source", sourceId);
      return dataSourceJson(ds);
    }
    const queried = route("POST", /^\/v1\/data_sources\/([^/]+)\/query$/);
    if (queried !== undefined) {
      const ds = dataSourceById(queried);
      if (!ds) throw notFound("data_source", queried);
      const inTrash = body.in_trash === true;
      const rows = [...pages.values()]
        .filter((p) => p.parent.type === "data_source_id" && p.parent.data_source_id === ds.id)
        .filter((p) => p.inTrash === inTrash)
        .sort((a, b) => b.seq - a.seq);
      return paginate(rows, body.start_cursor, body.page_size, (p) => p.id, pageJson, {
        type: "page_or_data_source",
        page_or_data_source: {},
      });
    }
    if (method === "GET" && path === "/v1/users/me") {
      return {
        object: "user",
        id: botId,
        name: "Memory",
        avatar_url: null,
        type: "bot",
        bot: {
          owner: { type: "user", user: { object: "user", id: USER_ID } },
          workspace_name: workspaceName,
        },
      };
    }
    throw new HttpProblem(400, "invalid_request_url", "Invalid request URL.");
  }

  /**
   * GET /v1/pages/{page_id}/properties/{property_id}: title, rich_text, people and relation as a paginated
   * list of property_item objects, one reference or rich text run each; other types as one property_item
   * (https://developers.notion.com/reference/retrieve-a-page-property,
   * https://developers.notion.com/reference/property-item-object). The SDK puts the id in the path as the
   * page object gave it (already URL-encoded).
   */
  function pageProperty(
    pageId: string,
    rawPropertyId: string,
    query: URLSearchParams,
  ): Record<string, unknown> {
    const page = pageById(pageId);
    if (!page) throw notFound("page", pageId);
    const wanted = decodeURIComponent(rawPropertyId);
    const properties = pageJson(page).properties as Record<string, { id: string; type: string }>;
    const found = Object.entries(properties).find(([, p]) => decodeURIComponent(p.id) === wanted);
    if (!found) throw new HttpProblem(404, "object_not_found", `Could not find property with ID: ${wanted}.`);
    const [name, value] = found;
    const all = propertyItems(page, name, value.type);
    if (!all) return { ...value, object: "property_item" };
    const n = pageSize(query.get("page_size"));
    const cursor = query.get("start_cursor");
    const from = cursor ? Number.parseInt(Buffer.from(cursor, "base64url").toString("utf8"), 10) : 0;
    if (!Number.isInteger(from) || from < 0 || from > all.length) {
      throw new HttpProblem(400, "validation_error", "start_cursor provided is invalid.");
    }
    const next = from + n < all.length ? Buffer.from(String(from + n)).toString("base64url") : null;
    return {
      object: "list",
      results: all.slice(from, from + n).map((item) => ({
        object: "property_item",
        id: value.id,
        type: value.type,
        [value.type]: item,
      })),
      next_cursor: next,
      has_more: next !== null,
      type: "property_item",
      property_item: {
        id: value.id,
        next_url: next ? `${url}/v1/pages/${page.id}/properties/${value.id}?start_cursor=${next}` : null,
        type: value.type,
        [value.type]: {},
      },
    };
  }

  function notFound(kind: string, id: string): HttpProblem {
    return new HttpProblem(
      404,
      "object_not_found",
      `Could not find ${kind} with ID: ${id}. Make sure the relevant pages and databases are shared with your integration.`,
    );
  }

  function pageSize(value: unknown): number {
    if (value === undefined || value === null) return 100;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > 100) {
      throw new HttpProblem(
        400,
        "validation_error",
        "body failed validation: body.page_size should be ≤ `100`.",
      );
    }
    return n;
  }

  /** next_cursor is the id of the next result, as Notion does for block children and queries. */
  function paginate<T>(
    all: T[],
    start: unknown,
    size: unknown,
    idOf: (item: T) => string,
    json: (item: T) => Record<string, unknown>,
    extra: Record<string, unknown>,
  ): Record<string, unknown> {
    const n = pageSize(size);
    let from = 0;
    if (typeof start === "string" && start) {
      from = all.findIndex((item) => bare(idOf(item)) === bare(start));
      if (from < 0) throw new HttpProblem(400, "validation_error", "start_cursor provided is invalid.");
    }
    const slice = all.slice(from, from + n);
    const next = all[from + n];
    return {
      object: "list",
      results: slice.map(json),
      next_cursor: next ? idOf(next) : null,
      has_more: Boolean(next),
      ...extra,
    };
  }

  function search(body: Record<string, unknown>): Record<string, unknown> {
    const filter = body.filter as { property?: string; value?: string } | undefined;
    if (
      filter &&
      (filter.property !== "object" || (filter.value !== "page" && filter.value !== "data_source"))
    ) {
      throw new HttpProblem(
        400,
        "validation_error",
        'body failed validation: body.filter.value should be `"page"` or `"data_source"`, instead was `' +
          JSON.stringify(filter.value) +
          "`.",
      );
    }
    const sort = body.sort as { timestamp?: string; direction?: string } | undefined;
    const descending = !sort || sort.direction === "descending";
    const query = typeof body.query === "string" ? body.query.toLowerCase() : "";
    type Hit = {
      time: string;
      seq: number;
      json: () => Record<string, unknown>;
      title: string;
      trashed: boolean;
      /** Below a shared root: subject to indexing delay and drops. */
      indexed: { from: number } | null;
    };
    const hits: Hit[] = [];
    if (!filter || filter.value === "page") {
      for (const page of pages.values()) {
        hits.push({
          time: page.lastEditedTime,
          seq: page.seq,
          json: () => pageJson(page),
          title: page.title,
          trashed: page.inTrash,
          indexed: page.parent.type === "workspace" ? null : { from: page.indexedFrom },
        });
      }
    }
    if (!filter || filter.value === "data_source") {
      for (const ds of dataSources.values()) {
        hits.push({
          time: ds.lastEditedTime,
          seq: ds.seq,
          json: () => dataSourceJson(ds),
          title: ds.title,
          trashed: ds.inTrash,
          indexed: ds.parentPageId ? { from: ds.indexedFrom } : null,
        });
      }
    }
    const round = searches++;
    // "Search is not guaranteed to return everything, and the index may change as your integration
    // iterates"; "Search indexing is not immediate"; pages and databases "directly shared with an
    // integration are guaranteed to be returned"
    // (https://developers.notion.com/reference/search-optimizations-and-limitations).
    const shown = (h: Hit) =>
      !indexing || !h.indexed || (round >= h.indexed.from && indexing.random() >= indexing.dropFraction);
    const ordered = hits
      .filter(shown)
      .filter((h) => searchReturnsTrashed || !h.trashed)
      .filter((h) => !query || h.title.toLowerCase().includes(query))
      .sort((a, b) => {
        const byTime = a.time < b.time ? -1 : a.time > b.time ? 1 : a.seq - b.seq;
        return descending ? -byTime : byTime;
      });
    const n = pageSize(body.page_size);
    let from = 0;
    if (typeof body.start_cursor === "string" && body.start_cursor) {
      const key = searchCursors.get(body.start_cursor);
      if (!key) throw new HttpProblem(400, "validation_error", "start_cursor provided is invalid.");
      // Keyset: resume at the first hit at or after the key in the current order.
      const after = (h: Hit) => {
        const cmp = h.time < key.time ? -1 : h.time > key.time ? 1 : h.seq - key.seq;
        return descending ? cmp <= 0 : cmp >= 0;
      };
      from = ordered.findIndex(after);
      if (from < 0) from = ordered.length;
    }
    // Notion stops a search at a result limit and says so in request_status.
    const limit = searchResultLimit ?? Number.POSITIVE_INFINITY;
    const end = Math.min(from + n, limit);
    const slice = ordered.slice(from, end);
    const next = end < limit ? ordered[end] : undefined;
    const cut = !next && ordered.length > limit;
    let nextCursor: string | null = null;
    if (next) {
      nextCursor = randomUUID();
      searchCursors.set(nextCursor, { time: next.time, seq: next.seq });
    }
    return {
      object: "list",
      results: slice.map((h) => h.json()),
      next_cursor: nextCursor,
      has_more: Boolean(next),
      type: "page_or_data_source",
      page_or_data_source: {},
      ...(cut
        ? { request_status: { type: "incomplete", incomplete_reason: "query_result_limit_reached" } }
        : {}),
    };
  }

  // ---- test helpers ----

  function issueCode(redirectUri?: string): string {
    const code = randomUUID();
    codes.set(code, redirectUri ? { redirectUri } : {});
    return code;
  }

  function addPage(input: FakePageInput): string {
    const time = now();
    const id = randomUUID();
    let parent: Page["parent"] = { type: "workspace", workspace: true };
    if (input.parent && "pageId" in input.parent) {
      const host = pageById(input.parent.pageId);
      if (!host) throw new Error(`no page ${input.parent.pageId}`);
      parent = { type: "page_id", page_id: host.id };
    } else if (input.parent && "dataSourceId" in input.parent) {
      const ds = dataSourceById(input.parent.dataSourceId);
      if (!ds) throw new Error(`no data source ${input.parent.dataSourceId}`);
      parent = { type: "data_source_id", data_source_id: ds.id, database_id: ds.databaseId };
    }
    const page: Page = {
      id,
      title: plain(input.title),
      titleRuns: input.title,
      parent,
      properties: input.properties ?? {},
      content: [],
      createdTime: time,
      lastEditedTime: time,
      inTrash: false,
      seq: ++seq,
      indexedFrom: searches + (indexing?.delaySearches ?? 0),
    };
    pages.set(id, page);
    page.content = buildBlocks(input.blocks ?? [], { type: "page_id", page_id: id }, time);
    if (parent.type === "page_id") {
      // A sub-page shows in its parent as a child_page block with the page's id.
      const host = pages.get(parent.page_id) as Page;
      blocks.set(id, {
        id,
        type: "child_page",
        data: {},
        children: [],
        parent: { type: "page_id", page_id: host.id },
        createdTime: time,
        lastEditedTime: time,
        pageId: id,
      });
      host.content.push(id);
      host.lastEditedTime = time;
    }
    return id;
  }

  function mustPage(id: string): Page {
    const page = pageById(id);
    if (!page) throw new Error(`no page ${id}`);
    return page;
  }

  function mustDataSource(id: string): DataSource {
    const ds = dataSourceById(id);
    if (!ds) throw new Error(`no data source ${id}`);
    return ds;
  }

  const fake: FakeNotion = {
    url,
    tokenUrl: `${url}/v1/oauth/token`,
    authorizeUrl: `${url}/v1/oauth/authorize`,
    clientId,
    clientSecret,
    workspaceId,
    workspaceName,
    botId,
    requests,
    issueCode,
    expireAccessTokens() {
      validAccess.clear();
    },
    revoke() {
      revoked = true;
      validAccess.clear();
      grants = [];
    },
    rateLimitNext(options = {}) {
      const retryAfter = options.retryAfterDate
        ? options.retryAfterDate.toUTCString()
        : String(options.retryAfterSeconds ?? 30);
      rateLimit = {
        after: options.after ?? 0,
        times: options.times ?? 1,
        retryAfter,
        status: options.status ?? 429,
      };
    },
    setSearchReturnsTrashed(value) {
      searchReturnsTrashed = value;
    },
    setSearchIndexing(options) {
      indexing = options
        ? {
            delaySearches: options.delaySearches ?? 0,
            dropFraction: options.dropFraction ?? 0,
            random: seededRandom(options.seed ?? 1),
          }
        : null;
    },
    setSearchResultLimit(limit) {
      searchResultLimit = limit;
    },
    setTime(at) {
      pinned = at ? at.getTime() : null;
    },
    addPage,
    editPage(id, patch) {
      const page = mustPage(id);
      const time = now();
      if (patch.title !== undefined) {
        page.title = plain(patch.title);
        page.titleRuns = patch.title;
      }
      if (patch.properties !== undefined) page.properties = { ...page.properties, ...patch.properties };
      if (patch.blocks !== undefined) {
        // Sub-pages stay where they are; the rest of the content is replaced.
        const kept = page.content.filter((b) => blocks.get(b)?.pageId);
        dropBlocks(page.content);
        page.content = [...buildBlocks(patch.blocks, { type: "page_id", page_id: page.id }, time), ...kept];
      }
      page.lastEditedTime = time;
    },
    trashPage(id) {
      const page = mustPage(id);
      page.inTrash = true;
      page.lastEditedTime = now();
    },
    unsharePage(id) {
      unshared.add(mustPage(id).id);
    },
    restorePage(id) {
      const page = mustPage(id);
      page.inTrash = false;
      page.lastEditedTime = now();
    },
    addDataSource(input) {
      const time = now();
      const ds: DataSource = {
        id: randomUUID(),
        databaseId: randomUUID(),
        title: input.title,
        description: input.description ?? "",
        titleProperty: input.titleProperty ?? "Name",
        columns: input.columns ?? {},
        parentPageId: input.parentPageId ? mustPage(input.parentPageId).id : undefined,
        createdTime: time,
        lastEditedTime: time,
        inTrash: false,
        seq: ++seq,
        indexedFrom: searches + (indexing?.delaySearches ?? 0),
      };
      dataSources.set(ds.id, ds);
      if (ds.parentPageId) {
        const host = pages.get(ds.parentPageId) as Page;
        const blockId = ds.databaseId;
        blocks.set(blockId, {
          id: blockId,
          type: "child_database",
          data: { title: ds.title },
          children: [],
          parent: { type: "page_id", page_id: host.id },
          createdTime: time,
          lastEditedTime: time,
        });
        host.content.push(blockId);
      }
      return { dataSourceId: ds.id, databaseId: ds.databaseId };
    },
    editDataSource(id, patch) {
      const ds = mustDataSource(id);
      if (patch.title !== undefined) ds.title = patch.title;
      if (patch.description !== undefined) ds.description = patch.description;
      ds.lastEditedTime = now();
    },
    trashDataSource(id) {
      const ds = mustDataSource(id);
      ds.inTrash = true;
      ds.lastEditedTime = now();
    },
    pageLastEditedTime: (id) => mustPage(id).lastEditedTime,
    dataSourceLastEditedTime: (id) => mustDataSource(id).lastEditedTime,
    pageUrl: (id) => pageUrl(mustPage(id)),
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
