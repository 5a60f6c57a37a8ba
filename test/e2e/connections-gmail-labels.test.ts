import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectionProbe } from "../support/connections.ts";
import {
  type Dovecot,
  GOOGLE_MAIL_DE,
  gmailMailbox,
  gmailSpecialUse,
  startDovecot,
} from "../support/dovecot.ts";
import { type FakeGoogle, startFakeGoogle } from "../support/fake-google.ts";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, waitFor } from "../support/service.ts";

// Gmail's labels through the sync engine: a Dovecot imitating a German-language Gmail account (All
// Mail, Trash and Spam under "[Google Mail]/..." names, known only by their SPECIAL-USE flags), logging
// in with OAUTHBEARER, where each message is in All Mail and INBOX shows it. The connection syncs INBOX,
// the default; archiving must keep a message's document, deleting and reporting spam must remove it.

const USER = "alice@example.com";
const GMAIL = "gmail" as const;
const TAG = "gmail-labels";

function message(n: number, subject: string, body: string): string {
  return [
    "MIME-Version: 1.0",
    `Date: Tue, 0${n} Mar 2026 09:15:00 +0000`,
    `Message-ID: <label-test-${n}@example.com>`,
    `Subject: ${subject}`,
    "From: Bob <bob@example.com>",
    `To: Alice <${USER}>`,
    "Content-Type: text/plain; charset=UTF-8",
    "",
    body,
    "",
  ].join("\r\n");
}

describe("Gmail labels through the sync engine", () => {
  let service: TestService;
  let google: FakeGoogle;
  let dovecot: Dovecot;
  let mailbox: ReturnType<typeof gmailMailbox>;
  let client: Supermemory;
  let connectionId: string;
  const ids: Record<string, string> = {};
  const call = caller(() => service.url);
  const { lastSync, syncAfter } = connectionProbe(call, () => connectionId);

  const documents = () =>
    waitFor(async () => {
      const docs = await client.connections.listDocuments(GMAIL, { containerTags: [TAG] });
      return docs.every((d) => d.status === "done") ? docs : undefined;
    }, "the mail documents to be processed");
  /** Every document of the tag, duplicates included. */
  const allDocuments = async () =>
    (await client.documents.list({ containerTags: [TAG], limit: 100 })).memories;
  const importNow = async () => {
    const before = (await lastSync())?.id;
    await client.connections.import(GMAIL, { containerTags: [TAG] });
    return syncAfter(before);
  };

  beforeAll(async () => {
    google = await startFakeGoogle({ mailUser: USER });
    dovecot = await startDovecot({
      user: USER,
      oauth2IntrospectionUrl: `${google.url}/introspect`,
      // Gmail offers OAUTHBEARER next to XOAUTH2 (https://developers.google.com/workspace/gmail/imap/xoauth2-protocol).
      oauth2Mechanisms: ["xoauth2", "oauthbearer"],
      specialUse: gmailSpecialUse(GOOGLE_MAIL_DE),
    });
    mailbox = gmailMailbox(dovecot, GOOGLE_MAIL_DE);
    ids.archived = mailbox.deliver(message(1, "Lighthouse keeper rota", "Keepers rotate every fortnight."));
    ids.trashed = mailbox.deliver(message(2, "Old newsletter", "Nothing worth keeping."));
    ids.spam = mailbox.deliver(message(3, "You won a prize", "Click here."));
    ids.kept = mailbox.deliver(message(4, "Harbour fees", "Mooring costs twelve pounds a night."));
    // Sent mail has no INBOX label: in All Mail only, never part of an INBOX connection.
    mailbox.deliver(message(5, "My own reply", "Sent from the web."), []);
    service = await startTestService({
      env: {
        GOOGLE_CLIENT_ID: google.clientId,
        GOOGLE_CLIENT_SECRET: google.clientSecret,
        CONNECTOR_ENDPOINTS: JSON.stringify({
          gmail: { authorizeUrl: google.authorizeUrl, tokenUrl: google.tokenUrl },
        }),
      },
    });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });

  afterAll(async () => {
    await service?.stop();
    await dovecot?.stop();
    await google?.stop();
  });

  it("logs in with OAUTHBEARER and syncs INBOX", async () => {
    const created = await client.connections.create(GMAIL, {
      containerTag: TAG,
      metadata: { email: USER, host: "127.0.0.1", port: dovecot.port, secure: false },
    });
    connectionId = created.id;
    const back = await fetch(created.authLink, { redirect: "manual" });
    await fetch(back.headers.get("location") as string, { redirect: "manual" });
    const run = await syncAfter(undefined);
    expect(run).toMatchObject({ status: "done", counts: { added: 4, failed: 0 } });
    expect(dovecot.log()).toMatch(/Login: user=<alice@example\.com>, method=OAUTHBEARER/);
    expect(dovecot.log()).not.toMatch(/method=XOAUTH2/);
    expect((await documents()).map((d) => d.title).sort()).toEqual(
      ["Harbour fees", "Lighthouse keeper rota", "Old newsletter", "You won a prize"].sort(),
    );
  });

  it("keeps an archived message, removes a deleted one and one reported as spam", async () => {
    const before = await documents();
    mailbox.archive(ids.archived as string);
    mailbox.trash(ids.trashed as string);
    mailbox.spam(ids.spam as string);
    let run = await importNow();
    expect(run).toMatchObject({ status: "done", counts: { added: 0, deleted: 2, unchanged: 1, failed: 0 } });
    const expected = ["Harbour fees", "Lighthouse keeper rota"];
    let docs = await documents();
    expect(docs.map((d) => d.title).sort()).toEqual(expected);
    const archived = before.find((d) => d.title === "Lighthouse keeper rota");
    expect(docs.find((d) => d.title === "Lighthouse keeper rota")?.id).toBe(archived?.id);

    // The next sync misses the archived message again and asks again: still kept, nothing else moves.
    run = await importNow();
    expect(run).toMatchObject({ status: "done", counts: { added: 0, deleted: 0, unchanged: 1, failed: 0 } });
    docs = await documents();
    expect(docs.map((d) => d.title).sort()).toEqual(expected);
    expect(docs.find((d) => d.title === "Lighthouse keeper rota")?.id).toBe(archived?.id);
    expect((await allDocuments()).map((d) => d.title).sort()).toEqual(expected);
  });

  it("after INBOX gets a new UIDVALIDITY, each message has exactly one document", async () => {
    mailbox.deliver(message(6, "Ferry timetable", "The first ferry leaves at seven."));
    // Gmail may reset UIDVALIDITY (https://developers.google.com/gmail/imap/imap-extensions notes UIDs are
    // per folder); any server may after an index rebuild (RFC 3501 2.3.1.1).
    dovecot.resetUidValidity("INBOX", 4242);
    const run = await importNow();
    // Both INBOX messages come back under new ids (added) and their old ids go (deleted); the archived
    // message keeps its document.
    expect(run).toMatchObject({ status: "done", counts: { added: 2, deleted: 1, failed: 0 } });
    const expected = ["Ferry timetable", "Harbour fees", "Lighthouse keeper rota"];
    const docs = await documents();
    expect(docs.map((d) => d.title).sort()).toEqual(expected);
    const all = await allDocuments();
    expect(all.map((d) => d.title).sort()).toEqual(expected);
    expect(new Set(all.map((d) => d.customId)).size).toBe(expected.length);
    expect(all.find((d) => d.title === "Harbour fees")?.customId).toMatch(/:INBOX\/4242\/\d+$/);
  });
});
