// Connections: create (settings checked, secrets sealed, first sync and schedule started), present,
// import, delete. One implementation for the REST API and later the console and MCP.

import { timingSafeEqual } from "node:crypto";
import type { BlobStore } from "../blobs/index.ts";
import type { Logger } from "../config/logger.ts";
import { ConnectorAuthError, ConnectorConfigError } from "../connectors/errors.ts";
import { findConnector } from "../connectors/registry.ts";
import type { Connector, NetworkPolicy, SyncContext } from "../connectors/types.ts";
import {
  type ConnectionRow,
  createConnection,
  deleteConnection,
  deleteConnectionDocuments,
  findConnection,
  latestSyncRuns,
  type SyncRunRow,
  updateConnection,
} from "../store/connections.ts";
import type { Database } from "../store/db.ts";
import type { SelectedItem } from "../store/schema/index.ts";
import type { SecretBox } from "../store/secrets.ts";
import type { DocumentProcessing } from "../temporal/processing-client.ts";
import type { ConnectionSyncs } from "../temporal/sync-client.ts";
import { releaseFiles } from "./document-files.ts";
import {
  authorizationLink,
  endpointsFor,
  exchangeCode,
  hashPickerToken,
  newPickerToken,
  type OAuthDeps,
  OAuthSetupError,
  oauthSession,
  publicUrl,
  readTokens,
  sealTokens,
  takeState,
} from "./oauth.ts";

export interface ConnectionDeps {
  /** OAuth apps, CONNECTOR_ENDPOINTS, PUBLIC_URL. */
  config: OAuthDeps["config"];
  db: Database;
  /** Where the stored files of documents removed with their connection are deleted. */
  blobs: BlobStore;
  secrets: SecretBox;
  syncs: ConnectionSyncs;
  /** Stops the processing runs of documents removed with their connection. */
  processing: Pick<DocumentProcessing, "stopDeleted">;
  network: NetworkPolicy;
  log: Logger;
}

/** Settings or credentials the caller must fix: the API answers 400 with this message. */
export class ConnectionSetupError extends Error {
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

type Flat = Record<string, string | number | boolean>;

export function connectorFor(provider: string): Connector {
  const connector = findConnector(provider);
  if (!connector) throw new ConnectionSetupError(`unknown provider '${provider}'`, "provider");
  return connector;
}

/** Splits the caller's metadata into settings (kept as given) and secrets (sealed), validating both. */
function splitMetadata(connector: Connector, metadata: Flat) {
  const settings: Flat = {};
  const secrets: Flat = {};
  for (const [key, value] of Object.entries(metadata)) {
    if (connector.secretKeys.includes(key)) secrets[key] = value;
    else settings[key] = value;
  }
  const config = connector.configSchema.safeParse(settings);
  if (!config.success) {
    const issue = config.error.issues[0];
    throw new ConnectionSetupError(
      `metadata.${issue?.path.join(".") ?? ""}: ${issue?.message}`,
      `metadata.${issue?.path.join(".") ?? ""}`,
    );
  }
  const parsedSecrets = connector.secretsSchema.safeParse(secrets);
  if (!parsedSecrets.success) {
    const issue = parsedSecrets.error.issues[0];
    throw new ConnectionSetupError(
      `metadata.${issue?.path.join(".") ?? ""}: ${issue?.message}`,
      `metadata.${issue?.path.join(".") ?? ""}`,
    );
  }
  return { settings, secrets, config: config.data, parsedSecrets: parsedSecrets.data };
}

export interface CreatedConnection {
  connection: ConnectionRow;
  /** The provider's consent page (OAuth), or the connection's own URL when it is ready at once. */
  authLink: string;
  expiresIn: string;
}

export async function createConnectionFor(
  deps: ConnectionDeps,
  provider: string,
  input: {
    containerTags: string[];
    metadata: Flat;
    documentLimit?: number;
    redirectUrl?: string;
    syncIntervalMinutes: number;
  },
): Promise<CreatedConnection> {
  const connector = connectorFor(provider);
  const { settings, secrets, config, parsedSecrets } = splitMetadata(connector, input.metadata);
  if (connector.oauth && !Object.keys(secrets).length) {
    // Tokens come from the consent flow; the connection waits for them (pending) and syncs after the callback.
    const connection = await createConnection(deps.db, {
      provider,
      containerTags: input.containerTags,
      metadata: settings,
      sealedSecrets: null,
      documentLimit: input.documentLimit ?? null,
      syncIntervalMinutes: input.syncIntervalMinutes,
      redirectUrl: input.redirectUrl ?? null,
      status: "pending",
    });
    try {
      const link = await authorizationLink(deps, connection, connector);
      return { connection, authLink: link.url, expiresIn: `${link.expiresInSeconds / 60} minutes` };
    } catch (error) {
      await deleteConnection(deps.db, connection.id);
      if (error instanceof OAuthSetupError) throw new ConnectionSetupError(error.message, "provider");
      throw error;
    }
  }
  if (connector.verify) {
    const ctx: SyncContext<unknown, unknown> = {
      connectionId: "(new)",
      config,
      secrets: parsedSecrets,
      network: deps.network,
      signal: AbortSignal.timeout(30_000),
      heartbeat: () => {},
      log: deps.log,
      apiBaseUrl: endpointsFor(deps.config, connector).apiBaseUrl,
    };
    try {
      await connector.verify(ctx);
    } catch (error) {
      if (error instanceof ConnectorAuthError)
        throw new ConnectionSetupError(`the source refused the credentials: ${error.message}`, "metadata");
      if (error instanceof ConnectorConfigError) throw new ConnectionSetupError(error.message, "metadata");
      throw error;
    }
  }
  const connection = await createConnection(deps.db, {
    provider,
    containerTags: input.containerTags,
    metadata: settings,
    sealedSecrets: Object.keys(secrets).length ? deps.secrets.encrypt(JSON.stringify(secrets)) : null,
    documentLimit: input.documentLimit ?? null,
    syncIntervalMinutes: input.syncIntervalMinutes,
    redirectUrl: input.redirectUrl ?? null,
  });
  await deps.syncs.schedule(connection.id, connection.syncIntervalMinutes);
  await deps.syncs.startNow(connection.id, "create");
  return {
    connection,
    authLink: `${publicUrl(deps.config)}/v3/connections/${connection.id}`,
    expiresIn: "0",
  };
}

/** Drive connections with a selection scope need the hosted picker before their first sync. */
export function needsPicker(connector: Connector, connection: Pick<ConnectionRow, "metadata">): boolean {
  return Boolean(connector.browse) && connection.metadata.syncScope !== "full";
}

/** Where the browser goes after the consent page: the picker, the caller's redirectUrl, or a plain page. */
export type CallbackOutcome =
  | { kind: "picker"; connection: ConnectionRow; pickerUrl: string }
  | { kind: "connected"; connection: ConnectionRow; redirectTo?: string }
  | { kind: "refused"; message: string; redirectTo?: string };

export async function completeAuthorization(
  deps: ConnectionDeps,
  input: { state?: string; code?: string; error?: string },
): Promise<CallbackOutcome> {
  const pending = input.state ? await takeState(deps, input.state) : undefined;
  if (!pending)
    return {
      kind: "refused",
      message: "this authorization link is unknown or expired; create the connection again",
    };
  const connection = await findConnection(deps.db, pending.connectionId);
  if (!connection) return { kind: "refused", message: "the connection was deleted" };
  const withStatus = (url: string | null, params: Record<string, string>) => {
    if (!url) return undefined;
    const target = new URL(url);
    for (const [k, v] of Object.entries(params)) target.searchParams.set(k, v);
    return target.toString();
  };
  if (input.error || !input.code)
    return {
      kind: "refused",
      message: `the provider did not authorize the connection: ${input.error ?? "no code"}`,
      redirectTo: withStatus(connection.redirectUrl, {
        connectionId: connection.id,
        error: input.error ?? "no_code",
      }),
    };
  const connector = connectorFor(connection.provider);
  const tokens = await exchangeCode(deps, connector, {
    code: input.code,
    redirectUri: pending.redirectUri,
    codeVerifier: pending.codeVerifier,
  });
  if (needsPicker(connector, connection)) {
    const picker = newPickerToken();
    await updateConnection(deps.db, connection.id, {
      sealedSecrets: sealTokens(deps.secrets, tokens),
      status: "setup",
      email: tokens.account ?? null,
      pickerTokenHash: picker.hash,
      pickerTokenExpiresAt: picker.expiresAt,
    });
    const updated = (await findConnection(deps.db, connection.id)) as ConnectionRow;
    return { kind: "picker", connection: updated, pickerUrl: pickerUrl(deps, connection.id, picker.token) };
  }
  await updateConnection(deps.db, connection.id, {
    sealedSecrets: sealTokens(deps.secrets, tokens),
    status: "active",
    email: tokens.account ?? null,
  });
  await deps.syncs.schedule(connection.id, connection.syncIntervalMinutes);
  await deps.syncs.startNow(connection.id, "create");
  const updated = (await findConnection(deps.db, connection.id)) as ConnectionRow;
  return {
    kind: "connected",
    connection: updated,
    redirectTo: withStatus(connection.redirectUrl, { connectionId: connection.id, status: "connected" }),
  };
}

export function pickerUrl(deps: Pick<ConnectionDeps, "config">, connectionId: string, token: string): string {
  return `${publicUrl(deps.config)}/v3/connections/${encodeURIComponent(connectionId)}/picker?t=${token}`;
}

/** A new picker link for a connection (an admin re-opening the selection); the previous link stops working. */
export async function renewPickerLink(deps: ConnectionDeps, connection: ConnectionRow): Promise<string> {
  const connector = connectorFor(connection.provider);
  if (!connector.browse) throw new ConnectionSetupError(`${connection.provider} connections have no picker`);
  if (connection.status === "pending")
    throw new ConnectionSetupError("finish the provider's consent page first");
  const picker = newPickerToken();
  await updateConnection(deps.db, connection.id, {
    pickerTokenHash: picker.hash,
    pickerTokenExpiresAt: picker.expiresAt,
  });
  return pickerUrl(deps, connection.id, picker.token);
}

/** The connection a picker link opens, if the link is its current one and not expired. */
export async function connectionForPicker(
  deps: ConnectionDeps,
  connectionId: string,
  token: string | undefined,
): Promise<ConnectionRow | undefined> {
  if (!token) return undefined;
  const connection = await findConnection(deps.db, connectionId);
  if (!connection?.pickerTokenHash || !connection.pickerTokenExpiresAt) return undefined;
  if (connection.pickerTokenExpiresAt.getTime() < Date.now()) return undefined;
  const given = Buffer.from(hashPickerToken(token));
  const stored = Buffer.from(connection.pickerTokenHash);
  return given.length === stored.length && timingSafeEqual(given, stored) ? connection : undefined;
}

/** The picker's folder listing, through the connector with the connection's tokens. */
export async function browseForPicker(
  deps: ConnectionDeps,
  connection: ConnectionRow,
  parentId: string | null,
) {
  const { connector, ctx } = contextForConnection(deps, connection);
  if (!connector.browse) throw new ConnectionSetupError(`${connection.provider} connections have no picker`);
  return connector.browse(ctx, parentId);
}

/**
 * Saves what the user picked; the connection becomes active and syncs. The saved cursor stays: drive
 * connectors compare the new picks with those it was made for and remove what left the scope.
 */
export async function savePickerSelection(
  deps: ConnectionDeps,
  connection: ConnectionRow,
  items: SelectedItem[],
): Promise<{ redirectTo?: string }> {
  await updateConnection(deps.db, connection.id, {
    selection: items,
    status: connection.status === "setup" ? "active" : connection.status,
  });
  if (connection.status === "setup") await deps.syncs.schedule(connection.id, connection.syncIntervalMinutes);
  await deps.syncs.startNow(connection.id, connection.status === "setup" ? "create" : "import");
  if (!connection.redirectUrl) return {};
  const target = new URL(connection.redirectUrl);
  target.searchParams.set("connectionId", connection.id);
  target.searchParams.set("status", "connected");
  return { redirectTo: target.toString() };
}

/** `configure` (GitHub repositories): the connector turns the chosen resources into settings; a sync follows. */
export async function configureConnection(
  deps: ConnectionDeps,
  connection: ConnectionRow,
  resources: Record<string, unknown>[],
): Promise<void> {
  const connector = connectorFor(connection.provider);
  if (!connector.configure)
    throw new ConnectionSetupError(
      `${connection.provider} connections have no resources to configure`,
      "resources",
    );
  let chosen: Record<string, unknown>;
  try {
    chosen = connector.configure(resources) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof ConnectorConfigError) throw new ConnectionSetupError(error.message, "resources");
    throw error;
  }
  const metadata = { ...connection.metadata, ...(chosen as Flat) };
  const parsed = connector.configSchema.safeParse(metadata);
  if (!parsed.success)
    throw new ConnectionSetupError(parsed.error.issues[0]?.message ?? "bad resources", "resources");
  await updateConnection(deps.db, connection.id, { metadata });
  await deps.syncs.startNow(connection.id, "import");
}

export async function removeConnection(
  deps: ConnectionDeps,
  connection: ConnectionRow,
  withDocuments: boolean,
): Promise<void> {
  await deps.syncs.stop(connection.id);
  const removeDocuments = async () => {
    const removed = await deleteConnectionDocuments(deps.db, connection.id);
    await deps.processing.stopDeleted(removed, "connection removed with its documents");
    await releaseFiles(
      deps,
      removed.map((d) => d.fileKey),
    );
  };
  if (withDocuments) await removeDocuments();
  // A sync activity that has not heard of the stop yet may still be saving items: the delete waits for a save
  // in progress (it holds a share lock on the connection's row) and no save starts after it.
  await deleteConnection(deps.db, connection.id);
  // What it saved between the first pass and the delete goes too.
  if (withDocuments) await removeDocuments();
}

/** What building a connector's context needs: the store, sealed secrets, OAuth apps and endpoints, network rules. */
export type SyncContextDeps = Pick<ConnectionDeps, "db" | "secrets" | "config" | "network" | "log">;

/**
 * A connector's view of one connection: parsed settings and secrets, API root, fresh OAuth tokens (for
 * connections made through a consent flow) and the picker's selection. One builder for sync activities
 * and the API's own calls (resources, picker browsing); only cancellation and heartbeats differ.
 */
export function buildSyncContext(
  deps: SyncContextDeps,
  connector: Connector,
  connection: ConnectionRow,
  run: { signal: AbortSignal; heartbeat: () => void; log: Logger },
): SyncContext<unknown, unknown> {
  const secrets = connection.sealedSecrets ? JSON.parse(deps.secrets.decrypt(connection.sealedSecrets)) : {};
  return {
    connectionId: connection.id,
    config: connector.configSchema.parse(connection.metadata),
    secrets: connector.secretsSchema.parse(secrets),
    network: deps.network,
    signal: run.signal,
    heartbeat: run.heartbeat,
    log: run.log,
    apiBaseUrl: endpointsFor(deps.config, connector).apiBaseUrl,
    // Connections made through a consent flow hold tokens; those given a token in metadata do not.
    ...(connector.oauth && readTokens(deps.secrets, connection)
      ? { oauth: oauthSession({ ...deps, log: run.log }, connector, connection) }
      : {}),
    ...(connection.selection ? { selection: connection.selection } : {}),
  };
}

export function contextForConnection(
  deps: ConnectionDeps,
  connection: ConnectionRow,
): { connector: Connector; ctx: SyncContext<unknown, unknown> } {
  const connector = connectorFor(connection.provider);
  const ctx = buildSyncContext(deps, connector, connection, {
    signal: AbortSignal.timeout(60_000),
    heartbeat: () => {},
    log: deps.log,
  });
  return { connector, ctx };
}

/** The public shape (the SDK's connection fields, plus status, schedule and the last sync run). */
export function presentConnection(connection: ConnectionRow, lastSync: SyncRunRow | undefined) {
  const connector = findConnector(connection.provider);
  const secretFlags = Object.fromEntries(
    (connector?.secretKeys ?? []).map((k) => [`${k}Set`, Boolean(connection.sealedSecrets)]),
  );
  return {
    id: connection.id,
    provider: connection.provider,
    createdAt: connection.createdAt.toISOString(),
    containerTags: connection.containerTags,
    documentLimit: connection.documentLimit ?? undefined,
    email: connection.email ?? undefined,
    metadata: { ...connection.metadata, ...secretFlags },
    status: connection.status,
    syncIntervalMinutes: connection.syncIntervalMinutes,
    lastSync: lastSync ? presentSyncRun(lastSync) : null,
    ...(lastSync ? { lastSyncRun: presentLastSyncRun(lastSync) } : {}),
  };
}

/** The `lastSyncRun.errorCode` values Supermemory's API names; every other failure is `internal` there. */
const SUPERMEMORY_ERROR_CODES = ["auth_expired", "rate_limited", "provider_unavailable"] as const;
type SupermemoryErrorCode = (typeof SUPERMEMORY_ERROR_CODES)[number] | "internal";

function supermemoryErrorCode(code: string): SupermemoryErrorCode {
  return (SUPERMEMORY_ERROR_CODES as readonly string[]).includes(code)
    ? (code as SupermemoryErrorCode)
    : "internal";
}

/**
 * The last run as Supermemory's API shows it (`lastSyncRun`), beside our own `lastSync`: its error codes are
 * Supermemory's closed set, so a settings error (`config`) or any other (`error`) reads `internal`.
 */
export function presentLastSyncRun(run: SyncRunRow) {
  const code = run.errorCode;
  return {
    status: run.status,
    errorCode: code === null ? null : supermemoryErrorCode(code),
    error: run.error,
    startedAt: run.startedAt.toISOString(),
    ...(run.finishedAt ? { completedAt: run.finishedAt.toISOString() } : {}),
  };
}

/** A sync run as the API shows it; workflowId names the run's Temporal workflow (sync/<connection id>). */
export function presentSyncRun(run: SyncRunRow) {
  return {
    id: run.id,
    trigger: run.trigger,
    status: run.status,
    errorCode: run.errorCode,
    error: run.error,
    startedAt: run.startedAt.toISOString(),
    finishedAt: run.finishedAt?.toISOString() ?? null,
    // Runs written before skips and held deletions were counted read as none of either.
    counts: { skipped: 0, skippedReasons: {}, heldForReview: 0, ...run.counts },
    workflowId: run.workflowId,
  };
}

export async function presentConnections(db: Database, rows: ConnectionRow[]) {
  const runs = await latestSyncRuns(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => presentConnection(r, runs.get(r.id)));
}
