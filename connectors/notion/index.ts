/**
 * Notion connector (provider `notion`): syncs the pages and databases a Notion workspace shares with the
 * integration (the user picks them on Notion's consent page, `owner=user`).
 *
 * Documents, by id (stable across passes; the version decides what is fetched again):
 * - `page/<page id>`: a page, or a database row (rows are pages), as Markdown-like text: `# Title`, a row's
 *   properties as `Name: value` lines, then its blocks (headings, nested bulleted / numbered lists, to-dos,
 *   quotes, callouts, code, toggles, tables, dividers, equations, media captions and external links).
 *   Sub-pages are not inlined (each is its own document; the parent names them as `Page: <title>`).
 *   Version: `last_edited_time`.
 * - `data_source/<data source id>`: a database's table (Notion API 2025-09-03 data source) as a document
 *   with its title, description, column names and the titles of its rows (at most 2000). Version:
 *   `last_edited_time` plus a digest of its rows' ids and titles, so adding, removing or renaming a row
 *   updates it.
 * Versions are marked as settling while Notion's minute-rounded last_edited_time may still take edits, so
 * such an item is fetched once more after its minute has passed. Trashed pages and pages no longer shared
 * are not listed, and the engine deletes their documents at the end of the pass. url = the Notion URL;
 * metadata: `lastEditedTime`, `parentType` (workspace, page_id, data_source_id, block_id...), `notionId`,
 * `objectType` (page | data_source), and `rowCount` for databases.
 *
 * Row properties are complete: a title, text or people value that reaches the 25 references a page object
 * shows is read again through the property item endpoint. Listing relies on Notion's search, which is not
 * guaranteed complete and indexes new pages with a delay; pages shared directly are always returned.
 * Requests keep to about three a second per integration token across the worker's connections, and a
 * 429 asking for at most a minute is waited out for that one request.
 *
 * Settings (`includeDatabases`, `pageSize`): see settings.ts.
 *
 * Credentials: OAuth only (public integration). The engine runs the consent flow and keeps the tokens;
 * nothing secret goes in metadata. The service's own app comes from `NOTION_CLIENT_ID` /
 * `NOTION_CLIENT_SECRET`, a caller's own app from the settings `notionClientId` / `notionClientSecret` /
 * `notionCustomKeyEnabled`. Notion's classic tokens do not expire; newer integrations also return a
 * refresh token. A 401 gets one refresh and one retry; after that the connection is auth_expired.
 */

import type { Connector, OAuthSpec } from "../types.ts";
import {
  type NotionConfig,
  type NotionSecrets,
  notionConfigSchema,
  notionSecretsSchema,
} from "./settings.ts";
import {
  DEFAULT_NOTION_API,
  fetchNotionItem,
  initialNotionCursor,
  listNotionPage,
  type NotionCursor,
  notionCursorSchema,
} from "./sync.ts";

export const notionOAuth: OAuthSpec = {
  authorizeUrl: "https://api.notion.com/v1/oauth/authorize",
  tokenUrl: "https://api.notion.com/v1/oauth/token",
  // Notion has no scopes: the user picks pages on the consent page; capabilities are set on the integration.
  scopes: [],
  pkce: false,
  tokenAuth: "basic",
  authorizeParams: { owner: "user", response_type: "code" },
  settingsPrefix: "notion",
  envPrefix: "NOTION",
};

export const notionConnector: Connector<NotionConfig, NotionSecrets, NotionCursor> = {
  provider: "notion",
  displayName: "Notion",
  configSchema: notionConfigSchema,
  secretKeys: [],
  secretsSchema: notionSecretsSchema,
  listing: "full",
  cursorSchema: notionCursorSchema,
  initialCursor: () => initialNotionCursor(),
  listPage: listNotionPage,
  fetchItem: fetchNotionItem,
  oauth: notionOAuth,
  defaultApiBaseUrl: DEFAULT_NOTION_API,
};

export type { NotionCursor } from "./sync.ts";
export { DEFAULT_NOTION_API } from "./sync.ts";
