// Lists what the integration can see with Notion's search, in two phases: pages (database rows are pages
// too), then data sources (a database's tables). Every pass lists everything; the version is the object's
// last_edited_time, so only edited pages are fetched again, and pages that left (trashed, unshared) are not
// listed and the engine deletes them at the end of the pass.
//
// Search is sorted by last_edited_time ascending: a page edited while a pass runs moves to the end of the
// results, where the pass still meets it, instead of slipping into the part already listed.
//
// Notion rounds last_edited_time down to the minute, so an edit later in the same minute as our fetch
// would leave the version unchanged. While the minute may still take edits (plus a minute for clock skew,
// measured against Notion's own Date header) the version is marked as settling; the first pass after it
// settled sees a different version and fetches the page once more.
//
// A data source becomes a document naming its rows. Its own last_edited_time does not change when rows
// are added or renamed, so its version also carries a digest of the rows (id and title) that the page phase
// saw under it: the page phase always runs first in a pass.

import { createHash } from "node:crypto";
import {
  type Client,
  type DataSourceObjectResponse,
  isFullBlock,
  isFullDataSource,
  isFullPage,
  type PageObjectResponse,
  type SearchResponse,
} from "@notionhq/client";
import { z } from "zod";
import type { FetchedItem, ListPage, SourceItem } from "../types.ts";
import {
  type BlockNode,
  blocksToMarkdown,
  pageTitle,
  plainText,
  propertiesToText,
} from "./blocks-to-text.ts";
import { NotionApi, type NotionContext, notionStatus } from "./client.ts";

export const DEFAULT_NOTION_API = "https://api.notion.com";

export const notionCursorSchema = z.object({
  phase: z.enum(["pages", "data_sources"]),
  /** Notion's search cursor within the phase; null at its start. */
  start: z.string().nullable(),
  /** Data source id → `count:sum` digest of the rows (id and title) listed under it so far this pass. */
  rows: z.record(z.string(), z.string()),
});
export type NotionCursor = z.infer<typeof notionCursorSchema>;

/** An edit this recent may still be followed by one in the same (rounded) minute. */
export const SETTLE_MS = 2 * 60_000;
/** Nesting deeper than this is not followed (Notion's editor does not go near it). */
const MAX_DEPTH = 25;
/** Retrieve a page gives at most this many references (mentions, people) per property value. */
const PAGE_REFERENCE_LIMIT = 25;
/** A database document names at most this many rows. */
export const MAX_DATABASE_ROWS = 2000;
/** Blocks whose children are documents of their own (or not readable as children). */
const NOT_INLINED = new Set(["child_page", "child_database", "link_to_page", "unsupported"]);

const PAGE_PREFIX = "page/";
const DATA_SOURCE_PREFIX = "data_source/";
const DIGEST_MASK = (1n << 64n) - 1n;

function apiFor(ctx: NotionContext): NotionApi {
  return new NotionApi(ctx, (ctx.apiBaseUrl ?? DEFAULT_NOTION_API).replace(/\/+$/, "").replace(/\/v1$/, ""));
}

export function initialNotionCursor(): NotionCursor {
  return { phase: "pages", start: null, rows: {} };
}

/** last_edited_time, marked while its minute may still take edits. */
export function editVersion(lastEditedTime: string, now: number): string {
  const at = Date.parse(lastEditedTime);
  return Number.isFinite(at) && now - at < SETTLE_MS ? `${lastEditedTime}~settling` : lastEditedTime;
}

/** Adds one row to an order-independent digest (a sum, so a row listed twice only costs a refetch). */
export function addRow(digest: string | undefined, id: string, title: string): string {
  const [count = "0", sum = "0"] = (digest ?? "0:0").split(":");
  const hash = BigInt(`0x${createHash("sha256").update(`${id}\n${title}`).digest("hex").slice(0, 16)}`);
  return `${Number(count) + 1}:${((BigInt(`0x${sum}`) + hash) & DIGEST_MASK).toString(16)}`;
}

function isRow(page: PageObjectResponse): boolean {
  return page.parent.type === "data_source_id" || page.parent.type === "database_id";
}

function gone(object: { in_trash?: boolean; archived?: boolean }): boolean {
  return object.in_trash === true || object.archived === true;
}

export async function listNotionPage(
  ctx: NotionContext,
  cursor: NotionCursor,
): Promise<ListPage<NotionCursor>> {
  const api = apiFor(ctx);
  const pages = cursor.phase === "pages";
  let response: SearchResponse;
  try {
    response = await api.call((client) =>
      client.search({
        filter: { property: "object", value: pages ? "page" : "data_source" },
        sort: { timestamp: "last_edited_time", direction: "ascending" },
        page_size: ctx.config.pageSize,
        ...(cursor.start ? { start_cursor: cursor.start } : {}),
      }),
    );
  } catch (error) {
    if (!cursor.start || notionStatus(error) !== 400) throw error;
    // A search cursor Notion no longer takes (a pass resumed long after a rate limit): the phase starts
    // over. Items listed twice are harmless; the row digests are rebuilt with the pages.
    ctx.log.info({ phase: cursor.phase }, "notion: search cursor refused; listing the phase again");
    return listNotionPage(ctx, { ...cursor, start: null, rows: pages ? {} : cursor.rows });
  }
  const now = api.serverTime ?? Date.now();
  const items: SourceItem[] = [];
  const rows = { ...cursor.rows };
  for (const result of response.results) {
    if (pages && isFullPage(result)) {
      if (gone(result)) continue;
      if (isRow(result)) {
        if (!ctx.config.includeDatabases) continue;
        if (result.parent.type === "data_source_id") {
          const source = result.parent.data_source_id;
          rows[source] = addRow(rows[source], result.id, pageTitle(result.properties));
        }
      }
      items.push({ id: PAGE_PREFIX + result.id, version: editVersion(result.last_edited_time, now) });
    } else if (!pages && isFullDataSource(result)) {
      if (gone(result)) continue;
      items.push({
        id: DATA_SOURCE_PREFIX + result.id,
        version: `${editVersion(result.last_edited_time, now)}|rows ${rows[result.id] ?? "0:0"}`,
      });
    }
  }

  // Notion may stop a search short (query_result_limit_reached): what it did not list is not known to be
  // gone, so the engine keeps it rather than deleting it.
  let unchanged: string[] | undefined;
  if (response.request_status?.type === "incomplete") {
    ctx.log.warn(
      { phase: cursor.phase, reason: response.request_status.incomplete_reason },
      "notion: search results are incomplete; items not listed are kept, not deleted",
    );
    unchanged = [pages ? PAGE_PREFIX : DATA_SOURCE_PREFIX];
  }

  let next: NotionCursor | null;
  if (response.has_more && response.next_cursor) next = { ...cursor, start: response.next_cursor, rows };
  else if (pages && ctx.config.includeDatabases) next = { phase: "data_sources", start: null, rows };
  else next = null;
  return { items, next, ...(unchanged ? { unchanged } : {}) };
}

export async function fetchNotionItem(ctx: NotionContext, item: SourceItem): Promise<FetchedItem | null> {
  const api = apiFor(ctx);
  if (item.id.startsWith(PAGE_PREFIX)) return fetchPage(ctx, api, item.id.slice(PAGE_PREFIX.length));
  if (item.id.startsWith(DATA_SOURCE_PREFIX)) {
    return fetchDataSource(ctx, api, item.id.slice(DATA_SOURCE_PREFIX.length));
  }
  return null;
}

/** The object, or null when Notion no longer shows it to the integration (404). */
async function retrieve<T>(api: NotionApi, run: (client: Client) => Promise<T>): Promise<T | null> {
  try {
    return await api.call(run);
  } catch (error) {
    if (notionStatus(error) === 404) return null;
    throw error;
  }
}

async function fetchPage(ctx: NotionContext, api: NotionApi, id: string): Promise<FetchedItem | null> {
  const page = await retrieve(api, (client) => client.pages.retrieve({ page_id: id }));
  if (!page || !isFullPage(page) || gone(page)) return null;
  const values = await fullProperties(ctx, api, page);
  const title = pageTitle(values) || "Untitled";
  const properties = isRow(page) ? propertiesToText(values) : "";
  const body = blocksToMarkdown(await children(ctx, api, page.id, 0));
  const text = [`# ${title}`, properties, body].filter(Boolean).join("\n\n");
  return {
    title,
    text,
    url: page.url,
    metadata: {
      lastEditedTime: page.last_edited_time,
      parentType: page.parent.type,
      notionId: page.id,
      objectType: "page",
    },
  };
}

/**
 * A page's properties with every value we render complete. Retrieve a page gives at most 25 references per
 * property (mentions in a title or text, people) and says to page through the rest with Retrieve a page
 * property item (https://developers.notion.com/reference/retrieve-a-page, "Limits";
 * https://developers.notion.com/reference/retrieve-a-page-property). Only values that reach the limit are
 * fetched again, so a page costs one extra request only when something may be cut. Relations are not
 * rendered (they hold page ids only), so their `has_more` is not followed.
 */
async function fullProperties(
  ctx: NotionContext,
  api: NotionApi,
  page: PageObjectResponse,
): Promise<Record<string, unknown>> {
  const values: Record<string, unknown> = { ...page.properties };
  for (const [name, value] of Object.entries(page.properties)) {
    if (!mayBeCut(value)) continue;
    const items: unknown[] = [];
    let start: string | undefined;
    do {
      const from = start;
      const response = await retrieve(api, (client) =>
        client.pages.properties.retrieve({
          page_id: page.id,
          property_id: value.id,
          page_size: ctx.config.pageSize,
          ...(from ? { start_cursor: from } : {}),
        }),
      );
      // The page went while we read it: what Retrieve a page gave is all there is.
      if (response?.object !== "list") break;
      for (const item of response.results) {
        if (item.type === value.type) items.push((item as Record<string, unknown>)[value.type]);
      }
      start = response.has_more ? (response.next_cursor ?? undefined) : undefined;
      if (!start) values[name] = { ...value, [value.type]: items };
    } while (start);
  }
  return values;
}

/** Whether a property value in a page object may have been cut at Notion's 25 references. */
function mayBeCut(value: PageObjectResponse["properties"][string]): boolean {
  if (value.type === "people") return value.people.length >= PAGE_REFERENCE_LIMIT;
  if (value.type === "title" || value.type === "rich_text") {
    const runs = value.type === "title" ? value.title : value.rich_text;
    return runs.filter((run) => run.type === "mention").length >= PAGE_REFERENCE_LIMIT;
  }
  return false;
}

/** A block's children, and theirs, in order. A block deleted while we read is read as empty. */
async function children(
  ctx: NotionContext,
  api: NotionApi,
  blockId: string,
  depth: number,
): Promise<BlockNode[]> {
  const nodes: BlockNode[] = [];
  let start: string | undefined;
  do {
    const from = start;
    const response = await retrieve(api, (client) =>
      client.blocks.children.list({
        block_id: blockId,
        page_size: ctx.config.pageSize,
        ...(from ? { start_cursor: from } : {}),
      }),
    );
    if (!response) return nodes;
    for (const block of response.results) {
      if (isFullBlock(block) && !gone(block)) nodes.push({ block, children: [] });
    }
    start = response.has_more ? (response.next_cursor ?? undefined) : undefined;
  } while (start);
  for (const node of nodes) {
    if (!node.block.has_children || NOT_INLINED.has(node.block.type)) continue;
    if (depth + 1 >= MAX_DEPTH) {
      ctx.log.info({ blockId: node.block.id }, "notion: blocks nested deeper than this are not synced");
      continue;
    }
    node.children = await children(ctx, api, node.block.id, depth + 1);
  }
  return nodes;
}

async function fetchDataSource(ctx: NotionContext, api: NotionApi, id: string): Promise<FetchedItem | null> {
  const source = await retrieve(api, (client) => client.dataSources.retrieve({ data_source_id: id }));
  if (!source || !isFullDataSource(source) || gone(source)) return null;
  const title = plainText(source.title).trim() || "Untitled database";
  const rows: string[] = [];
  let more = false;
  let start: string | undefined;
  do {
    const from = start;
    const response = await retrieve(api, (client) =>
      client.dataSources.query({
        data_source_id: source.id,
        page_size: ctx.config.pageSize,
        ...(from ? { start_cursor: from } : {}),
      }),
    );
    if (!response) break;
    for (const row of response.results) {
      if (!isFullPage(row) || gone(row)) continue;
      if (rows.length >= MAX_DATABASE_ROWS) {
        more = true;
        break;
      }
      rows.push(pageTitle(row.properties) || "Untitled");
    }
    start = response.has_more && !more ? (response.next_cursor ?? undefined) : undefined;
  } while (start);
  const description = plainText(source.description).trim();
  const text = [
    `# ${title}`,
    description,
    columnsLine(source),
    rows.length ? rows.map((row) => `- ${row}`).join("\n") : "",
    more ? `(only the first ${MAX_DATABASE_ROWS} rows are named here)` : "",
  ]
    .filter(Boolean)
    .join("\n\n");
  return {
    title,
    text,
    url: source.url,
    metadata: {
      lastEditedTime: source.last_edited_time,
      parentType: source.database_parent?.type ?? source.parent.type,
      notionId: source.id,
      objectType: "data_source",
      rowCount: rows.length,
    },
  };
}

function columnsLine(source: DataSourceObjectResponse): string {
  const names = Object.values(source.properties).map((p) => p.name);
  return names.length ? `Columns: ${names.join(", ")}` : "";
}
