import { and, eq, gt, lte } from "drizzle-orm";
import type { Database } from "./db.ts";
import { consoleSessions } from "./schema/console-sessions.ts";

export type ConsoleSessionKind = "key" | "user";

/** Records a new session; sessions already past their end are dropped on the way (sign-ins are rare). */
export async function createConsoleSession(
  db: Database,
  session: { id: string; kind: ConsoleSessionKind; subject: string; expiresAt: Date },
): Promise<void> {
  await db.delete(consoleSessions).where(lte(consoleSessions.expiresAt, new Date()));
  await db.insert(consoleSessions).values(session);
}

/** Whether the session is recorded, not ended, not expired, and belongs to this subject. */
export async function consoleSessionIsLive(
  db: Database,
  id: string,
  kind: ConsoleSessionKind,
  subject: string,
  now = new Date(),
): Promise<boolean> {
  const rows = await db
    .select({ id: consoleSessions.id })
    .from(consoleSessions)
    .where(
      and(
        eq(consoleSessions.id, id),
        eq(consoleSessions.kind, kind),
        eq(consoleSessions.subject, subject),
        gt(consoleSessions.expiresAt, now),
      ),
    );
  return rows.length > 0;
}

/** Sign-out: the session ends for every copy of its cookie. */
export async function endConsoleSession(db: Database, id: string): Promise<void> {
  await db.delete(consoleSessions).where(eq(consoleSessions.id, id));
}

/** Every session of a console user or admin key, when it is disabled. */
export async function endConsoleSessionsOf(
  db: Database,
  kind: ConsoleSessionKind,
  subject: string,
): Promise<number> {
  const rows = await db
    .delete(consoleSessions)
    .where(and(eq(consoleSessions.kind, kind), eq(consoleSessions.subject, subject)))
    .returning({ id: consoleSessions.id });
  return rows.length;
}
