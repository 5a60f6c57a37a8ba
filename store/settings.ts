import { eq, sql } from "drizzle-orm";
import type { Database } from "./db.ts";
import { settings } from "./schema/index.ts";
import type { SecretBox } from "./secrets.ts";

const ROW = "default";

export interface StoredSettings {
  values: Record<string, unknown>;
  /** Names of the secret fields that hold a value (the values themselves stay sealed). */
  secretsSet: string[];
}

export async function readSettings(db: Database): Promise<StoredSettings> {
  const [row] = await db.select().from(settings).where(eq(settings.id, ROW));
  return { values: row?.values ?? {}, secretsSet: Object.keys(row?.secrets ?? {}) };
}

/** A secret's clear value, for the code that will use it (connectors); never for API responses. */
export async function readSecret(db: Database, box: SecretBox, name: string): Promise<string | undefined> {
  const [row] = await db.select({ secrets: settings.secrets }).from(settings).where(eq(settings.id, ROW));
  const sealed = row?.secrets[name];
  return sealed ? box.decrypt(sealed) : undefined;
}

/**
 * Merges a patch in one statement: plain values are set (null clears), secrets are sealed before
 * they reach the database (null clears). Keys left out are unchanged.
 */
export async function updateSettings(
  db: Database,
  box: SecretBox,
  patch: { values: Record<string, unknown>; secrets: Record<string, string | null> },
): Promise<StoredSettings> {
  const sealed: Record<string, string> = {};
  const cleared: string[] = [];
  for (const [name, value] of Object.entries(patch.secrets)) {
    if (value === null) cleared.push(name);
    else sealed[name] = box.encrypt(value);
  }
  const clearedValues = Object.keys(patch.values).filter((k) => patch.values[k] === null);
  const setValues = Object.fromEntries(Object.entries(patch.values).filter(([, v]) => v !== null));
  const minus = (names: string[]) =>
    sql`ARRAY[${sql.join([sql`''`, ...names.map((n) => sql`${n}`)], sql`, `)}]::text[]`;
  const [row] = await db
    .insert(settings)
    .values({ id: ROW, values: setValues, secrets: sealed })
    .onConflictDoUpdate({
      target: settings.id,
      set: {
        values: sql`(${settings.values} - ${minus(clearedValues)}) || ${JSON.stringify(setValues)}::jsonb`,
        secrets: sql`(${settings.secrets} - ${minus(cleared)}) || ${JSON.stringify(sealed)}::jsonb`,
        updatedAt: new Date(),
      },
    })
    .returning();
  return { values: row?.values ?? {}, secretsSet: Object.keys(row?.secrets ?? {}) };
}

/** Removes every setting and sealed secret (an organisation reset); answers whether there were any. */
export async function clearSettings(db: Database): Promise<boolean> {
  const gone = await db.delete(settings).where(eq(settings.id, ROW)).returning({ id: settings.id });
  return gone.length > 0;
}
