import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from "node:crypto";
import { and, asc, eq, isNull } from "drizzle-orm";
import { endConsoleSessionsOf } from "./console-sessions.ts";
import type { Database } from "./db.ts";
import { newId } from "./ids.ts";
import { type ConsoleUserRow, consoleUsers } from "./schema/console-users.ts";
import { settings } from "./schema/index.ts";
import type { SecretBox } from "./secrets.ts";

export type { ConsoleUserRow };

/** scrypt cost: N=2^15, r=8, p=1 needs 32 MiB per hash (memory-hard), ~100 ms on one core. */
const SCRYPT = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
/** Room for the largest parameters we accept from a stored hash (128 * N * r bytes, plus slack). */
const MAX_MEM = 256 * 1024 * 1024;

/** Refused at once: as many password hashes as allowed are running and as many again are waiting. */
export class PasswordHashBusy extends Error {
  constructor() {
    super("too many password checks at once; try again in a moment");
  }
}

/**
 * Each hash takes 32 MiB and a core for ~100 ms, and sign-in needs no key: unbounded, a burst of anonymous
 * sign-ins would take every core and that memory times the burst. Two run at once (the cores of the small
 * machine this runs on by default), sixteen wait, the rest are refused before hashing.
 */
const HASH_SLOTS = { running: 2, waiting: 16 } as const;
let hashesRunning = 0;
const hashesWaiting: (() => void)[] = [];

async function inHashSlot<T>(work: () => Promise<T>): Promise<T> {
  if (hashesRunning < HASH_SLOTS.running) hashesRunning++;
  else {
    if (hashesWaiting.length >= HASH_SLOTS.waiting) throw new PasswordHashBusy();
    // The slot is handed over by the hash that ends, so `hashesRunning` already counts this one.
    await new Promise<void>((resolve) => hashesWaiting.push(resolve));
  }
  try {
    return await work();
  } finally {
    const next = hashesWaiting.shift();
    if (next) next();
    else hashesRunning--;
  }
}

function scryptAsync(password: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  return inHashSlot(
    () =>
      new Promise((resolve, reject) =>
        scrypt(password, salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key))),
      ),
  );
}

/** `scrypt$N$r$p$salt$hash` (salt and hash base64). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password, salt, KEY_LENGTH, { ...SCRYPT, maxmem: MAX_MEM });
  return ["scrypt", SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString("base64"), hash.toString("base64")].join("$");
}

/** Constant-time comparison against a stored hash; false for anything malformed. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, saltText, hashText] = stored.split("$");
  if (scheme !== "scrypt" || !saltText || !hashText) return false;
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  if (![params.N, params.r, params.p].every((v) => Number.isInteger(v) && v > 0)) return false;
  const expected = Buffer.from(hashText, "base64");
  if (expected.length === 0) return false;
  try {
    const actual = await scryptAsync(password, Buffer.from(saltText, "base64"), expected.length, {
      ...params,
      maxmem: MAX_MEM,
    });
    return timingSafeEqual(actual, expected);
  } catch (error) {
    if (error instanceof PasswordHashBusy) throw error;
    return false;
  }
}

export const normaliseEmail = (email: string) => email.trim().toLowerCase();

export async function createConsoleUser(
  db: Database,
  input: { email: string; password: string },
): Promise<ConsoleUserRow> {
  const [row] = await db
    .insert(consoleUsers)
    .values({
      id: newId(12),
      email: normaliseEmail(input.email),
      passwordHash: await hashPassword(input.password),
    })
    .returning();
  return row as ConsoleUserRow;
}

export function listConsoleUsers(db: Database): Promise<ConsoleUserRow[]> {
  return db.select().from(consoleUsers).orderBy(asc(consoleUsers.createdAt), asc(consoleUsers.id));
}

export async function findConsoleUser(db: Database, id: string): Promise<ConsoleUserRow | undefined> {
  const [row] = await db.select().from(consoleUsers).where(eq(consoleUsers.id, id));
  return row;
}

export async function findConsoleUserByEmail(
  db: Database,
  email: string,
): Promise<ConsoleUserRow | undefined> {
  const [row] = await db
    .select()
    .from(consoleUsers)
    .where(eq(consoleUsers.email, normaliseEmail(email)));
  return row;
}

/** Disables a user at once (their sessions end with it); false if none active. */
export async function disableConsoleUser(db: Database, id: string): Promise<boolean> {
  const rows = await db
    .update(consoleUsers)
    .set({ disabledAt: new Date() })
    .where(and(eq(consoleUsers.id, id), isNull(consoleUsers.disabledAt)))
    .returning({ id: consoleUsers.id });
  await endConsoleSessionsOf(db, "user", id);
  return rows.length > 0;
}

const SESSION_ROW = "console-session";

/**
 * The key that signs console session cookies, shared by every API process: generated once and kept
 * (sealed) in the settings table, in a row of its own that the settings API never shows. The first
 * writer wins; everyone reads back the stored value.
 */
export async function consoleSessionSecret(db: Database, box: SecretBox): Promise<Buffer> {
  const read = async () => {
    const [row] = await db
      .select({ secrets: settings.secrets })
      .from(settings)
      .where(eq(settings.id, SESSION_ROW));
    const sealed = row?.secrets.sessionSecret;
    return sealed ? Buffer.from(box.decrypt(sealed), "base64") : undefined;
  };
  const existing = await read();
  if (existing) return existing;
  await db
    .insert(settings)
    .values({
      id: SESSION_ROW,
      values: {},
      secrets: { sessionSecret: box.encrypt(randomBytes(32).toString("base64")) },
    })
    .onConflictDoNothing();
  const stored = await read();
  if (!stored) throw new Error("could not store the console session secret");
  return stored;
}
