import nodemailer, { type Transporter } from "nodemailer";
import type { Config } from "../config/env.ts";

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  messageId: string;
  headers?: Record<string, string>;
}

export interface Mailer {
  from: string;
  send(message: MailMessage): Promise<void>;
}

type SmtpConfig = Pick<
  Config,
  "SMTP_URL" | "SMTP_HOST" | "SMTP_PORT" | "SMTP_USER" | "SMTP_PASSWORD" | "SMTP_SECURE" | "SMTP_FROM"
>;

/** SMTP from the environment (SMTP_URL, or SMTP_HOST and friends); undefined when neither is set. */
export function createMailer(config: SmtpConfig): Mailer | undefined {
  const timeouts = { connectionTimeout: 30_000, greetingTimeout: 30_000, socketTimeout: 60_000 };
  let transport: Transporter;
  if (config.SMTP_URL) {
    transport = nodemailer.createTransport({ url: config.SMTP_URL, ...timeouts });
  } else if (config.SMTP_HOST) {
    transport = nodemailer.createTransport({
      host: config.SMTP_HOST,
      port: config.SMTP_PORT ?? (config.SMTP_SECURE ? 465 : 587),
      secure: config.SMTP_SECURE,
      ...(config.SMTP_USER ? { auth: { user: config.SMTP_USER, pass: config.SMTP_PASSWORD ?? "" } } : {}),
      ...timeouts,
    });
  } else {
    return undefined;
  }
  return {
    from: config.SMTP_FROM,
    async send(message) {
      await transport.sendMail({
        from: config.SMTP_FROM,
        to: message.to,
        subject: message.subject,
        text: message.text,
        messageId: message.messageId,
        headers: message.headers,
      });
    },
  };
}

/** A 5xx reply: the server refused this message for good (unknown recipient, policy); retrying will not help. */
export function isPermanentSmtpError(error: unknown): boolean {
  const code = (error as { responseCode?: unknown })?.responseCode;
  return typeof code === "number" && code >= 500 && code < 600;
}
