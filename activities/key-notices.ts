import { ApplicationFailure, Context } from "@temporalio/activity";
import type { Config } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import { type KeyNoticeRun, sendDueKeyNotices } from "../services/key-notices.ts";
import { createMailer } from "../services/mailer.ts";
import type { Database } from "../store/db.ts";

export interface KeyNoticeActivityDeps {
  db: Database;
  config: Pick<
    Config,
    | "KEY_EXPIRY_NOTICE_LEAD_TIMES"
    | "SMTP_URL"
    | "SMTP_HOST"
    | "SMTP_PORT"
    | "SMTP_USER"
    | "SMTP_PASSWORD"
    | "SMTP_SECURE"
    | "SMTP_FROM"
  >;
  log: Logger;
}

/** Activities of the keyExpiryNotices workflow (started by the key-expiry schedule). */
export function createKeyNoticeActivities(deps: KeyNoticeActivityDeps) {
  const mailer = createMailer(deps.config);
  return {
    /**
     * Sends (or logs) every key-expiry notice due now. Notices already recorded are never sent again,
     * so a retried attempt only redoes the ones that failed; a failure that may pass (server down)
     * throws so Temporal retries, after the others went out.
     */
    async sendDueKeyNotices(): Promise<Omit<KeyNoticeRun, "failed"> & { failed: number }> {
      const run = await sendDueKeyNotices({
        db: deps.db,
        config: deps.config,
        log: deps.log,
        mailer,
        heartbeat: () => Context.current().heartbeat(),
      });
      if (run.failed.length) {
        throw ApplicationFailure.create({
          type: "KeyNoticeNotSent",
          message: `${run.failed.length} key-expiry notice(s) not sent: ${run.failed[0]?.error}`,
          details: [run.failed],
        });
      }
      return { mailed: run.mailed, logged: run.logged, failed: 0 };
    },
  };
}

export type KeyNoticeActivities = ReturnType<typeof createKeyNoticeActivities>;
