import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { and, desc, eq, gt, isNull, lte, or } from "drizzle-orm";
import { endConsoleSessionsOf } from "./console-sessions.ts";
import type { Database } from "./db.ts";
import { newId } from "./ids.ts";
import { type ApiKeyKind, type ApiKeyRow, apiKeys } from "./schema/index.ts";

export type { ApiKeyRow };

/**
 * How many writes to api_keys this process has made (every write here bumps it once it is done): an in-process
 * cache of active keys (api/auth-throttle.ts) keeps a row only while this number is the one it read it under,
 * so a key disabled, changed or created here is never served stale.
 */
let keyWrites = 0;
export const keyWriteCount = (): number => keyWrites;
const written = <T>(result: T): T => {
  keyWrites++;
  return result;
};

export function hashKey(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

export function generateSecret(): string {
  return `sm_${randomBytes(32).toString("base64url")}`;
}

export interface NewKey {
  name: string;
  kind: ApiKeyKind;
  containerTags?: string[];
  allowedEndpoints?: string[] | null;
  rateLimitMax?: number | null;
  rateLimitWindowMs?: number | null;
  expiresAt?: Date | null;
  contactEmail?: string | null;
}

/** Stores only the hash; the secret is returned once, to be shown to its owner. */
export async function createKey(db: Database, input: NewKey, secret = generateSecret()) {
  const [row] = await db
    .insert(apiKeys)
    .values({
      id: newId(12),
      name: input.name,
      kind: input.kind,
      keyHash: hashKey(secret),
      keyPrefix: secret.slice(0, 8),
      containerTags: input.containerTags ?? [],
      allowedEndpoints: input.allowedEndpoints ?? null,
      rateLimitMax: input.rateLimitMax ?? null,
      rateLimitWindowMs: input.rateLimitWindowMs ?? null,
      expiresAt: input.expiresAt ?? null,
      contactEmail: input.contactEmail ?? null,
    })
    .returning();
  written(row);
  return { key: row as ApiKeyRow, secret };
}

/** The active key matching a presented secret, or undefined (unknown, disabled or expired). */
export async function findActiveKey(db: Database, secret: string): Promise<ApiKeyRow | undefined> {
  const hash = hashKey(secret);
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.keyHash, hash), isNull(apiKeys.disabledAt)));
  if (!row) return undefined;
  // The index lookup already matched; compare again in constant time as defence in depth.
  if (!timingSafeEqual(Buffer.from(row.keyHash), Buffer.from(hash))) return undefined;
  if (row.expiresAt && row.expiresAt.getTime() <= Date.now()) return undefined;
  return row;
}

/**
 * The hashes of every key not disabled (expired ones included), at most `limit` of them: undefined past it. What
 * lets a process that is the store's only writer refuse a secret naming no key without a statement.
 */
export async function activeKeyHashes(db: Database, limit: number): Promise<string[] | undefined> {
  const rows = await db
    .select({ hash: apiKeys.keyHash })
    .from(apiKeys)
    .where(isNull(apiKeys.disabledAt))
    .limit(limit + 1);
  return rows.length > limit ? undefined : rows.map((row) => row.hash);
}

/** Whether some admin key still works (not disabled, not expired): if none does, start-up makes a new one. */
export async function hasAdminKey(db: Database): Promise<boolean> {
  return (await countUsableAdminKeys(db)) > 0;
}

export async function countUsableAdminKeys(db: Database, now = new Date()): Promise<number> {
  const rows = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(
      and(
        eq(apiKeys.kind, "admin"),
        isNull(apiKeys.disabledAt),
        or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now)),
      ),
    );
  return rows.length;
}

export async function keyExistsForSecret(db: Database, secret: string): Promise<boolean> {
  const rows = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(eq(apiKeys.keyHash, hashKey(secret)));
  return rows.length > 0;
}

/** Disables a scoped key (its documents and tags stay); false when there is no such active scoped key. */
export async function disableScopedKey(db: Database, id: string): Promise<boolean> {
  const rows = await db
    .update(apiKeys)
    .set({ disabledAt: new Date() })
    .where(and(eq(apiKeys.id, id), eq(apiKeys.kind, "scoped"), isNull(apiKeys.disabledAt)))
    .returning({ id: apiKeys.id });
  return written(rows.length > 0);
}

/** Every key, newest first (rows carry the hash: callers must not show it). */
export function listKeys(db: Database): Promise<ApiKeyRow[]> {
  return db.select().from(apiKeys).orderBy(desc(apiKeys.createdAt), desc(apiKeys.id));
}

export async function findKey(db: Database, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, id));
  return row;
}

/** Disables any key at once; disabling twice keeps the first time. Undefined for an unknown id. */
export async function disableKey(db: Database, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await db
    .update(apiKeys)
    .set({ disabledAt: new Date() })
    .where(and(eq(apiKeys.id, id), isNull(apiKeys.disabledAt)))
    .returning();
  written(row);
  // Console sessions signed in with this key end with it (resolving one also re-checks the key).
  await endConsoleSessionsOf(db, "key", id);
  return row ?? (await findKey(db, id));
}

export interface KeyChanges {
  name?: string;
  contactEmail?: string | null;
  expiresAt?: Date | null;
}

export async function updateKey(
  db: Database,
  id: string,
  changes: KeyChanges,
): Promise<ApiKeyRow | undefined> {
  if (!Object.keys(changes).length) return findKey(db, id);
  const [row] = await db.update(apiKeys).set(changes).where(eq(apiKeys.id, id)).returning();
  return written(row);
}

/** Keys still in use whose expiry falls in (now, until]: the ones a key-expiry notice may be due for. */
export function keysExpiringWithin(db: Database, now: Date, until: Date): Promise<ApiKeyRow[]> {
  return db
    .select()
    .from(apiKeys)
    .where(and(isNull(apiKeys.disabledAt), gt(apiKeys.expiresAt, now), lte(apiKeys.expiresAt, until)))
    .orderBy(apiKeys.expiresAt);
}
