/**
 * GitHub connector (provider `github`): syncs the documentation files, issues and pull requests of chosen
 * repositories on github.com or a GitHub Enterprise Server.
 *
 * Documents, by id (stable across passes; the version decides what is fetched again):
 * - `owner/repo/blob/<path>`: a README or a file with one of `fileExtensions` on the default branch, version
 *   the git blob sha (so a file is fetched again only when its bytes change);
 * - `owner/repo/issues/<number>` and `owner/repo/pull/<number>`: title, body and comments, version
 *   `updated_at` (a new comment changes it).
 *
 * Settings (repositories, baseUrl, what to include, size and page limits) and secrets (`token`): see
 * settings.ts.
 */

import type { Connector } from "../types.ts";
import { configureRepositories } from "./repositories.ts";
import {
  type GithubConfig,
  type GithubSecrets,
  githubConfigSchema,
  githubSecretsSchema,
} from "./settings.ts";
import {
  fetchGithubItem,
  type GithubCarry,
  type GithubCursor,
  githubCarrySchema,
  githubCursorSchema,
  githubResources,
  initialGithubCursor,
  listGithubPage,
  verifyGithub,
} from "./sync.ts";

export const githubConnector: Connector<GithubConfig, GithubSecrets, GithubCursor, GithubCarry> = {
  provider: "github",
  displayName: "GitHub",
  configSchema: githubConfigSchema,
  secretKeys: ["token"],
  secretsSchema: githubSecretsSchema,
  listing: "full",
  cursorSchema: githubCursorSchema,
  carrySchema: githubCarrySchema,
  initialCursor: initialGithubCursor,
  listPage: listGithubPage,
  fetchItem: fetchGithubItem,
  verify: verifyGithub,
  resources: githubResources,
  configure: configureRepositories,
  // Used only when no `token` is given at creation. An OAuth app's tokens do not expire; a GitHub App's
  // user tokens do (eight hours) and come with a refresh token, which the engine uses after a 401.
  oauth: {
    authorizeUrl: "https://github.com/login/oauth/authorize",
    tokenUrl: "https://github.com/login/oauth/access_token",
    scopes: ["repo", "read:user"],
    pkce: false,
    tokenAuth: "body",
    settingsPrefix: "github",
    envPrefix: "GITHUB",
  },
};

export type { GithubCursor } from "./sync.ts";
