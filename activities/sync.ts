// Activities of the syncConnection workflow: open a sync run, take one page of the source's listing
// and turn its changed items into documents, delete what vanished, close the run. Connectors are
// reached only through the registry.

import { ApplicationFailure, Context } from "@temporalio/activity";
import type { BlobStore } from "../blobs/index.ts";
import type { Logger } from "../config/logger.ts";
import { InvalidCursorError, parsePageCursor, parseStoredCarry } from "../connectors/checkpoint.ts";
import {
  ConnectorAuthError,
  ConnectorConfigError,
  ConnectorRateLimitError,
  ItemSkippedError,
  isConnectorError,
  syncWaitReason,
} from "../connectors/errors.ts";
import { findConnector } from "../connectors/registry.ts";
import type { Connector, FetchedItem, NetworkPolicy, SourceItem, SyncContext } from "../connectors/types.ts";
import { AUTH_EXPIRED, CONNECTOR_CONFIG, RATE_LIMITED, type SyncTrigger } from "../contracts/workflows.ts";
import { buildSyncContext } from "../services/connections.ts";
import { releaseFiles } from "../services/document-files.ts";
import { saveDocumentForProcessing } from "../services/documents.ts";
import type { OAuthDeps } from "../services/oauth.ts";
import {
  type ConnectionRow,
  connectionDocumentCount,
  emptyCounts,
  findConnection,
  finishSyncRun,
  itemCustomId,
  itemsMissedBy,
  knownItems,
  markItemsMissed,
  markItemsSeen,
  markPrefixesSeen,
  missedItemCounts,
  noteSyncRunWait,
  removeItems,
  type SyncCounts,
  saveItem,
  startSyncRun,
  updateConnection,
} from "../store/connections.ts";
import type { Database } from "../store/db.ts";
import { ConnectionGoneError } from "../store/documents.ts";
import type { SecretBox } from "../store/secrets.ts";
import type { DocumentProcessing } from "../temporal/processing-client.ts";
import type { ConnectionSyncs } from "../temporal/sync-client.ts";
import { emitWebhookEvent } from "./webhooks.ts";

export interface SyncActivityDeps {
  /** OAuth apps (env), CONNECTOR_ENDPOINTS and the public URL, for OAuth connectors. */
  config: OAuthDeps["config"];
  db: Database;
  blobs: BlobStore;
  secrets: SecretBox;
  /** Starts the processDocument workflow of each new or changed document. */
  processing: DocumentProcessing;
  /** A connection's schedule, paused when its credentials are refused. */
  syncs: Pick<ConnectionSyncs, "pauseSchedule">;
  network: NetworkPolicy;
  log: Logger;
}

export interface SyncStart {
  connectionId: string;
  trigger: SyncTrigger;
  workflowId: string;
}

export type BeganSync =
  | { runId: string; cursor: unknown; listing: "full" | "delta" }
  | { skipped: string; runId?: string };

export interface PageInput {
  connectionId: string;
  runId: string;
  cursor: unknown;
}

export interface PageResult {
  next: unknown;
  counts: SyncCounts;
  /** What the connector wants handed to its next pass (see ListPage.carry). */
  carry?: unknown;
  /** A delta source listing everything in scope again (ListPage.fullResync): the pass ends with a sweep. */
  fullResync?: boolean;
}

export function createSyncActivities(deps: SyncActivityDeps) {
  const { db } = deps;

  async function load(connectionId: string): Promise<{ connection: ConnectionRow; connector: Connector }> {
    const connection = await findConnection(db, connectionId);
    if (!connection)
      throw ApplicationFailure.create({
        type: CONNECTOR_CONFIG,
        message: "the connection was deleted",
        nonRetryable: true,
      });
    const connector = findConnector(connection.provider);
    if (!connector)
      throw ApplicationFailure.create({
        type: CONNECTOR_CONFIG,
        message: `no connector for provider ${connection.provider}`,
        nonRetryable: true,
      });
    return { connection, connector };
  }

  function contextFor(connection: ConnectionRow, connector: Connector): SyncContext<unknown, unknown> {
    const activity = Context.current();
    return buildSyncContext(deps, connector, connection, {
      signal: activity.cancellationSignal,
      heartbeat: () => activity.heartbeat(),
      log: deps.log.child({ connectionId: connection.id, provider: connection.provider }),
    });
  }

  /** Stores the bytes and saves the document (created, or updated when its content changed) and starts processing. */
  async function upsertDocument(
    connection: ConnectionRow,
    itemId: string,
    fetched: FetchedItem,
  ): Promise<{ documentId: string; changed: boolean; created: boolean }> {
    const { document, process } = await saveDocumentForProcessing(
      deps,
      {
        ...(fetched.file
          ? {
              file: {
                bytes: fetched.file.bytes,
                name: fetched.file.name,
                contentType: fetched.file.mimeType ?? null,
              },
            }
          : { source: fetched.text ?? "" }),
        url: fetched.url ?? null,
        customId: itemCustomId(connection.provider, connection.id, itemId),
        containerTags: connection.containerTags,
        metadata: {
          ...(fetched.metadata ?? {}),
          source: connection.provider,
          connectionId: connection.id,
          sourceItemId: itemId,
        },
        title: fetched.title ?? null,
        filepath: fetched.filepath ?? null,
        connectionId: connection.id,
      },
      // A page saves many items: one admission pass shortly after takes them together.
      { submitAfterMs: 200 },
    );
    return { documentId: document.id, changed: process, created: document.processingRun === 1 && process };
  }

  return {
    async beginSync(input: SyncStart): Promise<BeganSync> {
      return translate(async () => {
        const connection = await findConnection(db, input.connectionId);
        if (!connection) return { skipped: "the connection was deleted" };
        const connector = findConnector(connection.provider);
        if (!connector) return { skipped: `no connector for provider ${connection.provider}` };
        // A connection whose credentials were refused waits for someone to reconnect it; its last run says why.
        if (connection.status !== "active") return { skipped: connection.status };
        const run = await startSyncRun(db, input);
        const ctx = contextFor(connection, connector);
        // What the last complete pass carried (delta tokens, ETags) starts this one.
        const carried = parseStoredCarry(connector, connection.cursor, ctx.log);
        const cursor = await connector.initialCursor(ctx, carried);
        return { runId: run.id, cursor, listing: connector.listing };
      });
    },

    /**
     * One page of the listing. Safe to retry: an item already saved by a failed attempt now has its
     * version stored and counts as unchanged, and document writes go by the item's customId.
     */
    async syncPage(input: PageInput): Promise<PageResult> {
      return translate(() =>
        notingWaits(input.runId, async () => {
          const { connection, connector } = await load(input.connectionId);
          const ctx = contextFor(connection, connector);
          const page = await connector.listPage(ctx, parsePageCursor(connector, input.cursor));
          const counts = emptyCounts();
          const known = await knownItems(
            db,
            connection.id,
            page.items.map((i) => i.id),
          );
          const unchanged: string[] = [];
          let held = connection.documentLimit ? await connectionDocumentCount(db, connection.id) : 0;
          for (const item of page.items) {
            ctx.heartbeat();
            const before = known.get(item.id);
            if (before && before.version === item.version && before.documentId) {
              unchanged.push(item.id);
              counts.unchanged++;
              continue;
            }
            if (!before && connection.documentLimit && held >= connection.documentLimit) continue;
            if (item.skipped) {
              countSkipped(counts, new ItemSkippedError(item.skipped.reason, item.skipped.message));
              ctx.log.info({ itemId: item.id, reason: item.skipped.reason }, item.skipped.message);
              if (before) unchanged.push(item.id);
              continue;
            }
            try {
              const written = await syncItem(connection, connector, ctx, item, input.runId);
              // Listed, then gone or not content when fetched: counted, so a run never loses an item silently.
              if (written === "absent") {
                countSkipped(counts, new ItemSkippedError("not_found", `${item.id} was gone when fetched`));
                continue;
              }
              if (!before) {
                counts.added++;
                held++;
              } else counts.updated++;
            } catch (error) {
              if (isStopping(error)) throw error;
              // One bad item (unreadable object, malformed mail, a file the token may not read) must not stop
              // the others; what an earlier sync made of it stays.
              if (error instanceof ItemSkippedError) {
                countSkipped(counts, error);
                ctx.log.info(
                  { itemId: item.id, reason: error.reason, err: error.message },
                  "skipped an item",
                );
              } else {
                counts.failed++;
                ctx.log.warn({ itemId: item.id, err: error }, "could not sync an item");
              }
              if (before) unchanged.push(item.id);
            }
          }
          await markItemsSeen(db, connection.id, unchanged, input.runId);
          if (page.unchanged?.length)
            counts.unchanged += await markPrefixesSeen(
              db,
              connection.id,
              page.unchanged,
              input.runId,
              page.items.map((i) => i.id),
            );
          if (page.deleted?.length) {
            const removed = await removeItems(db, connection.id, { itemIds: page.deleted });
            await releaseFiles(deps, removed.fileKeys);
            counts.deleted += removed.items;
          }
          return {
            next: page.next,
            counts,
            ...(page.carry !== undefined ? { carry: page.carry } : {}),
            ...(page.fullResync ? { fullResync: true } : {}),
          };
        }),
      );
    },

    /**
     * After a complete full pass: what the listing missed. A listing can be incomplete (Notion's search "is not
     * guaranteed to return everything"), and an item can leave it yet stay at the source (an archived Gmail
     * message leaves INBOX, stays in All Mail), so each missed item is first looked up at the source: one the
     * source says is gone (no content, or not found) is to be deleted; one it still gives stays; one it cannot
     * say about is to be deleted only when another listing, a sync interval after the first, misses it too.
     * When what is to be deleted is more than a fifth of a connection's items (and at least MASS_DELETE_MIN),
     * nothing is deleted: the run says how many were held for review, and the next complete pass decides again.
     */
    async sweepUnseen(input: {
      connectionId: string;
      runId: string;
    }): Promise<{ deleted: number; heldForReview?: number }> {
      return translate(() =>
        notingWaits(input.runId, async () => {
          const { connection, connector } = await load(input.connectionId);
          const { missed, total } = await missedItemCounts(db, connection.id, input.runId);
          if (missed === 0) return { deleted: 0 };
          const ctx = contextFor(connection, connector);
          const now = new Date();
          const interval = connection.syncIntervalMinutes * 60_000;
          // Ids only, at most the connection's items: deleted after every missed item has been asked about.
          const gone: string[] = [];
          let after = "";
          for (;;) {
            const batch = await itemsMissedBy(db, connection.id, input.runId, { after, limit: SWEEP_BATCH });
            if (!batch.length) break;
            after = batch.at(-1)?.itemId ?? after;
            const present: string[] = [];
            const firstMiss: string[] = [];
            for (const item of batch) {
              ctx.heartbeat();
              const answer = await askSource(connector, ctx, item);
              if (answer === "gone") gone.push(item.itemId);
              else if (answer === "present") present.push(item.itemId);
              else if (!item.missedAt) firstMiss.push(item.itemId);
              else if (now.getTime() - item.missedAt.getTime() >= interval) gone.push(item.itemId);
            }
            await markItemsSeen(db, connection.id, present, input.runId);
            await markItemsMissed(db, connection.id, firstMiss, now);
          }
          if (gone.length >= MASS_DELETE_MIN && gone.length > total * MASS_DELETE_SHARE) {
            deps.log.warn(
              { connectionId: connection.id, gone: gone.length, total },
              "a complete pass would delete too many items at once: none deleted, held for review",
            );
            return { deleted: 0, heldForReview: gone.length };
          }
          let deleted = 0;
          for (let i = 0; i < gone.length; i += SWEEP_BATCH) {
            ctx.heartbeat();
            const removed = await removeItems(db, connection.id, { itemIds: gone.slice(i, i + SWEEP_BATCH) });
            await releaseFiles(deps, removed.fileKeys);
            deleted += removed.items;
          }
          return { deleted };
        }),
      );
    },

    async finishSync(input: {
      connectionId: string;
      runId: string;
      status: "done" | "failed" | "auth_expired";
      counts: SyncCounts;
      errorCode?: string;
      error?: string;
      /** A complete full pass: what its connector carries to the next pass. */
      carry?: unknown;
    }): Promise<void> {
      return translate(async () => {
        await finishSyncRun(db, input.runId, input);
        if (input.status === "done" && input.carry !== undefined)
          await updateConnection(db, input.connectionId, { cursor: input.carry as never });
        // Credentials the source refused stay refused: stop scheduling work until someone reconnects.
        if (input.status === "auth_expired") {
          await updateConnection(db, input.connectionId, { status: "auth_expired" });
          await deps.syncs
            .pauseSchedule(input.connectionId, "the source refused the credentials")
            .catch((err: unknown) => deps.log.warn({ err }, "could not pause the sync schedule"));
        }
        await emitWebhookEvent(deps, { ...input, event: "connection.sync" });
      });
    },
  };

  /**
   * Runs an attempt at the source; when it fails, notes on the run why it will wait (`rate_limited`,
   * `provider_unavailable`), so the connection shows it while Temporal retries, and a run that gives up says so.
   */
  async function notingWaits<T>(runId: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      await noteSyncRunWait(db, runId, syncWaitReason(error)).catch((err: unknown) =>
        deps.log.warn({ err }, "could not note why a sync run waits"),
      );
      throw error;
    }
  }

  async function syncItem(
    connection: ConnectionRow,
    connector: Connector,
    ctx: SyncContext<unknown, unknown>,
    item: SourceItem,
    runId: string,
  ): Promise<"written" | "absent"> {
    const fetched = item.content ?? (await connector.fetchItem(ctx, item));
    if (!fetched) return "absent";
    const { documentId } = await upsertDocument(connection, item.id, fetched);
    for (const child of fetched.children ?? []) {
      const childDoc = await upsertDocument(connection, child.id, child);
      await saveItem(db, {
        connectionId: connection.id,
        itemId: child.id,
        parentItemId: item.id,
        version: item.version,
        documentId: childDoc.documentId,
        seenRun: runId,
      });
    }
    // Saved last: an attempt that died before this point is redone in full by the retry.
    await saveItem(db, {
      connectionId: connection.id,
      itemId: item.id,
      version: item.version,
      documentId,
      seenRun: runId,
    });
    return "written";
  }
}

export type SyncActivities = ReturnType<typeof createSyncActivities>;

/** A pass that would delete more than this share of a connection's items, and at least MASS_DELETE_MIN, deletes nothing. */
const MASS_DELETE_SHARE = 0.2;
const MASS_DELETE_MIN = 50;
/** Missed items looked up at the source per batch (each batch a statement to read and one or two to write). */
const SWEEP_BATCH = 100;

/**
 * What the source says of an item its listing missed: "gone" (no content, or not found), "present" (it gave
 * the content, or refused it for what it is: too large, archived), or "unknown" (any other answer: no
 * permission now, a timeout, a 5xx). Failures of the whole sync (credentials, rate limits, cancellation) are
 * passed on.
 */
async function askSource(
  connector: Connector,
  ctx: SyncContext<unknown, unknown>,
  item: { itemId: string; version: string },
): Promise<"gone" | "present" | "unknown"> {
  try {
    const asked = { id: item.itemId, version: item.version };
    if (connector.exists) return (await connector.exists(ctx, asked)) ? "present" : "gone";
    const fetched = await connector.fetchItem(ctx, asked);
    return fetched ? "present" : "gone";
  } catch (error) {
    if (isStopping(error)) throw error;
    if (error instanceof ItemSkippedError) {
      if (error.reason === "not_found") return "gone";
      // Too large, over an export limit, archived, of no readable type: there, only not fetchable. A refusal
      // says nothing either way.
      if (error.reason !== "no_permission") return "present";
    }
    ctx.log.info({ itemId: item.itemId, err: error }, "could not ask the source about a missed item");
    return "unknown";
  }
}

function countSkipped(counts: SyncCounts, error: ItemSkippedError): void {
  counts.skipped = (counts.skipped ?? 0) + 1;
  const reasons = counts.skippedReasons ?? {};
  reasons[error.reason] = (reasons[error.reason] ?? 0) + 1;
  counts.skippedReasons = reasons;
}

/** Failures that concern the whole sync (credentials, settings, rate limits, cancellation), not one item. */
function isStopping(error: unknown): boolean {
  const name = (error as Error)?.name;
  return isConnectorError(error) || name === "AbortError" || name === "CancelledFailure";
}

/** Connector failures the workflow must tell apart: refused credentials, wrong settings, rate limits. */
async function translate<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ConnectorAuthError)
      throw ApplicationFailure.create({ type: AUTH_EXPIRED, message: error.message, nonRetryable: true });
    if (error instanceof ConnectorConfigError)
      throw ApplicationFailure.create({ type: CONNECTOR_CONFIG, message: error.message, nonRetryable: true });
    // A cursor from the workflow's history that the connector no longer accepts fails the same way on every attempt.
    if (error instanceof InvalidCursorError)
      throw ApplicationFailure.create({ type: "InvalidCursor", message: error.message, nonRetryable: true });
    if (error instanceof ConnectionGoneError)
      throw ApplicationFailure.create({ type: "ConnectionGone", message: error.message, nonRetryable: true });
    if (error instanceof ConnectorRateLimitError)
      // Temporal waits at least as long as the source asked before the next attempt.
      throw ApplicationFailure.create({
        type: RATE_LIMITED,
        message: error.message,
        nextRetryDelay: Math.max(1000, error.retryAfterMs),
      });
    throw error;
  }
}
