// A local stand-in for the Microsoft identity platform's token endpoint and the Microsoft Graph v1.0 drive
// API (the endpoints the onedrive connector and the OAuth flow use), on 127.0.0.1. Shapes follow Graph's
// API reference (driveItem, driveItem: delta, list children, download content, the v2.0 token endpoint):
//
// - OAuth: GET /common/oauth2/v2.0/authorize (the consent page: redirects back with a code at once, keeping
//   the PKCE challenge), POST /common/oauth2/v2.0/token with form fields (client_id, client_secret,
//   grant_type authorization_code with code/redirect_uri/code_verifier, or refresh_token), answering
//   `{token_type, scope, expires_in, ext_expires_in, access_token, refresh_token}`; errors as
//   `{error, error_description: "AADSTS…", error_codes, timestamp, trace_id, correlation_id}`.
// - Graph: Bearer tokens; errors as `{error: {code, message, innerError}}`
//   (https://learn.microsoft.com/en-us/graph/errors): 401 InvalidAuthenticationToken, 403 accessDenied,
//   404 itemNotFound, 429 activityLimitReached with Retry-After, 410 resyncRequired with a Location that
//   starts a fresh enumeration, 501 notSupported.
// - The drive is a OneDrive for Business (default) or a personal OneDrive (option `driveType`): the type
//   shows in /me/drive and every parentReference.driveType. On a business drive only the root has a delta:
//   a folder's delta answers 501 notSupported "view.delta can only be called on the root."
//   (https://github.com/OneDrive/onedrive-api-docs/issues/214, #842, #1060; the v1.0 reference lists only
//   root routes: https://learn.microsoft.com/en-us/graph/api/driveitem-delta).
// - GET /v1.0/me, /v1.0/me/drive, /v1.0/me/drive/root, /v1.0/me/drive/items/{id} (items carry
//   `@microsoft.graph.downloadUrl` and parentReference.path), …/children ($top, @odata.nextLink with
//   $skiptoken), …/items/{id}/content (302 to a pre-authenticated download URL on this server, or the bytes),
//   /v1.0/me/drive/root/delta and /v1.0/me/drive/items/{id}/delta ($top, @odata.nextLink until the last
//   page, which has an @odata.deltaLink; `token=latest`).
// - Delta as documented: the latest state of each changed item, not each change; no parentReference.path;
//   deleted items as tombstones with the `deleted` facet, without name and cTag (OneDrive for Business) or
//   without cTag and size (personal); parents of changed items included unless the request has `deltaExcludeParent: true`; moving a
//   folder reports the folder, not its descendants. A folder-scoped delta reports an item moved out of the
//   folder either as a tombstone or in its new place (option `movedOutOfScope`, as Graph's behaviour here
//   is not documented).
// - eTag changes with every change of an item, cTag only when its content does.
//
// The drive lives in memory; tests add, modify, rename, move and delete items between syncs.

import { createHash, randomBytes, randomUUID } from "node:crypto";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { UserQuota } from "./user-quota.ts";

export interface FakeGraphOptions {
  /** "business" (default): OneDrive for Business, delta on the root only; "personal": a consumer OneDrive. */
  driveType?: "business" | "personal";
  clientId?: string;
  clientSecret?: string;
  /** How a folder-scoped delta reports an item moved out of the folder (default "moved"). */
  movedOutOfScope?: "deleted" | "moved";
  /** false: items carry no `@microsoft.graph.downloadUrl` (callers must use /content). Default true. */
  downloadUrls?: boolean;
  /** false: /content answers the bytes itself instead of a 302 to a download URL. Default true. */
  contentRedirect?: boolean;
  /** false: the `deltaExcludeParent` header is ignored (parents always come along). Default true. */
  honorDeltaExcludeParent?: boolean;
}

export interface FakeGraphRequest {
  method: string;
  /** Path and query, as requested. */
  path: string;
  status: number;
  /** Whether an Authorization header came with the request. */
  authorized: boolean;
  /** The `deltaExcludeParent` request header, if any. */
  deltaExcludeParent?: string;
  /** The bearer token the request carried (tells connections of one user apart). */
  token?: string;
}

export interface FakeTokenRequest {
  grantType: string;
  status: number;
}

export interface FakeItemState {
  id: string;
  name: string;
  parentId: string | null;
  eTag: string;
  cTag: string;
  quickXorHash: string;
  deleted: boolean;
}

export interface FakeGraph {
  /** The Graph API root (what a connection uses as its API root): `<origin>/v1.0`. */
  url: string;
  origin: string;
  tokenUrl: string;
  authorizeUrl: string;
  clientId: string;
  clientSecret: string;
  /** Id of the drive's root folder. */
  rootId: string;
  driveId: string;
  /** Every Graph and download request answered, in order. */
  requests: FakeGraphRequest[];
  /** Every token request answered, in order. */
  tokenRequests: FakeTokenRequest[];
  /** A code as the consent page would redirect with; PKCE when a challenge is given. */
  issueCode(options?: { redirectUri?: string; codeChallenge?: string; scope?: string }): string;
  /** Current access tokens now answer 401; refreshing still works. */
  expireAccessTokens(): void;
  /** The user removed the app's access: refresh answers 400 invalid_grant, every API call 401. */
  revoke(): void;
  /** The next API call(s) answer 429 (or 503) with Retry-After (seconds, or an HTTP date string). */
  rateLimitNext(options?: {
    retryAfterSeconds?: number;
    retryAfterDate?: Date;
    times?: number;
    status?: 429 | 503;
  }): void;
  /**
   * From now on the user may send at most `requests` API requests per `windowSeconds` (every token of the
   * user counts, whichever connection holds it); past that, 429 activityLimitReached with Retry-After until
   * the window ends. Null lifts it.
   */
  throttleUser(quota: { requests: number; windowSeconds: number } | null): void;
  /** Delta and next links issued so far answer 410 resyncRequired, with a Location for a fresh enumeration. */
  expireDeltaTokens(): void;
  /**
   * Right after the next delta page that lists the item has been served, the item is deleted ("remove") or
   * the user loses access to it ("forbid"): what a sync sees when that happens between listing and fetch.
   */
  afterListing(id: string, change: "remove" | "forbid"): void;
  /** The user may no longer read the item: GET, /children, /content, its delta and download URLs answer 403. */
  forbid(id: string): void;
  /** The user may no longer read the drive at all (e.g. the licence was removed): /me/drive… answers 403. */
  denyDrive(): void;
  /** Download URLs issued so far answer 401, as pre-authenticated URLs do after about an hour. */
  expireDownloadUrls(): void;
  addFolder(name: string, parentId?: string): string;
  addFile(name: string, content: string | Buffer, options?: { parentId?: string; mimeType?: string }): string;
  /** A OneNote notebook (a `package` item) holding a section file, as OneDrive stores them. */
  addNotebook(name: string, parentId?: string): string;
  /** New content: eTag and cTag change. */
  updateFile(id: string, content: string | Buffer): void;
  /** eTag changes, cTag does not. */
  rename(id: string, name: string): void;
  move(id: string, parentId: string): void;
  /** To the recycle bin, with everything under it: the API answers 404 for it from now on. */
  remove(id: string): void;
  item(id: string): FakeItemState;
  /** `/Folder/Sub/` of the item's parent, as the connector reports filepaths. */
  folderPath(id: string): string;
  stop(): Promise<void>;
}

type Kind = "root" | "folder" | "file" | "package";

interface HistoryEntry {
  seq: number;
  parentId: string | null;
  deleted: boolean;
}

interface Node {
  id: string;
  /** Creation order: delta pages list items by it, so parents come before their children. */
  serial: number;
  kind: Kind;
  name: string;
  parentId: string | null;
  content: Buffer;
  mimeType: string;
  guid: string;
  eTagVersion: number;
  cTagVersion: number;
  created: string;
  modified: string;
  deleted: boolean;
  /** Sequence number of the latest change. */
  seq: number;
  /** Where the item was, after each change: delta answers "was it in this folder at token time?" with it. */
  history: HistoryEntry[];
}

interface DeltaToken {
  /** Changes after this sequence number; null: a fresh enumeration. */
  since: number | null;
  /** Changes up to this one (the state when the round began); -1 in a deltaLink: up to now. */
  upto: number;
  /** Next page: items created after this serial. */
  after: number;
  top: number;
  generation: number;
}

interface Grant {
  refreshTokens: Set<string>;
  revoked: boolean;
}

const DEFAULT_USER = {
  id: "48d31887-5fad-4d73-a9f5-3c356e68a038",
  displayName: "Megan Bowen",
  mail: "MeganB@contoso.onmicrosoft.com",
  userPrincipalName: "MeganB@contoso.onmicrosoft.com",
};
const WEB_ROOT = "https://contoso-my.sharepoint.com/personal/meganb_contoso_onmicrosoft_com/Documents";
const DEFAULT_TOP = 200;
const MAX_TOP = 999;
const ACCESS_TOKEN_SECONDS = 3599;

const MIME_BY_EXTENSION: Record<string, string> = {
  txt: "text/plain",
  md: "text/markdown",
  pdf: "application/pdf",
  html: "text/html",
  csv: "text/csv",
  json: "application/json",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  png: "image/png",
  one: "application/msonenote",
};

class GraphProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly innerCode?: string,
  ) {
    super(message);
  }
}

function itemId(): string {
  // OneDrive for Business ids: "01" and 32 base32 characters.
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  const bytes = randomBytes(32);
  let id = "01";
  for (const b of bytes) id += alphabet[b % 32];
  return id;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

export async function startFakeGraph(options: FakeGraphOptions = {}): Promise<FakeGraph> {
  const clientId = options.clientId ?? "6731de76-14a6-49ae-97bc-6eba6914391e";
  const clientSecret = options.clientSecret ?? "fake~graph~secret~0000000000000000000000";
  const movedOutOfScope = options.movedOutOfScope ?? "moved";
  const downloadUrls = options.downloadUrls ?? true;
  const contentRedirect = options.contentRedirect ?? true;
  const honorDeltaExcludeParent = options.honorDeltaExcludeParent ?? true;
  const driveType = options.driveType ?? "business";
  const driveId = `b!${randomBytes(24).toString("base64url")}`;

  const requests: FakeGraphRequest[] = [];
  const tokenRequests: FakeTokenRequest[] = [];
  const nodes = new Map<string, Node>();
  let seq = 0;
  let serial = 0;
  let clock = Date.now() - 3_600_000;
  const tick = () => {
    clock = Math.max(clock + 1000, Date.now() - 3_000_000);
    return iso(clock);
  };
  let deltaGeneration = 0;
  let downloadGeneration = 0;

  // OAuth state.
  const codes = new Map<string, { redirectUri?: string; codeChallenge?: string; scope: string }>();
  const grants: Grant[] = [];
  const accessTokens = new Map<string, { grant: Grant; expired: boolean }>();
  const rateLimits: { retryAfter: string; status: number }[] = [];
  // Each fake is one user's drive, with an id of its own: request budgets are kept per user in the worker
  // process, so two fakes in one test process must not be taken for one account.
  const USER = { ...DEFAULT_USER, id: randomUUID() };
  let userQuota: UserQuota | null = null;
  const downloads = new Map<string, { id: string; generation: number }>();
  const forbidden = new Set<string>();
  const pendingAfterListing = new Map<string, "remove" | "forbid">();
  let driveDenied = false;

  function node(id: string): Node {
    const found = nodes.get(id);
    if (!found) throw new Error(`fake graph: no item ${id}`);
    return found;
  }

  function create(
    kind: Kind,
    name: string,
    parentId: string | null,
    content: Buffer = Buffer.alloc(0),
    mime = "",
  ) {
    const now = tick();
    seq++;
    const n: Node = {
      id: itemId(),
      serial: ++serial,
      kind,
      name,
      parentId,
      content,
      mimeType: mime,
      guid: randomUUID().toUpperCase(),
      eTagVersion: 1,
      cTagVersion: 1,
      created: now,
      modified: now,
      deleted: false,
      seq,
      history: [{ seq, parentId, deleted: false }],
    };
    nodes.set(n.id, n);
    return n;
  }

  function touch(n: Node) {
    seq++;
    n.seq = seq;
    n.eTagVersion++;
    n.modified = tick();
    n.history.push({ seq, parentId: n.parentId, deleted: n.deleted });
  }

  const root = create("root", "root", null);

  function liveFolder(id: string | undefined): Node {
    const n = node(id ?? root.id);
    if (n.deleted || (n.kind !== "folder" && n.kind !== "root" && n.kind !== "package"))
      throw new Error(`fake graph: ${id} is not a live folder`);
    return n;
  }

  function mimeFor(name: string): string {
    const ext = name.split(".").pop()?.toLowerCase() ?? "";
    return MIME_BY_EXTENSION[ext] ?? "application/octet-stream";
  }

  // ---- tree helpers ----

  function entryAt(n: Node, t: number): HistoryEntry | undefined {
    let found: HistoryEntry | undefined;
    for (const h of n.history) {
      if (h.seq > t) break;
      found = h;
    }
    return found;
  }

  /** Whether the item was live and inside `scope` (or is `scope`) after change number t. */
  function inScopeAt(n: Node, scope: string, t: number): boolean {
    let current: Node | undefined = n;
    for (let depth = 0; current && depth < 1000; depth++) {
      const h = entryAt(current, t);
      if (!h || h.deleted) return false;
      if (current.id === scope) return true;
      if (h.parentId === null) return false;
      current = nodes.get(h.parentId);
    }
    return false;
  }

  function pathSegments(n: Node): string[] {
    const names: string[] = [];
    let current: Node | undefined = n;
    while (current && current.kind !== "root") {
      names.unshift(current.name);
      current = current.parentId ? nodes.get(current.parentId) : undefined;
    }
    return names;
  }

  /** parentReference.path: "/drive/root:" for items in the root, "/drive/root:/A/B" deeper. */
  function parentPath(n: Node): string {
    const parent = n.parentId ? node(n.parentId) : undefined;
    const segments = parent ? pathSegments(parent) : [];
    return segments.length ? `/drive/root:/${segments.join("/")}` : "/drive/root:";
  }

  function isDescendant(n: Node, ancestorId: string): boolean {
    let current = n.parentId ? nodes.get(n.parentId) : undefined;
    while (current) {
      if (current.id === ancestorId) return true;
      current = current.parentId ? nodes.get(current.parentId) : undefined;
    }
    return false;
  }

  function children(folder: Node): Node[] {
    return [...nodes.values()]
      .filter((n) => !n.deleted && n.parentId === folder.id)
      .sort((a, b) => a.name.localeCompare(b.name, "en", { sensitivity: "base" }));
  }

  // ---- JSON shapes ----

  const eTag = (n: Node) => `"{${n.guid}},${n.eTagVersion}"`;
  const cTag = (n: Node) => `"c:{${n.guid}},${n.cTagVersion}"`;

  function size(n: Node): number {
    if (n.kind === "file") return n.content.length;
    return [...nodes.values()]
      .filter((c) => !c.deleted && c.kind === "file" && isDescendant(c, n.id))
      .reduce((sum, c) => sum + c.content.length, 0);
  }

  function itemJson(n: Node, view: "item" | "delta"): Record<string, unknown> {
    if (n.deleted) return tombstone(n);
    // An identity has displayName and id (https://learn.microsoft.com/en-us/graph/api/resources/identity).
    const user = { user: { id: USER.id, displayName: USER.displayName } };
    const json: Record<string, unknown> = {};
    if (n.kind === "file" && view === "item" && downloadUrls)
      json["@microsoft.graph.downloadUrl"] = downloadUrl(n);
    Object.assign(json, {
      createdDateTime: n.created,
      eTag: eTag(n),
      id: n.id,
      lastModifiedDateTime: n.modified,
      name: n.name,
      webUrl:
        n.kind === "root" ? WEB_ROOT : `${WEB_ROOT}/${pathSegments(n).map(encodeURIComponent).join("/")}`,
      cTag: cTag(n),
      size: size(n),
      createdBy: user,
      lastModifiedBy: user,
    });
    if (n.kind === "root") {
      json.parentReference = { driveType, driveId };
      json.root = {};
      json.folder = { childCount: children(n).length };
    } else {
      const parent = n.parentId ? nodes.get(n.parentId) : undefined;
      json.parentReference = {
        driveType,
        driveId,
        id: n.parentId,
        ...(parent && parent.kind !== "root" ? { name: parent.name } : { name: "Documents" }),
        // Delta leaves out the path: renaming a folder does not report its descendants.
        ...(view === "item" ? { path: parentPath(n) } : {}),
      };
    }
    json.fileSystemInfo = { createdDateTime: n.created, lastModifiedDateTime: n.modified };
    if (n.kind === "file") {
      json.file = {
        mimeType: n.mimeType,
        hashes: { quickXorHash: contentHash(n) },
      };
    } else if (n.kind === "folder") {
      json.folder = { childCount: children(n).length };
    } else if (n.kind === "package") {
      json.package = { type: "oneNote" };
    }
    return json;
  }

  /** Stands in for QuickXorHash: 160 bits of the content, base64. */
  function contentHash(n: Node): string {
    return createHash("sha1").update(n.content).digest("base64");
  }

  function downloadUrl(n: Node): string {
    const tempauth = randomBytes(18).toString("base64url");
    downloads.set(tempauth, { id: n.id, generation: downloadGeneration });
    return `${origin}/download/${encodeURIComponent(n.id)}?tempauth=${tempauth}`;
  }

  // ---- delta ----

  function encodeToken(t: DeltaToken): string {
    return Buffer.from(JSON.stringify(t)).toString("base64url");
  }

  function decodeToken(raw: string): DeltaToken {
    try {
      const t = JSON.parse(Buffer.from(raw, "base64url").toString("utf8")) as DeltaToken;
      if (typeof t.upto !== "number" || typeof t.after !== "number") throw new Error("bad token");
      return t;
    } catch {
      throw new GraphProblem(400, "invalidRequest", "Invalid token.");
    }
  }

  function deltaPath(scope: Node): string {
    return scope.kind === "root"
      ? "/me/drive/root/delta"
      : `/me/drive/items/${encodeURIComponent(scope.id)}/delta`;
  }

  function delta(scope: Node, query: URLSearchParams, excludeParent: boolean): Record<string, unknown> {
    const rawToken = query.get("token");
    const link = `${apiRoot}${deltaPath(scope)}`;
    if (rawToken === "latest") {
      return {
        "@odata.context": `${apiRoot}/$metadata#Collection(driveItem)`,
        value: [],
        "@odata.deltaLink": `${link}?token=${encodeToken({ since: seq, upto: -1, after: 0, top: DEFAULT_TOP, generation: deltaGeneration })}`,
      };
    }
    let token: DeltaToken;
    if (rawToken) {
      token = decodeToken(rawToken);
      // A deltaLink: the round covers every change made up to now.
      if (token.upto < 0) token = { ...token, upto: seq };
      // An expired token: 410 Gone, one of the documented resync codes, and a Location holding "a new
      // nextLink that starts a fresh delta enumeration from scratch" (driveitem-delta, Example 2).
      if (token.generation < deltaGeneration) {
        const restart = encodeToken({
          since: null,
          upto: seq,
          after: 0,
          top: token.top,
          generation: deltaGeneration,
        });
        throw new GraphProblem(
          410,
          "resyncRequired",
          "Resync required. Replace any local items with the server's version (including deletes) if you're sure that the service was up to date with your local changes when you last sync'd. Upload any local changes that the server doesn't know about.",
          { location: `${link}?token=${restart}` },
          "resyncChangesApplyDifferences",
        );
      }
    } else {
      const top = Math.min(Math.max(Number(query.get("$top")) || DEFAULT_TOP, 1), MAX_TOP);
      token = { since: null, upto: seq, after: 0, top, generation: deltaGeneration };
    }
    if (scope.deleted) throw new GraphProblem(404, "itemNotFound", "The resource could not be found.");

    const eligible = [...nodes.values()]
      .filter(
        (n) => n.serial > token.after && n.seq <= token.upto && (token.since === null || n.seq > token.since),
      )
      .sort((a, b) => a.serial - b.serial)
      .filter((n) => reported(n, scope, token) !== null);
    const pageNodes = eligible.slice(0, token.top);
    const value: Record<string, unknown>[] = [];
    const listed = new Set<string>();
    for (const n of pageNodes) {
      const state = reported(n, scope, token);
      if (!excludeParent && state === "live" && inScopeAt(n, scope.id, Number.POSITIVE_INFINITY)) {
        // Parents of a changed item come with it (up to the scope), as Graph does without deltaExcludeParent.
        const ancestors: Node[] = [];
        let parent = n.parentId ? nodes.get(n.parentId) : undefined;
        while (parent && !parent.deleted) {
          ancestors.unshift(parent);
          if (parent.id === scope.id) break;
          parent = parent.parentId ? nodes.get(parent.parentId) : undefined;
        }
        for (const a of ancestors) {
          if (listed.has(a.id)) continue;
          listed.add(a.id);
          value.push(itemJson(a, "delta"));
        }
      }
      listed.add(n.id);
      value.push(state === "tombstone" ? tombstone(n) : itemJson(n, "delta"));
    }
    for (const n of pageNodes) {
      const change = pendingAfterListing.get(n.id);
      if (change === undefined || reported(n, scope, token) !== "live") continue;
      pendingAfterListing.delete(n.id);
      // The answer is built: this page still lists the item, the requests after it no longer see it.
      if (change === "remove") removeItem(n.id);
      else forbidden.add(n.id);
    }
    const body: Record<string, unknown> = {
      "@odata.context": `${apiRoot}/$metadata#Collection(driveItem)`,
      value,
    };
    const last = pageNodes[pageNodes.length - 1];
    if (eligible.length > pageNodes.length && last) {
      body["@odata.nextLink"] = `${link}?token=${encodeToken({ ...token, after: last.serial })}`;
    } else {
      body["@odata.deltaLink"] =
        `${link}?token=${encodeToken({ since: token.upto, upto: -1, after: 0, top: token.top, generation: token.generation })}`;
    }
    return body;
  }

  /** How a delta round reports an item: live, as a tombstone, or not at all (null). */
  function reported(n: Node, scope: Node, token: DeltaToken): "live" | "tombstone" | null {
    if (token.since === null)
      return !n.deleted && inScopeAt(n, scope.id, Number.POSITIVE_INFINITY) ? "live" : null;
    const now = !n.deleted && inScopeAt(n, scope.id, Number.POSITIVE_INFINITY);
    if (now) return "live";
    const before = inScopeAt(n, scope.id, token.since);
    if (!before) return null;
    if (n.deleted) return "tombstone";
    return movedOutOfScope === "deleted" ? "tombstone" : "live";
  }

  /**
   * Tombstones as the delta remarks list what they leave out: no cTag or name on OneDrive for Business, no
   * cTag or size on a personal OneDrive (https://learn.microsoft.com/en-us/graph/api/driveitem-delta#remarks).
   */
  function tombstone(n: Node): Record<string, unknown> {
    return {
      id: n.id,
      ...(driveType === "personal" ? { name: n.name } : {}),
      lastModifiedDateTime: n.modified,
      parentReference: { driveType, driveId, id: n.parentId },
      deleted: { state: "deleted" },
      ...(n.kind === "file" ? { file: {} } : { folder: { childCount: 0 } }),
    };
  }

  // ---- HTTP ----

  function graphError(res: ServerResponse, problem: GraphProblem) {
    const body = {
      error: {
        code: problem.code,
        message: problem.message,
        innerError: {
          ...(problem.innerCode ? { code: problem.innerCode } : {}),
          date: iso(Date.now()),
          "request-id": randomUUID(),
          "client-request-id": randomUUID(),
        },
      },
    };
    res.writeHead(problem.status, { "content-type": "application/json", ...problem.headers });
    res.end(JSON.stringify(body));
  }

  function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { "content-type": "application/json; odata.metadata=minimal", ...headers });
    res.end(JSON.stringify(body));
  }

  function authorize(req: IncomingMessage) {
    const header = req.headers.authorization ?? "";
    const bearer = /^Bearer\s+(.+)$/i.exec(header)?.[1];
    const authError = (message: string) =>
      new GraphProblem(401, "InvalidAuthenticationToken", message, {
        "www-authenticate":
          'Bearer realm="", authorization_uri="https://login.microsoftonline.com/common/oauth2/authorize", client_id="00000003-0000-0000-c000-000000000000"',
      });
    if (!bearer) throw authError("Access token is empty.");
    const token = accessTokens.get(bearer);
    if (!token) throw authError("IDX14100: JWT is not well formed, there are no dots (.).");
    if (token.grant.revoked) throw authError("Access token validation failure. Invalid audience.");
    if (token.expired) throw authError("Lifetime validation failed, the token is expired.");
  }

  /**
   * 403 accessDenied: "The caller doesn't have permission to perform the action"; 403 is also what a user
   * without the needed licence gets (https://learn.microsoft.com/en-us/graph/errors).
   */
  const accessDenied = () => new GraphProblem(403, "accessDenied", "Access denied");

  function itemFromPath(segment: string): Node {
    const id = decodeURIComponent(segment);
    const n = id === "root" ? root : nodes.get(id);
    if (!n || n.deleted) throw new GraphProblem(404, "itemNotFound", "The resource could not be found.");
    if (forbidden.has(n.id)) throw accessDenied();
    return n;
  }

  function childrenPage(folder: Node, query: URLSearchParams, basePath: string): Record<string, unknown> {
    if (folder.kind === "file") return { value: [] };
    const top = Math.min(Math.max(Number(query.get("$top")) || DEFAULT_TOP, 1), MAX_TOP);
    const skip = query.get("$skiptoken")
      ? Number(Buffer.from(query.get("$skiptoken") ?? "", "base64url").toString())
      : 0;
    const all = children(folder);
    const page = all.slice(skip, skip + top);
    const body: Record<string, unknown> = {
      "@odata.context": `${apiRoot}/$metadata#users('${USER.id}')/drive/items('${folder.id}')/children`,
      value: page.map((n) => itemJson(n, "item")),
    };
    if (skip + top < all.length) {
      const token = Buffer.from(String(skip + top)).toString("base64url");
      body["@odata.nextLink"] = `${apiRoot}${basePath}?$top=${top}&$skiptoken=${token}`;
    }
    return body;
  }

  function api(req: IncomingMessage, res: ServerResponse, url: URL) {
    if (rateLimits.length) {
      const limit = rateLimits.shift() as { retryAfter: string; status: number };
      throw new GraphProblem(
        limit.status,
        limit.status === 429 ? "activityLimitReached" : "serviceNotAvailable",
        limit.status === 429 ? "The request has been throttled" : "Service unavailable",
        { "retry-after": limit.retryAfter },
      );
    }
    authorize(req);
    // SharePoint and OneDrive throttle each user across apps and tokens: 429 with a Retry-After to honour,
    // and "throttled requests count towards usage limits"
    // (https://learn.microsoft.com/en-us/sharepoint/dev/general-development/how-to-avoid-getting-throttled-or-blocked-in-sharepoint-online,
    // https://learn.microsoft.com/en-us/graph/throttling). The answer's shape is Graph's
    // activityLimitReached (https://learn.microsoft.com/en-us/graph/errors).
    const quota = userQuota?.take();
    if (quota?.exceeded) {
      throw new GraphProblem(429, "activityLimitReached", "The request has been throttled", {
        "retry-after": String(quota.retryAfterSeconds),
      });
    }
    const path = url.pathname.slice("/v1.0".length);
    const query = url.searchParams;
    if (driveDenied && path.startsWith("/me/drive")) throw accessDenied();
    const excludeParent =
      honorDeltaExcludeParent && String(req.headers.deltaexcludeparent ?? "").toLowerCase() === "true";
    if (path === "/me")
      return json(res, 200, { "@odata.context": `${apiRoot}/$metadata#users/$entity`, ...USER });
    if (path === "/me/drive")
      return json(res, 200, {
        "@odata.context": `${apiRoot}/$metadata#drives/$entity`,
        id: driveId,
        driveType,
        name: "OneDrive",
        webUrl: WEB_ROOT,
        owner: { user: { id: USER.id, displayName: USER.displayName } },
        quota: { deleted: 0, remaining: 1099511627776, state: "normal", total: 1099511627776, used: 0 },
      });
    if (path === "/me/drive/root") return json(res, 200, itemJson(root, "item"));
    if (path === "/me/drive/root/children") return json(res, 200, childrenPage(root, query, path));
    if (path === "/me/drive/root/delta") return json(res, 200, delta(root, query, excludeParent));
    const match = /^\/me\/drive\/items\/([^/]+)(?:\/(children|content|delta))?$/.exec(path);
    if (match?.[1]) {
      const n = itemFromPath(match[1]);
      if (match[2] === "children") return json(res, 200, childrenPage(n, query, path));
      if (match[2] === "delta") {
        if (driveType === "business")
          throw new GraphProblem(501, "notSupported", "view.delta can only be called on the root.");
        return json(res, 200, delta(n, query, excludeParent));
      }
      if (match[2] === "content") {
        if (n.kind !== "file")
          throw new GraphProblem(404, "itemNotFound", "The resource could not be found.");
        if (contentRedirect) {
          res.writeHead(302, { location: downloadUrl(n), "content-length": "0" });
          return res.end();
        }
        res.writeHead(200, { "content-type": n.mimeType, "content-length": String(n.content.length) });
        return res.end(n.content);
      }
      return json(res, 200, {
        "@odata.context": `${apiRoot}/$metadata#users('${USER.id}')/drive/items/$entity`,
        ...itemJson(n, "item"),
      });
    }
    throw new GraphProblem(400, "invalidRequest", `Invalid request: ${path}`);
  }

  function download(res: ServerResponse, url: URL) {
    const id = decodeURIComponent(url.pathname.slice("/download/".length));
    const grant = downloads.get(url.searchParams.get("tempauth") ?? "");
    if (!grant || grant.id !== id || grant.generation < downloadGeneration) {
      res.writeHead(401, { "content-type": "text/plain" });
      return res.end("Unauthorized");
    }
    const n = nodes.get(id);
    if (!n || n.deleted) {
      res.writeHead(404, { "content-type": "text/plain" });
      return res.end("Not Found");
    }
    if (forbidden.has(id)) {
      res.writeHead(403, { "content-type": "text/plain" });
      return res.end("Forbidden");
    }
    res.writeHead(200, { "content-type": n.mimeType, "content-length": String(n.content.length) });
    res.end(n.content);
  }

  // ---- OAuth ----

  function aadError(status: number, error: string, code: number, description: string) {
    return {
      status,
      body: {
        error,
        error_description: `AADSTS${code}: ${description} Trace ID: ${randomUUID()} Correlation ID: ${randomUUID()} Timestamp: ${new Date().toISOString()}`,
        error_codes: [code],
        timestamp: new Date()
          .toISOString()
          .replace("T", " ")
          .replace(/\.\d+Z$/, "Z"),
        trace_id: randomUUID(),
        correlation_id: randomUUID(),
        error_uri: `https://login.microsoftonline.com/error?code=${code}`,
      },
    };
  }

  function issueTokens(grant: Grant, scope: string) {
    const accessToken = `eyJ0eXAiOiJKV1QiLCJub25jZSI6.${randomBytes(24).toString("base64url")}.${randomBytes(16).toString("base64url")}`;
    accessTokens.set(accessToken, { grant, expired: false });
    const refreshToken = `0.AXoA${randomBytes(48).toString("base64url")}`;
    grant.refreshTokens.add(refreshToken);
    return {
      token_type: "Bearer",
      scope,
      expires_in: ACCESS_TOKEN_SECONDS,
      ext_expires_in: ACCESS_TOKEN_SECONDS,
      access_token: accessToken,
      refresh_token: refreshToken,
    };
  }

  const GRAPH_SCOPES = "https://graph.microsoft.com/Files.Read https://graph.microsoft.com/User.Read";

  function token(raw: string): { status: number; body: unknown } {
    const params = Object.fromEntries(new URLSearchParams(raw));
    if (params.client_id !== clientId)
      return aadError(
        400,
        "unauthorized_client",
        700016,
        `Application with identifier '${params.client_id ?? ""}' was not found in the directory 'contoso'.`,
      );
    if (params.client_secret !== clientSecret)
      return aadError(401, "invalid_client", 7000215, "Invalid client secret provided.");
    if (params.grant_type === "authorization_code") {
      const code = codes.get(params.code ?? "");
      if (!code)
        return aadError(
          400,
          "invalid_grant",
          70000,
          "The provided value for the 'code' parameter is not valid. The code has expired.",
        );
      codes.delete(params.code ?? "");
      if (code.redirectUri && code.redirectUri !== params.redirect_uri)
        return aadError(
          400,
          "invalid_grant",
          50148,
          "The redirect URI specified in the request does not match the redirect URI configured for the application.",
        );
      if (code.codeChallenge) {
        const verifier = params.code_verifier ?? "";
        const challenge = createHash("sha256").update(verifier).digest("base64url");
        if (!verifier || challenge !== code.codeChallenge)
          return aadError(
            400,
            "invalid_grant",
            501481,
            "The Code_Verifier does not match the code_challenge supplied in the authorization request.",
          );
      }
      const grant: Grant = { refreshTokens: new Set(), revoked: false };
      grants.push(grant);
      return { status: 200, body: issueTokens(grant, code.scope) };
    }
    if (params.grant_type === "refresh_token") {
      const grant = grants.find((g) => g.refreshTokens.has(params.refresh_token ?? ""));
      if (!grant || grant.revoked)
        return aadError(
          400,
          "invalid_grant",
          700082,
          "The refresh token has expired or was revoked because the user revoked consent for the application.",
        );
      return { status: 200, body: issueTokens(grant, GRAPH_SCOPES) };
    }
    return aadError(
      400,
      "unsupported_grant_type",
      70003,
      `The app requested an unsupported grant type '${params.grant_type ?? ""}'.`,
    );
  }

  function consent(res: ServerResponse, url: URL) {
    const q = url.searchParams;
    const redirectUri = q.get("redirect_uri");
    if (q.get("client_id") !== clientId || !redirectUri || q.get("response_type") !== "code") {
      res.writeHead(400, { "content-type": "text/html" });
      return res.end("<html><body>AADSTS700016: invalid authorization request</body></html>");
    }
    const challenge = q.get("code_challenge") ?? undefined;
    if (challenge && q.get("code_challenge_method") !== "S256") {
      res.writeHead(400, { "content-type": "text/html" });
      return res.end("<html><body>AADSTS501491: code_challenge_method must be S256</body></html>");
    }
    const code = issueCode({ redirectUri, codeChallenge: challenge, scope: q.get("scope") ?? undefined });
    const target = new URL(redirectUri);
    target.searchParams.set("code", code);
    const state = q.get("state");
    if (state !== null) target.searchParams.set("state", state);
    target.searchParams.set("session_state", randomUUID());
    res.writeHead(302, { location: target.toString() });
    res.end();
  }

  function issueCode(opts: { redirectUri?: string; codeChallenge?: string; scope?: string } = {}): string {
    const code = `0.AXoA${randomBytes(40).toString("base64url")}`;
    codes.set(code, {
      redirectUri: opts.redirectUri,
      codeChallenge: opts.codeChallenge,
      scope: opts.scope
        ? opts.scope
            .split(/\s+/)
            .filter((s) => s !== "offline_access")
            .join(" ")
        : GRAPH_SCOPES,
    });
    return code;
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", origin);
      const method = req.method ?? "GET";
      const record = (status: number) => {
        if (url.pathname.startsWith("/common/")) return;
        requests.push({
          method,
          path: `${url.pathname}${url.search}`,
          status,
          authorized: Boolean(req.headers.authorization),
          ...(req.headers.authorization
            ? { token: String(req.headers.authorization).replace(/^Bearer\s+/i, "") }
            : {}),
          ...(req.headers.deltaexcludeparent !== undefined
            ? { deltaExcludeParent: String(req.headers.deltaexcludeparent) }
            : {}),
        });
      };
      res.on("finish", () => record(res.statusCode));
      try {
        if (url.pathname === "/common/oauth2/v2.0/token" && method === "POST") {
          const result = token(Buffer.concat(chunks).toString("utf8"));
          tokenRequests.push({
            grantType: new URLSearchParams(Buffer.concat(chunks).toString("utf8")).get("grant_type") ?? "",
            status: result.status,
          });
          return json(res, result.status, result.body, { "cache-control": "no-store", pragma: "no-cache" });
        }
        if (url.pathname === "/common/oauth2/v2.0/authorize" && method === "GET") return consent(res, url);
        if (url.pathname.startsWith("/download/") && method === "GET") return download(res, url);
        if (url.pathname.startsWith("/v1.0/") && method === "GET") return api(req, res, url);
        throw new GraphProblem(400, "BadRequest", `Resource not found for the segment '${url.pathname}'.`);
      } catch (error) {
        if (error instanceof GraphProblem) return graphError(res, error);
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { code: "generalException", message: String(error) } }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const apiRoot = `${origin}/v1.0`;

  function removeItem(id: string) {
    const n = node(id);
    const gone = [n, ...[...nodes.values()].filter((c) => !c.deleted && isDescendant(c, id))];
    for (const g of gone) {
      g.deleted = true;
      touch(g);
    }
  }

  function add(kind: Kind, name: string, parentId: string | undefined, content?: Buffer, mime?: string) {
    const parent = liveFolder(parentId);
    const n = create(kind, name, parent.id, content, mime);
    return n.id;
  }

  return {
    url: apiRoot,
    origin,
    tokenUrl: `${origin}/common/oauth2/v2.0/token`,
    authorizeUrl: `${origin}/common/oauth2/v2.0/authorize`,
    clientId,
    clientSecret,
    rootId: root.id,
    driveId,
    requests,
    tokenRequests,
    issueCode,
    expireAccessTokens() {
      for (const t of accessTokens.values()) t.expired = true;
    },
    revoke() {
      for (const g of grants) g.revoked = true;
    },
    rateLimitNext(opts = {}) {
      const retryAfter = opts.retryAfterDate
        ? opts.retryAfterDate.toUTCString()
        : String(opts.retryAfterSeconds ?? 1);
      for (let i = 0; i < (opts.times ?? 1); i++) rateLimits.push({ retryAfter, status: opts.status ?? 429 });
    },
    throttleUser(quota) {
      userQuota = quota && new UserQuota(quota);
    },
    expireDeltaTokens() {
      deltaGeneration++;
    },
    expireDownloadUrls() {
      downloadGeneration++;
    },
    addFolder(name, parentId) {
      return add("folder", name, parentId);
    },
    addFile(name, content, opts = {}) {
      const bytes = typeof content === "string" ? Buffer.from(content) : content;
      return add("file", name, opts.parentId, bytes, opts.mimeType ?? mimeFor(name));
    },
    addNotebook(name, parentId) {
      const notebook = add("package", name, parentId);
      add("file", "Quick Notes.one", notebook, Buffer.from("onenote section bytes"), mimeFor("x.one"));
      return notebook;
    },
    updateFile(id, content) {
      const n = node(id);
      n.content = typeof content === "string" ? Buffer.from(content) : content;
      n.cTagVersion++;
      touch(n);
    },
    rename(id, name) {
      const n = node(id);
      n.name = name;
      touch(n);
    },
    move(id, parentId) {
      const n = node(id);
      n.parentId = liveFolder(parentId).id;
      touch(n);
    },
    remove: removeItem,
    afterListing(id, change) {
      node(id);
      pendingAfterListing.set(id, change);
    },
    forbid(id) {
      node(id);
      forbidden.add(id);
    },
    denyDrive() {
      driveDenied = true;
    },
    item(id) {
      const n = node(id);
      return {
        id: n.id,
        name: n.name,
        parentId: n.parentId,
        eTag: eTag(n),
        cTag: cTag(n),
        quickXorHash: contentHash(n),
        deleted: n.deleted,
      };
    },
    folderPath(id) {
      const n = node(id);
      const parent = n.parentId ? node(n.parentId) : undefined;
      const segments = parent ? pathSegments(parent) : [];
      return segments.length ? `/${segments.join("/")}/` : "/";
    },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
