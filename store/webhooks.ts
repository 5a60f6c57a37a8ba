import { and, arrayContains, desc, eq, sql } from "drizzle-orm";
import type { Database } from "./db.ts";
import { newId } from "./ids.ts";
import {
  connections,
  documents,
  syncRuns,
  type WebhookDeliveryRow,
  type WebhookEventType,
  type WebhookRow,
  webhookDeliveries,
  webhooks,
} from "./schema/index.ts";

export type { WebhookDeliveryRow, WebhookEventType, WebhookRow };

export interface NewWebhook {
  url: string;
  sealedSecret: string;
  containerTags: string[];
  events: WebhookEventType[];
}

export async function createWebhook(db: Database, input: NewWebhook): Promise<WebhookRow> {
  const [row] = await db
    .insert(webhooks)
    .values({ id: newId(12), ...input })
    .returning();
  return row as WebhookRow;
}

export async function findWebhook(db: Database, id: string): Promise<WebhookRow | undefined> {
  const [row] = await db.select().from(webhooks).where(eq(webhooks.id, id));
  return row;
}

export function listWebhooks(db: Database): Promise<WebhookRow[]> {
  return db.select().from(webhooks).orderBy(desc(webhooks.createdAt), webhooks.id);
}

export async function updateWebhook(
  db: Database,
  id: string,
  values: Partial<Pick<WebhookRow, "url" | "containerTags" | "events" | "enabled">>,
): Promise<WebhookRow | undefined> {
  const [row] = await db.update(webhooks).set(values).where(eq(webhooks.id, id)).returning();
  return row;
}

export async function deleteWebhook(db: Database, id: string): Promise<boolean> {
  const rows = await db.delete(webhooks).where(eq(webhooks.id, id)).returning({ id: webhooks.id });
  return rows.length > 0;
}

/** Enabled webhooks subscribed to `event`, whatever their tags (see webhookCoversTags). */
export function webhooksFor(db: Database, event: WebhookEventType): Promise<WebhookRow[]> {
  return db
    .select()
    .from(webhooks)
    .where(and(eq(webhooks.enabled, true), arrayContains(webhooks.events, [event])));
}

/** A webhook hears of a subject when it is global (no tags) or shares a tag with it. */
export function webhookCoversTags(hook: Pick<WebhookRow, "containerTags">, containerTags: string[]): boolean {
  return hook.containerTags.length === 0 || hook.containerTags.some((t) => containerTags.includes(t));
}

/** Stores the delivery unless one with this id exists; says whether it was new. */
export async function insertDelivery(
  db: Database,
  input: { id: string; webhookId: string; event: string; payload: Record<string, unknown> },
): Promise<boolean> {
  const rows = await db
    .insert(webhookDeliveries)
    .values(input)
    .onConflictDoNothing({ target: webhookDeliveries.id })
    .returning({ id: webhookDeliveries.id });
  return rows.length > 0;
}

export async function findDelivery(db: Database, id: string): Promise<WebhookDeliveryRow | undefined> {
  const [row] = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id));
  return row;
}

export function listDeliveries(db: Database, webhookId: string, limit = 50): Promise<WebhookDeliveryRow[]> {
  return db
    .select()
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.webhookId, webhookId))
    .orderBy(desc(webhookDeliveries.createdAt), webhookDeliveries.id)
    .limit(limit);
}

/** One attempt's outcome; `attempts` is counted in SQL so concurrent writers never lose one. */
export async function recordAttempt(
  db: Database,
  id: string,
  outcome: { delivered: boolean; responseStatus?: number; error?: string },
): Promise<void> {
  await db
    .update(webhookDeliveries)
    .set({
      attempts: sql`${webhookDeliveries.attempts} + 1`,
      responseStatus: outcome.responseStatus ?? null,
      lastError: outcome.error?.slice(0, 2000) ?? null,
      ...(outcome.delivered ? { status: "delivered" as const, deliveredAt: new Date() } : {}),
    })
    .where(eq(webhookDeliveries.id, id));
}

/** After the last retry: the delivery is given up (a delivered one stays delivered). */
export async function markDeliveryFailed(db: Database, id: string, reason: string): Promise<void> {
  await db
    .update(webhookDeliveries)
    .set({ status: "failed", lastError: reason.slice(0, 2000) })
    .where(and(eq(webhookDeliveries.id, id), eq(webhookDeliveries.status, "pending")));
}

/** A sync run with its connection: the subject of a `connection.sync` event. */
export async function syncRunWithConnection(db: Database, runId: string) {
  const [row] = await db
    .select({ run: syncRuns, connection: connections })
    .from(syncRuns)
    .innerJoin(connections, eq(connections.id, syncRuns.connectionId))
    .where(eq(syncRuns.id, runId));
  return row;
}

/** What a `document.done` / `document.failed` event tells about its document. */
export async function documentForEvent(db: Database, documentId: string) {
  const [doc] = await db
    .select({
      id: documents.id,
      customId: documents.customId,
      title: documents.title,
      type: documents.type,
      status: documents.status,
      containerTags: documents.containerTags,
      metadata: documents.metadata,
      errorReason: documents.errorReason,
      processingRun: documents.processingRun,
      connectionId: documents.connectionId,
      updatedAt: documents.updatedAt,
    })
    .from(documents)
    .where(eq(documents.id, documentId));
  return doc;
}
