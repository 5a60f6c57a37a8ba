/**
 * OneDrive connector (provider `onedrive`): syncs the files of the signed-in user's OneDrive (personal, or
 * OneDrive for Business) through Microsoft Graph v1.0, authorized with OAuth 2.0 (the engine runs the
 * consent flow with the OAuthSpec below; the connection is created `pending` until it completes).
 *
 * Every file becomes a document made from its bytes (PDF, Word, text...), processed like an upload: its
 * id is the driveItem id and its version the content hash, so a file is fetched again only when its
 * content changes (renaming or moving it does not). The document links to the file in OneDrive (`webUrl`)
 * and its filepath is the file's folder (`/Projects/2024/`). Folders, OneNote notebooks, items shared
 * from other people's drives and files flagged as malware are not synced.
 *
 * Listing: "delta", with Graph's delta queries. The first sync enumerates the drive (or the picks); later
 * ones ask only for what changed since the deltaLink the previous sync ended with, and deleted files (or
 * files moved out of the picked folders) are removed. Picked folders on OneDrive for Business are followed
 * through the root's delta (Graph serves no other there); after a 410 the scope is listed again in full
 * and the pass says `fullResync` (see sync.ts).
 *
 * One file Graph refuses (403) or no longer has (404) when it is fetched is skipped with ItemSkippedError;
 * only a 401 a token refresh cannot fix, or a 403 on the drive itself, is a ConnectorAuthError.
 *
 * Settings (`syncScope`, `maxFileBytes`, `pageSize`) and secrets (none of the caller's): see settings.ts.
 *
 * OAuth app: the service's own (`MICROSOFT_CLIENT_ID`, `MICROSOFT_CLIENT_SECRET`) or the caller's, set in
 * /v3/settings (`onedriveClientId`, `onedriveClientSecret`, `onedriveCustomKeyEnabled`). The app is a
 * multi-tenant Microsoft Entra registration ("common" endpoint: work, school and personal accounts) with
 * the delegated Graph permissions Files.Read and User.Read, and the service's callback URL
 * (`<PUBLIC_URL>/v3/connections/oauth/callback`) as a Web redirect URI.
 */

import type { Connector, OAuthSpec } from "../types.ts";
import { DEFAULT_GRAPH_API } from "./graph.ts";
import {
  type OnedriveConfig,
  type OnedriveSecrets,
  onedriveConfigSchema,
  onedriveSecretsSchema,
} from "./settings.ts";
import {
  browseOnedrive,
  fetchOnedriveItem,
  initialOnedriveCursor,
  listOnedrivePage,
  type OnedriveCarry,
  type OnedriveCursor,
  onedriveCarrySchema,
  onedriveCursorSchema,
  verifyOnedrive,
} from "./sync.ts";

export const onedriveOAuth: OAuthSpec = {
  authorizeUrl: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
  tokenUrl: "https://login.microsoftonline.com/common/oauth2/v2.0/token",
  // offline_access: a refresh token; Files.Read: the user's own drive; User.Read: sign-in and profile.
  scopes: ["offline_access", "Files.Read", "User.Read"],
  pkce: true,
  tokenAuth: "body",
  settingsPrefix: "onedrive",
  envPrefix: "MICROSOFT",
};

export const onedriveConnector: Connector<OnedriveConfig, OnedriveSecrets, OnedriveCursor, OnedriveCarry> = {
  provider: "onedrive",
  displayName: "Microsoft OneDrive",
  configSchema: onedriveConfigSchema,
  secretKeys: [],
  secretsSchema: onedriveSecretsSchema,
  listing: "delta",
  cursorSchema: onedriveCursorSchema,
  carrySchema: onedriveCarrySchema,
  initialCursor: initialOnedriveCursor,
  listPage: listOnedrivePage,
  fetchItem: fetchOnedriveItem,
  verify: verifyOnedrive,
  browse: browseOnedrive,
  oauth: onedriveOAuth,
  defaultApiBaseUrl: DEFAULT_GRAPH_API,
};

export { DEFAULT_GRAPH_API } from "./graph.ts";
export type { OnedriveCarry, OnedriveCursor } from "./sync.ts";
