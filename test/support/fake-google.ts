// A local stand-in for Google's OAuth 2.0 endpoints and the Drive v3 API (what the google-drive connector
// uses), on 127.0.0.1. Shapes follow Google's documentation of the token endpoint and of Drive v3:
// - OAuth: a consent page at /o/oauth2/v2/auth that redirects at once with `code` and `state`; the token
//   endpoint at /token (authorization_code with PKCE S256, refresh_token; client credentials in the form
//   or HTTP Basic), errors as `{error, error_description}` (400 invalid_grant, 401 invalid_client...).
//   Refresh tokens are not rotated, as with Google.
// - Drive under /drive/v3/: files.list (`q` with `'<id>' in parents`, `'me' in owners`, `trashed`,
//   `mimeType`, `name` comparisons joined by and/or/not and parentheses; pageSize/pageToken; orderBy
//   folder/name/modifiedTime), files.get (`root` alias, `alt=media` downloads), files.export (text/plain
//   for Docs and Slides, text/csv for Sheets; Docs come with a UTF-8 BOM and CRLF lines, as from Google),
//   changes.getStartPageToken and changes.list (numeric page tokens into a change log that keeps each
//   file's latest change; `removed` for permanently deleted files; trashing or deleting a folder changes
//   its descendants too). `fields` projections are applied as Google does (only what was asked for).
//   Sheets hold several tabs: CSV and TSV exports carry the first only, PDF every one.
// - Shared drives: their items are reached only with supportsAllDrives=true, and listed (files.list,
//   changes.list) only with includeItemsFromAllDrives=true as well.
// - Errors in Google's JSON error format: 401 authError, 404 notFound, 403 fileNotDownloadable /
//   fileNotExportable, 403 exportSizeLimitExceeded past 10 MiB of export, per-file 403s
//   (insufficientFilePermissions, cannotDownloadAbusiveFile), 403 insufficientPermissions for a token
//   granted without a Drive scope, 400 invalid, 429 rateLimitExceeded (or 403 userRateLimitExceeded) with
//   Retry-After.
// Content lives in memory; tests add, change, move, trash and delete files between syncs.

import { createHash, randomBytes } from "node:crypto";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import zlib from "node:zlib";
import { UserQuota } from "./user-quota.ts";

export const FOLDER_MIME = "application/vnd.google-apps.folder";
export const DOC_MIME = "application/vnd.google-apps.document";
export const SHEET_MIME = "application/vnd.google-apps.spreadsheet";
export const SLIDES_MIME = "application/vnd.google-apps.presentation";
export const SHORTCUT_MIME = "application/vnd.google-apps.shortcut";
export const FORM_MIME = "application/vnd.google-apps.form";

// The export formats of https://developers.google.com/drive/api/guides/ref-export-formats that this fake
// can produce (Google offers more: .docx, .xlsx, .odt...; asking for those here is a 400).
const EXPORTS: Record<string, string[]> = {
  [DOC_MIME]: ["text/plain", "text/html", "text/markdown"],
  [SHEET_MIME]: ["text/csv", "text/tab-separated-values", "application/pdf"],
  [SLIDES_MIME]: ["text/plain"],
};

/**
 * "Exported content is limited to 10MB" (https://developers.google.com/drive/api/guides/manage-downloads,
 * files.export reference); past it Drive answers 403 exportSizeLimitExceeded.
 */
export const EXPORT_LIMIT_BYTES = 10 * 1024 * 1024;

/** One tab of a Google Sheet: its name and its cells as CSV. */
export interface FakeSheet {
  title: string;
  csv: string;
}

/**
 * Per-file 403s of https://developers.google.com/drive/api/guides/handle-errors: the account sees the file
 * but may not have its content (download disabled for viewers, or flagged as abusive).
 */
/**
 * Per-file refusals of a download or export (https://developers.google.com/drive/api/guides/handle-errors):
 * no permission on the file, a file flagged as abusive, a file whose owner turned off downloading for
 * viewers (cannotDownloadFile, with `capabilities.canDownload` false), and a file the owner's domain
 * policy keeps from this user (domainPolicy).
 */
export type FileRefusal =
  | "insufficientFilePermissions"
  | "cannotDownloadAbusiveFile"
  | "cannotDownloadFile"
  | "domainPolicy";

export interface FakeFileInput {
  name: string;
  /** Default: text/plain, or the Google type of addDoc/addSheet/addSlides. */
  mimeType?: string;
  /** Bytes of a stored file, or the text a Google file exports to (CSV for Sheets). */
  content?: string | Buffer;
  /** Parent folder id; default My Drive's root. */
  parent?: string;
  /** Shared with the account by someone else and not in its My Drive: no visible parent, not owned. */
  sharedWithMe?: boolean;
}

export interface FakeDriveFile {
  id: string;
  name: string;
  mimeType: string;
  parents: string[];
  trashed: boolean;
  explicitlyTrashed: boolean;
  createdTime: string;
  modifiedTime: string;
  version: number;
  ownedByMe: boolean;
  content: Buffer;
  shortcutTarget?: string;
  /** Google Sheets: every tab, in order. */
  sheets?: FakeSheet[];
  /** Downloads and exports of this file answer 403 with this reason. */
  refusal?: FileRefusal;
  /** Deleted for good as soon as a listing has shown it (a deletion racing a sync). */
  deleteWhenListed?: boolean;
  /** In a shared drive (addSharedDrive): the drive's id. */
  driveId?: string;
}

export interface FakeRequest {
  method: string;
  /** Path and query, as received. */
  path: string;
  status: number;
  authorization?: string;
}

export interface RateLimitInjection {
  /** Seconds for the Retry-After header; none is sent when left out. */
  retryAfterSeconds?: number;
  /** An HTTP date for Retry-After instead of seconds. */
  retryAfterDate?: string;
  /** 429 rateLimitExceeded (default) or 403 userRateLimitExceeded. */
  status?: 429 | 403;
  /** How many API requests in a row are refused (default 1). */
  times?: number;
}

export interface IssueCodeOptions {
  /** The redirect_uri the code is bound to: the token request must repeat it. */
  redirectUri?: string;
  /** S256 challenge of the code verifier the token request must present. */
  codeChallenge?: string;
  scope?: string;
}

export interface FakeGoogle {
  /** API root (use as apiBaseUrl): Drive answers under `${url}/drive/v3/`. */
  url: string;
  tokenUrl: string;
  authorizeUrl: string;
  clientId: string;
  clientSecret: string;
  /** Id of My Drive's root folder (files.get("root") answers with it). */
  rootId: string;
  /** Every request answered (API and OAuth), in order. */
  requests: FakeRequest[];
  /** Query parameters of every consent page visit. */
  authorizeRequests: URLSearchParams[];
  /** A code as the consent page would redirect with, good for one token request. */
  issueCode(options?: IssueCodeOptions): string;
  /** The current access tokens stop working (401); refresh tokens still do. */
  expireAccessTokens(): void;
  /** The user removed the app's access: refresh answers invalid_grant and every API call 401. */
  revoke(): void;
  /** The next API request(s) are refused as rate limited. */
  rateLimitNext(injection?: RateLimitInjection): void;
  /**
   * From now on the user may send at most `requests` Drive requests per `windowSeconds`, whichever token
   * (connection) sends them; past that, 403 userRateLimitExceeded without Retry-After. Null lifts it.
   */
  throttleUser(quota: { requests: number; windowSeconds: number } | null): void;
  /** The user's id as about.get shows it (`user.permissionId`). */
  permissionId: string;
  /** How many token requests were answered with tokens, by grant type. */
  tokenGrants: { authorization_code: number; refresh_token: number };
  addFolder(name: string, parent?: string): string;
  addFile(input: FakeFileInput): string;
  addDoc(name: string, text: string, parent?: string): string;
  /** A Google Sheet: one tab of CSV, or several named tabs. */
  addSheet(name: string, csv: string | FakeSheet[], parent?: string): string;
  addSlides(name: string, text: string, parent?: string): string;
  addShortcut(name: string, targetId: string, parent?: string): string;
  updateFile(id: string, change: { content?: string | Buffer; name?: string }): void;
  moveFile(id: string, newParent: string): void;
  /** To the trash (with everything inside, for a folder). */
  trashFile(id: string): void;
  /** Gone for good (with everything inside, for a folder): changes report `removed`. */
  deleteFile(id: string): void;
  /** Downloads and exports of the file answer 403 with this reason from now on (its metadata still lists). */
  refuseContent(id: string, reason: FileRefusal): void;
  /** The file is deleted for good right after the next listing (files.list or changes.list) that shows it. */
  deleteAfterListing(id: string): void;
  /** A shared drive the account is a member of; its id is also its root folder's, to use as a parent. */
  addSharedDrive(name: string): string;
  file(id: string): FakeDriveFile;
  /** The file's `version` as the API shows it. */
  versionOf(id: string): string;
  stop(): Promise<void>;
}

interface Code {
  redirectUri?: string;
  codeChallenge?: string;
  scope: string;
}

interface Change {
  id: number;
  fileId: string;
  time: string;
}

const DEFAULT_SCOPE = "https://www.googleapis.com/auth/drive.readonly";

export async function startFakeGoogle(options: { mailUser?: string } = {}): Promise<FakeGoogle> {
  const requests: FakeRequest[] = [];
  const authorizeRequests: URLSearchParams[] = [];
  const clientId = `${randomDigits(12)}-${randomToken(32).toLowerCase()}.apps.googleusercontent.com`;
  const clientSecret = `GOCSPX-${randomToken(28)}`;
  const codes = new Map<string, Code>();
  const refreshTokens = new Map<string, string>();
  /** Access token → the scopes it was granted (space-separated). */
  const accessTokens = new Map<string, string>();
  const injections: RateLimitInjection[] = [];
  let userQuota: UserQuota | null = null;
  // One fake is one Google user; the id differs per fake so that budgets kept per user stay apart.
  const permissionId = randomDigits(20);
  const tokenGrants = { authorization_code: 0, refresh_token: 0 };
  let revoked = false;

  const files = new Map<string, FakeDriveFile>();
  /** Shared drives by id (each also a root folder in `files`). */
  const drives = new Map<string, string>();
  /** Ids of shared-drive items deleted for good: their tombstones stay out of the user's change log too. */
  const removedFromDrive = new Set<string>();
  const changes: Change[] = [];
  const latestChange = new Map<string, number>();
  let nextChangeId = 1000;
  let nextVersion = 1;
  let clock = Date.parse("2024-03-01T09:00:00.000Z");
  const tick = () => {
    clock += 1000;
    return new Date(clock).toISOString();
  };

  const rootId = `0A${randomToken(8)}Uk9PVA`;
  const created = tick();
  files.set(rootId, {
    id: rootId,
    name: "My Drive",
    mimeType: FOLDER_MIME,
    parents: [],
    trashed: false,
    explicitlyTrashed: false,
    createdTime: created,
    modifiedTime: created,
    version: nextVersion++,
    ownedByMe: true,
    content: Buffer.alloc(0),
  });

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      send(req, res, 500, apiError(500, String(error), "backendError"));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  function send(
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) {
    const text = Buffer.from(JSON.stringify(body, null, 1));
    raw(req, res, status, text, { "content-type": "application/json; charset=UTF-8", ...headers });
  }

  function raw(
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    body: Buffer,
    headers: Record<string, string>,
  ) {
    requests.push({
      method: req.method ?? "GET",
      path: req.url ?? "",
      status,
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    });
    // Google compresses whenever the client accepts it.
    const gzip = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
    const payload = gzip ? zlib.gzipSync(body) : body;
    res.writeHead(status, {
      ...headers,
      "content-length": String(payload.length),
      date: new Date().toUTCString(),
      server: "ESF",
      vary: "Origin, X-Origin, Referer",
      ...(gzip ? { "content-encoding": "gzip" } : {}),
    });
    res.end(payload);
  }

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }

  /**
   * RFC 7662 introspection of this fake's access tokens, as a mail server's OAuth2 passdb asks it
   * (Dovecot for Gmail's XOAUTH2 in tests); the account is `options.mailUser`.
   */
  async function introspect(req: IncomingMessage, res: ServerResponse) {
    let body = "";
    for await (const chunk of req) body += chunk;
    const presented = new URLSearchParams(body).get("token") ?? "";
    const active = !revoked && accessTokens.has(presented);
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(
        JSON.stringify(
          active ? { active: true, username: options.mailUser ?? "alice@example.com" } : { active: false },
        ),
      );
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const target = new URL(req.url ?? "/", url);
    if (target.pathname === "/token") return token(req, res);
    if (target.pathname === "/introspect") return introspect(req, res);
    if (target.pathname === "/o/oauth2/v2/auth") return consent(req, res, target.searchParams);
    if (!target.pathname.startsWith("/drive/v3/")) {
      return send(req, res, 404, apiError(404, "Not Found", "notFound"));
    }
    await readBody(req);

    const presented = String(req.headers.authorization ?? "").match(/^Bearer\s+(\S+)$/i)?.[1];
    if (!presented) {
      return send(
        req,
        res,
        401,
        apiError(
          401,
          "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
          "required",
          { location: "Authorization", locationType: "header", status: "UNAUTHENTICATED" },
        ),
        { "www-authenticate": 'Bearer realm="https://accounts.google.com/"' },
      );
    }
    if (revoked || !accessTokens.has(presented)) {
      return send(
        req,
        res,
        401,
        apiError(
          401,
          "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
          "authError",
          {
            location: "Authorization",
            locationType: "header",
            errorMessage: "Invalid Credentials",
            status: "UNAUTHENTICATED",
          },
        ),
        { "www-authenticate": 'Bearer realm="https://accounts.google.com/", error="invalid_token"' },
      );
    }
    // A grant without any Drive scope (the user unticked it on Google's granular consent screen): every
    // Drive call is refused with the body quoted in googleapis/google-api-php-client#2307.
    const granted = (accessTokens.get(presented) ?? "").split(" ");
    if (!granted.some((scope) => scope.startsWith("https://www.googleapis.com/auth/drive"))) {
      return send(
        req,
        res,
        403,
        apiError(
          403,
          "Insufficient Permission: Request had insufficient authentication scopes.",
          "insufficientPermissions",
        ),
      );
    }
    const injection = injections[0];
    if (injection) {
      injection.times = (injection.times ?? 1) - 1;
      if (injection.times <= 0) injections.shift();
      const headers: Record<string, string> = {};
      if (injection.retryAfterSeconds !== undefined)
        headers["retry-after"] = String(injection.retryAfterSeconds);
      if (injection.retryAfterDate !== undefined) headers["retry-after"] = injection.retryAfterDate;
      if (injection.status === 403) {
        return send(
          req,
          res,
          403,
          apiError(403, "User Rate Limit Exceeded", "userRateLimitExceeded", {
            domain: "usageLimits",
            status: "PERMISSION_DENIED",
          }),
          headers,
        );
      }
      return send(
        req,
        res,
        429,
        apiError(429, "Rate Limit Exceeded", "rateLimitExceeded", {
          domain: "usageLimits",
          status: "RESOURCE_EXHAUSTED",
        }),
        headers,
      );
    }
    // Drive's per-user quota counts every request of the user in the project, from any of its tokens;
    // past it: "403: User rate limit exceeded", to be retried with exponential backoff (no Retry-After)
    // (https://developers.google.com/drive/api/guides/limits,
    // https://developers.google.com/drive/api/guides/handle-errors#resolve_a_403_error_user_rate_limit_exceeded).
    const quota = userQuota?.take();
    if (quota?.exceeded) {
      return send(
        req,
        res,
        403,
        apiError(403, "User Rate Limit Exceeded", "userRateLimitExceeded", {
          domain: "usageLimits",
          status: "PERMISSION_DENIED",
        }),
      );
    }
    if (req.method !== "GET") return send(req, res, 405, apiError(405, "Method Not Allowed", "httpMethod"));

    const segments = target.pathname.split("/").slice(3).map(decodeURIComponent);
    const query = target.searchParams;
    const fields = query.get("fields");

    // about.get: the user (https://developers.google.com/drive/api/reference/rest/v3/about).
    if (segments[0] === "about" && segments.length === 1) {
      const user = {
        kind: "drive#user",
        displayName: "Alice Example",
        me: true,
        permissionId,
        emailAddress: options.mailUser ?? "alice@example.com",
      };
      return send(req, res, 200, project({ kind: "drive#about", user }, fields, "kind"));
    }
    if (segments[0] === "files" && segments.length === 1) return listFiles(req, res, query);
    if (segments[0] === "files" && segments.length === 2) {
      const file = lookup(segments[1] ?? "", query);
      if (!file) return notFound(req, res, segments[1] ?? "");
      if (query.get("alt") === "media") {
        if (file.mimeType.startsWith("application/vnd.google-apps.")) {
          return send(
            req,
            res,
            403,
            apiError(
              403,
              "Only files with binary content can be downloaded. Use Export with Docs Editors files.",
              "fileNotDownloadable",
              { location: "alt", locationType: "parameter", status: "PERMISSION_DENIED" },
            ),
          );
        }
        if (file.refusal) return refused(req, res, file);
        return raw(req, res, 200, file.content, { "content-type": file.mimeType });
      }
      return send(req, res, 200, project(fileJson(file), fields, DEFAULT_FILE_FIELDS));
    }
    if (segments[0] === "files" && segments.length === 3 && segments[2] === "export") {
      const file = lookup(segments[1] ?? "", query);
      if (!file) return notFound(req, res, segments[1] ?? "");
      const mimeType = query.get("mimeType");
      if (!mimeType) {
        return send(
          req,
          res,
          400,
          apiError(400, "Required parameter: mimeType", "required", {
            location: "mimeType",
            locationType: "parameter",
          }),
        );
      }
      const formats = EXPORTS[file.mimeType];
      if (!formats) {
        return send(
          req,
          res,
          403,
          apiError(403, "Export only supports Docs Editors files.", "fileNotExportable", {
            status: "PERMISSION_DENIED",
          }),
        );
      }
      if (!formats.includes(mimeType)) {
        return send(req, res, 400, apiError(400, "The requested conversion is not supported.", "badRequest"));
      }
      if (file.refusal) return refused(req, res, file);
      const exported = exportOf(file, mimeType);
      if (exported.length > EXPORT_LIMIT_BYTES) {
        // The body Google sends, as quoted in https://github.com/googleapis/google-api-ruby-client/issues/906.
        return send(
          req,
          res,
          403,
          apiError(403, "This file is too large to be exported.", "exportSizeLimitExceeded"),
        );
      }
      const type = mimeType.startsWith("text/") ? `${mimeType}; charset=utf-8` : mimeType;
      return raw(req, res, 200, exported, { "content-type": type });
    }
    if (segments[0] === "changes" && segments[1] === "startPageToken" && segments.length === 2) {
      return send(
        req,
        res,
        200,
        project({ kind: "drive#startPageToken", startPageToken: String(nextChangeId) }, fields, null),
      );
    }
    if (segments[0] === "changes" && segments.length === 1) return listChanges(req, res, query);
    return send(req, res, 404, apiError(404, "Not Found", "notFound"));
  }

  /** A Google file's export in one of the formats of EXPORTS. */
  function exportOf(file: FakeDriveFile, mimeType: string): Buffer {
    if (file.mimeType === SHEET_MIME) {
      const sheets = file.sheets ?? [{ title: "Sheet1", csv: file.content.toString("utf8") }];
      // "Comma Separated Values (first-sheet only)", likewise TSV; PDF prints every sheet
      // (https://developers.google.com/drive/api/guides/ref-export-formats).
      const first = sheets[0]?.csv ?? "";
      if (mimeType === "text/csv") return Buffer.from(first, "utf8");
      if (mimeType === "text/tab-separated-values")
        return Buffer.from(
          parseCsv(first)
            .map((row) => row.join("\t"))
            .join("\n"),
          "utf8",
        );
      return pdfOf(sheets.map((sheet) => parseCsv(sheet.csv).map((row) => row.join("  "))));
    }
    let text = file.content.toString("utf8");
    // Docs exported as text start with a byte order mark and end lines with CRLF.
    if (file.mimeType === DOC_MIME && mimeType === "text/plain")
      text = `\ufeff${text.replace(/\r?\n/g, "\r\n")}`;
    return Buffer.from(text, "utf8");
  }

  /** The per-file 403 bodies of https://developers.google.com/drive/api/guides/handle-errors. */
  function refused(req: IncomingMessage, res: ServerResponse, file: FakeDriveFile) {
    const messages: Record<FileRefusal, string> = {
      cannotDownloadAbusiveFile: "This file has been identified as malware or spam and cannot be downloaded.",
      insufficientFilePermissions: `The user does not have sufficient permissions for file ${file.id}.`,
      cannotDownloadFile: "This file cannot be downloaded by the user.",
      domainPolicy: "The domain administrators have disabled Drive apps.",
    };
    const message = messages[file.refusal ?? "insufficientFilePermissions"];
    return send(
      req,
      res,
      403,
      apiError(403, message, file.refusal ?? "insufficientFilePermissions", {
        ...(file.refusal === "cannotDownloadAbusiveFile"
          ? { location: "acknowledgeAbuse", locationType: "parameter" }
          : {}),
      }),
    );
  }

  /** Files a listing showed that were set to go right after (deleteAfterListing). */
  function dropListed(listed: (FakeDriveFile | undefined)[]) {
    for (const file of listed) if (file?.deleteWhenListed && files.has(file.id)) removeForGood(file.id);
  }

  function removeForGood(id: string) {
    const file = fileOf(id);
    tick();
    for (const f of [file, ...(file.mimeType === FOLDER_MIME ? descendants(id) : [])]) {
      if (f.driveId) removedFromDrive.add(f.id);
      files.delete(f.id);
      record(f.id);
    }
  }

  /** A file by id, as files.get finds it: a shared drive's items only for apps that support them. */
  function lookup(id: string, query: URLSearchParams): FakeDriveFile | undefined {
    const file = files.get(id === "root" ? rootId : id);
    if (file?.driveId && !seesSharedDrives(query, false)) return undefined;
    return file;
  }

  function notFound(req: IncomingMessage, res: ServerResponse, id: string) {
    return send(
      req,
      res,
      404,
      apiError(404, `File not found: ${id}.`, "notFound", {
        location: "fileId",
        locationType: "parameter",
        status: "NOT_FOUND",
      }),
    );
  }

  function invalid(req: IncomingMessage, res: ServerResponse, parameter: string, message = "Invalid Value") {
    return send(
      req,
      res,
      400,
      apiError(400, message, "invalid", {
        location: parameter,
        locationType: "parameter",
        status: "INVALID_ARGUMENT",
      }),
    );
  }

  function pageSizeOf(query: URLSearchParams, max: number): number | null {
    const raw = query.get("pageSize");
    if (raw === null) return 100;
    const size = Number(raw);
    if (!Number.isInteger(size) || size < 1 || size > max) return null;
    return size;
  }

  function listFiles(req: IncomingMessage, res: ServerResponse, query: URLSearchParams) {
    const pageSize = pageSizeOf(query, 1000);
    if (pageSize === null) return invalid(req, res, "pageSize");
    let filter: (file: FakeDriveFile) => boolean = () => true;
    const q = query.get("q");
    if (q) {
      try {
        filter = parseQuery(q);
      } catch {
        return invalid(req, res, "q");
      }
    }
    const shared = seesSharedDrives(query, true);
    let list = [...files.values()].filter(
      (f) => f.id !== rootId && (shared || !f.driveId) && !drives.has(f.id) && filter(f),
    );
    const orderBy = query.get("orderBy");
    if (orderBy) list = sortFiles(list, orderBy);
    let offset = 0;
    const pageToken = query.get("pageToken");
    if (pageToken) {
      const decoded = Number(
        Buffer.from(pageToken, "base64url")
          .toString("utf8")
          .replace(/^offset:/, ""),
      );
      if (!Number.isInteger(decoded) || decoded < 0) return invalid(req, res, "pageToken");
      offset = decoded;
    }
    const page = list.slice(offset, offset + pageSize);
    const more = offset + pageSize < list.length;
    const body = {
      kind: "drive#fileList",
      ...(more ? { nextPageToken: Buffer.from(`offset:${offset + pageSize}`).toString("base64url") } : {}),
      incompleteSearch: false,
      files: page.map(fileJson),
    };
    dropListed(page);
    return send(req, res, 200, project(body, query.get("fields"), DEFAULT_LIST_FIELDS));
  }

  function listChanges(req: IncomingMessage, res: ServerResponse, query: URLSearchParams) {
    const pageToken = query.get("pageToken");
    if (!pageToken) {
      return send(
        req,
        res,
        400,
        apiError(400, "Required parameter: pageToken", "required", {
          location: "pageToken",
          locationType: "parameter",
        }),
      );
    }
    const from = Number(pageToken);
    if (!/^\d+$/.test(pageToken) || from > nextChangeId) return invalid(req, res, "pageToken");
    const pageSize = pageSizeOf(query, 1000);
    if (pageSize === null) return invalid(req, res, "pageSize");
    const includeRemoved = query.get("includeRemoved") !== "false";
    // Each file appears once, with its latest change.
    const shared = seesSharedDrives(query, true);
    const pending = changes.filter(
      (c) =>
        c.id >= from &&
        latestChange.get(c.fileId) === c.id &&
        (shared || (!files.get(c.fileId)?.driveId && !removedFromDrive.has(c.fileId))),
    );
    const page = pending.slice(0, pageSize);
    const following = pending[pageSize];
    const body = {
      kind: "drive#changeList",
      ...(following ? { nextPageToken: String(following.id) } : { newStartPageToken: String(nextChangeId) }),
      changes: page
        .map((change) => {
          const file = files.get(change.fileId);
          return {
            kind: "drive#change",
            changeType: "file",
            time: change.time,
            removed: !file,
            fileId: change.fileId,
            ...(file ? { file: fileJson(file) } : {}),
          };
        })
        .filter((c) => includeRemoved || !c.removed),
    };
    dropListed(page.map((change) => files.get(change.fileId)));
    return send(req, res, 200, project(body, query.get("fields"), DEFAULT_CHANGE_FIELDS));
  }

  function fileJson(file: FakeDriveFile): Record<string, unknown> {
    const google = file.mimeType.startsWith("application/vnd.google-apps.");
    const json: Record<string, unknown> = {
      kind: "drive#file",
      id: file.id,
      name: file.name,
      mimeType: file.mimeType,
      starred: false,
      trashed: file.trashed,
      explicitlyTrashed: file.explicitlyTrashed,
      ...(file.parents.length ? { parents: [...file.parents] } : {}),
      spaces: ["drive"],
      version: String(file.version),
      webViewLink: webViewLink(file),
      iconLink: `https://drive-thirdparty.googleusercontent.com/16/type/${file.mimeType}`,
      createdTime: file.createdTime,
      modifiedTime: file.modifiedTime,
      modifiedByMeTime: file.modifiedTime,
      ownedByMe: file.ownedByMe,
      ...(file.driveId ? { driveId: file.driveId } : {}),
      shared: !file.ownedByMe,
      capabilities: { canDownload: true, canEdit: file.ownedByMe },
    };
    if (!google) {
      json.originalFilename = file.name;
      json.fullFileExtension = file.name.includes(".") ? file.name.slice(file.name.lastIndexOf(".") + 1) : "";
      json.fileExtension = json.fullFileExtension;
      json.md5Checksum = createHash("md5").update(file.content).digest("hex");
      json.sha256Checksum = createHash("sha256").update(file.content).digest("hex");
      json.size = String(file.content.length);
      json.quotaBytesUsed = String(file.content.length);
      json.headRevisionId = `0B${createHash("sha1").update(`${file.id}:${file.version}`).digest("hex").slice(0, 30)}`;
    } else {
      json.quotaBytesUsed = "0";
    }
    if (file.shortcutTarget) {
      const target = files.get(file.shortcutTarget);
      json.shortcutDetails = {
        targetId: file.shortcutTarget,
        targetMimeType: target?.mimeType ?? "application/octet-stream",
      };
    }
    return json;
  }

  function webViewLink(file: FakeDriveFile): string {
    switch (file.mimeType) {
      case FOLDER_MIME:
        return `https://drive.google.com/drive/folders/${file.id}`;
      case DOC_MIME:
        return `https://docs.google.com/document/d/${file.id}/edit?usp=drivesdk`;
      case SHEET_MIME:
        return `https://docs.google.com/spreadsheets/d/${file.id}/edit?usp=drivesdk`;
      case SLIDES_MIME:
        return `https://docs.google.com/presentation/d/${file.id}/edit?usp=drivesdk`;
      default:
        return `https://drive.google.com/file/d/${file.id}/view?usp=drivesdk`;
    }
  }

  /** `q`, as far as Drive's query language goes for the terms the fake knows. */
  function parseQuery(q: string): (file: FakeDriveFile) => boolean {
    const tokens = tokenize(q);
    let at = 0;
    const peek = () => tokens[at];
    const take = () => {
      const token = tokens[at++];
      if (token === undefined) throw new Error("unexpected end of query");
      return token;
    };
    const keyword = (word: string) => {
      const token = peek();
      return token?.kind === "word" && token.value.toLowerCase() === word;
    };
    type Predicate = (file: FakeDriveFile) => boolean;
    const orExpr = (): Predicate => {
      let left = andExpr();
      while (keyword("or")) {
        take();
        const a = left;
        const b = andExpr();
        left = (f) => a(f) || b(f);
      }
      return left;
    };
    const andExpr = (): Predicate => {
      let left = unary();
      while (keyword("and")) {
        take();
        const a = left;
        const b = unary();
        left = (f) => a(f) && b(f);
      }
      return left;
    };
    const unary = (): Predicate => {
      if (keyword("not")) {
        take();
        const inner = unary();
        return (f) => !inner(f);
      }
      if (peek()?.kind === "(") {
        take();
        const inner = orExpr();
        if (take().kind !== ")") throw new Error("expected )");
        return inner;
      }
      return term();
    };
    const term = (): Predicate => {
      const first = take();
      if (first.kind === "string") {
        const op = take();
        const collection = take();
        if (op.kind !== "word" || op.value.toLowerCase() !== "in" || collection.kind !== "word")
          throw new Error("expected 'x' in collection");
        if (collection.value === "parents") {
          const parent = first.value === "root" ? rootId : first.value;
          return (f) => f.parents.includes(parent);
        }
        if (collection.value === "owners" && first.value === "me") return (f) => f.ownedByMe;
        throw new Error(`unknown collection ${collection.value}`);
      }
      if (first.kind !== "word") throw new Error("expected a field");
      const op = take();
      const value = take();
      if (op.kind !== "op" && !(op.kind === "word" && op.value === "contains"))
        throw new Error("expected op");
      const field = first.value;
      if (field === "trashed") {
        if (value.kind !== "word" || !["true", "false"].includes(value.value)) throw new Error("bool");
        const wanted = value.value === "true";
        if (op.value === "=") return (f) => f.trashed === wanted;
        if (op.value === "!=") return (f) => f.trashed !== wanted;
        throw new Error("op");
      }
      if (field === "mimeType" || field === "name") {
        if (value.kind !== "string") throw new Error("string");
        const get = (f: FakeDriveFile) => (field === "name" ? f.name : f.mimeType);
        if (op.value === "=") return (f) => get(f) === value.value;
        if (op.value === "!=") return (f) => get(f) !== value.value;
        if (op.value === "contains") return (f) => get(f).includes(value.value);
        throw new Error("op");
      }
      throw new Error(`unknown field ${field}`);
    };
    const predicate = orExpr();
    if (at !== tokens.length) throw new Error("trailing input");
    return predicate;
  }

  function record(fileId: string) {
    const id = nextChangeId++;
    changes.push({ id, fileId, time: new Date(clock).toISOString() });
    latestChange.set(fileId, id);
  }

  function create(input: FakeFileInput & { mimeType: string; shortcutTarget?: string }): string {
    const parent = input.sharedWithMe ? undefined : (input.parent ?? rootId);
    if (parent !== undefined && files.get(parent)?.mimeType !== FOLDER_MIME)
      throw new Error(`fake google: no folder ${parent}`);
    const driveId = parent === undefined ? undefined : files.get(parent)?.driveId;
    const id = `1${randomToken(32)}`;
    const now = tick();
    files.set(id, {
      id,
      name: input.name,
      mimeType: input.mimeType,
      parents: parent ? [parent] : [],
      trashed: false,
      explicitlyTrashed: false,
      createdTime: now,
      modifiedTime: now,
      version: nextVersion++,
      ownedByMe: !input.sharedWithMe,
      content:
        typeof input.content === "string" ? Buffer.from(input.content) : (input.content ?? Buffer.alloc(0)),
      ...(input.shortcutTarget ? { shortcutTarget: input.shortcutTarget } : {}),
      // Files in a shared drive belong to the drive, not to the account.
      ...(driveId ? { driveId, ownedByMe: false } : {}),
    });
    record(id);
    return id;
  }

  /**
   * Whether a request sees a shared drive's items. Per
   * https://developers.google.com/drive/api/guides/enable-shareddrives an app must send
   * supportsAllDrives=true to reach them at all, and files.list and changes.list return them only with
   * includeItemsFromAllDrives=true as well ("Whether both My Drive and shared drive items should be
   * included in results"; the default is false).
   */
  function seesSharedDrives(query: URLSearchParams, listing: boolean): boolean {
    const supports = query.get("supportsAllDrives") === "true";
    return listing ? supports && query.get("includeItemsFromAllDrives") === "true" : supports;
  }

  function fileOf(id: string): FakeDriveFile {
    const file = files.get(id);
    if (!file) throw new Error(`fake google: no file ${id}`);
    return file;
  }

  function descendants(id: string): FakeDriveFile[] {
    const out: FakeDriveFile[] = [];
    const walk = (parent: string) => {
      for (const f of files.values()) {
        if (f.parents.includes(parent)) {
          out.push(f);
          if (f.mimeType === FOLDER_MIME) walk(f.id);
        }
      }
    };
    walk(id);
    return out;
  }

  async function token(req: IncomingMessage, res: ServerResponse) {
    const noStore = { "cache-control": "no-cache, no-store, max-age=0, must-revalidate", pragma: "no-cache" };
    if (req.method !== "POST") {
      await readBody(req);
      return send(
        req,
        res,
        405,
        { error: "invalid_request", error_description: "Method not allowed" },
        noStore,
      );
    }
    const form = new URLSearchParams(await readBody(req));
    const fail = (status: number, error: string, description: string) =>
      send(req, res, status, { error, error_description: description }, noStore);
    let id = form.get("client_id");
    let secret = form.get("client_secret");
    const basic = String(req.headers.authorization ?? "").match(/^Basic\s+(\S+)$/i)?.[1];
    if (basic) {
      const [user, password] = Buffer.from(basic, "base64").toString("utf8").split(":");
      id = decodeURIComponent(user ?? "");
      secret = decodeURIComponent(password ?? "");
    }
    if (id !== clientId || secret !== clientSecret) return fail(401, "invalid_client", "Unauthorized");
    const grant = form.get("grant_type");
    if (grant === "authorization_code") {
      const code = codes.get(form.get("code") ?? "");
      if (!code) return fail(400, "invalid_grant", "Bad Request");
      codes.delete(form.get("code") ?? "");
      if (code.redirectUri !== undefined && form.get("redirect_uri") !== code.redirectUri)
        return fail(400, "redirect_uri_mismatch", "Bad Request");
      if (code.codeChallenge !== undefined) {
        const verifier = form.get("code_verifier");
        if (!verifier) return fail(400, "invalid_grant", "Missing code verifier.");
        if (createHash("sha256").update(verifier).digest("base64url") !== code.codeChallenge)
          return fail(400, "invalid_grant", "Invalid code verifier.");
      }
      const refresh = `1//0${randomToken(100)}`;
      refreshTokens.set(refresh, code.scope);
      const access = newAccessToken(code.scope);
      tokenGrants.authorization_code++;
      return send(
        req,
        res,
        200,
        {
          access_token: access,
          expires_in: 3599,
          refresh_token: refresh,
          scope: code.scope,
          token_type: "Bearer",
        },
        noStore,
      );
    }
    if (grant === "refresh_token") {
      const scope = refreshTokens.get(form.get("refresh_token") ?? "");
      if (revoked || scope === undefined)
        return fail(400, "invalid_grant", "Token has been expired or revoked.");
      tokenGrants.refresh_token++;
      return send(
        req,
        res,
        200,
        { access_token: newAccessToken(scope), expires_in: 3599, scope, token_type: "Bearer" },
        noStore,
      );
    }
    return fail(400, "unsupported_grant_type", `Invalid grant_type: ${grant ?? ""}`);
  }

  async function consent(req: IncomingMessage, res: ServerResponse, query: URLSearchParams) {
    await readBody(req);
    authorizeRequests.push(new URLSearchParams(query));
    const redirectUri = query.get("redirect_uri");
    if (query.get("client_id") !== clientId || !redirectUri) {
      return raw(req, res, 400, Buffer.from("<html><body>Error 401: invalid_client</body></html>"), {
        "content-type": "text/html; charset=utf-8",
      });
    }
    const scope = query.get("scope") ?? DEFAULT_SCOPE;
    const code = issueCode({
      redirectUri,
      ...(query.get("code_challenge") ? { codeChallenge: query.get("code_challenge") as string } : {}),
      scope,
    });
    const location = new URL(redirectUri);
    const state = query.get("state");
    if (state !== null) location.searchParams.set("state", state);
    location.searchParams.set("code", code);
    location.searchParams.set("scope", scope);
    return raw(req, res, 302, Buffer.alloc(0), { location: location.href });
  }

  function newAccessToken(scope: string): string {
    const access = `ya29.${randomToken(120)}`;
    accessTokens.set(access, scope);
    return access;
  }

  function issueCode(options: IssueCodeOptions = {}): string {
    const code = `4/0${randomToken(70)}`;
    codes.set(code, {
      ...(options.redirectUri !== undefined ? { redirectUri: options.redirectUri } : {}),
      ...(options.codeChallenge !== undefined ? { codeChallenge: options.codeChallenge } : {}),
      scope: options.scope ?? DEFAULT_SCOPE,
    });
    return code;
  }

  return {
    url,
    tokenUrl: `${url}/token`,
    authorizeUrl: `${url}/o/oauth2/v2/auth`,
    clientId,
    clientSecret,
    rootId,
    requests,
    authorizeRequests,
    tokenGrants,
    issueCode,
    expireAccessTokens() {
      accessTokens.clear();
    },
    revoke() {
      revoked = true;
      accessTokens.clear();
    },
    rateLimitNext(injection = {}) {
      injections.push({ ...injection });
    },
    throttleUser(quota) {
      userQuota = quota && new UserQuota(quota);
    },
    permissionId,
    addFolder: (name, parent) => create({ name, mimeType: FOLDER_MIME, ...(parent ? { parent } : {}) }),
    addFile: (input) => create({ ...input, mimeType: input.mimeType ?? "text/plain" }),
    addDoc: (name, text, parent) =>
      create({ name, mimeType: DOC_MIME, content: text, ...(parent ? { parent } : {}) }),
    addSheet(name, csv, parent) {
      const sheets = typeof csv === "string" ? [{ title: "Sheet1", csv }] : csv;
      const id = create({
        name,
        mimeType: SHEET_MIME,
        content: sheets[0]?.csv ?? "",
        ...(parent ? { parent } : {}),
      });
      fileOf(id).sheets = sheets.map((sheet) => ({ ...sheet }));
      return id;
    },
    refuseContent(id, reason) {
      fileOf(id).refusal = reason;
    },
    deleteAfterListing(id) {
      fileOf(id).deleteWhenListed = true;
    },
    addSlides: (name, text, parent) =>
      create({ name, mimeType: SLIDES_MIME, content: text, ...(parent ? { parent } : {}) }),
    addShortcut: (name, targetId, parent) =>
      create({ name, mimeType: SHORTCUT_MIME, shortcutTarget: targetId, ...(parent ? { parent } : {}) }),
    updateFile(id, change) {
      const file = fileOf(id);
      if (change.content !== undefined)
        file.content = typeof change.content === "string" ? Buffer.from(change.content) : change.content;
      if (change.name !== undefined) file.name = change.name;
      file.modifiedTime = tick();
      file.version = nextVersion++;
      record(id);
    },
    moveFile(id, newParent) {
      const file = fileOf(id);
      if (fileOf(newParent).mimeType !== FOLDER_MIME)
        throw new Error(`fake google: ${newParent} is no folder`);
      tick();
      file.parents = [newParent];
      file.version = nextVersion++;
      record(id);
    },
    trashFile(id) {
      const file = fileOf(id);
      tick();
      for (const f of [file, ...(file.mimeType === FOLDER_MIME ? descendants(id) : [])]) {
        if (f.trashed) continue;
        f.trashed = true;
        f.explicitlyTrashed = f === file;
        f.version = nextVersion++;
        record(f.id);
      }
    },
    deleteFile: removeForGood,
    addSharedDrive(name) {
      const id = `0A${randomToken(8)}Uk9PVA`;
      const now = tick();
      drives.set(id, name);
      files.set(id, {
        id,
        name,
        mimeType: FOLDER_MIME,
        parents: [],
        trashed: false,
        explicitlyTrashed: false,
        createdTime: now,
        modifiedTime: now,
        version: nextVersion++,
        ownedByMe: false,
        content: Buffer.alloc(0),
        driveId: id,
      });
      return id;
    },
    file: fileOf,
    versionOf: (id) => String(fileOf(id).version),
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
}

const DEFAULT_FILE_FIELDS = "kind,id,name,mimeType";
const DEFAULT_LIST_FIELDS = "kind,nextPageToken,incompleteSearch,files(kind,id,name,mimeType)";
const DEFAULT_CHANGE_FIELDS =
  "kind,nextPageToken,newStartPageToken,changes(kind,changeType,time,removed,fileId,file(kind,id,name,mimeType))";

function apiError(
  code: number,
  message: string,
  reason: string,
  extra: {
    location?: string;
    locationType?: string;
    domain?: string;
    status?: string;
    errorMessage?: string;
  } = {},
) {
  return {
    error: {
      code,
      message,
      errors: [
        {
          message: extra.errorMessage ?? message,
          domain: extra.domain ?? "global",
          reason,
          ...(extra.location ? { location: extra.location, locationType: extra.locationType } : {}),
        },
      ],
      ...(extra.status ? { status: extra.status } : {}),
    },
  };
}

export type FieldTree = { [name: string]: FieldTree | true };

/** Google's partial-response syntax: `a,b(c,d),e/f`. Throws on a malformed one, as Google answers 400. */
export function parseFields(fields: string): FieldTree {
  let at = 0;
  const list = (): FieldTree => {
    const tree: FieldTree = {};
    for (;;) {
      while (fields[at] === " ") at++;
      let name = "";
      while (at < fields.length && !",()".includes(fields[at] as string)) name += fields[at++];
      name = name.trim();
      if (!name) throw new Error("empty field");
      let node: FieldTree | true = true;
      if (fields[at] === "(") {
        at++;
        node = list();
        if (fields[at++] !== ")") throw new Error("expected )");
      }
      const path = name.split("/");
      let into = tree;
      for (const [i, part] of path.entries()) {
        if (i === path.length - 1) {
          const existing = into[part];
          into[part] = existing && existing !== true && node !== true ? { ...existing, ...node } : node;
        } else {
          const existing = into[part];
          const next: FieldTree = existing && existing !== true ? existing : {};
          into[part] = next;
          into = next;
        }
      }
      while (fields[at] === " ") at++;
      if (fields[at] === ",") {
        at++;
        continue;
      }
      return tree;
    }
  };
  const tree = list();
  if (at !== fields.length) throw new Error("trailing characters in fields");
  return tree;
}

function applyFields(value: unknown, tree: FieldTree | true): unknown {
  if (tree === true || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => applyFields(v, tree));
  if (tree["*"] === true) return value;
  const out: Record<string, unknown> = {};
  for (const [name, sub] of Object.entries(tree)) {
    const v = (value as Record<string, unknown>)[name];
    if (v !== undefined) out[name] = applyFields(v, sub);
  }
  return out;
}

function project(body: Record<string, unknown>, fields: string | null, defaults: string | null): unknown {
  const spec = fields ?? defaults;
  if (!spec) return body;
  return applyFields(body, parseFields(spec));
}

type Token =
  | { kind: "string"; value: string }
  | { kind: "word"; value: string }
  | { kind: "op"; value: string }
  | { kind: "(" }
  | { kind: ")" };

function tokenize(q: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < q.length) {
    const c = q[at] as string;
    if (/\s/.test(c)) {
      at++;
    } else if (c === "(" || c === ")") {
      tokens.push({ kind: c });
      at++;
    } else if (c === "'" || c === '"') {
      let value = "";
      at++;
      while (at < q.length && q[at] !== c) {
        if (q[at] === "\\") at++;
        value += q[at++];
      }
      if (q[at] !== c) throw new Error("unterminated string");
      at++;
      tokens.push({ kind: "string", value });
    } else if (c === "!" && q[at + 1] === "=") {
      tokens.push({ kind: "op", value: "!=" });
      at += 2;
    } else if (c === "=" || c === "<" || c === ">") {
      const two = q.slice(at, at + 2);
      const value = two === "<=" || two === ">=" ? two : c;
      tokens.push({ kind: "op", value });
      at += value.length;
    } else if (/[A-Za-z_]/.test(c)) {
      let value = "";
      while (at < q.length && /[A-Za-z0-9_.]/.test(q[at] as string)) value += q[at++];
      tokens.push({ kind: "word", value });
    } else {
      throw new Error(`unexpected ${c}`);
    }
  }
  return tokens;
}

function sortFiles(list: FakeDriveFile[], orderBy: string): FakeDriveFile[] {
  const keys = orderBy.split(",").map((part) => {
    const [key, direction] = part.trim().split(/\s+/);
    return { key: key ?? "", desc: direction === "desc" };
  });
  return [...list].sort((a, b) => {
    for (const { key, desc } of keys) {
      let diff = 0;
      if (key === "folder") diff = Number(b.mimeType === FOLDER_MIME) - Number(a.mimeType === FOLDER_MIME);
      else if (key === "name" || key === "name_natural")
        diff =
          a.name.toLowerCase() < b.name.toLowerCase()
            ? -1
            : a.name.toLowerCase() > b.name.toLowerCase()
              ? 1
              : 0;
      else if (key === "modifiedTime")
        diff = a.modifiedTime < b.modifiedTime ? -1 : a.modifiedTime > b.modifiedTime ? 1 : 0;
      else if (key === "createdTime")
        diff = a.createdTime < b.createdTime ? -1 : a.createdTime > b.createdTime ? 1 : 0;
      if (diff !== 0) return desc ? -diff : diff;
    }
    return 0;
  });
}

function randomToken(length: number): string {
  return randomBytes(length).toString("base64url").replace(/[-_]/g, "x").slice(0, length);
}

function randomDigits(length: number): string {
  let out = "";
  while (out.length < length) out += String(randomBytes(1)[0] ?? 0).padStart(3, "0");
  return out.slice(0, length);
}

/** RFC 4180 CSV: quoted fields with doubled quotes, commas and line breaks inside quotes. */
function parseCsv(csv: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < csv.length; i++) {
    const c = csv[i] as string;
    if (quoted) {
      if (c === '"' && csv[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && csv[i + 1] === "\n") i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
    } else field += c;
  }
  if (field !== "" || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/**
 * A PDF with one page per sheet (longer sheets run on over more pages), each row a line of Helvetica text:
 * what a spreadsheet's PDF export is to a text extractor. Latin-1 text only.
 */
function pdfOf(sheets: string[][]): Buffer {
  const LINES_PER_PAGE = 60;
  const pages: string[][] = [];
  for (const lines of sheets) {
    for (let at = 0; at < Math.max(1, lines.length); at += LINES_PER_PAGE)
      pages.push(lines.slice(at, at + LINES_PER_PAGE));
  }
  const objects: string[] = [];
  const pageIds = pages.map((_, i) => 4 + i * 2);
  objects[1] = "<< /Type /Catalog /Pages 2 0 R >>";
  objects[2] = `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(" ")}] /Count ${pages.length} >>`;
  objects[3] = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>";
  pages.forEach((lines, i) => {
    const quoteText = (text: string) => text.replace(/[\\()]/g, (c) => `\\${c}`);
    const stream = `BT /F1 10 Tf 14 TL 40 800 Td ${lines.map((line) => `(${quoteText(line)}) Tj T*`).join(" ")} ET`;
    const id = pageIds[i] as number;
    objects[id] =
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents ${id + 1} 0 R >>`;
    objects[id + 1] = `<< /Length ${Buffer.byteLength(stream, "latin1")} >>\nstream\n${stream}\nendstream`;
  });
  let out = "%PDF-1.4\n";
  const offsets: number[] = [];
  for (let n = 1; n < objects.length; n++) {
    offsets[n] = Buffer.byteLength(out, "latin1");
    out += `${n} 0 obj\n${objects[n]}\nendobj\n`;
  }
  const xref = Buffer.byteLength(out, "latin1");
  out += `xref\n0 ${objects.length}\n0000000000 65535 f \n`;
  for (let n = 1; n < objects.length; n++) out += `${String(offsets[n]).padStart(10, "0")} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}
