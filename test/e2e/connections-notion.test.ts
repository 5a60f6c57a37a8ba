import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectionProbe } from "../support/connections.ts";
import { type FakeNotion, startFakeNotion } from "../support/fake-notion.ts";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, waitFor } from "../support/service.ts";

// Notion through the OAuth flow and the sync engine, against a local server answering as Notion's API
// and token endpoint: consent → callback → tokens sealed → first sync; then edits, trash, an expired
// access token refreshed, and a revoked one turning the connection auth_expired.
describe("Notion connections through OAuth and the sync engine", () => {
  let service: TestService;
  let notion: FakeNotion;
  let client: Supermemory;
  let connectionId: string;
  const call = caller(() => service.url);
  const ids: Record<string, string> = {};
  let clock = Date.parse("2026-11-20T10:00:00Z");
  /** Notion's clock moves on a few minutes, so edits are settled (Notion rounds edit times to the minute). */
  const later = () => {
    clock += 5 * 60_000;
    notion.setTime(new Date(clock));
  };

  beforeAll(async () => {
    notion = await startFakeNotion({ workspaceName: "Acme wiki" });
    notion.setTime(new Date(clock));
    ids.onboarding = notion.addPage({
      title: "Onboarding",
      blocks: [
        { type: "heading_1", text: "First week" },
        { type: "bulleted_list_item", text: "Meet the lighthouse keeper on Monday" },
        { type: "numbered_list_item", text: "Read the tide tables" },
      ],
    });
    ids.recipes = notion.addPage({
      title: "Recipes",
      blocks: [{ type: "paragraph", text: "The fish soup needs saffron and fennel." }],
    });
    later();
    service = await startTestService({
      env: {
        // The service's own app is not the one the fake knows: the flow works only with the caller's app.
        NOTION_CLIENT_ID: "service-own-notion-app",
        NOTION_CLIENT_SECRET: "service-own-secret",
        CONNECTOR_ENDPOINTS: JSON.stringify({
          notion: { authorizeUrl: notion.authorizeUrl, tokenUrl: notion.tokenUrl, apiBaseUrl: notion.url },
        }),
      },
    });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });

  afterAll(async () => {
    await service?.stop();
    await notion?.stop();
  });

  const { connection, syncAfter } = connectionProbe(call, () => connectionId);
  const processed = () =>
    waitFor(async () => {
      const docs = await client.connections.listDocuments("notion", { containerTags: ["wiki"] });
      return docs.every((d) => d.status === "done") ? docs : undefined;
    }, "documents to be processed");

  it("uses the service's app by default and the caller's app once notionCustomKeyEnabled is set", async () => {
    const byDefault = await client.connections.create("notion", { containerTag: "wiki" });
    expect(new URL(byDefault.authLink).searchParams.get("client_id")).toBe("service-own-notion-app");
    await client.connections.deleteByID(byDefault.id);
    const settings = await call("PATCH", "/v3/settings", {
      notionClientId: notion.clientId,
      notionClientSecret: notion.clientSecret,
      notionCustomKeyEnabled: true,
    });
    expect(settings.status).toBe(200);
  });

  it("goes through consent and the callback, then syncs the workspace", async () => {
    const created = await client.connections.create("notion", {
      containerTag: "wiki",
      redirectUrl: "http://127.0.0.1:9/connected",
    });
    connectionId = created.id;
    expect(created.expiresIn).toBe("15 minutes");
    const consent = new URL(created.authLink);
    expect(consent.origin + consent.pathname).toBe(notion.authorizeUrl);
    expect(consent.searchParams.get("client_id")).toBe(notion.clientId);
    expect(consent.searchParams.get("owner")).toBe("user");
    expect(consent.searchParams.get("redirect_uri")).toBe(`${service.url}/v3/connections/oauth/callback`);
    expect((await connection()).status).toBe("pending");

    // The consent page sends the browser back to our callback with a code and the state.
    const toCallback = await fetch(created.authLink, { redirect: "manual" });
    const callback = toCallback.headers.get("location") as string;
    expect(callback).toContain("/v3/connections/oauth/callback?");
    const done = await fetch(callback, { redirect: "manual" });
    expect(done.status).toBe(302);
    const back = new URL(done.headers.get("location") as string);
    expect(back.origin + back.pathname).toBe("http://127.0.0.1:9/connected");
    expect(back.searchParams.get("connectionId")).toBe(connectionId);
    expect(back.searchParams.get("status")).toBe("connected");
    // The state is used once.
    expect((await fetch(callback, { redirect: "manual" })).status).toBe(400);

    const run = await syncAfter(undefined);
    expect(run, JSON.stringify(run)).toMatchObject({
      status: "done",
      trigger: "create",
      counts: { added: 2, failed: 0 },
    });
    const shown = await connection();
    expect(shown).toMatchObject({ status: "active", email: "Acme wiki" });
    expect(JSON.stringify(shown)).not.toMatch(/access_token|accessToken|refresh/i);
    const docs = await processed();
    expect(docs.map((d) => d.title).sort()).toEqual(["Onboarding", "Recipes"]);
    const found = await client.search.documents({
      q: "lighthouse keeper on Monday",
      containerTags: ["wiki"],
    });
    expect(found.results[0]?.title).toBe("Onboarding");
    const full = await client.documents.get(found.results[0]?.documentId as string);
    expect(full.content).toContain("# First week");
    expect(full.content).toContain("- Meet the lighthouse keeper on Monday");
  });

  it("syncs an edited page, a new one and a trashed one", async () => {
    const before = (await connection()).lastSync.id;
    notion.editPage(ids.recipes as string, {
      blocks: [{ type: "paragraph", text: "The fish soup needs saffron, fennel and orange peel." }],
    });
    notion.trashPage(ids.onboarding as string);
    notion.addPage({
      title: "Boats",
      blocks: [{ type: "paragraph", text: "The dinghy is stored in shed four." }],
    });
    later();
    await client.connections.import("notion", { containerTags: ["wiki"] });
    const run = await syncAfter(before);
    expect(run).toMatchObject({
      status: "done",
      counts: { added: 1, updated: 1, deleted: 1, unchanged: 0, failed: 0 },
    });
    const docs = await processed();
    expect(docs.map((d) => d.title).sort()).toEqual(["Boats", "Recipes"]);
    const soup = await client.search.documents({ q: "orange peel fish soup", containerTags: ["wiki"] });
    expect(soup.results[0]?.title).toBe("Recipes");
  });

  it("syncs a new sub-page once Notion's search has indexed it", async () => {
    // Search indexing is not immediate (developers.notion.com/reference/search-optimizations-and-limitations):
    // the new page is missing from the first pass's search and shows in the next one.
    notion.setSearchIndexing({ delaySearches: 2 });
    notion.addPage({
      title: "Harbour",
      parent: { pageId: ids.recipes as string },
      blocks: [{ type: "paragraph", text: "The harbour master keeps the crane keys." }],
    });
    later();
    let before = (await connection()).lastSync.id;
    await client.connections.import("notion", { containerTags: ["wiki"] });
    const first = await syncAfter(before);
    expect(first).toMatchObject({ status: "done", counts: { added: 0, failed: 0 } });
    expect((await processed()).map((d) => d.title)).not.toContain("Harbour");

    before = (await connection()).lastSync.id;
    await client.connections.import("notion", { containerTags: ["wiki"] });
    const second = await syncAfter(before);
    expect(second).toMatchObject({ status: "done", counts: { added: 1, failed: 0 } });
    expect((await processed()).map((d) => d.title).sort()).toEqual(["Boats", "Harbour", "Recipes"]);
    expect((await connection()).status).toBe("active");
    notion.setSearchIndexing(null);
  });

  it("waits out a 429 in the middle of a page without reading its blocks again", async () => {
    notion.editPage(ids.recipes as string, {
      blocks: [
        { type: "heading_2", text: "Soups" },
        { type: "bulleted_list_item", text: "Fish soup", children: [{ type: "paragraph", text: "saffron" }] },
        { type: "bulleted_list_item", text: "Leek soup", children: [{ type: "paragraph", text: "butter" }] },
      ],
    });
    later();
    const before = (await connection()).lastSync.id;
    const from = notion.requests.length;
    // The page search, the page, its blocks and the first nested item's go through; the second's gets 429.
    notion.rateLimitNext({ after: 4, retryAfterSeconds: 1 });
    await client.connections.import("notion", { containerTags: ["wiki"] });
    const run = await syncAfter(before);
    expect(run).toMatchObject({ status: "done", counts: { updated: 1, failed: 0 } });
    const during = notion.requests.slice(from).filter((r) => !r.path.startsWith("/v1/oauth"));
    expect(during.filter((r) => r.status === 429)).toHaveLength(1);
    const reads = during
      .filter((r) => r.status === 200)
      .map((r) => `${r.method} ${r.path}${r.query} ${JSON.stringify(r.body ?? null)}`);
    expect(reads.filter((r) => r.includes("/children")).length).toBeGreaterThan(1);
    expect(new Set(reads).size).toBe(reads.length);
    const soup = await client.search.documents({ q: "leek soup butter", containerTags: ["wiki"] });
    expect(soup.results[0]?.title).toBe("Recipes");
  });

  it("counts a listed page that answers 404 when fetched, syncs the rest and stays active", async () => {
    const harbour = (await processed()).find((d) => d.title === "Harbour");
    expect(harbour).toBeDefined();
    const quayId = notion.addPage({
      title: "Quay",
      blocks: [{ type: "paragraph", text: "The quay wall was repaired with granite blocks." }],
    });
    later();
    let before = (await connection()).lastSync.id;
    await client.connections.import("notion", { containerTags: ["wiki"] });
    expect(await syncAfter(before)).toMatchObject({ status: "done", counts: { added: 1 } });

    // Quay is taken out of the integration's sharing while search still lists it, edited; Recipes is edited.
    notion.editPage(quayId, { blocks: [{ type: "paragraph", text: "The quay wall is closed." }] });
    notion.unsharePage(quayId);
    notion.editPage(ids.recipes as string, {
      blocks: [{ type: "paragraph", text: "The fish soup now takes a pinch of smoked paprika." }],
    });
    later();
    before = (await connection()).lastSync.id;
    await client.connections.import("notion", { containerTags: ["wiki"] });
    const run = await syncAfter(before);
    expect(run).toMatchObject({
      status: "done",
      errorCode: null,
      counts: { updated: 1, failed: 0, skipped: 1, skippedReasons: { not_found: 1 }, deleted: 1 },
    });
    expect((await connection()).status).toBe("active");
    const titles = (await processed()).map((d) => d.title);
    expect(titles).not.toContain("Quay");
    expect(titles).toContain("Harbour");
    const paprika = await client.search.documents({ q: "smoked paprika fish soup", containerTags: ["wiki"] });
    expect(paprika.results[0]?.title).toBe("Recipes");
  });

  it("refreshes an expired access token and carries on", async () => {
    const before = (await connection()).lastSync.id;
    notion.expireAccessTokens();
    notion.addPage({
      title: "Tides",
      blocks: [{ type: "paragraph", text: "High tide at noon on Sundays." }],
    });
    later();
    await client.connections.import("notion", {});
    const run = await syncAfter(before);
    expect(run).toMatchObject({ status: "done", counts: { added: 1, failed: 0 } });
    expect(notion.requests.some((r) => r.path.startsWith("/v1/oauth/token") && r.status === 200)).toBe(true);
  });

  it("turns auth_expired when access is revoked, keeping what was synced", async () => {
    const before = (await connection()).lastSync.id;
    notion.revoke();
    await client.connections.import("notion", {});
    const run = await syncAfter(before);
    expect(run).toMatchObject({ status: "auth_expired", errorCode: "auth_expired" });
    expect((await connection()).status).toBe("auth_expired");
    expect(await client.connections.listDocuments("notion", { containerTags: ["wiki"] })).toHaveLength(4);
  });

  it("refuses an unknown state and a provider error on the callback", async () => {
    const unknown = await fetch(`${service.url}/v3/connections/oauth/callback?state=nope&code=x`, {
      redirect: "manual",
    });
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toContain("unknown or expired");
  });
});
