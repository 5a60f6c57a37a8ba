// What a connector is to the sync engine: a declaration (provider slug, settings schema, which settings
// are secret) plus one sync module that lists the source page by page with a typed cursor and fetches
// items. The engine (workflows/sync-connection.ts, activities/sync.ts) knows connectors only through
// connectors/registry.ts; it decides what changed by comparing each item's `version` with the one it
// stored at the last sync, and fetches only changed items. A connector's checkpoints (the cursor between
// pages, the carry between passes) are declared as zod schemas, so the engine parses what it stored or
// what the workflow hands back before the connector sees it (connectors/checkpoint.ts).

import type { z } from "zod";
import type { Logger } from "../config/logger.ts";
import type { SkipReason } from "./errors.ts";

export type ItemMetadata = Record<string, string | number | boolean | string[]>;

/** One item at the source as listed: its stable id and a version that changes whenever its content does. */
export interface SourceItem {
  /** Stable at the source: S3 key, page URL, `INBOX/<uidvalidity>/<uid>`, `owner/repo/path`... */
  id: string;
  /** ETag, Last-Modified, content hash, git blob sha, UID...: equal versions are never fetched again. */
  version: string;
  /** Listings that already hold the content (a crawled page) hand it over; the engine then skips fetchItem. */
  content?: FetchedItem;
  /**
   * The listing already knows the item cannot be fetched (larger than the connection allows, archived): the
   * engine counts the skip on the run without fetching, and keeps what an earlier sync made of it.
   */
  skipped?: { reason: SkipReason; message: string };
}

/** A file or text the extraction pipeline turns into a document. */
export interface FetchedItem {
  title?: string;
  /** Text (plain or Markdown). Exactly one of text and file. */
  text?: string;
  /** Original bytes (PDF, .docx, mail attachment...), processed like an upload. */
  file?: { bytes: Buffer; name: string; mimeType?: string };
  /** Where a person can open it (shown with search results). */
  url?: string;
  /** Path-like grouping, e.g. `/bucket/prefix/` or `/owner/repo/docs/`. */
  filepath?: string;
  metadata?: ItemMetadata;
  /**
   * Items that live inside this one (mail attachments): each becomes its own document, synced and
   * deleted together with its parent. Ids are the parent's id plus a suffix unique within it.
   */
  children?: (FetchedItem & { id: string })[];
}

export interface ListPage<Cursor, Carry = unknown> {
  items: SourceItem[];
  /** Ids the source reports as deleted (delta listings). Full listings leave it out: see `listing`. */
  deleted?: string[];
  /** Where the next page starts; null when this pass over the source is finished. */
  next: Cursor | null;
  /**
   * Id prefixes the source reports unchanged since the last complete pass (a 304 on a conditional
   * request): the engine keeps every item it holds under them, as if listed with the same version.
   */
  unchanged?: string[];
  /**
   * A delta source lost its change history (Graph's 410 resyncRequired) and this pass enumerates
   * everything in scope again. Set on every page from then on: once a pass with such a page completes,
   * what the engine holds for the connection that no page of the pass listed (or kept through
   * `unchanged`) is gone at the source, exactly as after a complete pass of a `listing: "full"` connector.
   */
  fullResync?: boolean;
  /**
   * State for the next pass (ETags, listing times), kept by the engine from the latest page that has
   * one and handed to `initialCursor` once this pass has completed. Small, plain JSON, of the shape
   * the connector's `carrySchema` declares.
   */
  carry?: Carry;
}

/** Network rules for connectors that fetch user-given URLs (the crawler). */
export interface NetworkPolicy {
  allowPrivateNetwork: boolean;
  timeoutMs: number;
  maxBytes: number;
}

export interface SyncContext<Config, Secrets> {
  connectionId: string;
  /** The connection's settings (metadata at creation), parsed with the connector's configSchema. */
  config: Config;
  /** Its secrets (taken out of metadata at creation, stored sealed), parsed with secretsSchema. */
  secrets: Secrets;
  network: NetworkPolicy;
  /** Cancelled when the activity is (worker shutdown, timeout): long calls should pass it on. */
  signal: AbortSignal;
  /** Call during long work so Temporal knows the activity is alive. */
  heartbeat(): void;
  log: Logger;
  /** OAuth connectors: the connection's tokens, kept fresh by the engine. */
  oauth?: OAuthSession;
  /**
   * Drive connectors with folder and file selection (`syncScope` other than "full"): what the user
   * ticked in the hosted picker. Only these items, and everything inside the selected folders, sync.
   */
  selection?: PickedItem[];
  /** The provider's API root (tests point it at a local server): from CONNECTOR_ENDPOINTS, else the connector's default. */
  apiBaseUrl?: string;
}

export interface OAuthSession {
  /** A valid access token: refreshed by the engine first when it expires within a few minutes. */
  accessToken(): Promise<string>;
  /**
   * Call once after the provider answered 401 to a token that looked valid: the engine refreshes it
   * (if the provider gives refresh tokens) and returns the new one; a refused refresh throws
   * ConnectorAuthError (the connection becomes auth_expired).
   */
  refresh(): Promise<string>;
}

/** An entry the hosted picker shows and stores. */
export interface PickedItem {
  id: string;
  name: string;
  kind: "folder" | "file";
  mimeType?: string;
}

/** What a connector needs for the OAuth authorization-code flow (the engine runs the flow). */
export interface OAuthSpec {
  /** Default consent page and token endpoint; CONNECTOR_ENDPOINTS may override them per provider. */
  authorizeUrl: string;
  tokenUrl: string;
  scopes: string[];
  /** Space or comma between scopes in the authorize URL. */
  scopeSeparator?: " " | ",";
  /** Send a PKCE code challenge (S256). */
  pkce: boolean;
  /** How the client authenticates at the token endpoint: form fields, or HTTP Basic (Notion). */
  tokenAuth: "body" | "basic";
  /** Extra authorize parameters (Google: access_type=offline, prompt=consent; Notion: owner=user). */
  authorizeParams?: Record<string, string>;
  /**
   * Prefix of the settings keys for a caller's own app: `<prefix>ClientId`, `<prefix>ClientSecret`,
   * `<prefix>CustomKeyEnabled`. /v3/settings accepts these keys for every prefix a connector declares.
   */
  settingsPrefix: string;
  /**
   * Prefix of the env variables of the service's own app: `<ENV>_CLIENT_ID`, `<ENV>_CLIENT_SECRET`
   * (config/env.ts reads them for every prefix a connector declares). Connectors of one provider's
   * app (Gmail and Google Drive) share both prefixes.
   */
  envPrefix: string;
}

export interface Connector<Config = unknown, Secrets = unknown, Cursor = unknown, Carry = unknown> {
  /** The slug in `/v3/connections/:provider`. */
  provider: string;
  displayName: string;
  /** Non-secret settings from the create call's metadata (bucket, start URL, host...). */
  configSchema: z.ZodType<Config>;
  /** Keys of metadata that are secret (passwords, tokens): sealed at rest, never returned. */
  secretKeys: readonly string[];
  secretsSchema: z.ZodType<Secrets>;
  /**
   * "full": every pass lists everything; at the end of a complete pass the engine deletes the documents
   * of items it did not see. "delta": the source reports deletions itself (`deleted`); the connector
   * hands its position (page token, delta link) to the next sync as `carry`, which the engine saves when
   * a sync completes and passes to `initialCursor`. A sync that failed starts again from the last saved
   * carry (re-listing changes is harmless: versions decide what is fetched).
   */
  listing: "full" | "delta";
  /**
   * The page checkpoint, as it travels through the workflow's history between pages (plain JSON). The
   * engine parses the cursor with it before each `listPage`; one that does not parse fails the sync.
   */
  cursorSchema: z.ZodType<Cursor>;
  /**
   * The state a complete pass hands to the next (`ListPage.carry`), for connectors that carry any. The
   * engine parses the stored carry with it before `initialCursor`; one that does not parse (its shape
   * changed in an upgrade) is dropped with a warning, so that pass lists everything.
   */
  carrySchema?: z.ZodType<Carry>;
  /**
   * The cursor a pass starts from ("full"), or the first sync starts from ("delta"). `carried` is the
   * `carry` of the last complete pass, if any.
   */
  initialCursor(ctx: SyncContext<Config, Secrets>, carried?: Carry): Promise<Cursor> | Cursor;
  listPage(ctx: SyncContext<Config, Secrets>, cursor: Cursor): Promise<ListPage<Cursor, Carry>>;
  /** The item's content; null when it turned out not to be content (gone, a 404 page): treated as absent. */
  fetchItem(ctx: SyncContext<Config, Secrets>, item: SourceItem): Promise<FetchedItem | null>;
  /**
   * Whether an item a complete listing missed is still at the source, without its content. The engine
   * asks this instead of fetchItem when it is given: for sources where items routinely leave the listing
   * yet stay (an archived Gmail message leaves INBOX, stays in All Mail), a download per item per sync
   * would be waste. Errors mean "cannot say", as with fetchItem.
   */
  exists?(ctx: SyncContext<Config, Secrets>, item: SourceItem): Promise<boolean>;
  /** Checks settings and credentials when the connection is created, so mistakes are a 400 at once. */
  verify?(ctx: SyncContext<Config, Secrets>): Promise<void>;
  /** Selectable resources (GitHub repositories) for `GET /v3/connections/:id/resources`. */
  resources?(
    ctx: SyncContext<Config, Secrets>,
    query: { page: number; perPage: number; parentId?: string },
  ): Promise<{ resources: Record<string, unknown>[]; total_count?: number }>;
  /** OAuth providers: the connection is created `pending` and gets its tokens through the consent flow. */
  oauth?: OAuthSpec;
  /** The API root used when CONNECTOR_ENDPOINTS does not name one (tests point it at a local server). */
  defaultApiBaseUrl?: string;
  /**
   * Drive connectors with a hosted picker: the folders and files inside a folder (null: the root), for
   * the picker page to browse. Uses ctx.oauth and ctx.apiBaseUrl like a sync.
   */
  browse?(ctx: SyncContext<Config, Secrets>, parentId: string | null): Promise<PickedItem[]>;
  /** Releases what the connector keeps between calls (open IMAP sessions) when the worker stops. */
  shutdown?(): Promise<void>;
  /** Validates the `resources` of `POST /v3/connections/:id/configure`; the result is stored in config. */
  configure?(resources: Record<string, unknown>[]): Partial<Config>;
}
