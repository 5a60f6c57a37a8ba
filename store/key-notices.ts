import { and, desc, eq, inArray } from "drizzle-orm";
import type { Database } from "./db.ts";
import { apiKeys, type KeyExpiryNoticeRow, type KeyNoticeChannel, keyExpiryNotices } from "./schema/index.ts";

export type { KeyExpiryNoticeRow, KeyNoticeChannel };

export interface NoticeClaim {
  keyId: string;
  expiresAt: Date;
  leadTimes: string[];
  channel: KeyNoticeChannel;
  recipient: string | null;
}

/**
 * Claims notices before anything is sent: one statement inserts a row per lead time and returns only
 * the rows this call created, so of two workers (or a run repeated after a restart) exactly one gets
 * each (key, lead time, expiry). The primary key does the deciding, in any database.
 */
export async function claimNotices(db: Database, claim: NoticeClaim): Promise<string[]> {
  if (!claim.leadTimes.length) return [];
  const rows = await db
    .insert(keyExpiryNotices)
    .values(
      claim.leadTimes.map((leadTime) => ({
        keyId: claim.keyId,
        leadTime,
        expiresAt: claim.expiresAt,
        channel: claim.channel,
        recipient: claim.recipient,
      })),
    )
    .onConflictDoNothing()
    .returning({ leadTime: keyExpiryNotices.leadTime });
  return rows.map((r) => r.leadTime);
}

/** Gives claims back after a send failed for a reason that may pass, so a later run tries again. */
export async function releaseNotices(db: Database, claim: Omit<NoticeClaim, "channel" | "recipient">) {
  if (!claim.leadTimes.length) return;
  await db
    .delete(keyExpiryNotices)
    .where(
      and(
        eq(keyExpiryNotices.keyId, claim.keyId),
        eq(keyExpiryNotices.expiresAt, claim.expiresAt),
        inArray(keyExpiryNotices.leadTime, claim.leadTimes),
      ),
    );
}

/** The message was refused for good: the notice stays recorded, as logged instead of mailed. */
export async function markNoticesLogged(db: Database, claim: Omit<NoticeClaim, "channel" | "recipient">) {
  if (!claim.leadTimes.length) return;
  await db
    .update(keyExpiryNotices)
    .set({ channel: "log" })
    .where(
      and(
        eq(keyExpiryNotices.keyId, claim.keyId),
        eq(keyExpiryNotices.expiresAt, claim.expiresAt),
        inArray(keyExpiryNotices.leadTime, claim.leadTimes),
      ),
    );
}

/** Lead times already handled for this key and expiry. */
export async function recordedLeadTimes(db: Database, keyId: string, expiresAt: Date): Promise<string[]> {
  const rows = await db
    .select({ leadTime: keyExpiryNotices.leadTime })
    .from(keyExpiryNotices)
    .where(and(eq(keyExpiryNotices.keyId, keyId), eq(keyExpiryNotices.expiresAt, expiresAt)));
  return rows.map((r) => r.leadTime);
}

/** Notices of some keys, newest first, by key id. */
export async function noticesOfKeys(
  db: Database,
  keyIds: string[],
): Promise<Map<string, KeyExpiryNoticeRow[]>> {
  const byKey = new Map<string, KeyExpiryNoticeRow[]>();
  if (!keyIds.length) return byKey;
  const rows = await db
    .select()
    .from(keyExpiryNotices)
    .where(inArray(keyExpiryNotices.keyId, keyIds))
    .orderBy(desc(keyExpiryNotices.sentAt), keyExpiryNotices.leadTime);
  for (const row of rows) byKey.set(row.keyId, [...(byKey.get(row.keyId) ?? []), row]);
  return byKey;
}

export type NoticeWithKey = KeyExpiryNoticeRow & { keyName: string };

/** The latest notices of every key, newest first. */
export async function listNotices(db: Database, limit = 500): Promise<NoticeWithKey[]> {
  const rows = await db
    .select({ notice: keyExpiryNotices, keyName: apiKeys.name })
    .from(keyExpiryNotices)
    .innerJoin(apiKeys, eq(apiKeys.id, keyExpiryNotices.keyId))
    .orderBy(desc(keyExpiryNotices.sentAt), keyExpiryNotices.leadTime)
    .limit(limit);
  return rows.map((r) => ({ ...r.notice, keyName: r.keyName }));
}
