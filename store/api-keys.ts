import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { and, eq, isNull } from "drizzle-orm";
import type { Database } from "./db.ts";
import { newId } from "./ids.ts";
import { type ApiKeyKind, type ApiKeyRow, apiKeys } from "./schema/index.ts";

export type { ApiKeyRow };

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
    })
    .returning();
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

export async function hasAdminKey(db: Database): Promise<boolean> {
  const rows = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.kind, "admin"), isNull(apiKeys.disabledAt)))
    .limit(1);
  return rows.length > 0;
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
  return rows.length > 0;
}
