/**
 * `imap`: any IMAP mailbox, logged in with a password. Each message is an item; its attachments are
 * child items that the pipeline processes as files.
 *
 * Config keys (the create call's metadata):
 * - `host` (required): the IMAP server's host name.
 * - `port`: default 993 when `secure`, else 143.
 * - `secure`: `true` (default) for implicit TLS; `false` for plain IMAP, upgraded with STARTTLS when the
 *   server offers it.
 * - `user` (required): the login name.
 * - `mailboxes`: `"INBOX"` (default), a comma-separated list of mailbox paths as the server lists them
 *   (`"INBOX, Archive/2024"`), or `"*"` for every message once: the server's \All mailbox when it has
 *   one, else every selectable mailbox except Trash and Junk/Spam.
 * - `since`: ISO date; only messages received on or after that day.
 * - `maxMessageBytes`: messages above it are read only up to it, without attachments (default 40 MiB).
 * - `pageSize`: messages per listing page (default 100).
 * - `tlsRejectUnauthorized`: `false` accepts a certificate that does not verify (self-signed); default true.
 *
 * Secret keys: `password`.
 *
 * Item ids are `<mailbox>/<uidvalidity>/<uid>`; attachments `<message id>/attachments/<index>-<file name>`.
 */

import { z } from "zod";
import type { Connector, SyncContext } from "../types.ts";
import {
  booleanSetting,
  closeMailConnections,
  fetchMail,
  initialMailCursor,
  listMailPage,
  type MailAccount,
  type MailCursor,
  type MailSelection,
  mailCursorSchema,
  mailSelectionShape,
  portSetting,
  verifyMail,
} from "./sync.ts";

export const imapConfigSchema = z
  .object({
    host: z.string().trim().min(1),
    port: portSetting.optional(),
    secure: booleanSetting.default(true),
    user: z.string().trim().min(1),
    ...mailSelectionShape,
  })
  .transform((c) => ({ ...c, port: c.port ?? (c.secure ? 993 : 143) }));

export type ImapConfig = z.output<typeof imapConfigSchema>;

export const imapSecretsSchema = z.object({ password: z.string().min(1) });

export type ImapSecrets = z.output<typeof imapSecretsSchema>;

type Ctx = SyncContext<ImapConfig, ImapSecrets>;

function account(ctx: Ctx): MailAccount {
  const { config, secrets } = ctx;
  return {
    host: config.host,
    port: config.port,
    secure: config.secure,
    tlsRejectUnauthorized: config.tlsRejectUnauthorized,
    user: config.user,
    auth: { kind: "password", password: secrets.password },
  };
}

function selection(config: ImapConfig): MailSelection {
  return {
    mailboxes: config.mailboxes,
    maxMessageBytes: config.maxMessageBytes,
    pageSize: config.pageSize,
    ...(config.since ? { since: config.since } : {}),
  };
}

export const imap: Connector<ImapConfig, ImapSecrets, MailCursor> = {
  provider: "imap",
  displayName: "IMAP mailbox",
  configSchema: imapConfigSchema,
  secretKeys: ["password"],
  secretsSchema: imapSecretsSchema,
  listing: "full",
  cursorSchema: mailCursorSchema,
  shutdown: closeMailConnections,
  initialCursor: () => initialMailCursor(),
  listPage: (ctx, cursor) => listMailPage(ctx, account(ctx), selection(ctx.config), cursor),
  fetchItem: (ctx, item) => fetchMail(ctx, account(ctx), selection(ctx.config), item),
  verify: (ctx) => verifyMail(ctx, account(ctx), selection(ctx.config)),
};
