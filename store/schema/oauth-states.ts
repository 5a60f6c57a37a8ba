import { pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { connections } from "./connections.ts";

/**
 * An OAuth authorization in flight: the `state` sent to the provider's consent page, with the PKCE
 * verifier it must be exchanged with. Used once, at the callback; kept in the store (not in memory) so
 * any API process can take the callback.
 */
export const oauthStates = pgTable("oauth_states", {
  state: text("state").primaryKey(),
  connectionId: text("connection_id")
    .notNull()
    .references(() => connections.id, { onDelete: "cascade" }),
  codeVerifier: text("code_verifier"),
  redirectUri: text("redirect_uri").notNull(),
  expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
});

export type OAuthStateRow = typeof oauthStates.$inferSelect;
