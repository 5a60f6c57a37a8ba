import { Client, Connection } from "@temporalio/client";
import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectionProbe } from "../support/connections.ts";
import {
  type FakeGitHub,
  OAUTH_CLIENT_ID,
  OAUTH_CLIENT_SECRET,
  startFakeGitHub,
} from "../support/fake-github.ts";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, waitFor } from "../support/service.ts";

// GitHub through the sync engine, against a local server answering as the GitHub REST API: repositories
// chosen with resources/configure, files, issues and pull requests synced, rate limits waited out, and a
// revoked token turning the connection `auth_expired` instead of retrying forever.
describe("GitHub connections through the sync engine", () => {
  let service: TestService;
  let github: FakeGitHub;
  let client: Supermemory;
  let temporal: Client;
  let connectionId: string;
  let issueNumber: number;
  const call = caller(() => service.url);
  const REPO = "acme/handbook";

  beforeAll(async () => {
    github = await startFakeGitHub();
    github.addRepository(REPO, { description: "The team handbook" });
    github.addRepository("acme/website");
    github.setFile(
      REPO,
      "README.md",
      "# Handbook\nHow the acme team works: onboarding, holidays and on-call.",
    );
    github.setFile(REPO, "docs/holidays.md", "Holiday requests go to the team calendar two weeks ahead.");
    github.setFile(REPO, "src/app.ts", "export const ignored = 'code is not synced';");
    issueNumber = github.addIssue(REPO, {
      title: "On-call rota is unclear",
      body: "Nobody knows who carries the pager on weekends.",
    });
    github.addPullRequest(REPO, {
      title: "Add expense policy",
      body: "Travel expenses are reimbursed monthly.",
    });
    github.setFile("acme/website", "README.md", "The marketing website: never chosen, never synced.");
    service = await startTestService({
      env: {
        GITHUB_CLIENT_ID: OAUTH_CLIENT_ID,
        GITHUB_CLIENT_SECRET: OAUTH_CLIENT_SECRET,
        CONNECTOR_ENDPOINTS: JSON.stringify({
          github: {
            authorizeUrl: `${github.url}/login/oauth/authorize`,
            tokenUrl: `${github.url}/login/oauth/access_token`,
          },
        }),
      },
    });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    temporal = new Client({
      connection: await Connection.connect({ address: inject("TEST_TEMPORAL_ADDRESS") }),
    });
  });

  afterAll(async () => {
    await service?.stop();
    await github?.stop();
    await temporal?.connection.close();
  });

  const { lastSync, syncAfter } = connectionProbe(call, () => connectionId);
  const titles = async () =>
    (await client.connections.listDocuments("github", { containerTags: ["acme"] }))
      .map((d) => d.title)
      .sort();

  it("lists repositories, syncs only the chosen one", async () => {
    const created = await client.connections.create("github", {
      containerTag: "acme",
      metadata: { baseUrl: github.url, token: github.token },
    });
    connectionId = created.id;
    // Nothing chosen yet: the first sync lists nothing.
    const first = await syncAfter(undefined);
    expect(first).toMatchObject({ status: "done", counts: { added: 0 } });

    const { resources } = await client.connections.resources(connectionId);
    expect(resources.map((r) => r.full_name)).toEqual(expect.arrayContaining([REPO, "acme/website"]));
    const configured = await client.connections.configure(connectionId, { resources: [{ full_name: REPO }] });
    expect(configured.success).toBe(true);
    const synced = await syncAfter(first.id);
    expect(synced).toMatchObject({ status: "done", counts: { added: 4, failed: 0 } });
    expect(await titles()).toHaveLength(4);
    // Processing is asynchronous: wait until every document is done, then search.
    await waitFor(async () => {
      const docs = await client.connections.listDocuments("github", { containerTags: ["acme"] });
      return docs.every((d) => d.status === "done") ? true : undefined;
    }, "the synced documents to be processed");
    const found = await client.search.documents({
      q: "who carries the pager on weekends",
      containerTags: ["acme"],
    });
    expect(found.results[0]?.title).toMatch(/On-call rota/);
    // The other repository was not chosen: none of its files became a document.
    const docs = await client.connections.listDocuments("github", { containerTags: ["acme"] });
    expect(docs.length).toBe(4);
    const contents = await Promise.all(
      docs.map(async (d) => (await client.documents.get(d.id)).content ?? ""),
    );
    expect(contents.join("\n")).not.toContain("marketing website");
  });

  it("syncs exactly the changes: a modified file, a deleted file, a new comment, a new issue", async () => {
    const before = (await lastSync())?.id;
    const countBefore = (await titles()).length;
    github.setFile(REPO, "docs/holidays.md", "Holiday requests go to the team calendar three weeks ahead.");
    github.deleteFile(REPO, "README.md");
    github.addComment(REPO, issueNumber, { body: "Proposal: a shared rota spreadsheet." });
    github.addIssue(REPO, { title: "Office plants", body: "The ficus needs a new pot." });
    await client.connections.import("github", { containerTags: ["acme"] });
    const run = await syncAfter(before);
    expect(run).toMatchObject({
      status: "done",
      counts: { added: 1, updated: 2, deleted: 1, unchanged: 1, failed: 0 },
    });
    expect(await titles()).toHaveLength(countBefore);
    const all = await client.documents.list({ containerTags: ["acme"], limit: 100 });
    expect(all.memories).toHaveLength(countBefore);
  });

  it("waits out a rate limit for as long as GitHub asks, then finishes", async () => {
    const before = (await lastSync())?.id;
    github.rateLimitNext({ status: 429, retryAfterSeconds: 2 });
    await client.connections.import("github", {});
    const run = await syncAfter(before);
    expect(run).toMatchObject({ status: "done", counts: { unchanged: 4, failed: 0 } });
    expect(github.requests.some((r) => r.status === 429)).toBe(true);
  });

  it("asks GitHub only for what changed since the last complete pass", async () => {
    const before = (await lastSync())?.id;
    const seen = github.requests.length;
    await client.connections.import("github", {});
    const run = await syncAfter(before);
    expect(run).toMatchObject({ status: "done", counts: { added: 0, updated: 0, deleted: 0, unchanged: 4 } });
    const requests = github.requests.slice(seen);
    // The tree came back 304 Not Modified (free of rate limit), issues were asked for with `since`.
    expect(requests.some((r) => r.path.includes("/git/trees/") && r.status === 304)).toBe(true);
    expect(requests.some((r) => r.path.includes("/issues?") && r.path.includes("since="))).toBe(true);
    expect(requests.some((r) => r.path.includes("/contents/"))).toBe(false);
  });

  it("connects through GitHub's OAuth consent when no token is given", async () => {
    const created = await client.connections.create("github", {
      containerTag: "acme-oauth",
      metadata: { baseUrl: github.url },
    });
    expect(new URL(created.authLink).pathname).toBe("/login/oauth/authorize");
    const consent = await fetch(created.authLink, { redirect: "manual" });
    const landing = await fetch(consent.headers.get("location") as string, { redirect: "manual" });
    expect(landing.status).toBe(200);
    expect(await landing.text()).toContain("Connected");
    const shown = (await call("GET", `/v3/connections/${created.id}`)).json;
    expect(shown.status).toBe("active");
    // The consent's token reaches GitHub: the repositories it can see are listed.
    const { resources } = await client.connections.resources(created.id);
    expect(resources.map((r) => r.full_name)).toContain(REPO);
    expect(await client.connections.deleteByID(created.id)).toEqual({ id: created.id, provider: "github" });
    expect((await call("GET", `/v3/connections/${created.id}`)).status).toBe(404);
  });

  it("refuses a consent whose code GitHub rejects with 200 and an error field", async () => {
    const created = await client.connections.create("github", {
      containerTag: "acme-bad-code",
      metadata: { baseUrl: github.url },
    });
    const consent = await fetch(created.authLink, { redirect: "manual" });
    const back = new URL(consent.headers.get("location") as string);
    back.searchParams.set("code", "code_never_issued");
    const landing = await fetch(back, { redirect: "manual" });
    // GitHub answered 200 {"error":"bad_verification_code"}: a refusal shown to the user, not a 500.
    expect(landing.status).toBe(400);
    expect(await landing.text()).toContain("bad_verification_code");
    expect(github.tokenRequests.at(-1)).toEqual({
      grantType: "authorization_code",
      error: "bad_verification_code",
    });
    expect((await call("GET", `/v3/connections/${created.id}`)).json.status).toBe("pending");
    await client.connections.deleteByID(created.id);
  });

  it("keeps syncing the other repositories when GitHub refuses one, and keeps the refused one's documents", async () => {
    github.addRepository("sso-org/wiki");
    github.setFile("sso-org/wiki", "README.md", "# Wiki\nThe badge printer sits on the second floor.");
    github.addIssue("sso-org/wiki", { title: "Badge printer jams", body: "It jams every Monday." });
    github.addRepository("acme/notes");
    github.setFile("acme/notes", "README.md", "# Notes\nMeeting notes of the week.");
    const created = await client.connections.create("github", {
      containerTag: "acme-sso",
      metadata: { baseUrl: github.url, token: github.token },
    });
    const probe = connectionProbe(call, () => created.id);
    const first = await probe.syncAfter(undefined);
    // A repository that does not exist (or that the token cannot see) is among the chosen ones.
    await client.connections.configure(created.id, {
      resources: [{ full_name: "sso-org/wiki" }, { full_name: "acme/vanished" }, { full_name: "acme/notes" }],
    });
    const synced = await probe.syncAfter(first.id);
    expect(synced).toMatchObject({ status: "done", counts: { added: 3, failed: 0 } });
    const tagged = async () =>
      (await client.connections.listDocuments("github", { containerTags: ["acme-sso"] }))
        .map((d) => d.title)
        .sort();
    const before = await tagged();
    expect(before).toEqual(["Badge printer jams", "README.md", "README.md"]);

    // The organization turns on SAML enforcement: its repository answers 403 to the token.
    github.refuse("sso-org", "saml");
    github.setFile("acme/notes", "README.md", "# Notes\nMeeting notes of this week and the next.");
    await client.connections.import("github", { containerTags: ["acme-sso"] });
    const run = await probe.syncAfter(synced.id);
    expect(run).toMatchObject({ status: "done", counts: { updated: 1, deleted: 0, failed: 0 } });
    expect(github.requests.some((r) => r.path.startsWith("/repos/sso-org/wiki") && r.status === 403)).toBe(
      true,
    );
    expect((await probe.connection()).status).toBe("active");
    // The wiki's documents were not listed this pass, and are kept all the same.
    expect(await tagged()).toEqual(before);
    github.refuse("sso-org", null);

    // The organization turns on an IP allow list instead: the same, its repository alone is left out.
    github.refuse("sso-org", "ip_allow_list");
    const seen = github.requests.length;
    github.setFile("acme/notes", "README.md", "# Notes\nMeeting notes of this month.");
    await client.connections.import("github", { containerTags: ["acme-sso"] });
    const fenced = await probe.syncAfter(run.id);
    expect(fenced).toMatchObject({ status: "done", counts: { updated: 1, deleted: 0, failed: 0 } });
    expect(
      github.requests.slice(seen).some((r) => r.path.startsWith("/repos/sso-org/wiki") && r.status === 403),
    ).toBe(true);
    expect((await probe.connection()).status).toBe("active");
    expect(await tagged()).toEqual(before);
    github.refuse("sso-org", null);
  });

  it("shares one request budget between two connections of one user, waiting out secondary limits in place", async () => {
    github.addRepository("acme/tracker");
    github.setFile("acme/tracker", "README.md", "# Tracker\nWhere the team's requests are tracked.");
    for (let i = 1; i <= 9; i++)
      github.addIssue("acme/tracker", { title: `Request ${i}`, body: `Body ${i}.` });
    // One connection through the OAuth consent (a GitHub App's expiring user token), one with a personal
    // access token: two tokens of one GitHub user.
    github.setExpiringUserTokens(true);
    const viaApp = await client.connections.create("github", {
      containerTag: "tracker-app",
      metadata: { baseUrl: github.url, issuesPerPage: 2 },
    });
    const consent = await fetch(viaApp.authLink, { redirect: "manual" });
    await fetch(consent.headers.get("location") as string, { redirect: "manual" });
    const app = connectionProbe(call, () => viaApp.id);
    const idle = await app.syncAfter(undefined);
    github.setExpiringUserTokens(false);

    const seen = github.requests.length;
    // Far below what two syncs send at once, counted over both tokens.
    github.throttleUser({ requests: 6, windowSeconds: 2 });
    const viaToken = await client.connections.create("github", {
      containerTag: "tracker-pat",
      metadata: { baseUrl: github.url, token: github.token, repositories: "acme/tracker", issuesPerPage: 2 },
    });
    await client.connections.configure(viaApp.id, { resources: [{ full_name: "acme/tracker" }] });
    const pat = connectionProbe(call, () => viaToken.id);
    const runs = await Promise.all([app.syncAfter(idle.id), pat.syncAfter(undefined)]);
    github.throttleUser(null);
    for (const run of runs) {
      expect(run, JSON.stringify(run)).toMatchObject({
        status: "done",
        errorCode: null,
        counts: { added: 10 },
      });
    }
    expect((await app.connection()).status).toBe("active");
    expect((await pat.connection()).status).toBe("active");
    const requests = github.requests.slice(seen);
    const limited = requests.filter((r) => r.status === 403);
    expect(limited.length).toBeGreaterThan(0);
    const issuePages = (r: { path: string }) => r.path.startsWith("/repos/acme/tracker/issues?");
    // Some came mid-listing: after a page of issues answered to the same token.
    expect(
      limited.some((t) =>
        requests
          .slice(0, requests.indexOf(t))
          .some((r) => r.authorization === t.authorization && r.status === 200 && issuePages(r)),
      ),
    ).toBe(true);
    // No page of issues answered twice to one connection: throttled requests were sent again in place.
    const pages = new Map<string, number>();
    for (const r of requests.filter((r) => r.status === 200 && issuePages(r))) {
      const key = `${r.authorization} ${r.path}`;
      pages.set(key, (pages.get(key) ?? 0) + 1);
    }
    expect(pages.size).toBeGreaterThanOrEqual(10);
    expect([...pages.values()].every((n) => n === 1)).toBe(true);
  });

  it("renews an expired GitHub App user token, and stops with auth_expired once GitHub refuses the refresh", async () => {
    // A GitHub App with expiring user tokens: eight-hour access tokens and a refresh token.
    github.setExpiringUserTokens(true);
    const created = await client.connections.create("github", {
      containerTag: "acme-app",
      metadata: { baseUrl: github.url },
    });
    const consent = await fetch(created.authLink, { redirect: "manual" });
    await fetch(consent.headers.get("location") as string, { redirect: "manual" });
    const probe = connectionProbe(call, () => created.id);
    const first = await probe.syncAfter(undefined);
    await client.connections.configure(created.id, { resources: [{ full_name: REPO }] });
    const synced = await probe.syncAfter(first.id);
    expect(synced).toMatchObject({ status: "done", counts: { failed: 0 } });
    expect(synced.counts.added).toBeGreaterThan(0);

    // Eight hours later: GitHub answers 401 to the access token; one refresh renews it.
    github.expireUserTokens();
    const asked = github.tokenRequests.length;
    await client.connections.import("github", { containerTags: ["acme-app"] });
    const renewed = await probe.syncAfter(synced.id);
    expect(renewed).toMatchObject({ status: "done", counts: { failed: 0, deleted: 0 } });
    expect(github.tokenRequests.slice(asked)).toEqual([{ grantType: "refresh_token" }]);
    expect((await probe.connection()).status).toBe("active");

    // The refresh token expired too: GitHub answers 200 {"error":"bad_refresh_token"}. That is a refusal,
    // not a failure to retry: the run ends auth_expired after that one request and the schedule pauses.
    github.expireUserTokens({ refreshTokens: true });
    const refusedAt = github.tokenRequests.length;
    await client.connections.import("github", { containerTags: ["acme-app"] });
    const refused = await probe.syncAfter(renewed.id);
    expect(refused).toMatchObject({ status: "auth_expired", errorCode: "auth_expired" });
    expect(refused.error).toContain("bad_refresh_token");
    expect((await probe.connection()).status).toBe("auth_expired");
    expect(github.tokenRequests.slice(refusedAt)).toEqual([
      { grantType: "refresh_token", error: "bad_refresh_token" },
    ]);
    const schedule = await temporal.schedule.getHandle(`sync-schedule/${created.id}`).describe();
    expect(schedule.state.paused).toBe(true);
    github.setExpiringUserTokens(false);
  });

  it("stops with auth_expired when the token is revoked, and pauses the schedule", async () => {
    const before = (await lastSync())?.id;
    github.revokeToken();
    await client.connections.import("github", {});
    const run = await syncAfter(before);
    expect(run).toMatchObject({ status: "auth_expired", errorCode: "auth_expired" });
    const connection = (await call("GET", `/v3/connections/${connectionId}`)).json;
    expect(connection.status).toBe("auth_expired");
    // Documents already synced stay; later imports leave the connection alone until it is reconnected.
    expect(await titles()).toHaveLength(4);
    expect(
      await client.connections.import("github", {}),
      JSON.stringify(await client.connections.list({})),
    ).toMatch(/started for 0/);
    const schedule = await temporal.schedule.getHandle(`sync-schedule/${connectionId}`).describe();
    expect(schedule.state.paused).toBe(true);
  });
});
