/**
 * Google Drive connector (provider `google-drive`): syncs the files of a Google account's Drive, picked in
 * the hosted picker or all of My Drive, through the Drive v3 API with the account's OAuth tokens.
 *
 * Documents, by Drive file id (version: the file's `version`, else `modifiedTime:md5Checksum`):
 * - Google Docs and Slides exported as text/plain, handed over as `text`; Google Sheets exported as PDF
 *   (every tab: Drive's CSV export holds the first sheet only), handed over as a `file`;
 * - every other file downloaded as bytes (`file` with its name and mimeType) for the extraction pipeline;
 * - a file Google will not give (export past 10 MB, download refused for this account, gone since it was
 *   listed) or larger than maxFileBytes makes fetchItem throw ItemSkippedError with the reason, so the
 *   run reports it and the connection stays active;
 * - folders, shortcuts and Google types without a text export (Forms, Sites, Drawings...) are not synced;
 *   files in the trash or in shared drives neither. Shared drives are left out on purpose: each keeps its
 *   own change log, and some of its changes never reach the user's (Drive's "Track changes for users and
 *   shared drives", developers.google.com/drive/api/guides/about-changes), so following them takes a
 *   page token per drive; the requests do not set includeItemsFromAllDrives, so Drive does not list them.
 * `url` is the file's webViewLink, `filepath` its folder path (`/My Drive/Projects/`), `metadata`
 * `{mimeType, modifiedTime, driveId?}`.
 *
 * Listing is "delta" (connectors/google-drive/sync.ts): the first sync lists everything in scope, later
 * ones follow the changes API from the page token the last completed sync handed over as `carry`.
 *
 * Settings (`syncScope`, `maxFileBytes`, `pageSize`): see settings.ts.
 *
 * Secrets: none of its own. The OAuth tokens are the engine's (consent flow with the spec below; the
 * caller's own OAuth app from the settings `googleDriveClientId`/`googleDriveClientSecret` when
 * `googleDriveCustomKeyEnabled`, else the service's `GOOGLE_CLIENT_ID`/`GOOGLE_CLIENT_SECRET`).
 * The API root is `https://www.googleapis.com` unless CONNECTOR_ENDPOINTS names another.
 */

import type { Connector, OAuthSpec } from "../types.ts";
import { DEFAULT_DRIVE_API } from "./client.ts";
import {
  type GoogleDriveConfig,
  type GoogleDriveSecrets,
  googleDriveConfigSchema,
  googleDriveSecretsSchema,
} from "./settings.ts";
import {
  browseDrive,
  type DriveCarry,
  type DriveCursor,
  driveCarrySchema,
  driveCursorSchema,
  fetchDriveItem,
  initialDriveCursor,
  listDrivePage,
  verifyDrive,
} from "./sync.ts";

export const googleDriveOAuth: OAuthSpec = {
  authorizeUrl: "https://accounts.google.com/o/oauth2/v2/auth",
  tokenUrl: "https://oauth2.googleapis.com/token",
  scopes: ["https://www.googleapis.com/auth/drive.readonly"],
  scopeSeparator: " ",
  pkce: true,
  tokenAuth: "body",
  // offline + consent: Google sends a refresh token, also when the account granted access before.
  authorizeParams: { access_type: "offline", prompt: "consent", include_granted_scopes: "true" },
  settingsPrefix: "googleDrive",
  envPrefix: "GOOGLE",
};

type GoogleDriveConnector = Connector<GoogleDriveConfig, GoogleDriveSecrets, DriveCursor, DriveCarry>;

export const googleDriveConnector: GoogleDriveConnector = {
  provider: "google-drive",
  displayName: "Google Drive",
  configSchema: googleDriveConfigSchema,
  secretKeys: [],
  secretsSchema: googleDriveSecretsSchema,
  listing: "delta",
  cursorSchema: driveCursorSchema,
  carrySchema: driveCarrySchema,
  initialCursor: initialDriveCursor,
  listPage: listDrivePage,
  fetchItem: fetchDriveItem,
  verify: verifyDrive,
  browse: browseDrive,
  oauth: googleDriveOAuth,
  defaultApiBaseUrl: DEFAULT_DRIVE_API,
};

export type { DriveCarry, DriveCursor } from "./sync.ts";
