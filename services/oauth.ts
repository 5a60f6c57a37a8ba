// The OAuth authorization-code flow for connectors that declare `oauth`: the consent link (state and
// PKCE kept in the store, so any API process can take the callback), the code exchange, sealed tokens,
// and refreshing them before they expire, once, even with several workers.

import { createHash, randomBytes } from "node:crypto";
import type { Config } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import { ConnectorAuthError } from "../connectors/errors.ts";
import { oauthAppEnvNames, oauthSettingsKeys } from "../connectors/oauth-apps.ts";
import type { Connector, OAuthSession, OAuthSpec } from "../connectors/types.ts";
import { type ConnectionRow, updateConnection, withConnectionLocked } from "../store/connections.ts";
import type { Database } from "../store/db.ts";
import { saveOAuthState, takeOAuthState } from "../store/oauth-states.ts";
import type { SecretBox } from "../store/secrets.ts";
import { readSecret, readSettings } from "../store/settings.ts";

export interface OAuthDeps {
  db: Database;
  secrets: SecretBox;
  config: Pick<Config, "PUBLIC_URL" | "HOST" | "PORT" | "CONNECTOR_ENDPOINTS"> & Partial<Config>;
  log: Logger;
}

/** What the flow cannot do without the caller fixing something (no OAuth app configured). */
export class OAuthSetupError extends Error {}

/** Tokens as stored (sealed) in the connection's secrets. */
export interface StoredTokens {
  accessToken: string;
  refreshToken?: string;
  /** Epoch milliseconds; absent when the provider gives tokens that do not expire (Notion). */
  expiresAt?: number;
  tokenType?: string;
  scope?: string;
  /** What else the token response said that is worth keeping (Notion's workspace name). */
  account?: string;
}

const STATE_TTL_MS = 15 * 60 * 1000;
/** Refresh this long before expiry, so a token never runs out in the middle of a page. */
const REFRESH_MARGIN_MS = 5 * 60 * 1000;

export function publicUrl(config: OAuthDeps["config"]): string {
  return (config.PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`).replace(/\/+$/, "");
}

export const callbackUrl = (config: OAuthDeps["config"]) =>
  `${publicUrl(config)}/v3/connections/oauth/callback`;

export function endpointsFor(config: OAuthDeps["config"], connector: Connector) {
  const override = config.CONNECTOR_ENDPOINTS?.[connector.provider] ?? {};
  return {
    authorizeUrl: override.authorizeUrl ?? connector.oauth?.authorizeUrl,
    tokenUrl: override.tokenUrl ?? connector.oauth?.tokenUrl,
    apiBaseUrl: override.apiBaseUrl ?? connector.defaultApiBaseUrl,
  };
}

/** The caller's own app when `<prefix>CustomKeyEnabled` is set in settings, else the service's app from env. */
export async function oauthApp(
  deps: OAuthDeps,
  connector: Connector,
): Promise<{ clientId: string; clientSecret: string; custom: boolean }> {
  const spec = connector.oauth as OAuthSpec;
  const keys = oauthSettingsKeys(spec);
  const { values } = await readSettings(deps.db);
  if (values[keys.customKeyEnabled] === true) {
    const clientId = values[keys.clientId];
    const clientSecret = await readSecret(deps.db, deps.secrets, keys.clientSecret);
    if (typeof clientId !== "string" || !clientSecret)
      throw new OAuthSetupError(
        `${keys.customKeyEnabled} is set but ${keys.clientId} or ${keys.clientSecret} is missing in /v3/settings`,
      );
    return { clientId, clientSecret, custom: true };
  }
  const names = oauthAppEnvNames(spec);
  const clientId = deps.config.oauthAppEnv?.[names.clientId];
  const clientSecret = deps.config.oauthAppEnv?.[names.clientSecret];
  if (clientId === undefined || clientSecret === undefined)
    throw new OAuthSetupError(
      `no OAuth app for ${connector.provider}: set ${names.clientId} and ${names.clientSecret}, or your own app in /v3/settings (${keys.clientId}, ${keys.clientSecret}, ${keys.customKeyEnabled})`,
    );
  return { clientId, clientSecret, custom: false };
}

/** The provider's consent page for this connection; the state expires after 15 minutes. */
export async function authorizationLink(
  deps: OAuthDeps,
  connection: ConnectionRow,
  connector: Connector,
): Promise<{ url: string; expiresInSeconds: number }> {
  const spec = connector.oauth as OAuthSpec;
  const { clientId } = await oauthApp(deps, connector);
  const { authorizeUrl } = endpointsFor(deps.config, connector);
  const state = randomBytes(24).toString("base64url");
  const verifier = spec.pkce ? randomBytes(48).toString("base64url") : null;
  const redirectUri = callbackUrl(deps.config);
  await saveOAuthState(deps.db, {
    state,
    connectionId: connection.id,
    codeVerifier: verifier,
    redirectUri,
    expiresAt: new Date(Date.now() + STATE_TTL_MS),
  });
  const url = new URL(authorizeUrl as string);
  url.searchParams.set("client_id", clientId);
  url.searchParams.set("redirect_uri", redirectUri);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("state", state);
  if (spec.scopes.length) url.searchParams.set("scope", spec.scopes.join(spec.scopeSeparator ?? " "));
  if (verifier) {
    url.searchParams.set("code_challenge", createHash("sha256").update(verifier).digest("base64url"));
    url.searchParams.set("code_challenge_method", "S256");
  }
  for (const [k, v] of Object.entries(spec.authorizeParams ?? {})) url.searchParams.set(k, v);
  return { url: url.toString(), expiresInSeconds: STATE_TTL_MS / 1000 };
}

/** Takes a state back (once); undefined when unknown or expired. */
export async function takeState(deps: OAuthDeps, state: string) {
  const row = await takeOAuthState(deps.db, state);
  if (!row || row.expiresAt.getTime() < Date.now()) return undefined;
  return row;
}

/** Exchanges the consent's code for tokens at the provider's token endpoint. */
export async function exchangeCode(
  deps: OAuthDeps,
  connector: Connector,
  input: { code: string; redirectUri: string; codeVerifier: string | null },
): Promise<StoredTokens> {
  return tokenRequest(deps, connector, {
    grant_type: "authorization_code",
    code: input.code,
    redirect_uri: input.redirectUri,
    ...(input.codeVerifier ? { code_verifier: input.codeVerifier } : {}),
  });
}

async function tokenRequest(
  deps: OAuthDeps,
  connector: Connector,
  params: Record<string, string>,
  previous?: StoredTokens,
): Promise<StoredTokens> {
  const spec = connector.oauth as OAuthSpec;
  const app = await oauthApp(deps, connector);
  const { tokenUrl } = endpointsFor(deps.config, connector);
  const headers: Record<string, string> = { accept: "application/json" };
  let body: string;
  if (spec.tokenAuth === "basic") {
    // Notion: the client authenticates with HTTP Basic and the body is JSON.
    headers.authorization = `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret}`).toString("base64")}`;
    headers["content-type"] = "application/json";
    body = JSON.stringify(params);
  } else {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams({
      ...params,
      client_id: app.clientId,
      client_secret: app.clientSecret,
    }).toString();
  }
  const response = await fetch(tokenUrl as string, {
    method: "POST",
    headers,
    body,
    signal: AbortSignal.timeout(30_000),
  });
  const json = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok || typeof json.access_token !== "string") {
    const reason =
      typeof json.error === "string"
        ? `${json.error}${typeof json.error_description === "string" ? `: ${json.error_description}` : ""}`
        : String(json.error_description ?? `HTTP ${response.status}`);
    // invalid_grant & co: the grant was revoked or is unknown; 5xx and network errors are worth a retry.
    // An `error` field below 500 is a refusal whatever the status: GitHub answers its errors
    // (bad_refresh_token, bad_verification_code...) with 200 (https://docs.github.com/en/apps/oauth-apps/maintaining-oauth-apps/troubleshooting-oauth-app-access-token-request-errors),
    // and a 200 without a token is never one to retry into.
    const refused = response.status >= 400 || typeof json.error === "string";
    if (response.status < 500 && refused)
      throw new ConnectorAuthError(`${connector.provider} refused the token request: ${reason}`);
    throw new Error(`${connector.provider} token endpoint failed: ${reason}`);
  }
  const expiresIn = Number(json.expires_in);
  const account = [json.workspace_name, json.email].find((v) => typeof v === "string") as string | undefined;
  return {
    accessToken: json.access_token,
    refreshToken: typeof json.refresh_token === "string" ? json.refresh_token : previous?.refreshToken,
    ...(Number.isFinite(expiresIn) && expiresIn > 0 ? { expiresAt: Date.now() + expiresIn * 1000 } : {}),
    ...(typeof json.token_type === "string" ? { tokenType: json.token_type } : {}),
    ...(typeof json.scope === "string" ? { scope: json.scope } : {}),
    ...(account ? { account } : previous?.account ? { account: previous.account } : {}),
  };
}

export function readTokens(
  box: SecretBox,
  connection: Pick<ConnectionRow, "sealedSecrets">,
): StoredTokens | undefined {
  if (!connection.sealedSecrets) return undefined;
  const parsed = JSON.parse(box.decrypt(connection.sealedSecrets)) as { oauth?: StoredTokens };
  return parsed.oauth;
}

export function sealTokens(box: SecretBox, tokens: StoredTokens): string {
  return box.encrypt(JSON.stringify({ oauth: tokens }));
}

/**
 * A new access token from the refresh token. Row-locked, so two workers finding the same token stale
 * refresh it once: the second finds the first one's token and uses it.
 */
export async function refreshTokens(
  deps: OAuthDeps,
  connector: Connector,
  connectionId: string,
  stale: string | undefined,
): Promise<StoredTokens> {
  return withConnectionLocked(deps.db, connectionId, async (row, tx) => {
    if (!row) throw new ConnectorAuthError("the connection was deleted");
    const current = readTokens(deps.secrets, row);
    if (!current)
      throw new ConnectorAuthError("the connection has no tokens: finish its authorization first");
    const fresh = !current.expiresAt || current.expiresAt - Date.now() > REFRESH_MARGIN_MS;
    if (current.accessToken !== stale && fresh) return current;
    if (!current.refreshToken)
      throw new ConnectorAuthError(
        `${connector.provider} refused the access token and gave no refresh token`,
      );
    const renewed = await tokenRequest(
      { ...deps, db: tx },
      connector,
      { grant_type: "refresh_token", refresh_token: current.refreshToken },
      current,
    );
    await updateConnection(tx, connectionId, { sealedSecrets: sealTokens(deps.secrets, renewed) });
    return renewed;
  });
}

/** What a sync's connector sees: a valid token, refreshed before expiry and after a 401. */
export function oauthSession(deps: OAuthDeps, connector: Connector, connection: ConnectionRow): OAuthSession {
  let tokens = readTokens(deps.secrets, connection);
  return {
    async accessToken() {
      if (!tokens)
        throw new ConnectorAuthError("the connection has no tokens: finish its authorization first");
      if (tokens.expiresAt && tokens.expiresAt - Date.now() < REFRESH_MARGIN_MS)
        tokens = await refreshTokens(deps, connector, connection.id, tokens.accessToken);
      return tokens.accessToken;
    },
    async refresh() {
      tokens = await refreshTokens(deps, connector, connection.id, tokens?.accessToken);
      return tokens.accessToken;
    },
  };
}

/** The hosted picker's link token: random, stored as a hash, valid for an hour. */
export function newPickerToken(): { token: string; hash: string; expiresAt: Date } {
  const token = randomBytes(24).toString("base64url");
  return { token, hash: hashPickerToken(token), expiresAt: new Date(Date.now() + 60 * 60 * 1000) };
}

export const hashPickerToken = (token: string) => createHash("sha256").update(token).digest("hex");
