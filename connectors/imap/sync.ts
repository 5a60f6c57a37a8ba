// Listing and fetching mail over IMAP, shared by the `imap` (password) and `gmail` (XOAUTH2) connectors.
//
// Listing is "full" but cheap: per mailbox, UID SEARCH over windows of UIDs gives the messages; a
// message's content never changes under one UID, so `<uidvalidity>/<uid>` is its version and the
// engine fetches each message once. When a server resets UIDVALIDITY every id changes and the engine
// replaces them all, which is what such a reset means.
//
// Sessions (login, failures, the pool) are in ./pool.ts.

import type { FetchMessageObject, ImapFlow, ListResponse, MailboxLockObject } from "imapflow";
import { type AddressObject, type Attachment, type ParsedMail, simpleParser } from "mailparser";
import { z } from "zod";
import { htmlToText } from "../../pipeline/html.ts";
import { ConnectorConfigError } from "../errors.ts";
import type { FetchedItem, ItemMetadata, ListPage, SourceItem, SyncContext } from "../types.ts";
import { connect, isMissingMailbox, type MailAccount, mapImapError, withClient } from "./pool.ts";

export {
  closeMailConnections,
  type MailAccount,
  mapImapError,
  PrivateMailServerError,
} from "./pool.ts";

/** What to sync from the account. */
export interface MailSelection {
  /** "INBOX", a comma-separated list of mailbox paths, or "*". */
  mailboxes: string;
  /** ISO date: only messages received on or after it (IMAP SEARCH SINCE, day granularity). */
  since?: string;
  maxMessageBytes: number;
  pageSize: number;
  /**
   * Gmail: mailboxes other than \All are labels over All Mail, so a message gone from a label folder
   * (archived) may still be in the account. Versions then carry the Message-ID to find it there.
   */
  labels?: boolean;
}

/** Position in one full pass over the selected mailboxes. Plain JSON: the engine stores it between pages. */
export const mailCursorSchema = z.object({
  /** The mailboxes of this pass, resolved from the `mailboxes` setting by the first page; null before. */
  mailboxes: z.array(z.string()).nullable(),
  /** Index in `mailboxes` of the one being listed. */
  index: z.number().int().min(0),
  /** UIDVALIDITY of that mailbox when its listing started; null before its first page. */
  uidValidity: z.string().nullable(),
  /** Every UID up to this one has been listed (in that mailbox, under that UIDVALIDITY). */
  afterUid: z.number().int().min(0),
  /** Per mailbox listed so far in this pass: its UIDVALIDITY and the highest UID seen. */
  seen: z.record(z.string(), z.object({ uidValidity: z.string(), highestUid: z.number().int().min(0) })),
});
export type MailCursor = z.infer<typeof mailCursorSchema>;

export const DEFAULT_PAGE_SIZE = 100;
/** Gmail's own limit is 25 MB of attachments; base64 makes the message about a third larger. */
export const DEFAULT_MAX_MESSAGE_BYTES = 40 * 1024 * 1024;
/** UID SEARCH round trips per page at most, when UIDs are sparse (a mailbox after mass deletions). */
const MAX_SEARCHES_PER_PAGE = 16;

// Metadata values arrive as strings, numbers or booleans (a form, a query string, JSON): accept each
// where it can only mean one thing.
export const booleanSetting = z.union([
  z.boolean(),
  z.enum(["true", "false"]).transform((v) => v === "true"),
]);
export const portSetting = z.coerce.number().int().min(1).max(65535);

/** Settings both mail connectors share, spread into their config schemas. */
export const mailSelectionShape = {
  mailboxes: z
    .string()
    .trim()
    .min(1)
    .default("INBOX")
    .refine((v) => v === "*" || v.split(",").some((m) => m.trim() !== ""), "no mailbox named"),
  since: z
    .string()
    .trim()
    .refine((v) => !Number.isNaN(Date.parse(v)), "not an ISO date (YYYY-MM-DD or a full timestamp)")
    .optional(),
  maxMessageBytes: z.coerce.number().int().min(1024).default(DEFAULT_MAX_MESSAGE_BYTES),
  pageSize: z.coerce.number().int().min(1).max(1000).default(DEFAULT_PAGE_SIZE),
  /** Only for servers with self-signed certificates the operator trusts. */
  tlsRejectUnauthorized: booleanSetting.default(true),
};

export function initialMailCursor(): MailCursor {
  return { mailboxes: null, index: 0, uidValidity: null, afterUid: 0, seen: {} };
}

export function mailItemId(mailbox: string, uidValidity: string, uid: number): string {
  return `${mailbox}/${uidValidity}/${uid}`;
}

/** The mailbox may itself contain `/` (the usual hierarchy separator), so the numbers are taken from the end. */
export function parseMailItemId(id: string): { mailbox: string; uidValidity: string; uid: number } | null {
  const m = id.match(/^(.+)\/(\d+)\/(\d+)$/);
  if (!m?.[1] || !m[2] || !m[3]) return null;
  return { mailbox: m[1], uidValidity: m[2], uid: Number(m[3]) };
}

// ---------------------------------------------------------------------------------------------------
// Mailboxes

function hasFlag(mailbox: ListResponse, flag: string): boolean {
  for (const f of mailbox.flags) if (f.toLowerCase() === flag.toLowerCase()) return true;
  return false;
}

const SPAM_NAMES = /^(spam|junk|junk e-?mail|bulk mail|trash|deleted items|deleted messages|bin)$/i;

/**
 * "*" means every message once: a server's \All mailbox (Gmail's "[Gmail]/All Mail") holds every
 * message of the account, while its label folders hold copies that would be listed again under other
 * ids; without one, every selectable mailbox except Trash, Junk/Spam and virtual \Flagged views.
 */
export async function resolveMailboxes(client: ImapFlow, setting: string): Promise<string[]> {
  const listed = await client.list();
  const selectable = listed.filter((m) => !hasFlag(m, "\\Noselect") && !hasFlag(m, "\\NonExistent"));
  if (setting.trim() === "*") {
    const all = selectable.find((m) => m.specialUse === "\\All" && m.specialUseSource === "extension");
    if (all) return [all.path];
    return selectable
      .filter((m) => m.specialUse !== "\\Trash" && m.specialUse !== "\\Junk")
      .filter((m) => !(m.specialUse === "\\Flagged" && m.specialUseSource === "extension"))
      .filter((m) => !SPAM_NAMES.test(m.name))
      .map((m) => m.path);
  }
  const wanted = [
    ...new Set(
      setting
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  return wanted.map((name) => {
    const found = selectable.find(
      (m) => m.path === name || (name.toUpperCase() === "INBOX" && m.path.toUpperCase() === "INBOX"),
    );
    if (!found) {
      const known = selectable.map((m) => m.path).join(", ");
      throw new ConnectorConfigError(`mailbox "${name}" does not exist on the server (it has: ${known})`);
    }
    return found.path;
  });
}

// ---------------------------------------------------------------------------------------------------
// Listing

async function lockMailbox(client: ImapFlow, path: string): Promise<MailboxLockObject> {
  return client.getMailboxLock(path, { readOnly: true });
}

/** Runs `work` with the mailbox selected read-only and locked; `missing` when the mailbox does not exist. */
async function inMailbox<T>(
  client: ImapFlow,
  mailbox: string,
  missing: T,
  work: () => Promise<T>,
): Promise<T> {
  let lock: MailboxLockObject;
  try {
    lock = await lockMailbox(client, mailbox);
  } catch (err) {
    if (isMissingMailbox(err)) return missing;
    throw err;
  }
  try {
    return await work();
  } finally {
    lock.release();
  }
}

/**
 * Up to pageSize UIDs above `after`, searched window by window below UIDNEXT, so a page costs a few
 * small answers instead of the whole mailbox's UID list (which `UID SEARCH UID n:*` would send again
 * for every page of a large mailbox). Windows grow when UIDs are sparse.
 */
async function uidPage(
  client: ImapFlow,
  ctx: SyncContext<unknown, unknown>,
  after: number,
  uidNext: number,
  selection: MailSelection,
): Promise<{ uids: number[]; done: boolean; position: number }> {
  const since = selection.since ? new Date(selection.since) : undefined;
  const search = async (range: string) => {
    const found = await client.search({ uid: range, ...(since ? { since } : {}) }, { uid: true });
    if (!Array.isArray(found))
      throw new Error(`UID SEARCH ${range} failed in ${client.mailbox ? client.mailbox.path : "?"}`);
    return found;
  };
  const { pageSize } = selection;
  let lo = after + 1;
  const uids: number[] = [];
  if (!uidNext) {
    // No UIDNEXT from the server: one open-ended search. `n:*` always matches the highest UID, even below n.
    uids.push(...(await search(`${lo}:*`)).filter((u) => u >= lo));
    lo = Number.POSITIVE_INFINITY;
  } else {
    let span = pageSize;
    for (let round = 0; round < MAX_SEARCHES_PER_PAGE && lo < uidNext && uids.length < pageSize; round++) {
      const hi = Math.min(lo + span - 1, uidNext - 1);
      const found = await search(`${lo}:${hi}`);
      uids.push(...found.filter((u) => u >= lo && u <= hi));
      ctx.heartbeat();
      if (found.length < pageSize / 2) span = Math.min(span * 4, 4_000_000);
      lo = hi + 1;
    }
  }
  uids.sort((a, b) => a - b);
  if (uids.length > pageSize) {
    const page = uids.slice(0, pageSize);
    return { uids: page, done: false, position: page[page.length - 1] ?? after };
  }
  const done = uidNext ? lo >= uidNext : true;
  return { uids, done, position: Number.isFinite(lo) ? lo - 1 : (uids[uids.length - 1] ?? after) };
}

/** The Message-ID header of each UID (one small FETCH for the page): how a label's message is found in All Mail. */
async function messageIdsOf(client: ImapFlow, uids: number[]): Promise<Map<number, string>> {
  const found = new Map<number, string>();
  for (const msg of await client.fetchAll(
    uids.join(","),
    { uid: true, headers: ["message-id"] },
    { uid: true },
  )) {
    const value = msg.headers
      ?.toString("latin1")
      .replace(/\r?\n[ \t]+/g, " ")
      .match(/^message-id:[ \t]*(<[^<>\s]+>)/im)?.[1];
    if (value) found.set(msg.uid, value);
  }
  return found;
}

/** `<uidvalidity>/<uid>`, and on Gmail ` <Message-ID>` after it (a msg-id holds no spaces, RFC 5322 3.6.4). */
export function mailVersion(uidValidity: string, uid: number, messageId?: string): string {
  return messageId ? `${uidValidity}/${uid} ${messageId}` : `${uidValidity}/${uid}`;
}

function messageIdOfVersion(version: string): string | undefined {
  const at = version.indexOf(" <");
  return at < 0 ? undefined : version.slice(at + 1);
}

function nextMailbox(cursor: MailCursor): MailCursor | null {
  if (!cursor.mailboxes || cursor.index + 1 >= cursor.mailboxes.length) return null;
  return { ...cursor, index: cursor.index + 1, uidValidity: null, afterUid: 0 };
}

export async function listMailPage(
  ctx: SyncContext<unknown, unknown>,
  account: MailAccount,
  selection: MailSelection,
  cursor: MailCursor,
): Promise<ListPage<MailCursor>> {
  return withClient(ctx, account, async (client) => {
    const mailboxes = cursor.mailboxes ?? (await resolveMailboxes(client, selection.mailboxes));
    const state: MailCursor = { ...cursor, mailboxes, seen: { ...cursor.seen } };
    const path = mailboxes[state.index];
    if (path === undefined) return { items: [], next: null };

    // A pooled session that has this mailbox selected already would skip EXAMINE, and with it fresh
    // UIDNEXT/UIDVALIDITY values: new mail would stay invisible to this session.
    const alreadySelected = client.mailbox !== false && client.mailbox.path === path;
    let lock: MailboxLockObject;
    try {
      lock = await lockMailbox(client, path);
    } catch (err) {
      if (!isMissingMailbox(err)) throw err;
      if (selection.mailboxes.trim() !== "*") {
        throw new ConnectorConfigError(`mailbox "${path}" does not exist on ${account.host}`);
      }
      // Deleted while this pass ran: its messages are simply not listed, so the engine deletes them.
      ctx.log.info({ mailbox: path }, "mailbox disappeared during the sync, skipping it");
      return { items: [], next: nextMailbox(state) };
    }
    try {
      if (alreadySelected) await client.mailboxOpen(path, { readOnly: true });
      const box = client.mailbox;
      if (!box) throw new Error(`mailbox ${path} is not selected`);
      const uidValidity = box.uidValidity.toString();
      let after = state.afterUid;
      if (state.uidValidity !== null && state.uidValidity !== uidValidity) {
        // Ids listed earlier in this pass belong to the old UIDVALIDITY; the next pass deletes them.
        ctx.log.warn({ mailbox: path, was: state.uidValidity, now: uidValidity }, "UIDVALIDITY changed");
        after = 0;
      }
      const page = await uidPage(client, ctx, after, box.uidNext, selection);
      const messageIds =
        selection.labels && page.uids.length ? await messageIdsOf(client, page.uids) : new Map();
      const items: SourceItem[] = page.uids.map((uid) => ({
        id: mailItemId(path, uidValidity, uid),
        version: mailVersion(uidValidity, uid, messageIds.get(uid)),
      }));
      const previous = state.seen[path];
      const highestBefore = previous?.uidValidity === uidValidity ? previous.highestUid : 0;
      state.seen[path] = { uidValidity, highestUid: Math.max(highestBefore, ...page.uids) };
      if (page.done) return { items, next: nextMailbox(state) };
      return { items, next: { ...state, uidValidity, afterUid: page.position } };
    } finally {
      lock.release();
    }
  });
}

// ---------------------------------------------------------------------------------------------------
// Fetching

interface RawMessage {
  mailbox: string;
  source: Buffer;
  size: number;
  internalDate?: Date;
}

/** The message at this UID, if the mailbox still has it under this UIDVALIDITY (null: any). */
async function fetchAt(
  client: ImapFlow,
  selection: MailSelection,
  mailbox: string,
  uidValidity: string | null,
  uid: number,
): Promise<RawMessage | null> {
  return inMailbox(client, mailbox, null, async () => {
    const box = client.mailbox;
    // Another UIDVALIDITY: this UID may now name a different message, and the listing has new ids.
    if (!box || (uidValidity !== null && box.uidValidity.toString() !== uidValidity)) return null;
    const msg: FetchMessageObject | false = await client.fetchOne(
      String(uid),
      { uid: true, size: true, internalDate: true, source: { maxLength: selection.maxMessageBytes } },
      { uid: true },
    );
    if (msg === false || !msg.source) return null;
    const internalDate = msg.internalDate ? new Date(msg.internalDate) : undefined;
    return {
      mailbox,
      source: msg.source,
      size: msg.size ?? msg.source.length,
      ...(internalDate && !Number.isNaN(internalDate.getTime()) ? { internalDate } : {}),
    };
  });
}

/** Whether the mailbox still has this UID under this UIDVALIDITY, without reading the message. */
async function hasUid(client: ImapFlow, mailbox: string, uidValidity: string, uid: number): Promise<boolean> {
  return inMailbox(client, mailbox, false, async () => {
    const box = client.mailbox;
    if (!box || box.uidValidity.toString() !== uidValidity) return false;
    const found = await client.search({ uid: String(uid) }, { uid: true });
    return Array.isArray(found) && found.includes(uid);
  });
}

/** The \All mailbox by its SPECIAL-USE flag: Gmail localizes its name ("[Google Mail]/Alle Nachrichten"). */
async function allMailPath(client: ImapFlow): Promise<string | null> {
  const listed = await client.list();
  const all = listed.find((m) => m.specialUse === "\\All" && m.specialUseSource === "extension");
  return all && !hasFlag(all, "\\Noselect") ? all.path : null;
}

/** The UID of the message with this Message-ID in the mailbox, or null. */
async function uidByMessageId(client: ImapFlow, mailbox: string, messageId: string): Promise<number | null> {
  return inMailbox(client, mailbox, null, async () => {
    // Gmail's own search finds a Message-ID with `rfc822msgid:` through X-GM-RAW
    // (https://developers.google.com/gmail/imap/imap-extensions#extension_of_the_search_command_x-gm-raw,
    // https://support.google.com/mail/answer/7190); other servers with SEARCH HEADER (RFC 3501 6.4.4),
    // which matches substrings: the angle brackets keep it to this one id.
    const query = client.capabilities.has("X-GM-EXT-1")
      ? { gmraw: `rfc822msgid:${messageId.replace(/^<|>$/g, "")}` }
      : { header: { "message-id": messageId } };
    const found = await client.search(query, { uid: true });
    return Array.isArray(found) && found.length ? Math.min(...found) : null;
  });
}

/**
 * Gmail: where a message that left its label folder is now. A message lives once in All Mail (\All) and
 * label folders such as INBOX show it (https://developers.google.com/gmail/imap/imap-extensions,
 * https://support.google.com/mail/answer/7126229): archiving removes the label only, so the message stays
 * in All Mail; deleting moves it to Trash and reporting spam to Spam, both outside All Mail. Null when it
 * is gone, or still under the label with another UID (a UIDVALIDITY reset, or archived and moved back):
 * the listing gives it under that new id, and this one must not keep a second document.
 */
async function archivedLocation(
  client: ImapFlow,
  selection: MailSelection,
  mailbox: string,
  version: string,
): Promise<{ mailbox: string; uid: number } | null> {
  const messageId = selection.labels ? messageIdOfVersion(version) : undefined;
  if (!messageId) return null;
  const all = await allMailPath(client);
  if (!all || all === mailbox) return null;
  if ((await uidByMessageId(client, mailbox, messageId)) !== null) return null;
  const uid = await uidByMessageId(client, all, messageId);
  return uid === null ? null : { mailbox: all, uid };
}

async function downloadMessage(
  ctx: SyncContext<unknown, unknown>,
  account: MailAccount,
  selection: MailSelection,
  item: SourceItem,
): Promise<RawMessage | null> {
  const ref = parseMailItemId(item.id);
  if (!ref) return null;
  return withClient(ctx, account, async (client) => {
    const here = await fetchAt(client, selection, ref.mailbox, ref.uidValidity, ref.uid);
    if (here) return here;
    const moved = await archivedLocation(client, selection, ref.mailbox, item.version);
    return moved ? fetchAt(client, selection, moved.mailbox, null, moved.uid) : null;
  });
}

/**
 * Whether a message the listing missed is still in the account, without downloading it: the engine asks
 * this at every sync for each archived Gmail message, and downloads would spend the account's daily IMAP
 * bandwidth (https://support.google.com/a/answer/1071518).
 */
export async function mailExists(
  ctx: SyncContext<unknown, unknown>,
  account: MailAccount,
  selection: MailSelection,
  item: SourceItem,
): Promise<boolean> {
  const ref = parseMailItemId(item.id);
  if (!ref) return false;
  return withClient(ctx, account, async (client) => {
    if (await hasUid(client, ref.mailbox, ref.uidValidity, ref.uid)) return true;
    return (await archivedLocation(client, selection, ref.mailbox, item.version)) !== null;
  });
}

function addressList(value: AddressObject | AddressObject[] | undefined): string[] {
  if (!value) return [];
  const out: string[] = [];
  const add = (entry: { name?: string; address?: string; group?: unknown[] }) => {
    if (Array.isArray(entry.group)) {
      for (const member of entry.group) add(member as { name?: string; address?: string });
      return;
    }
    const name = entry.name?.trim();
    const address = entry.address?.trim();
    if (name && address) out.push(`${name} <${address}>`);
    else if (address || name) out.push((address || name) as string);
  };
  for (const obj of Array.isArray(value) ? value : [value]) for (const entry of obj.value) add(entry);
  return out;
}

function safeFileName(name: string): string {
  // The name becomes part of an id (path-like, `/`-separated) and a file name in the pipeline.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is replaced
  const cleaned = name.replace(/[/\\\u0000-\u001f\u007f]/g, "_").trim();
  return cleaned.slice(-120) || "attachment";
}

function bodyText(parsed: ParsedMail): string {
  const text = parsed.text?.trim();
  if (text) return text;
  if (typeof parsed.html === "string" && parsed.html.trim()) return htmlToText(parsed.html).text.trim();
  return "";
}

/** Attachments a person would call attachments: not the images an HTML body embeds (logos, signatures). */
function realAttachments(parsed: ParsedMail): Attachment[] {
  return parsed.attachments.filter((a) => !(a.related && a.contentDisposition !== "attachment"));
}

export interface MailFetchOptions {
  /** Where a person can open the message (Gmail's web UI); the imap connector has none. */
  link?: (message: { messageId?: string; mailbox: string }) => string | undefined;
}

export async function fetchMail(
  ctx: SyncContext<unknown, unknown>,
  account: MailAccount,
  selection: MailSelection,
  item: SourceItem,
  options: MailFetchOptions = {},
): Promise<FetchedItem | null> {
  const raw = await downloadMessage(ctx, account, selection, item);
  if (!raw) return null;
  ctx.heartbeat();
  const truncated = raw.size > raw.source.length;
  const parsed = await simpleParser(raw.source, {
    skipHtmlToText: true,
    skipTextToHtml: true,
    skipImageLinks: true,
    keepCidLinks: true,
    checksumAlgo: false,
  });
  ctx.heartbeat();

  const subject = parsed.subject?.trim() || "";
  const from = addressList(parsed.from);
  const to = addressList(parsed.to);
  const cc = addressList(parsed.cc);
  const date = parsed.date && !Number.isNaN(parsed.date.getTime()) ? parsed.date : raw.internalDate;
  const messageId = parsed.messageId?.trim();
  // A cut-off message may end inside an attachment: none of them can be trusted to be whole.
  const attachments = truncated ? [] : realAttachments(parsed);
  const names = attachments.map((a, i) => safeFileName(a.filename ?? `attachment-${i + 1}`));

  const header = [
    `Subject: ${subject || "(no subject)"}`,
    from.length ? `From: ${from.join(", ")}` : "",
    to.length ? `To: ${to.join(", ")}` : "",
    cc.length ? `Cc: ${cc.join(", ")}` : "",
    date ? `Date: ${date.toUTCString()}` : "",
    names.length ? `Attachments: ${names.join(", ")}` : "",
  ].filter(Boolean);
  const body = bodyText(parsed);
  const note = truncated
    ? `\n\n[Message truncated: ${raw.size} bytes, of which the first ${raw.source.length} were read.]`
    : "";

  const metadata: ItemMetadata = { mailbox: raw.mailbox };
  if (from[0]) metadata.from = from.join(", ");
  if (to.length) metadata.to = to;
  if (cc.length) metadata.cc = cc;
  if (date) metadata.date = date.toISOString();
  if (messageId) metadata.messageId = messageId;
  if (truncated) metadata.truncated = true;

  const url = options.link?.({ mailbox: raw.mailbox, ...(messageId ? { messageId } : {}) });
  const filepath = `/${raw.mailbox}/`;
  const children = attachments.map((a, i) => {
    const name = names[i] ?? `attachment-${i + 1}`;
    const childMeta: ItemMetadata = { mailbox: raw.mailbox, attachmentOf: subject || "(no subject)" };
    if (messageId) childMeta.messageId = messageId;
    if (metadata.from) childMeta.from = metadata.from;
    if (metadata.date) childMeta.date = metadata.date;
    return {
      id: `${item.id}/attachments/${i}-${name}`,
      title: name,
      file: { bytes: a.content, name, mimeType: a.contentType },
      filepath,
      metadata: childMeta,
      ...(url ? { url } : {}),
    };
  });

  // The subject as a heading first: text opening with header lines alone is taken by the pipeline for a
  // raw RFC 822 message (pipeline/extract/detect.ts) and parsed again as one, which drops the
  // Attachments line and makes the document an `email`.
  return {
    title: subject || "(no subject)",
    text: `# ${subject || "(no subject)"}\n\n${header.join("\n")}\n\n${body}${note}`.trim(),
    filepath,
    metadata,
    ...(url ? { url } : {}),
    ...(children.length ? { children } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------
// Verify

/** Logs in, checks that the selected mailboxes exist, logs out (a fresh session, not the pool's). */
export async function verifyMail(
  ctx: SyncContext<unknown, unknown>,
  account: MailAccount,
  selection: MailSelection,
): Promise<void> {
  const client = await connect(account, ctx.log, ctx.signal, ctx.network.allowPrivateNetwork);
  const onAbort = () => client.close();
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  try {
    await resolveMailboxes(client, selection.mailboxes);
  } catch (err) {
    throw mapImapError(err, account);
  } finally {
    ctx.signal.removeEventListener("abort", onAbort);
    await client.logout().catch(() => client.close());
  }
}
