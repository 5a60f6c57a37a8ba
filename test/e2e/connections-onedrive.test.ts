import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectionProbe } from "../support/connections.ts";
import { type FakeGraph, startFakeGraph } from "../support/fake-graph.ts";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, waitFor } from "../support/service.ts";

// OneDrive through the OAuth flow and the sync engine, against a local server answering as the Microsoft
// identity platform and Graph for a OneDrive for Business (delta at the drive's root only): consent →
// callback → the hosted picker's JSON routes (no browser: the redirects are followed by hand) → one folder
// saved → only its files sync. Then delta carries an edit, an addition and a deletion, a 429 is waited
// out, a file refused (403) and one deleted (404) after the listing are skipped while the rest syncs, a
// 410 on the deltaLink enumerates the scope again, an expired token is refreshed and a revoked one turns the connection auth_expired; a second connection
// with syncScope "full" skips the picker.
describe("OneDrive through OAuth, the picker and the sync engine", () => {
  let service: TestService;
  let graph: FakeGraph;
  let client: Supermemory;
  let connectionId: string;
  const call = caller(() => service.url);
  const ids: Record<string, string> = {};
  const landing = "http://127.0.0.1:9/connected";

  beforeAll(async () => {
    graph = await startFakeGraph();
    ids.projects = graph.addFolder("Projects");
    ids.personal = graph.addFolder("Personal");
    ids.archive = graph.addFolder("Archive", ids.projects);
    ids.garden = graph.addFile("garden-plan.txt", "Plant the runner beans along the south fence in May.", {
      parentId: ids.projects,
    });
    ids.budget = graph.addFile("budget.md", "# Budget\n\nThe greenhouse repair costs four hundred pounds.", {
      parentId: ids.projects,
    });
    ids.harvest = graph.addFile("2019-harvest.txt", "The 2019 harvest gave forty jars of plum jam.", {
      parentId: ids.archive,
    });
    // A OneNote notebook in the picked folder: neither offered by the picker nor synced.
    ids.notebook = graph.addNotebook("Garden notebook", ids.projects);
    ids.diary = graph.addFile("diary.txt", "Private diary: never synced, not picked.", {
      parentId: ids.personal,
    });
    ids.loose = graph.addFile("loose.txt", "A loose file at the root of the drive.");
    service = await startTestService({
      env: {
        MICROSOFT_CLIENT_ID: graph.clientId,
        MICROSOFT_CLIENT_SECRET: graph.clientSecret,
        CONNECTOR_ENDPOINTS: JSON.stringify({
          onedrive: { authorizeUrl: graph.authorizeUrl, tokenUrl: graph.tokenUrl, apiBaseUrl: graph.url },
        }),
      },
    });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });

  afterAll(async () => {
    await service?.stop();
    await graph?.stop();
  });

  const { connection, syncAfter } = connectionProbe(call, () => connectionId);
  const documents = (tag: string) => client.connections.listDocuments("onedrive", { containerTags: [tag] });
  const titles = async (tag = "garden") => (await documents(tag)).map((d) => d.title).sort();
  const processed = (tag = "garden") =>
    waitFor(async () => {
      const docs = await documents(tag);
      return docs.every((d) => d.status === "done") ? docs : undefined;
    }, "documents to be processed");
  /** authLink → the consent page's redirect → our callback; the callback's answer. */
  const consent = async (authLink: string) => {
    const toCallback = await fetch(authLink, { redirect: "manual" });
    expect(toCallback.status).toBe(302);
    const callback = toCallback.headers.get("location") as string;
    expect(callback.startsWith(`${service.url}/v3/connections/oauth/callback?`)).toBe(true);
    const answer = await fetch(callback, { redirect: "manual" });
    expect(answer.status).toBe(302);
    // The state is used once.
    expect((await fetch(callback, { redirect: "manual" })).status).toBe(400);
    return new URL(answer.headers.get("location") as string);
  };
  const graphPaths = (from = 0) => graph.requests.slice(from).map((r) => r.path);

  it("goes through consent, the callback and the picker, and syncs only the picked folder", async () => {
    const created = await client.connections.create("onedrive", {
      containerTag: "garden",
      redirectUrl: landing,
    });
    connectionId = created.id;
    expect(created.expiresIn).toBe("15 minutes");
    const authorize = new URL(created.authLink);
    expect(authorize.origin + authorize.pathname).toBe(graph.authorizeUrl);
    expect(authorize.searchParams.get("client_id")).toBe(graph.clientId);
    expect(authorize.searchParams.get("response_type")).toBe("code");
    expect(authorize.searchParams.get("scope")).toBe("offline_access Files.Read User.Read");
    expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
    expect(authorize.searchParams.get("redirect_uri")).toBe(`${service.url}/v3/connections/oauth/callback`);
    expect((await connection()).status).toBe("pending");

    // Consent → our callback → the picker (scoped by default: no syncScope "full").
    const picker = await consent(created.authLink);
    expect(picker.origin + picker.pathname).toBe(`${service.url}/v3/connections/${connectionId}/picker`);
    const token = picker.searchParams.get("t") as string;
    expect(token).toBeTruthy();
    expect(graph.tokenRequests).toEqual([{ grantType: "authorization_code", status: 200 }]);
    const shown = await connection();
    expect(shown.status).toBe("setup");
    expect(shown.lastSync).toBeNull();
    expect(JSON.stringify(shown)).not.toMatch(/access_token|accessToken|refresh/i);
    // Until the selection is saved, imports leave the connection alone.
    expect(await client.connections.import("onedrive", {})).toMatch(/started for 0/);

    const page = await fetch(picker);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    await page.text();
    const items = (parent?: string, t = token) =>
      call(
        "GET",
        `/v3/connections/${connectionId}/picker/items?t=${encodeURIComponent(t)}${parent ? `&parent=${encodeURIComponent(parent)}` : ""}`,
        undefined,
        null,
      );
    expect((await items(undefined, "not-the-token")).status).toBe(404);
    // The drive's root: folders first, then files; the notebook is left out.
    const root = await items();
    expect(root.status).toBe(200);
    expect(root.json.items).toEqual([
      { id: ids.personal, name: "Personal", kind: "folder" },
      { id: ids.projects, name: "Projects", kind: "folder" },
      { id: ids.loose, name: "loose.txt", kind: "file", mimeType: "text/plain" },
    ]);
    // Inside the folder.
    const inside = await items(ids.projects);
    expect(inside.status).toBe(200);
    expect(inside.json.items).toEqual([
      { id: ids.archive, name: "Archive", kind: "folder" },
      { id: ids.budget, name: "budget.md", kind: "file", mimeType: "text/markdown" },
      { id: ids.garden, name: "garden-plan.txt", kind: "file", mimeType: "text/plain" },
    ]);
    expect(await connection().then((c) => c.lastSync)).toBeNull();

    const seen = graph.requests.length;
    const saved = await call(
      "POST",
      `/v3/connections/${connectionId}/picker/selection?t=${encodeURIComponent(token)}`,
      { items: [{ id: ids.projects, name: "Projects", kind: "folder" }] },
      null,
    );
    expect(saved.status).toBe(200);
    expect(saved.json.saved).toBe(1);
    const back = new URL(saved.json.redirectTo);
    expect(back.origin + back.pathname).toBe(landing);
    expect(back.searchParams.get("connectionId")).toBe(connectionId);
    expect(back.searchParams.get("status")).toBe("connected");

    const run = await syncAfter(undefined);
    expect(run, JSON.stringify(run)).toMatchObject({
      status: "done",
      trigger: "create",
      errorCode: null,
      counts: { added: 3, updated: 0, deleted: 0, unchanged: 0, failed: 0 },
    });
    expect((await connection()).status).toBe("active");
    expect(await titles()).toEqual(["2019-harvest.txt", "budget.md", "garden-plan.txt"]);
    // A business drive serves delta only at its root: the root's was enumerated (parents left out) and
    // filtered to the pick; no folder delta was asked for, nothing was refused, and nothing outside the
    // picked folder was read on its own.
    const paths = graphPaths(seen);
    expect(paths.some((p) => p.startsWith("/v1.0/me/drive/root/delta"))).toBe(true);
    expect(paths.some((p) => /\/me\/drive\/items\/[^/]+\/delta/.test(p))).toBe(false);
    expect(graph.requests.slice(seen).every((r) => r.status < 400)).toBe(true);
    expect(
      graph.requests
        .slice(seen)
        .filter((r) => r.path.includes("/delta"))
        .every((r) => r.deltaExcludeParent === "true"),
    ).toBe(true);
    for (const outside of [ids.loose, ids.diary, ids.personal] as string[])
      expect(paths.some((p) => p.includes(outside))).toBe(false);

    const docs = await processed();
    expect(docs).toHaveLength(3);
    const all = (await client.documents.list({ containerTags: ["garden"], limit: 100 })).memories;
    expect(all.find((d) => d.title === "2019-harvest.txt")).toMatchObject({
      connectionId,
      filepath: "/Projects/Archive/",
    });
    const found = await client.search.documents({ q: "greenhouse repair costs", containerTags: ["garden"] });
    expect(found.results[0]?.title).toBe("budget.md");
    const jam = await client.search.documents({ q: "jars of plum jam", containerTags: ["garden"] });
    expect(jam.results[0]?.title).toBe("2019-harvest.txt");
  });

  it("follows the folder's delta: an edit, a new file, a deletion, and ignores a file outside", async () => {
    const before = (await connection()).lastSync.id;
    const seen = graph.requests.length;
    graph.updateFile(ids.garden as string, "Plant the runner beans along the north wall in June.");
    ids.seeds = graph.addFile("seeds.txt", "Order the tomato seeds in February.", { parentId: ids.projects });
    graph.remove(ids.budget as string);
    ids.outside = graph.addFile("outside.txt", "Outside the picked folder.");
    expect(await client.connections.import("onedrive", { containerTags: ["garden"] })).toMatch(
      /started for 1/,
    );
    const run = await syncAfter(before);
    expect(run, JSON.stringify(run)).toMatchObject({
      status: "done",
      trigger: "import",
      counts: { added: 1, updated: 1, deleted: 1, unchanged: 0, failed: 0 },
    });
    expect(await titles()).toEqual(["2019-harvest.txt", "garden-plan.txt", "seeds.txt"]);
    // Only what changed, from the deltaLink the first sync ended with.
    const paths = graphPaths(seen);
    expect(paths.some((p) => p.startsWith("/v1.0/me/drive/root/delta?token="))).toBe(true);
    expect(paths.some((p) => p.includes(ids.outside as string))).toBe(false);
    expect(paths.some((p) => p.includes(ids.harvest as string))).toBe(false);

    await processed();
    const beans = await client.search.documents({
      q: "runner beans north wall June",
      containerTags: ["garden"],
    });
    expect(beans.results[0]?.title).toBe("garden-plan.txt");
    const full = await client.documents.get(beans.results[0]?.documentId as string);
    expect(full.content).toContain("north wall in June");
    expect(full.content).not.toContain("south fence");
  });

  it("waits out a 429 for as long as Retry-After asks, then finishes", async () => {
    const before = (await connection()).lastSync.id;
    const seen = graph.requests.length;
    ids.tools = graph.addFile("tools.txt", "The spade and the rake hang in the shed.", {
      parentId: ids.projects,
    });
    graph.rateLimitNext({ retryAfterSeconds: 2 });
    await client.connections.import("onedrive", {});
    const run = await syncAfter(before);
    expect(run, JSON.stringify(run)).toMatchObject({
      status: "done",
      counts: { added: 1, updated: 0, deleted: 0, unchanged: 0, failed: 0 },
    });
    const requests = graph.requests.slice(seen);
    const throttled = requests.findIndex((r) => r.status === 429);
    expect(throttled).toBeGreaterThanOrEqual(0);
    // The same request was made again after the wait, and answered.
    const retried = requests.slice(throttled + 1).find((r) => r.path === requests[throttled]?.path);
    expect(retried?.status).toBe(200);
    expect(await titles()).toEqual(["2019-harvest.txt", "garden-plan.txt", "seeds.txt", "tools.txt"]);
  });

  it("skips a file refused (403) and one deleted (404) after the listing; the rest syncs, the connection stays active", async () => {
    const before = (await connection()).lastSync.id;
    ids.recipe = graph.addFile("secret-recipe.txt", "Grandmother's chutney: unshared since.", {
      parentId: ids.projects,
    });
    ids.gone = graph.addFile("moved-away.txt", "Deleted between the listing and the fetch.", {
      parentId: ids.projects,
    });
    ids.compost = graph.addFile("compost.txt", "Turn the compost heap every two weeks.", {
      parentId: ids.projects,
    });
    graph.afterListing(ids.recipe as string, "forbid");
    graph.afterListing(ids.gone as string, "remove");
    const seen = graph.requests.length;
    await client.connections.import("onedrive", {});
    const run = await syncAfter(before);
    // However the engine counts the two skipped files, the run is done and only compost.txt was added.
    expect(run, JSON.stringify(run)).toMatchObject({
      status: "done",
      errorCode: null,
      counts: expect.objectContaining({ added: 1, updated: 0, deleted: 0 }),
    });
    expect((await connection()).status).toBe("active");
    const refused = graph.requests.slice(seen).filter((r) => r.status === 403 || r.status === 404);
    expect(refused.map((r) => r.status).sort()).toEqual([403, 404]);
    expect(await titles()).toEqual([
      "2019-harvest.txt",
      "compost.txt",
      "garden-plan.txt",
      "seeds.txt",
      "tools.txt",
    ]);
  });

  it("enumerates the picked folder again through the engine when Graph answers 410 to its deltaLink", async () => {
    const before = (await connection()).lastSync.id;
    const seen = graph.requests.length;
    graph.expireDeltaTokens();
    ids.mulch = graph.addFile("mulch.txt", "Mulch the raspberries with bark in November.", {
      parentId: ids.archive,
    });
    // Deleted while the token was stale: the resync's enumeration no longer lists it, and Graph says
    // to replace local state with the server's, deletes included.
    graph.remove(ids.compost as string);
    await client.connections.import("onedrive", {});
    const run = await syncAfter(before);
    // What was synced is listed again unchanged; the new file is added, the deleted one removed.
    expect(run, JSON.stringify(run)).toMatchObject({
      status: "done",
      errorCode: null,
      counts: expect.objectContaining({ added: 1, updated: 0, deleted: 1 }),
    });
    expect(await titles()).not.toContain("compost.txt");
    const deltas = graph.requests.slice(seen).filter((r) => r.path.includes("/delta"));
    expect(deltas[0]?.status).toBe(410);
    expect(deltas.slice(1).every((r) => r.status === 200)).toBe(true);
    expect(await titles()).toContain("mulch.txt");
  });

  it("refreshes an expired access token, and turns auth_expired when access is revoked", async () => {
    let before = (await connection()).lastSync.id;
    graph.expireAccessTokens();
    ids.shed = graph.addFile("shed.txt", "The shed key hangs behind the kitchen door.", {
      parentId: ids.archive,
    });
    await client.connections.import("onedrive", {});
    let run = await syncAfter(before);
    expect(run, JSON.stringify(run)).toMatchObject({
      status: "done",
      counts: { added: 1, updated: 0, deleted: 0, unchanged: 0, failed: 0 },
    });
    expect(graph.requests.some((r) => r.status === 401)).toBe(true);
    expect(graph.tokenRequests).toEqual([
      { grantType: "authorization_code", status: 200 },
      { grantType: "refresh_token", status: 200 },
    ]);
    expect((await connection()).status).toBe("active");

    before = run.id;
    graph.revoke();
    await client.connections.import("onedrive", {});
    run = await syncAfter(before);
    expect(run, JSON.stringify(run)).toMatchObject({ status: "auth_expired", errorCode: "auth_expired" });
    expect((await connection()).status).toBe("auth_expired");
    expect(graph.tokenRequests.at(-1)).toEqual({ grantType: "refresh_token", status: 400 });
    // What was synced stays.
    expect(await titles()).toEqual([
      "2019-harvest.txt",
      "garden-plan.txt",
      "mulch.txt",
      "seeds.txt",
      "shed.txt",
      "tools.txt",
    ]);
    // An auth_expired connection is not synced by an import.
    expect(await client.connections.import("onedrive", {})).toMatch(/started for 0/);
  });

  it("skips the picker for a connection with syncScope full, and syncs the whole drive", async () => {
    const created = await client.connections.create("onedrive", {
      containerTag: "everything",
      redirectUrl: landing,
      metadata: { syncScope: "full" },
    });
    const id = created.id;
    expect((await connection(id)).status).toBe("pending");
    const seen = graph.requests.length;
    // Consent → our callback → straight back to the caller's redirectUrl.
    const back = await consent(created.authLink);
    expect(back.origin + back.pathname).toBe(landing);
    expect(back.searchParams.get("connectionId")).toBe(id);
    expect(back.searchParams.get("status")).toBe("connected");

    const run = await syncAfter(undefined, id);
    expect(run, JSON.stringify(run)).toMatchObject({
      status: "done",
      trigger: "create",
      // The file refused to this account is skipped here too.
      counts: expect.objectContaining({ added: 9, updated: 0, deleted: 0, unchanged: 0 }),
    });
    expect(await connection(id)).toMatchObject({ status: "active", metadata: { syncScope: "full" } });
    expect(await titles("everything")).toEqual([
      "2019-harvest.txt",
      "diary.txt",
      "garden-plan.txt",
      "loose.txt",
      "mulch.txt",
      "outside.txt",
      "seeds.txt",
      "shed.txt",
      "tools.txt",
    ]);
    expect(graphPaths(seen).some((p) => p.startsWith("/v1.0/me/drive/root/delta"))).toBe(true);
    // The first connection is untouched.
    expect((await connection()).status).toBe("auth_expired");
    expect(await titles("garden")).toHaveLength(6);
    await processed("everything");
    const diary = await client.search.documents({ q: "private diary", containerTags: ["everything"] });
    expect(diary.results[0]?.title).toBe("diary.txt");
  });
  it("shares one request budget between two connections of one user, waiting out 429s in place mid-listing", async () => {
    // Two more connections of the same Microsoft account, small delta pages, and a user quota far below
    // what two syncs would send at once: Graph answers 429 with Retry-After mid-listing.
    const connect = async (tag: string) => {
      const created = await client.connections.create("onedrive", {
        containerTag: tag,
        redirectUrl: landing,
        metadata: { syncScope: "full", pageSize: 2 },
      });
      await consent(created.authLink);
      return created.id;
    };
    const seen = graph.requests.length;
    // Consent starts each first sync at once: the quota applies from the first listing request on.
    graph.throttleUser({ requests: 6, windowSeconds: 2 });
    const first = await connect("shared-a");
    const second = await connect("shared-b");
    const runs = await Promise.all([syncAfter(undefined, first), syncAfter(undefined, second)]);
    graph.throttleUser(null);
    const expected = await titles("everything");
    for (const [i, run] of runs.entries()) {
      expect(run, JSON.stringify(run)).toMatchObject({ status: "done", errorCode: null });
      expect(run.counts.added).toBe(expected.length);
      expect(await titles(i === 0 ? "shared-a" : "shared-b")).toEqual(expected);
      expect((await connection(i === 0 ? first : second)).status).toBe("active");
    }
    const requests = graph.requests.slice(seen).filter((r) => r.path.startsWith("/v1.0/"));
    const throttled = requests.filter((r) => r.status === 429);
    expect(throttled.length).toBeGreaterThan(0);
    // Throttled between delta pages of a walk already under way: a delta page answered before a 429 of
    // the same token.
    expect(
      throttled.some((t) =>
        requests
          .slice(0, requests.indexOf(t))
          .some((r) => r.token === t.token && r.status === 200 && r.path.includes("/delta")),
      ),
    ).toBe(true);
    // No page was listed twice by one connection: each throttled request was sent again in place, and no
    // attempt started its walk over.
    const listed = new Map<string, number>();
    for (const r of requests.filter((r) => r.status === 200 && r.path.includes("/delta"))) {
      const key = `${r.token} ${r.path}`;
      listed.set(key, (listed.get(key) ?? 0) + 1);
    }
    expect(listed.size).toBeGreaterThan(4);
    expect([...listed.values()].every((n) => n === 1)).toBe(true);
  });
});
