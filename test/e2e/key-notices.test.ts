import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { Client, Connection } from "@temporalio/client";
import { simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parseDuration, parseLeadTimes } from "../../config/durations.ts";
import { createLogger } from "../../config/logger.ts";
import { dueLeadTimes, sendDueKeyNotices } from "../../services/key-notices.ts";
import { createMailer } from "../../services/mailer.ts";
import { createKey } from "../../store/api-keys.ts";
import { openPostgres, type Store } from "../../store/db.ts";
import { listNotices, recordedLeadTimes } from "../../store/key-notices.ts";
import { keyNoticeScheduleId } from "../../temporal/key-notice-schedule.ts";
import { caller } from "../support/http.ts";
import { freshDatabase, startTestService, type TestService, waitFor } from "../support/service.ts";

interface Received {
  envelopeTo: string[];
  to: string;
  subject: string;
  messageId: string;
  notice: string;
  text: string;
}

/** A real SMTP server on 127.0.0.1 that keeps every message it accepts, parsed. */
async function startSmtpServer(opts: { refuse?: string } = {}) {
  const messages: Received[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (address.address !== opts.refuse) return callback();
      callback(Object.assign(new Error("no such mailbox"), { responseCode: 550 }));
    },
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((mail) => {
          const to = Array.isArray(mail.to) ? mail.to[0] : mail.to;
          messages.push({
            envelopeTo: session.envelope.rcptTo.map((r) => r.address),
            to: to?.value[0]?.address ?? "",
            subject: mail.subject ?? "",
            messageId: mail.messageId ?? "",
            notice: String(mail.headers.get("x-key-expiry-notice") ?? ""),
            text: mail.text ?? "",
          });
          callback();
        })
        .catch(callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    messages,
    url: `smtp://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("key-expiry lead times", () => {
  it("parses lead times and picks the due ones", () => {
    expect(parseLeadTimes("1d,14d,7d,12h,7d")?.map((d) => d.label)).toEqual(["14d", "7d", "1d", "12h"]);
    expect(parseLeadTimes("off")).toEqual([]);
    expect(parseLeadTimes("7 days")).toBeUndefined();
    expect(parseLeadTimes("0d")).toBeUndefined();
    expect(parseDuration("90s")?.ms).toBe(90_000);
    const leads = parseLeadTimes("7d,1d") ?? [];
    const now = new Date("2030-01-01T00:00:00Z");
    const inDays = (d: number) => new Date(now.getTime() + d * 86_400_000);
    expect(dueLeadTimes(leads, inDays(8), now, []).map((l) => l.label)).toEqual([]);
    expect(dueLeadTimes(leads, inDays(7), now, []).map((l) => l.label)).toEqual(["7d"]);
    expect(dueLeadTimes(leads, inDays(0.5), now, []).map((l) => l.label)).toEqual(["7d", "1d"]);
    expect(dueLeadTimes(leads, inDays(0.5), now, ["7d"]).map((l) => l.label)).toEqual(["1d"]);
    expect(dueLeadTimes(leads, inDays(-0.1), now, []).map((l) => l.label)).toEqual([]);
  });
});

// One pass of the notice sender against PostgreSQL and a real SMTP server: concurrent passes (as from
// two workers) send each notice once; a server that is down gives the claims back; a refused recipient
// is recorded as logged.
describe("key-expiry notice passes", () => {
  let store: Store;
  const log = createLogger("silent");
  const config = {
    KEY_EXPIRY_NOTICE_LEAD_TIMES: parseLeadTimes("7d,1d") ?? [],
    SMTP_FROM: "keys@memory.test",
  };
  beforeAll(async () => {
    store = await openPostgres(await freshDatabase());
  });
  afterAll(async () => {
    await store?.close();
  });

  it("claims before sending: four concurrent passes send each due notice once", async () => {
    const smtp = await startSmtpServer();
    try {
      const mailer = createMailer({ ...config, SMTP_URL: smtp.url, SMTP_SECURE: false });
      const expiresAt = new Date(Date.now() + 3 * 86_400_000);
      const { key } = await createKey(store.db, {
        name: "raced",
        kind: "scoped",
        containerTags: ["r"],
        contactEmail: "race@example.com",
        expiresAt,
      });
      const runs = await Promise.all(
        [1, 2, 3, 4].map(() => sendDueKeyNotices({ db: store.db, config, log, mailer })),
      );
      expect(runs.reduce((n, r) => n + r.mailed, 0)).toBe(1);
      expect(smtp.messages.map((m) => m.notice)).toEqual([
        `${key.id}; lead-time=7d; expires=${expiresAt.toISOString()}`,
      ]);
      expect(smtp.messages[0]?.subject).toBe('Your API key "raced" expires in 3 days');
      // A later pass finds nothing new to send.
      expect(await sendDueKeyNotices({ db: store.db, config, log, mailer })).toEqual({
        mailed: 0,
        logged: 0,
        failed: [],
      });
      expect(smtp.messages).toHaveLength(1);
    } finally {
      await smtp.close();
    }
  });

  it("gives the claim back when the server is down, and logs a recipient refused for good", async () => {
    const down = await startSmtpServer();
    await down.close();
    const expiresAt = new Date(Date.now() + 12 * 3_600_000);
    const { key } = await createKey(store.db, {
      name: "unlucky",
      kind: "admin",
      contactEmail: "nobody@example.com",
      expiresAt,
    });
    const failing = createMailer({ ...config, SMTP_URL: down.url, SMTP_SECURE: false });
    const failed = await sendDueKeyNotices({ db: store.db, config, log, mailer: failing });
    expect(failed.failed).toEqual([{ keyId: key.id, leadTime: "1d", error: expect.any(String) }]);
    expect(await recordedLeadTimes(store.db, key.id, expiresAt)).toEqual([]);

    const refusing = await startSmtpServer({ refuse: "nobody@example.com" });
    try {
      const mailer = createMailer({ ...config, SMTP_URL: refusing.url, SMTP_SECURE: false });
      const run = await sendDueKeyNotices({ db: store.db, config, log, mailer });
      expect(run).toMatchObject({ mailed: 0, logged: 1, failed: [] });
      expect(refusing.messages).toEqual([]);
      const recorded = (await listNotices(store.db)).filter((n) => n.keyId === key.id);
      expect(recorded.map((n) => [n.leadTime, n.channel, n.recipient])).toEqual([
        ["1d", "log", "nobody@example.com"],
        ["7d", "log", "nobody@example.com"],
      ]);
    } finally {
      await refusing.close();
    }
  });
});

// A real SMTP server, the real Temporal schedule and worker, PostgreSQL: one notice per lead time,
// also when the worker restarts between them.
describe("key-expiry notices by mail", () => {
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let api: TestService;
  let worker: TestService | undefined;
  let temporal: Connection;
  let env: Record<string, string>;
  const call = caller(() => api.url);

  beforeAll(async () => {
    smtp = await startSmtpServer();
    env = {
      DATABASE_URL: await freshDatabase(),
      TEMPORAL_TASK_QUEUE: `notices-${randomBytes(4).toString("hex")}`,
      SMTP_URL: smtp.url,
      SMTP_FROM: "Memory keys <keys@memory.test>",
      KEY_EXPIRY_NOTICE_LEAD_TIMES: "80s,40s",
      KEY_EXPIRY_NOTICE_INTERVAL: "2s",
    };
    api = await startTestService({ roles: ["api"], env });
    worker = await startTestService({ roles: ["worker"], env });
    temporal = await Connection.connect({ address: inject("TEST_TEMPORAL_ADDRESS") });
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
    if (env?.TEMPORAL_TASK_QUEUE) {
      await new Client({ connection: temporal }).schedule
        .getHandle(keyNoticeScheduleId(env.TEMPORAL_TASK_QUEUE))
        .delete()
        .catch(() => undefined);
    }
    await temporal?.close();
    await smtp?.close();
  });

  it("mails exactly one notice per lead time to the key's contact, across a worker restart", async () => {
    const schedule = new Client({ connection: temporal }).schedule.getHandle(
      keyNoticeScheduleId(env.TEMPORAL_TASK_QUEUE as string),
    );
    const runs = async () => (await schedule.describe()).info.numActionsTaken;

    const create = async (body: Record<string, unknown>, expiresInMs: number) => {
      const res = await call("POST", "/v3/auth/keys", { expiresInDays: 1, ...body });
      expect(res.status, res.text).toBe(200);
      const expiresAt = new Date(Date.now() + expiresInMs).toISOString();
      const moved = await call("PATCH", `/v3/auth/keys/${res.json.id}`, { expiresAt });
      expect(moved.status, moved.text).toBe(200);
      return { id: res.json.id as string, keyPrefix: res.json.keyPrefix as string, expiresAt };
    };
    const key = await create(
      { name: "deploy bot", containerTags: ["notices"], contactEmail: "owner@example.com" },
      90_000,
    );
    const silent = await create({ name: "no contact", containerTags: ["notices"] }, 90_000);
    const later = await create(
      { name: "far away", containerTags: ["notices"], contactEmail: "later@example.com" },
      3_600_000,
    );

    const mailsFor = (id: string) => smtp.messages.filter((m) => m.notice.startsWith(`${id};`));
    await waitFor(async () => (mailsFor(key.id).length >= 1 ? true : undefined), "the 80s notice", 90_000);
    const [first] = mailsFor(key.id);
    expect(first).toMatchObject({
      envelopeTo: ["owner@example.com"],
      to: "owner@example.com",
      subject: expect.stringMatching(/^Your API key "deploy bot" expires in \d+ seconds$/),
      messageId: `<key-expiry.${key.id}.80s.${Date.parse(key.expiresAt)}@memory.test>`,
      notice: `${key.id}; lead-time=80s; expires=${key.expiresAt}`,
    });
    expect(first?.text).toContain(key.expiresAt);
    expect(first?.text).toContain(key.keyPrefix);

    // A worker restart before the next lead time: the new worker must not send the first notice again.
    await worker?.stop();
    worker = undefined;
    // The barrier: the old worker stopped before the second lead time's notice went out, so that notice
    // is the new worker's to send (and the first is the new worker's not to repeat).
    expect(mailsFor(key.id)).toHaveLength(1);
    worker = await startTestService({ roles: ["worker"], env });

    await waitFor(async () => (mailsFor(key.id).length >= 2 ? true : undefined), "the 40s notice", 90_000);
    // Let the schedule run at least twice more after that (it skips a run while one is open, so the
    // second start means the first finished), until the key has expired.
    const seen = await runs();
    await waitFor(
      async () => ((await runs()) >= seen + 2 && Date.now() > Date.parse(key.expiresAt) ? true : undefined),
      "more runs of the schedule",
      120_000,
    );

    const mails = mailsFor(key.id);
    expect(mails.map((m) => m.notice)).toEqual([
      `${key.id}; lead-time=80s; expires=${key.expiresAt}`,
      `${key.id}; lead-time=40s; expires=${key.expiresAt}`,
    ]);
    expect(mails[1]?.subject).toMatch(/^Your API key "deploy bot" expires in \d+ seconds$/);
    expect(mails[1]?.envelopeTo).toEqual(["owner@example.com"]);
    // Nobody to mail for the key without a contact; nothing yet for the one far from its expiry.
    expect(smtp.messages).toHaveLength(2);

    const notices = await call("GET", "/v3/auth/key-notices");
    expect(notices.status).toBe(200);
    const of = (id: string) =>
      // biome-ignore lint/suspicious/noExplicitAny: response inspected loosely
      (notices.json.notices as any[]).filter((n) => n.keyId === id);
    expect(of(key.id)).toEqual([
      {
        keyId: key.id,
        keyName: "deploy bot",
        leadTime: "40s",
        expiresAt: key.expiresAt,
        channel: "smtp",
        recipient: "owner@example.com",
        sentAt: expect.any(String),
      },
      expect.objectContaining({ leadTime: "80s", channel: "smtp", recipient: "owner@example.com" }),
    ]);
    expect(of(silent.id).map((n) => [n.leadTime, n.channel, n.recipient])).toEqual([
      ["40s", "log", null],
      ["80s", "log", null],
    ]);
    expect(of(later.id)).toEqual([]);

    const keys = (await call("GET", "/v3/auth/keys")).json.keys;
    // biome-ignore lint/suspicious/noExplicitAny: response inspected loosely
    const listed = keys.find((k: any) => k.id === key.id);
    expect(listed.status).toBe("expired");
    // biome-ignore lint/suspicious/noExplicitAny: response inspected loosely
    expect(listed.notices.map((n: any) => [n.leadTime, n.channel])).toEqual([
      ["40s", "smtp"],
      ["80s", "smtp"],
    ]);
  });
});

// Without SMTP settings: notices are logged and recorded with channel "log", for the console to show.
describe("key-expiry notices without SMTP", () => {
  let service: TestService;
  const call = caller(() => service.url);

  beforeAll(async () => {
    service = await startTestService({ env: { KEY_EXPIRY_NOTICE_INTERVAL: "2s" } });
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("records logged notices: one message for several due lead times, fresh ones for a moved expiry", async () => {
    const create = async (body: Record<string, unknown>) => {
      const res = await call("POST", "/v3/auth/keys", body);
      expect(res.status, res.text).toBe(200);
      return res.json as { id: string; expiresAt: string };
    };
    // Default lead times 7d,1d. Expiring in a day: both are due at once.
    const soon = await create({
      name: "soon",
      containerTags: ["t"],
      expiresInDays: 1,
      contactEmail: "a@example.com",
    });
    // In three days: only the 7-day notice; no contact email, still recorded.
    const mid = await create({ name: "mid", kind: "admin", expiresInDays: 3 });
    const far = await create({
      name: "far",
      containerTags: ["t"],
      expiresInDays: 30,
      contactEmail: "b@example.com",
    });

    const noticesOf = async (id: string) => {
      const res = await call("GET", "/v3/auth/key-notices");
      expect(res.status).toBe(200);
      // biome-ignore lint/suspicious/noExplicitAny: response inspected loosely
      return (res.json.notices as any[]).filter((n) => n.keyId === id);
    };
    const soonNotices = await waitFor(async () => {
      const n = await noticesOf(soon.id);
      return n.length >= 2 ? n : undefined;
    }, "the notices of the key expiring in a day");
    expect(soonNotices.map((n) => [n.leadTime, n.expiresAt, n.channel, n.recipient])).toEqual([
      ["1d", soon.expiresAt, "log", "a@example.com"],
      ["7d", soon.expiresAt, "log", "a@example.com"],
    ]);
    // Both lead times were handled by one notice, at one moment.
    expect(soonNotices[0].sentAt).toBe(soonNotices[1].sentAt);
    const midNotices = await waitFor(async () => {
      const n = await noticesOf(mid.id);
      return n.length ? n : undefined;
    }, "the 7-day notice of the admin key");
    expect(midNotices).toEqual([
      {
        keyId: mid.id,
        keyName: "mid",
        leadTime: "7d",
        expiresAt: mid.expiresAt,
        channel: "log",
        recipient: null,
        sentAt: expect.any(String),
      },
    ]);

    // Moving the expiry: the new date gets its own notices (only 7d is due two days ahead).
    const moved = new Date(Date.now() + 2 * 86_400_000).toISOString();
    expect((await call("PATCH", `/v3/auth/keys/${soon.id}`, { expiresAt: moved })).status).toBe(200);
    const fresh = await waitFor(async () => {
      const n = (await noticesOf(soon.id)).filter((x) => x.expiresAt === moved);
      return n.length ? n : undefined;
    }, "a notice for the moved expiry");
    expect(fresh.map((n) => [n.leadTime, n.channel])).toEqual([["7d", "log"]]);

    expect(await noticesOf(far.id)).toEqual([]);
    const listed = (await call("GET", "/v3/auth/keys")).json.keys;
    // biome-ignore lint/suspicious/noExplicitAny: response inspected loosely
    expect(listed.find((k: any) => k.id === soon.id).notices).toHaveLength(3);
  });
});
