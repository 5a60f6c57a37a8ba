import { readFileSync } from "node:fs";
import { join } from "node:path";
import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectionProbe } from "../support/connections.ts";
import { type Dovecot, startDovecot } from "../support/dovecot.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { caller } from "../support/http.ts";
import { GMAIL_FETCH_FAILURE, startImapProxy } from "../support/imap-proxy.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, waitFor } from "../support/service.ts";

// An IMAP mailbox end to end: a private Dovecot on 127.0.0.1 holding the well-formed fixture mails, a
// connection created through the SDK, synced by the real Temporal workflow into one document per message
// and one per attachment, searchable, and a later import that picks up a new delivery and an expunge.

/** The well-formed fixtures (fake-email-malformed-encoding.eml and empty.eml are bad on purpose). */
const FIXTURE_FILES = [
  "email-no-html-content-1.eml",
  "fake-email-attachment.eml",
  "fake-email.eml",
  "family-day.eml",
  "mime-different-plain-html.eml",
  "mime-html-only.eml",
  "mime-word-encoded-subject.eml",
];
const SUBJECTS = [
  "Example HTML Only MIME Email",
  "Example MIME Email",
  "Fake email with attachment",
  "Family Day",
  "Simple email with ☸☿ Unicode subject",
  "Test Email",
  "[GitHub] Subscribed to 63 nf-core repositories",
];
const ATTACHMENT = "fake-attachment.txt";
const USER = "alice@example.com";

const NEW_MESSAGE = [
  "MIME-Version: 1.0",
  "Date: Tue, 03 Mar 2026 09:15:00 +0000",
  "Message-ID: <quarterly-report-1@example.com>",
  "Subject: Quarterly numbers",
  'From: "Bob Builder" <bob@example.com>',
  "To: Alice <alice@example.com>",
  'Content-Type: multipart/mixed; boundary="outer-boundary"',
  "",
  "--outer-boundary",
  'Content-Type: text/html; charset="UTF-8"',
  "",
  "<html><body><p>Revenue of the lighthouse shop grew <b>twelve percent</b> in the third quarter.</p></body></html>",
  "--outer-boundary",
  'Content-Type: text/csv; name="q3.csv"',
  'Content-Disposition: attachment; filename="q3.csv"',
  "Content-Transfer-Encoding: base64",
  "",
  Buffer.from("quarter,revenue\nQ3,112\n").toString("base64"),
  "--outer-boundary--",
  "",
].join("\r\n");

// The SDK's provider union predates the imap connector; the route takes any registered provider.
type SdkProvider = Parameters<Supermemory["connections"]["create"]>[0];
const IMAP = "imap" as SdkProvider;

describe("IMAP connections through the sync engine", () => {
  let service: TestService;
  let dovecot: Dovecot;
  let client: Supermemory;
  let connectionId: string;
  const call = caller(() => service.url);
  const TAG = "mail";

  beforeAll(async () => {
    dovecot = await startDovecot({ user: USER });
    for (const file of FIXTURE_FILES) dovecot.deliver(readFileSync(join(FIXTURES_DIR, "email", file)));
    service = await startTestService();
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });

  // The service first: its worker's shutdown closes the pooled IMAP sessions while Dovecot still answers.
  afterAll(async () => {
    await service?.stop();
    await dovecot?.stop();
  });

  const { lastSync, syncAfter } = connectionProbe(call, () => connectionId);
  const documentsDone = () =>
    waitFor(async () => {
      const docs = await client.connections.listDocuments(IMAP, { containerTags: [TAG] });
      return docs.every((d) => d.status === "done" || d.status === "failed") ? docs : undefined;
    }, "the mail documents to be processed");
  const search = async (q: string) => {
    const { results } = await client.search.documents({ q, containerTags: [TAG], limit: 10 });
    return {
      titles: results.map((r) => r.title),
      text: results.flatMap((r) => r.chunks.map((c) => c.content)).join("\n"),
    };
  };
  /** Every document of the tag (not only the connection's view), with duplicates left in. */
  const allDocuments = async () =>
    (await client.documents.list({ containerTags: [TAG], limit: 100 })).memories;

  it("syncs one document per message and one per attachment, searchable", async () => {
    const created = await client.connections.create(IMAP, {
      containerTag: TAG,
      metadata: {
        host: dovecot.host,
        port: dovecot.port,
        secure: false,
        user: USER,
        password: dovecot.password,
      },
    });
    connectionId = created.id;

    const run = await syncAfter(undefined);
    // Counts are per listed item: seven messages (the attachment is saved with its message).
    expect(run).toMatchObject({
      status: "done",
      trigger: "create",
      errorCode: null,
      counts: { added: 7, updated: 0, deleted: 0, unchanged: 0, failed: 0 },
    });
    const connection = (await call("GET", `/v3/connections/${connectionId}`)).json;
    expect(connection).toMatchObject({
      provider: "imap",
      status: "active",
      metadata: { host: dovecot.host, user: USER, passwordSet: true },
    });
    expect(JSON.stringify(connection)).not.toContain(dovecot.password);

    const docs = await documentsDone();
    expect(docs.filter((d) => d.status !== "done")).toEqual([]);
    expect(docs.map((d) => d.title).sort()).toEqual([...SUBJECTS, ATTACHMENT].sort());

    // The attachment is a document of its own, tied to its message.
    const all = await allDocuments();
    expect(all).toHaveLength(8);
    const attachment = all.find((d) => d.title === ATTACHMENT);
    const parent = all.find((d) => d.title === "Fake email with attachment");
    expect(attachment?.customId).toBe(`${parent?.customId}/attachments/0-${ATTACHMENT}`);
    expect(attachment?.metadata).toMatchObject({
      attachmentOf: "Fake email with attachment",
      mailbox: "INBOX",
      source: "imap",
      connectionId,
    });
    expect((await client.documents.get(attachment?.id ?? "")).content).toContain(
      "Hey this is a fake attachment!",
    );
    // The message is read as the text the connector made of it (naming its attachment), not parsed again
    // as a raw RFC 822 message.
    const message = await client.documents.get(parent?.id ?? "");
    expect(message.type).toBe("text");
    expect(message.content).toContain(`Attachments: ${ATTACHMENT}`);
    expect(message.content).toContain("Here's the attachments!");

    const family = await search("face painting, a petting zoo and funnel cake");
    expect(family.titles[0]).toBe("Family Day");
    expect(family.text).toContain("a petting zoo, funnel cake and more");
    expect((await search("this is a fake attachment")).titles).toContain(ATTACHMENT);
  });

  it("an import picks up a new message and an expunged one with its attachment", async () => {
    const before = (await lastSync())?.id;
    const docsBefore = await client.connections.listDocuments(IMAP, { containerTags: [TAG] });
    expect(dovecot.remove({ subject: "Fake email with attachment" })).toBe(1);
    dovecot.deliver(NEW_MESSAGE);

    expect(await client.connections.import(IMAP, { containerTags: [TAG] })).toMatch(/started for 1/);
    const run = await syncAfter(before);
    // Counted by message: one added (its attachment comes with it), one deleted (its attachment goes with it).
    expect(run).toMatchObject({
      status: "done",
      trigger: "import",
      errorCode: null,
      counts: { added: 1, updated: 0, deleted: 1, unchanged: 6, failed: 0 },
    });

    const docs = await documentsDone();
    expect(docs.filter((d) => d.status !== "done")).toEqual([]);
    const expected = [
      ...SUBJECTS.filter((s) => s !== "Fake email with attachment"),
      "Quarterly numbers",
      "q3.csv",
    ].sort();
    expect(docs.map((d) => d.title).sort()).toEqual(expected);
    // The messages that stayed kept their documents.
    const kept = docsBefore.filter((d) => d.title !== "Fake email with attachment" && d.title !== ATTACHMENT);
    expect(kept).toHaveLength(6);
    for (const d of kept) expect(docs.find((n) => n.title === d.title)?.id).toBe(d.id);

    const quarterly = await search("lighthouse shop revenue grew twelve percent");
    expect(quarterly.titles[0]).toBe("Quarterly numbers");
    expect(quarterly.text).toContain(
      "Revenue of the lighthouse shop grew twelve percent in the third quarter.",
    );
    const gone = await search("this is a fake attachment");
    expect(gone.titles).not.toContain(ATTACHMENT);
    expect(gone.titles).not.toContain("Fake email with attachment");
    expect(gone.text).not.toContain("fake attachment");

    // No duplicates: one document per message and attachment, each under its own customId.
    const all = await allDocuments();
    expect(all).toHaveLength(expected.length);
    expect(all.map((d) => d.title).sort()).toEqual(expected);
    expect(new Set(all.map((d) => d.customId)).size).toBe(expected.length);
    const csv = all.find((d) => d.title === "q3.csv");
    const report = all.find((d) => d.title === "Quarterly numbers");
    expect(csv?.customId).toBe(`${report?.customId}/attachments/0-q3.csv`);
  });

  it("a sync with nothing changed keeps every message and attachment untouched", async () => {
    const before = await lastSync();
    const docsBefore = await client.connections.listDocuments(IMAP, { containerTags: [TAG] });
    await client.connections.import(IMAP, {});
    const run = await syncAfter(before?.id);
    expect(run).toMatchObject({
      status: "done",
      trigger: "import",
      counts: { added: 0, updated: 0, deleted: 0, unchanged: 7, failed: 0 },
    });
    // The attachment of an unchanged message is still there, neither swept nor rewritten.
    const docs = await client.connections.listDocuments(IMAP, { containerTags: [TAG] });
    expect(docs.map((d) => `${d.id} ${d.title} ${d.updatedAt}`).sort()).toEqual(
      docsBefore.map((d) => `${d.id} ${d.title} ${d.updatedAt}`).sort(),
    );
    expect(docs.map((d) => d.title)).toContain("q3.csv");
  });

  it("after the server gives INBOX a new UIDVALIDITY, each message and attachment has one document", async () => {
    const before = await lastSync();
    const titles = (await client.connections.listDocuments(IMAP, { containerTags: [TAG] }))
      .map((d) => d.title)
      .sort();
    // Every UID the connection knows is void (RFC 3501 2.3.1.1): the messages come back under new ids.
    dovecot.resetUidValidity("INBOX", 777);
    await client.connections.import(IMAP, {});
    const run = await syncAfter(before?.id);
    expect(run).toMatchObject({
      status: "done",
      counts: { added: 7, updated: 0, deleted: 7, unchanged: 0, failed: 0 },
    });
    const docs = await documentsDone();
    expect(docs.map((d) => d.title).sort()).toEqual(titles);
    const all = await allDocuments();
    expect(all.map((d) => d.title).sort()).toEqual(titles);
    expect(new Set(all.map((d) => d.customId)).size).toBe(titles.length);
    for (const d of all) expect(d.customId).toMatch(/:INBOX\/777\/\d+(\/attachments\/.*)?$/);
  });

  it("a message the server refuses to FETCH is counted failed; the others sync and the connection stays active", async () => {
    const proxy = await startImapProxy({ host: dovecot.host, port: dovecot.port });
    try {
      const created = await client.connections.create(IMAP, {
        containerTag: "mail-refused",
        metadata: {
          host: "127.0.0.1",
          port: proxy.port,
          secure: false,
          user: USER,
          password: dovecot.password,
        },
      });
      // The plain IMAP listing is UID SEARCH only, so the first UID FETCH is the first message's download.
      proxy.refuseNext(/^UID FETCH$/i, "no", GMAIL_FETCH_FAILURE);
      const run = await waitFor(async () => {
        const c = (await call("GET", `/v3/connections/${created.id}`)).json;
        return c.lastSync && c.lastSync.status !== "running" ? c : undefined;
      }, "the first sync of the proxied connection");
      expect(proxy.refused()).toEqual(["UID FETCH"]);
      expect(run.status).toBe("active");
      expect(run.lastSync).toMatchObject({ status: "done", counts: { added: 6, failed: 1 } });
      // The refused message is fetched again by the next sync, and then it comes.
      const before = run.lastSync.id;
      expect((await call("POST", `/v3/connections/${created.id}/sync`)).status).toBe(200);
      const again = await waitFor(async () => {
        const c = (await call("GET", `/v3/connections/${created.id}`)).json;
        return c.lastSync && c.lastSync.id !== before && c.lastSync.status !== "running" ? c : undefined;
      }, "the second sync of the proxied connection");
      expect(again.lastSync).toMatchObject({ status: "done", counts: { added: 1, failed: 0, unchanged: 6 } });
      await client.connections.deleteByID(created.id);
    } finally {
      await proxy.stop();
    }
  });
});
