// The imap and gmail connectors against a real Dovecot (test/support/dovecot.ts) whose Maildir holds the
// well-formed messages of test/fixtures/email. Gmail's XOAUTH2 is checked against the same Dovecot with
// its oauth2 passdb, which asks this test's introspection endpoint whether a token is valid.

import { readFileSync, utimesSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ConnectorAuthError,
  ConnectorConfigError,
  ConnectorRateLimitError,
} from "../../connectors/errors.ts";
import { gmail } from "../../connectors/gmail/index.ts";
import { imap } from "../../connectors/imap/index.ts";
import { BANDWIDTH_WAIT_MS } from "../../connectors/imap/pool.ts";
import { closeMailConnections, type MailCursor, parseMailItemId } from "../../connectors/imap/sync.ts";
import type { Connector, FetchedItem, SourceItem, SyncContext } from "../../connectors/types.ts";
import { type Dovecot, startDovecot } from "../support/dovecot.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { type ImapProxy, startImapProxy } from "../support/imap-proxy.ts";

const FIXTURES = join(FIXTURES_DIR, "email");
/** The well-formed fixtures (README: fake-email-malformed-encoding.eml and empty.eml are bad on purpose). */
const FIXTURE_FILES = [
  "email-no-html-content-1.eml",
  "fake-email-attachment.eml",
  "fake-email.eml",
  "family-day.eml",
  "mime-different-plain-html.eml",
  "mime-html-only.eml",
  "mime-word-encoded-subject.eml",
];
const USER = "alice@example.com";
const GOOD_TOKEN = "ya29.good-access-token";

// biome-ignore lint/suspicious/noExplicitAny: both connectors go through the same helpers
type AnyConnector = Connector<any, any, MailCursor>;

let dovecot: Dovecot;
let introspection: Server;
const introspected: string[] = [];
let connectionSeq = 0;

function context(
  connector: AnyConnector,
  metadata: Record<string, string | number | boolean>,
  secrets: Record<string, string>,
  // biome-ignore lint/suspicious/noExplicitAny: config and secrets types differ per connector
): SyncContext<any, any> & { heartbeats: () => number } {
  let beats = 0;
  connectionSeq += 1;
  return {
    connectionId: `conn-${connectionSeq}`,
    config: connector.configSchema.parse(metadata),
    secrets: connector.secretsSchema.parse(secrets),
    network: { allowPrivateNetwork: true, timeoutMs: 10_000, maxBytes: 10_000_000 },
    signal: new AbortController().signal,
    heartbeat: () => {
      beats += 1;
    },
    log: pino({ level: "silent" }),
    heartbeats: () => beats,
  };
}

function imapContext(extra: Record<string, string | number | boolean> = {}, password = dovecot.password) {
  return context(
    imap,
    { host: dovecot.host, port: dovecot.port, secure: false, user: USER, ...extra },
    { password },
  );
}

function gmailContext(extra: Record<string, string | number | boolean> = {}, accessToken = GOOD_TOKEN) {
  return context(
    gmail,
    { email: USER, host: dovecot.host, port: dovecot.port, secure: "false", ...extra },
    {
      accessToken,
      refreshToken: "1//refresh",
      clientId: "client.apps.googleusercontent.com",
      clientSecret: "s",
    },
  );
}

// biome-ignore lint/suspicious/noExplicitAny: see AnyConnector
async function fullPass(connector: AnyConnector, ctx: SyncContext<any, any>) {
  let cursor: MailCursor | null = await connector.initialCursor(ctx);
  const pages: SourceItem[][] = [];
  while (cursor) {
    const page = await connector.listPage(ctx, cursor);
    pages.push(page.items);
    expect(page.deleted).toBeUndefined();
    cursor = page.next;
    expect(pages.length).toBeLessThan(100);
  }
  return { pages, items: pages.flat() };
}

// biome-ignore lint/suspicious/noExplicitAny: see AnyConnector
async function fetchAll(connector: AnyConnector, ctx: SyncContext<any, any>, items: SourceItem[]) {
  const byTitle = new Map<string, FetchedItem & { id: string }>();
  for (const item of items) {
    const fetched = await connector.fetchItem(ctx, item);
    expect(fetched, item.id).not.toBeNull();
    if (fetched) byTitle.set(fetched.title ?? "", { ...fetched, id: item.id });
  }
  return byTitle;
}

const NEW_MESSAGE = [
  "MIME-Version: 1.0",
  "Date: Tue, 03 Mar 2026 09:15:00 +0000",
  "Message-ID: <quarterly-report-1@example.com>",
  "Subject: Quarterly numbers",
  'From: "Bob Builder" <bob@example.com>',
  "To: Alice <alice@example.com>, Carol <carol@example.com>",
  "Cc: Dave <dave@example.com>",
  'Content-Type: multipart/mixed; boundary="outer-boundary"',
  "",
  "--outer-boundary",
  'Content-Type: text/html; charset="UTF-8"',
  "",
  "<html><body><p>Revenue grew <b>twelve percent</b> in the third quarter.</p></body></html>",
  "--outer-boundary",
  'Content-Type: text/csv; name="q3.csv"',
  'Content-Disposition: attachment; filename="q3.csv"',
  "Content-Transfer-Encoding: base64",
  "",
  Buffer.from("quarter,revenue\nQ3,112\n").toString("base64"),
  "--outer-boundary--",
  "",
].join("\r\n");

beforeAll(async () => {
  introspection = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on("end", () => {
      const token = new URLSearchParams(body).get("token") ?? "";
      introspected.push(token);
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(token === GOOD_TOKEN ? { active: true, username: USER } : { active: false }));
    });
  });
  await new Promise<void>((resolve) => introspection.listen(0, "127.0.0.1", resolve));
  const { port } = introspection.address() as AddressInfo;
  dovecot = await startDovecot({
    user: USER,
    oauth2IntrospectionUrl: `http://127.0.0.1:${port}/introspect`,
    // Junk under a name no heuristic knows: only the server's SPECIAL-USE flag can tell.
    specialUse: { Trash: "\\Trash", Quarantine: "\\Junk" },
  });
  for (const file of FIXTURE_FILES) dovecot.deliver(readFileSync(join(FIXTURES, file)));
  dovecot.deliver(readFileSync(join(FIXTURES, "family-day.eml")), "Archive/2024");
  dovecot.deliver(readFileSync(join(FIXTURES, "fake-email.eml")), "Trash");
  dovecot.deliver(readFileSync(join(FIXTURES, "fake-email.eml")), "Quarantine");
});

// Each test's contexts have their own connection ids, so their pooled sessions would pile up past
// Dovecot's 10 sessions per user and address.
afterEach(async () => {
  await closeMailConnections();
});

afterAll(async () => {
  await closeMailConnections();
  await dovecot?.stop();
  await new Promise((resolve) => introspection?.close(resolve));
});

describe("config", () => {
  it("parses metadata values given as strings, with defaults", () => {
    const c = imap.configSchema.parse({ host: "mail.example.com", user: "u", secure: "false", port: "1143" });
    expect(c).toMatchObject({ port: 1143, secure: false, mailboxes: "INBOX", pageSize: 100 });
    expect(imap.configSchema.parse({ host: "h", user: "u" })).toMatchObject({ port: 993, secure: true });
    expect(imap.configSchema.parse({ host: "h", user: "u", secure: false })).toMatchObject({ port: 143 });
    expect(imap.configSchema.safeParse({ host: "h", user: "u", since: "last week" }).success).toBe(false);
    expect(gmail.configSchema.parse({ email: USER })).toMatchObject({
      host: "imap.gmail.com",
      port: 993,
      secure: true,
    });
    expect(gmail.secretKeys).toEqual(["accessToken", "refreshToken", "clientId", "clientSecret"]);
    expect(imap.secretKeys).toEqual(["password"]);
    expect(parseMailItemId("Archive/2024/17/5")).toEqual({
      mailbox: "Archive/2024",
      uidValidity: "17",
      uid: 5,
    });
  });
});

describe("imap connector against Dovecot", () => {
  let firstPass: SourceItem[];

  it("verify logs in and out", async () => {
    await expect(imap.verify?.(imapContext())).resolves.toBeUndefined();
  });

  it("lists one item per message and fetches subject, participants, date, body and attachments", async () => {
    const ctx = imapContext();
    const { items, pages } = await fullPass(imap, ctx);
    firstPass = items;
    expect(pages).toHaveLength(1);
    expect(items).toHaveLength(FIXTURE_FILES.length);
    const uidValidity = parseMailItemId(items[0]?.id ?? "")?.uidValidity;
    for (const item of items) {
      const ref = parseMailItemId(item.id);
      expect(ref?.mailbox).toBe("INBOX");
      expect(ref?.uidValidity).toBe(uidValidity);
      expect(item.version).toBe(`${ref?.uidValidity}/${ref?.uid}`);
    }
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length);

    const fetched = await fetchAll(imap, ctx, items);
    expect([...fetched.keys()].sort()).toEqual(
      [
        "Example HTML Only MIME Email",
        "Example MIME Email",
        "Fake email with attachment",
        "Family Day",
        "Simple email with ☸☿ Unicode subject",
        "Test Email",
        "[GitHub] Subscribed to 63 nf-core repositories",
      ].sort(),
    );

    const test = fetched.get("Test Email");
    expect(test?.metadata).toEqual({
      mailbox: "INBOX",
      from: "Matthew Robinson <mrobinson@unstructured.io>",
      to: ["NotMatthew <NotMatthew@notunstructured.com>"],
      date: "2022-12-16T22:04:16.000Z",
      messageId: "<CADc-_xaLB2FeVQ7mNsoX+NJb_7hAJhBKa_zet-rtgPGenj0uVw@mail.gmail.com>",
    });
    expect(test?.filepath).toBe("/INBOX/");
    expect(test?.url).toBeUndefined();
    expect(test?.text).toContain("Subject: Test Email\nFrom: Matthew Robinson <mrobinson@unstructured.io>");
    expect(test?.text).toContain("To: NotMatthew <NotMatthew@notunstructured.com>");
    expect(test?.text).toContain("Date: Fri, 16 Dec 2022 22:04:16 GMT");
    expect(test?.text).toContain("This is a test email to use for unit tests.");
    expect(test?.text).toContain("Violets are blue");
    expect(test?.children).toBeUndefined();

    const withAttachment = fetched.get("Fake email with attachment");
    expect(withAttachment?.text).toContain("Here's the attachments!");
    expect(withAttachment?.text).toContain("Attachments: fake-attachment.txt");
    expect(withAttachment?.children).toHaveLength(1);
    const child = withAttachment?.children?.[0];
    expect(child?.id).toBe(`${withAttachment?.id}/attachments/0-fake-attachment.txt`);
    expect(child?.file?.name).toBe("fake-attachment.txt");
    expect(child?.file?.mimeType).toBe("text/plain");
    expect(child?.file?.bytes.toString()).toBe("Hey this is a fake attachment!");
    expect(child?.text).toBeUndefined();
    expect(child?.metadata).toMatchObject({ mailbox: "INBOX", attachmentOf: "Fake email with attachment" });

    // HTML only: the text comes from the HTML, without markup.
    const htmlOnly = fetched.get("Example HTML Only MIME Email");
    expect(htmlOnly?.text).toContain("The first emoticon, :) , was proposed by Scott Fahlman in 1982");
    expect(htmlOnly?.text).toContain("Gmail was launched by Google in 2004");
    expect(htmlOnly?.text).not.toContain("<p>");
    // Both parts: the plain one is the body.
    const both = fetched.get("Example MIME Email");
    expect(both?.text).toContain("This is the text/plain part.");
    expect(both?.text).not.toContain("text/html part");
    expect(both?.metadata?.date).toBe("2024-10-01T17:34:56.000Z");

    expect(fetched.get("Family Day")?.text).toContain("a petting zoo, funnel cake and more");
    expect(fetched.get("Simple email with ☸☿ Unicode subject")?.text).toContain(
      "This is a simple email message with Unicode characters in the subject.",
    );
    const github = fetched.get("[GitHub] Subscribed to 63 nf-core repositories");
    expect(github?.metadata?.from).toBe("GitHub <email@domain.com>");
    expect(github?.text).toContain("https://github.com/nf-core/rnaseq/subscription");
    expect(ctx.heartbeats()).toBeGreaterThan(0);
  });

  it("pages across several listPage calls with a small page size", async () => {
    const ctx = imapContext({ pageSize: 3 });
    const { pages, items } = await fullPass(imap, ctx);
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(items.map((i) => i.id).sort()).toEqual(firstPass.map((i) => i.id).sort());
    // UIDs ascend across pages.
    const uids = items.map((i) => parseMailItemId(i.id)?.uid ?? 0);
    expect(uids).toEqual([...uids].sort((a, b) => a - b));
  });

  it("after a new delivery and an expunge, the next pass lists exactly the new set", async () => {
    // One context across both passes: the pooled session has INBOX selected already and must still
    // see the change.
    const ctx = imapContext({ pageSize: 2 });
    const before = await fullPass(imap, ctx);
    expect(before.items).toHaveLength(FIXTURE_FILES.length);

    const familyDay = (await fetchAll(imap, ctx, before.items)).get("Family Day");
    expect(dovecot.remove({ subject: "Family Day" })).toBe(1);
    dovecot.deliver(NEW_MESSAGE);

    const after = await fullPass(imap, ctx);
    const beforeIds = new Set(before.items.map((i) => i.id));
    const added = after.items.filter((i) => !beforeIds.has(i.id));
    expect(added).toHaveLength(1);
    const expected = before.items.filter((i) => i.id !== familyDay?.id).concat(added);
    expect(after.items.map((i) => `${i.id}@${i.version}`).sort()).toEqual(
      expected.map((i) => `${i.id}@${i.version}`).sort(),
    );
    const maxBefore = Math.max(...before.items.map((i) => parseMailItemId(i.id)?.uid ?? 0));
    expect(parseMailItemId(added[0]?.id ?? "")?.uid).toBeGreaterThan(maxBefore);

    const fresh = added[0] ? await imap.fetchItem(ctx, added[0]) : null;
    expect(fresh?.title).toBe("Quarterly numbers");
    expect(fresh?.metadata).toMatchObject({
      from: "Bob Builder <bob@example.com>",
      to: ["Alice <alice@example.com>", "Carol <carol@example.com>"],
      cc: ["Dave <dave@example.com>"],
      date: "2026-03-03T09:15:00.000Z",
      messageId: "<quarterly-report-1@example.com>",
    });
    expect(fresh?.text).toContain("Revenue grew twelve percent in the third quarter.");
    expect(fresh?.text).not.toContain("<b>");
    expect(fresh?.children?.map((c) => [c.file?.name, c.file?.mimeType, c.file?.bytes.toString()])).toEqual([
      ["q3.csv", "text/csv", "quarter,revenue\nQ3,112\n"],
    ]);

    // The expunged message is gone for fetchItem too, and so is an id under another UIDVALIDITY.
    expect(familyDay ? await imap.fetchItem(ctx, { id: familyDay.id, version: "x" }) : "missing").toBeNull();
    const ref = parseMailItemId(added[0]?.id ?? "");
    const otherValidity = `INBOX/${Number(ref?.uidValidity) + 1}/${ref?.uid}`;
    expect(await imap.fetchItem(ctx, { id: otherValidity, version: "x" })).toBeNull();
  });

  it("syncs a list of mailboxes, and '*' every mailbox except Trash and Junk", async () => {
    const listed = await fullPass(imap, imapContext({ mailboxes: "inbox, Archive/2024" }));
    const mailboxes = listed.items.map((i) => parseMailItemId(i.id)?.mailbox);
    expect(mailboxes.filter((m) => m === "INBOX")).toHaveLength(FIXTURE_FILES.length);
    expect(mailboxes.filter((m) => m === "Archive/2024")).toHaveLength(1);

    const ctx = imapContext({ mailboxes: "*" });
    const all = await fullPass(imap, ctx);
    expect(new Set(all.items.map((i) => parseMailItemId(i.id)?.mailbox))).toEqual(
      new Set(["INBOX", "Archive/2024"]),
    );
    expect(all.items).toHaveLength(listed.items.length);
    const archived = all.items.find((i) => i.id.startsWith("Archive/2024/"));
    const fetched = archived ? await imap.fetchItem(ctx, archived) : null;
    expect(fetched?.title).toBe("Family Day");
    expect(fetched?.metadata?.mailbox).toBe("Archive/2024");
    expect(fetched?.filepath).toBe("/Archive/2024/");
  });

  it("'*' on a server with an \\All mailbox (Gmail's All Mail) syncs that mailbox alone", async () => {
    // Gmail shows every message in All Mail and again in each label's mailbox: syncing both would list a
    // message twice under two ids.
    const gmailLike = await startDovecot({
      user: USER,
      specialUse: { "All Mail": "\\All", Trash: "\\Trash" },
    });
    try {
      const labelled = readFileSync(join(FIXTURES, FIXTURE_FILES[0] as string));
      gmailLike.deliver(labelled);
      gmailLike.deliver(labelled, "All Mail");
      gmailLike.deliver(readFileSync(join(FIXTURES, "family-day.eml")), "All Mail"); // archived: no label
      gmailLike.deliver(readFileSync(join(FIXTURES, "fake-email.eml")), "Trash");
      const all = await fullPass(
        imap,
        imapContext({ mailboxes: "*", port: gmailLike.port }, gmailLike.password),
      );
      expect(all.items.map((i) => parseMailItemId(i.id)?.mailbox)).toEqual(["All Mail", "All Mail"]);
      // A list names mailboxes as they are, All Mail or not.
      const inbox = await fullPass(
        imap,
        imapContext({ mailboxes: "INBOX", port: gmailLike.port }, gmailLike.password),
      );
      expect(inbox.items.map((i) => parseMailItemId(i.id)?.mailbox)).toEqual(["INBOX"]);
    } finally {
      await closeMailConnections();
      await gmailLike.stop();
    }
  });

  it("since leaves out messages received before that day", async () => {
    const old = dovecot.deliver(readFileSync(join(FIXTURES, "fake-email.eml")), "Old");
    const recent = dovecot.deliver(readFileSync(join(FIXTURES, "family-day.eml")), "Old");
    // Maildir's received date is the file's mtime.
    const longAgo = new Date("2019-06-01T12:00:00Z");
    utimesSync(old, longAgo, longAgo);
    expect(recent).toBeTruthy();
    const everything = await fullPass(imap, imapContext({ mailboxes: "Old" }));
    expect(everything.items).toHaveLength(2);
    const ctx = imapContext({ mailboxes: "Old", since: "2020-01-01" });
    const sinceItems = (await fullPass(imap, ctx)).items;
    expect(sinceItems).toHaveLength(1);
    expect((await imap.fetchItem(ctx, sinceItems[0] as SourceItem))?.title).toBe("Family Day");
  });

  it("reads only maxMessageBytes of a large message, without its attachments", async () => {
    const big = NEW_MESSAGE.replace("Subject: Quarterly numbers", "Subject: Big one").replace(
      "<html>",
      `<html><p>Start of a long message.</p><p>${"filler ".repeat(2000)}</p>`,
    );
    dovecot.deliver(big, "Big");
    const ctx = imapContext({ mailboxes: "Big", maxMessageBytes: 4096 });
    const [item] = (await fullPass(imap, ctx)).items;
    const fetched = item ? await imap.fetchItem(ctx, item) : null;
    expect(fetched?.title).toBe("Big one");
    expect(fetched?.metadata?.truncated).toBe(true);
    expect(fetched?.text).toContain("Start of a long message.");
    expect(fetched?.text).toMatch(/Message truncated: \d+ bytes, of which the first 4096 were read/);
    expect(fetched?.children).toBeUndefined();
  });

  it("pages through a mailbox whose UIDs are sparse after mass deletion", async () => {
    for (let n = 1; n <= 60; n++) {
      dovecot.deliver(`Subject: Sparse ${n}\r\nFrom: a@example.com\r\n\r\nmessage ${n}\r\n`, "Sparse");
    }
    const ctx = imapContext({ mailboxes: "Sparse", pageSize: 2 });
    const dense = await fullPass(imap, ctx);
    expect(dense.items).toHaveLength(60);
    expect(dense.pages).toHaveLength(30);
    const keep = new Set([1, 31, 60]);
    for (let n = 1; n <= 60; n++)
      if (!keep.has(n)) expect(dovecot.remove({ subject: `Sparse ${n}` }, "Sparse")).toBe(1);
    const sparse = await fullPass(imap, ctx);
    expect(sparse.items).toHaveLength(3);
    const titles = [];
    for (const item of sparse.items) titles.push((await imap.fetchItem(ctx, item))?.title);
    expect(titles.sort()).toEqual(["Sparse 1", "Sparse 31", "Sparse 60"]);
    // Fewer round trips than one page per two old UIDs: empty windows grow.
    expect(sparse.pages.length).toBeLessThanOrEqual(3);
  });

  it("a mailbox that does not exist is a ConnectorConfigError", async () => {
    const ctx = imapContext({ mailboxes: "INBOX, Nope" });
    await expect(imap.verify?.(ctx)).rejects.toThrow(ConnectorConfigError);
    const error = await fullPass(imap, ctx).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectorConfigError);
    expect((error as Error).message).toContain('"Nope"');
  });

  it("refuses a mail server on a private network unless the network policy allows it", async () => {
    for (const host of [dovecot.host, "localhost"]) {
      const ctx = {
        ...imapContext({ host }),
        network: { allowPrivateNetwork: false, timeoutMs: 10_000, maxBytes: 1e7 },
      };
      const error = await imap.verify?.(ctx).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectorConfigError);
      expect((error as Error).message).toMatch(/private network/);
    }
    // The same server is reached when private networks are allowed (the default in these tests).
    await imap.verify?.(imapContext());
  });

  it("a refused connection is a plain error, retried by the engine", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const error = await fullPass(imap, imapContext({ port })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(ConnectorAuthError);
    expect(error).not.toBeInstanceOf(ConnectorConfigError);
    expect(error).not.toBeInstanceOf(ConnectorRateLimitError);
    expect((error as { code?: string }).code).toBe("ECONNREFUSED");
  });

  it("too many sessions for the account is a rate limit, not refused credentials", async () => {
    // Dovecot allows 10 sessions per user and address; each connection id keeps its own pooled session.
    const contexts = Array.from({ length: 10 }, () => imapContext());
    for (const ctx of contexts) await imap.listPage(ctx, await imap.initialCursor(ctx));
    const ctx = imapContext();
    const error = await imap.listPage(ctx, await imap.initialCursor(ctx)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectorRateLimitError);
    expect((error as ConnectorRateLimitError).retryAfterMs).toBe(60_000);
    expect((error as Error).message).toContain("[LIMIT]");
  });
});

describe("gmail connector (XOAUTH2) against Dovecot", () => {
  it("authenticates with the access token, lists and fetches with Gmail links", async () => {
    const ctx = gmailContext();
    await expect(gmail.verify?.(ctx)).resolves.toBeUndefined();
    const { items } = await fullPass(gmail, ctx);
    expect(items.length).toBeGreaterThanOrEqual(FIXTURE_FILES.length);
    const fetched = await fetchAll(gmail, ctx, items);
    const test = fetched.get("Test Email");
    expect(test?.text).toContain("Roses are red");
    expect(test?.url).toBe(
      "https://mail.google.com/mail/u/alice%40example.com/#search/rfc822msgid%3ACADc-_xaLB2FeVQ7mNsoX%2BNJb_7hAJhBKa_zet-rtgPGenj0uVw%40mail.gmail.com",
    );
    expect(fetched.get("Fake email with attachment")?.children?.[0]?.url).toMatch(
      /^https:\/\/mail\.google\.com\//,
    );
    // Dovecot checked the token with the introspection endpoint, and logged the SASL mechanism.
    expect(introspected).toContain(GOOD_TOKEN);
    expect(dovecot.log()).toMatch(/Login: user=<alice@example\.com>, method=XOAUTH2/);
  });
});

describe("refused credentials", () => {
  it("a wrong password is a ConnectorAuthError from verify, listPage and fetchItem", async () => {
    const ctx = imapContext({}, "wrong-password");
    await expect(imap.verify?.(ctx)).rejects.toThrow(ConnectorAuthError);
    await expect(imap.listPage(ctx, await imap.initialCursor(ctx))).rejects.toThrow(ConnectorAuthError);
    await expect(imap.fetchItem(ctx, { id: "INBOX/1/1", version: "1/1" })).rejects.toThrow(
      /refused the password for alice@example.com/,
    );
  });

  it("a rejected access token is a ConnectorAuthError", async () => {
    const ctx = gmailContext({}, "ya29.expired-token");
    const error = await gmail.verify?.(ctx).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectorAuthError);
    expect((error as Error).message).toContain("refused the OAuth access token");
    expect(introspected).toContain("ya29.expired-token");
  });
});

describe("Gmail's bandwidth ALERT (a proxy answers as Gmail past its daily IMAP limits)", () => {
  let proxy: ImapProxy;
  beforeAll(async () => {
    proxy = await startImapProxy(dovecot);
  });
  afterAll(async () => {
    await proxy?.stop();
  });

  async function refusal(promise: Promise<unknown>) {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConnectorRateLimitError);
    expect(error).not.toBeInstanceOf(ConnectorAuthError);
    expect((error as ConnectorRateLimitError).retryAfterMs).toBe(BANDWIDTH_WAIT_MS);
    expect((error as Error).message).toContain("Account exceeded command or bandwidth limits");
  }

  it("a NO [ALERT] at login is a long rate limit, not a refused token", async () => {
    const ctx = gmailContext({ port: proxy.port });
    proxy.refuseNext(/^AUTHENTICATE$/i, "no");
    await refusal(gmail.listPage(ctx, await gmail.initialCursor(ctx)));
    expect(proxy.refused()).toContain("AUTHENTICATE");
    // The token was never asked about, and the next login goes through.
    const { items } = await fullPass(gmail, ctx);
    expect(items.length).toBeGreaterThanOrEqual(FIXTURE_FILES.length);
  });

  it("a NO [ALERT] answering a download, or a BYE [ALERT] ending the session, waits hours", async () => {
    const ctx = gmailContext({ port: proxy.port });
    const { items } = await fullPass(gmail, ctx);
    const item = items[0] as SourceItem;
    proxy.refuseNext(/^UID FETCH$/i, "no");
    await refusal(gmail.fetchItem(ctx, item));
    proxy.refuseNext(/^(EXAMINE|SELECT|UID FETCH)$/i, "bye");
    await closeMailConnections();
    await refusal(gmail.fetchItem(ctx, item));
    // Once Gmail lets the account in again, the same item downloads.
    expect((await gmail.fetchItem(ctx, item))?.text).toBeTruthy();
  });
});
