import { eq, lt } from "drizzle-orm";
import type { Database } from "./db.ts";
import { type OAuthStateRow, oauthStates } from "./schema/index.ts";

export type { OAuthStateRow };

/** Saves the state of a consent just begun; expired states of abandoned consents are cleared meanwhile. */
export async function saveOAuthState(db: Database, state: OAuthStateRow): Promise<void> {
  await db.delete(oauthStates).where(lt(oauthStates.expiresAt, new Date()));
  await db.insert(oauthStates).values(state);
}

/** Takes a state out of the store (each is used once); undefined when unknown. */
export async function takeOAuthState(db: Database, state: string): Promise<OAuthStateRow | undefined> {
  const [row] = await db.delete(oauthStates).where(eq(oauthStates.state, state)).returning();
  return row;
}
