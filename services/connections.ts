// Connections: create (settings checked, secrets sealed, first sync and schedule started), present,
// import, delete. One implementation for the REST API and later the console and MCP.

import type { Logger } from "../config/logger.ts";
import { ConnectorAuthError, ConnectorConfigError } from "../connectors/errors.ts";
import { findConnector } from "../connectors/registry.ts";
import type { Connector, NetworkPolicy, SyncContext } from "../connectors/types.ts";
import type { ConnectionSyncs } from "../runtime/sync-client.ts";
import {
  type ConnectionRow,
  createConnection,
  deleteConnection,
  deleteConnectionDocuments,
  latestSyncRuns,
  type SyncRunRow,
  updateConnection,
} from "../store/connections.ts";
import type { Database } from "../store/db.ts";
import type { SecretBox } from "../store/secrets.ts";

export interface ConnectionDeps {
  db: Database;
  secrets: SecretBox;
  syncs: ConnectionSyncs;
  network: NetworkPolicy;
  log: Logger;
  /** Public base URL of this API, for links handed to callers. */
  baseUrl: string;
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
): Promise<ConnectionRow> {
  const connector = connectorFor(provider);
  const { settings, secrets, config, parsedSecrets } = splitMetadata(connector, input.metadata);
  if (connector.verify) {
    const ctx: SyncContext<unknown, unknown> = {
      connectionId: "(new)",
      config,
      secrets: parsedSecrets,
      network: deps.network,
      signal: AbortSignal.timeout(30_000),
      heartbeat: () => {},
      log: deps.log,
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
  return connection;
}

/** `configure` (GitHub repositories): the connector turns the chosen resources into settings; a sync follows. */
export async function configureConnection(
  deps: ConnectionDeps,
  connection: ConnectionRow,
  resources: Record<string, unknown>[],
): Promise<void> {
  const connector = connectorFor(connection.provider);
  if (!connector.configure)
    throw new ConnectionSetupError(`${connection.provider} connections have no resources to configure`);
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
  if (withDocuments) await deleteConnectionDocuments(deps.db, connection.id);
  await deleteConnection(deps.db, connection.id);
}

export function contextForConnection(
  deps: ConnectionDeps,
  connection: ConnectionRow,
): { connector: Connector; ctx: SyncContext<unknown, unknown> } {
  const connector = connectorFor(connection.provider);
  const secrets = connection.sealedSecrets ? JSON.parse(deps.secrets.decrypt(connection.sealedSecrets)) : {};
  return {
    connector,
    ctx: {
      connectionId: connection.id,
      config: connector.configSchema.parse(connection.metadata),
      secrets: connector.secretsSchema.parse(secrets),
      network: deps.network,
      signal: AbortSignal.timeout(60_000),
      heartbeat: () => {},
      log: deps.log,
    },
  };
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
    lastSync: lastSync
      ? {
          id: lastSync.id,
          trigger: lastSync.trigger,
          status: lastSync.status,
          errorCode: lastSync.errorCode,
          error: lastSync.error,
          startedAt: lastSync.startedAt.toISOString(),
          finishedAt: lastSync.finishedAt?.toISOString() ?? null,
          counts: lastSync.counts,
        }
      : null,
  };
}

export async function presentConnections(db: Database, rows: ConnectionRow[]) {
  const runs = await latestSyncRuns(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => presentConnection(r, runs.get(r.id)));
}
