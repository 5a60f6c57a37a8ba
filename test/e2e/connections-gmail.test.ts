import { readFileSync } from "node:fs";
import { join } from "node:path";
import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeMailConnections } from "../../connectors/imap/sync.ts";
import { connectionProbe } from "../support/connections.ts";
import { type Dovecot, startDovecot } from "../support/dovecot.ts";
import { type FakeGoogle, startFakeGoogle } from "../support/fake-google.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, waitFor } from "../support/service.ts";

// Gmail through Google's OAuth consent (no token given at creation) and IMAP with XOAUTH2: a local
// server answers as Google's consent page and token endpoint, and a real Dovecot checks each login's
// token against it (RFC 7662 introspection), as Gmail checks Google's tokens.
describe("Gmail through OAuth and XOAUTH2", () => {
  const USER = "alice@example.com";
  let service: TestService;
  let google: FakeGoogle;
  let dovecot: Dovecot;
  let client: Supermemory;
  let connectionId: string;
  const call = caller(() => service.url);
  const { connection, syncAfter } = connectionProbe(call, () => connectionId);
  // The SDK's provider list predates a plain "gmail" without a token; the call is the same.
  const GMAIL = "gmail" as const;

  beforeAll(async () => {
    google = await startFakeGoogle({ mailUser: USER });
    dovecot = await startDovecot({ user: USER, oauth2IntrospectionUrl: `${google.url}/introspect` });
    for (const file of ["fake-email.eml", "family-day.eml"])
      dovecot.deliver(readFileSync(join(FIXTURES_DIR, "email", file)));
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

  it("connects through consent and syncs the mailbox with the consent's token", async () => {
    const created = await client.connections.create(GMAIL, {
      containerTag: "mail",
      metadata: { email: USER, host: "127.0.0.1", port: dovecot.port, secure: false },
    });
    connectionId = created.id;
    const consent = new URL(created.authLink);
    expect(consent.searchParams.get("scope")).toBe("https://mail.google.com/");
    const back = await fetch(created.authLink, { redirect: "manual" });
    const landing = await fetch(back.headers.get("location") as string, { redirect: "manual" });
    expect(landing.status).toBe(200);
    const run = await syncAfter(undefined);
    expect(run).toMatchObject({ status: "done", counts: { added: 2, failed: 0 } });
    expect(dovecot.log()).toMatch(/method=XOAUTH2/);
    await waitFor(async () => {
      const docs = await client.connections.listDocuments(GMAIL, { containerTags: ["mail"] });
      return docs.length === 2 && docs.every((d) => d.status === "done") ? true : undefined;
    }, "the messages to be processed");
  });

  it("refreshes a token Google stopped accepting, then stops when access is revoked", async () => {
    let before = (await connection()).lastSync.id;
    google.expireAccessTokens();
    await closeMailConnections();
    const refreshesBefore = google.tokenGrants.refresh_token;
    dovecot.deliver(readFileSync(join(FIXTURES_DIR, "email", "email-no-html-content-1.eml")));
    await client.connections.import(GMAIL, {});
    let run = await syncAfter(before);
    expect(run).toMatchObject({ status: "done", counts: { added: 1, unchanged: 2 } });
    expect(google.tokenGrants.refresh_token).toBe(refreshesBefore + 1);

    before = run.id;
    google.revoke();
    // An open session outlives a revocation; the next login (after the pool's 30 s idle close) is refused.
    await closeMailConnections();
    await client.connections.import(GMAIL, {});
    run = await syncAfter(before);
    expect(run).toMatchObject({ status: "auth_expired" });
    expect((await connection()).status).toBe("auth_expired");
  });
});
