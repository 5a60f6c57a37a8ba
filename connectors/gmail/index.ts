/**
 * `gmail`: a Gmail (or Google Workspace) mailbox over IMAP, authenticated with an OAuth 2.0 access token
 * (SASL OAUTHBEARER when offered, else XOAUTH2: imapflow picks). Listing, items and attachments are those
 * of the `imap` connector (connectors/imap/sync.ts), with Gmail's labels: a message archived out of a
 * synced label stays (it is still in All Mail); one deleted (Trash) or reported as spam goes.
 *
 * Config keys (the create call's metadata):
 * - `email` (required): the account's address, the IMAP user name.
 * - `mailboxes`: `"INBOX"` (default), a comma-separated list of Gmail labels as IMAP lists them
 *   (`"INBOX, [Gmail]/Sent Mail"`), or `"*"` for every message once ("[Gmail]/All Mail": Gmail's label
 *   folders hold copies of the same messages, and All Mail leaves out Trash and Spam).
 * - `since`, `maxMessageBytes`, `pageSize`, `tlsRejectUnauthorized`: as for `imap`.
 * - `host`, `port`, `secure`: imap.gmail.com, 993, true; overridable for tests and IMAP proxies.
 *
 * Secret keys: `accessToken` (required); `refreshToken`, `clientId`, `clientSecret` are stored for
 * refreshing the access token (not done yet: an expired token stops the connection as auth_expired).
 *
 * Items link to the message in Gmail's web UI (a search by Message-ID).
 */

import { z } from "zod";
import { ConnectorAuthError } from "../errors.ts";
import {
  booleanSetting,
  closeMailConnections,
  fetchMail,
  initialMailCursor,
  listMailPage,
  type MailAccount,
  type MailCursor,
  type MailFetchOptions,
  type MailSelection,
  mailCursorSchema,
  mailExists,
  mailSelectionShape,
  portSetting,
  verifyMail,
} from "../imap/sync.ts";
import type { Connector, SyncContext } from "../types.ts";

export const GMAIL_IMAP_HOST = "imap.gmail.com";
export const GMAIL_IMAP_PORT = 993;

export const gmailConfigSchema = z.object({
  email: z.string().trim().min(3).includes("@"),
  host: z.string().trim().min(1).default(GMAIL_IMAP_HOST),
  port: portSetting.default(GMAIL_IMAP_PORT),
  secure: booleanSetting.default(true),
  ...mailSelectionShape,
});

export type GmailConfig = z.output<typeof gmailConfigSchema>;

/** A token given at creation; without one, the connection goes through Google's OAuth consent instead. */
export const gmailSecretsSchema = z.looseObject({
  accessToken: z.string().min(1).optional(),
  refreshToken: z.string().min(1).optional(),
  clientId: z.string().min(1).optional(),
  clientSecret: z.string().min(1).optional(),
});

export type GmailSecrets = z.output<typeof gmailSecretsSchema>;

type Ctx = SyncContext<GmailConfig, GmailSecrets>;

async function account(ctx: Ctx): Promise<MailAccount> {
  const { config, secrets } = ctx;
  // Through the consent flow the engine holds the token and refreshes it before it expires.
  const accessToken = secrets.accessToken ?? (await ctx.oauth?.accessToken());
  if (!accessToken) throw new ConnectorAuthError("the Gmail connection has no access token");
  return {
    host: config.host,
    port: config.port,
    secure: config.secure,
    tlsRejectUnauthorized: config.tlsRejectUnauthorized,
    user: config.email,
    auth: { kind: "oauth2", accessToken },
  };
}

/**
 * Gmail refuses an expired or revoked token at login: through the consent flow the engine refreshes it
 * once and the login is tried again; a refused refresh stays a ConnectorAuthError.
 */
async function withFreshToken<T>(ctx: Ctx, work: (acc: MailAccount) => Promise<T>): Promise<T> {
  try {
    return await work(await account(ctx));
  } catch (error) {
    if (!(error instanceof ConnectorAuthError) || ctx.secrets.accessToken || !ctx.oauth) throw error;
    await ctx.oauth.refresh();
    return work(await account(ctx));
  }
}

function selection(config: GmailConfig): MailSelection {
  return {
    mailboxes: config.mailboxes,
    maxMessageBytes: config.maxMessageBytes,
    pageSize: config.pageSize,
    // "*" is All Mail itself: a message that leaves it went to Trash or Spam.
    labels: config.mailboxes.trim() !== "*",
    ...(config.since ? { since: config.since } : {}),
  };
}

/** Gmail's web UI finds a message by its Message-ID; `u/<email>` picks the account when several are signed in. */
export function gmailMessageUrl(email: string, messageId: string | undefined): string | undefined {
  if (!messageId) return undefined;
  const bare = messageId.replace(/^<|>$/g, "");
  return `https://mail.google.com/mail/u/${encodeURIComponent(email)}/#search/rfc822msgid%3A${encodeURIComponent(bare)}`;
}

function fetchOptions(config: GmailConfig): MailFetchOptions {
  return { link: ({ messageId }) => gmailMessageUrl(config.email, messageId) };
}

export const gmail: Connector<GmailConfig, GmailSecrets, MailCursor> = {
  provider: "gmail",
  displayName: "Gmail",
  configSchema: gmailConfigSchema,
  secretKeys: ["accessToken", "refreshToken", "clientId", "clientSecret"],
  secretsSchema: gmailSecretsSchema,
  listing: "full",
  cursorSchema: mailCursorSchema,
  shutdown: closeMailConnections,
  initialCursor: () => initialMailCursor(),
  listPage: (ctx, cursor) =>
    withFreshToken(ctx, (acc) => listMailPage(ctx, acc, selection(ctx.config), cursor)),
  fetchItem: (ctx, item) =>
    withFreshToken(ctx, (acc) => fetchMail(ctx, acc, selection(ctx.config), item, fetchOptions(ctx.config))),
  exists: (ctx, item) => withFreshToken(ctx, (acc) => mailExists(ctx, acc, selection(ctx.config), item)),
  verify: (ctx) => withFreshToken(ctx, (acc) => verifyMail(ctx, acc, selection(ctx.config))),
  // Used only when no accessToken is given at creation; the caller's own Google app is the Drive one.
  oauth: {
    authorizeUrl: "https://accounts.google.com/o/oauth2/v2/auth",
    tokenUrl: "https://oauth2.googleapis.com/token",
    scopes: ["https://mail.google.com/"],
    pkce: true,
    tokenAuth: "body",
    authorizeParams: { access_type: "offline", prompt: "consent" },
    settingsPrefix: "googleDrive",
    envPrefix: "GOOGLE",
  },
};
