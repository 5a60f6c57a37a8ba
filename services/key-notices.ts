import { type Duration, describeIn } from "../config/durations.ts";
import type { Config } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import { type ApiKeyRow, keysExpiringWithin } from "../store/api-keys.ts";
import type { Database } from "../store/db.ts";
import {
  claimNotices,
  type KeyNoticeChannel,
  markNoticesLogged,
  recordedLeadTimes,
  releaseNotices,
} from "../store/key-notices.ts";
import { isPermanentSmtpError, type Mailer, type MailMessage } from "./mailer.ts";

export interface KeyNoticeDeps {
  db: Database;
  config: Pick<Config, "KEY_EXPIRY_NOTICE_LEAD_TIMES" | "SMTP_FROM">;
  log: Logger;
  /** Undefined without SMTP settings: notices are then logged (and recorded with channel "log"). */
  mailer?: Mailer;
  /** Called before each key (a Temporal heartbeat, so a worker that died mid-run is noticed soon). */
  heartbeat?: () => void;
}

export interface KeyNoticeRun {
  /** Notices mailed, and notices logged (no SMTP, no contact email, or refused for good). */
  mailed: number;
  logged: number;
  /** Mails that failed for a reason that may pass: their claims were given back for a later run. */
  failed: { keyId: string; leadTime: string; error: string }[];
}

/** Lead times due for a key now: the key expires within them and none was handled for this expiry. */
export function dueLeadTimes(
  leadTimes: Duration[],
  expiresAt: Date,
  now: Date,
  recorded: readonly string[],
): Duration[] {
  const remaining = expiresAt.getTime() - now.getTime();
  if (remaining <= 0) return [];
  return leadTimes.filter((l) => remaining <= l.ms && !recorded.includes(l.label));
}

/** From SMTP_FROM (`Name <user@host>` or `user@host`), the domain for Message-IDs. */
function mailDomain(from: string): string {
  return /@([^\s>]+)>?\s*$/.exec(from)?.[1] ?? "localhost";
}

/**
 * Deterministic, so a notice sent twice (the crash window below) carries the same Message-ID both
 * times and mail clients show it once.
 */
export function noticeMessageId(key: ApiKeyRow, lead: Duration, expiresAt: Date, from: string): string {
  return `<key-expiry.${key.id}.${lead.label}.${expiresAt.getTime()}@${mailDomain(from)}>`;
}

export function composeNotice(
  key: ApiKeyRow,
  lead: Duration,
  expiresAt: Date,
  now: Date,
  from: string,
): MailMessage & { to: string } {
  const remaining = describeIn(expiresAt.getTime() - now.getTime(), lead.unit);
  const kind =
    key.kind === "admin" ? "admin key" : `scoped key (container tags: ${key.containerTags.join(", ")})`;
  return {
    to: key.contactEmail ?? "",
    subject: `Your API key "${key.name}" expires in ${remaining}`,
    messageId: noticeMessageId(key, lead, expiresAt, from),
    headers: {
      "X-Key-Expiry-Notice": `${key.id}; lead-time=${lead.label}; expires=${expiresAt.toISOString()}`,
    },
    text: [
      `Your API key "${key.name}" expires in ${remaining}.`,
      "",
      `  Key:      ${key.name} (id ${key.id})`,
      `  Prefix:   ${key.keyPrefix}…`,
      `  Kind:     ${kind}`,
      `  Expires:  ${expiresAt.toISOString()}`,
      "",
      "After that moment every request with this key is refused (401).",
      "What to do: create a new key in the console (or POST /v3/auth/keys) and switch your",
      "applications to it before the date above, or ask an administrator to move this key's",
      "expiry (PATCH /v3/auth/keys/{id} with a new expiresAt).",
      "",
      `This notice was sent ${lead.label} ahead of the expiry; you get one per configured lead time.`,
    ].join("\n"),
  };
}

/**
 * One pass of the key-expiry schedule. For each key still in use whose expiry is within the longest
 * lead time, the lead times now due and not yet handled are claimed in one statement (see
 * claimNotices), then one notice goes out, for the shortest of them: a key created or moved close to
 * its expiry gets one message, not one per lead time, and the longer lead times are recorded with it
 * so they never go later.
 *
 * The claim is written before the message is sent, so a notice is never sent twice, also across a
 * worker restart or with several workers. The window this leaves: a process killed after the claim and
 * before the SMTP server accepted the message loses that one notice (at most once; the next lead time
 * still comes). A send that fails with an error gives the claim back, so the next run retries it; if
 * the server had in fact accepted the message before the connection broke, that retry is a duplicate
 * with the same Message-ID.
 */
export async function sendDueKeyNotices(deps: KeyNoticeDeps, now = new Date()): Promise<KeyNoticeRun> {
  const leads = deps.config.KEY_EXPIRY_NOTICE_LEAD_TIMES;
  const run: KeyNoticeRun = { mailed: 0, logged: 0, failed: [] };
  const longest = leads[0];
  if (!longest) return run;
  const keys = await keysExpiringWithin(deps.db, now, new Date(now.getTime() + longest.ms));
  for (const key of keys) {
    deps.heartbeat?.();
    const expiresAt = key.expiresAt as Date;
    const due = dueLeadTimes(leads, expiresAt, now, await recordedLeadTimes(deps.db, key.id, expiresAt));
    if (!due.length) continue;
    const channel: KeyNoticeChannel = deps.mailer && key.contactEmail ? "smtp" : "log";
    const claimed = await claimNotices(deps.db, {
      keyId: key.id,
      expiresAt,
      leadTimes: due.map((l) => l.label),
      channel,
      recipient: key.contactEmail,
    });
    const lead = due.filter((l) => claimed.includes(l.label)).at(-1);
    if (!lead) continue; // another worker claimed them first
    const claim = { keyId: key.id, expiresAt, leadTimes: claimed };
    const notice = composeNotice(key, lead, expiresAt, now, deps.mailer?.from ?? deps.config.SMTP_FROM);
    const fields = {
      keyId: key.id,
      keyName: key.name,
      keyPrefix: key.keyPrefix,
      leadTime: lead.label,
      covers: claimed,
      expiresAt: expiresAt.toISOString(),
      recipient: key.contactEmail,
    };
    if (channel === "log" || !deps.mailer) {
      deps.log.warn(
        fields,
        `${notice.subject} (${deps.mailer ? "the key has no contact email" : "no SMTP configured"}: notice logged)`,
      );
      run.logged++;
      continue;
    }
    try {
      await deps.mailer.send(notice);
      deps.log.info(fields, "key-expiry notice mailed");
      run.mailed++;
    } catch (error) {
      if (isPermanentSmtpError(error)) {
        await markNoticesLogged(deps.db, claim);
        deps.log.error(
          { ...fields, err: error },
          `${notice.subject} (the mail server refused it: notice logged)`,
        );
        run.logged++;
      } else {
        await releaseNotices(deps.db, claim);
        deps.log.warn({ ...fields, err: error }, "key-expiry notice not sent; will try again");
        run.failed.push({ keyId: key.id, leadTime: lead.label, error: (error as Error).message });
      }
    }
  }
  return run;
}
