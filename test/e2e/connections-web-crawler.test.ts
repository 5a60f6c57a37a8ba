import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectionProbe } from "../support/connections.ts";
import { caller } from "../support/http.ts";
import { htmlPage, type LocalSite, sitemapXml, startLocalSite } from "../support/local-site.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, waitFor } from "../support/service.ts";

// The web crawler end to end: a connection created through the SDK crawls a local site on 127.0.0.1
// (linked pages, a page only the sitemap knows, a dead link, a page robots.txt disallows) through the
// real Temporal sync workflow, its pages become searchable documents, and a later import applies exactly
// the changes made to the site.
describe("web-crawler connections through the sync engine", () => {
  let service: TestService;
  let site: LocalSite;
  let client: Supermemory;
  let connectionId: string;
  let aboutId: string | undefined;
  const call = caller(() => service.url);
  const TAG = "site";

  beforeAll(async () => {
    site = await startLocalSite();
    site.setPage(
      "/",
      htmlPage(
        "Tidewater Rowing Club",
        ["Welcome to the Tidewater rowing club, where members row on the estuary every Saturday morning."],
        ["/about", "/guides", "/missing", "/private/staff"],
      ),
    );
    site.setPage(
      "/about",
      htmlPage(
        "About the club",
        ["The club was founded by ferry pilots in 1898 and still keeps four wooden racing gigs."],
        ["/team"],
      ),
    );
    site.setPage(
      "/team",
      htmlPage("Coaching team", [
        "Our coaches teach sliding-seat technique to beginners on Tuesday evenings.",
      ]),
    );
    site.setPage(
      "/guides",
      htmlPage(
        "Member guides",
        ["Guides for members about rigging the boats and reading the tide tables."],
        ["/guides/knots", "/guides/tides"],
      ),
    );
    site.setPage(
      "/guides/knots",
      htmlPage("Knots", ["The bowline knot secures the painter to the mooring ring without slipping."]),
    );
    site.setPage(
      "/guides/tides",
      htmlPage("Tides", ["Spring tides on the estuary run strongest two hours after high water."]),
    );
    // Nothing links here: only the sitemap lists it.
    site.setPage(
      "/regatta",
      htmlPage("Autumn regatta", ["The autumn regatta timetable lists twelve heats for coxed quads."]),
    );
    site.setPage(
      "/private/staff",
      htmlPage("Staff only", ["The boathouse alarm code changes on the first day of every month."]),
    );
    site.setPage("/robots.txt", "User-agent: *\nDisallow: /private/\n");
    site.setPage("/sitemap.xml", sitemapXml([`${site.url}/regatta`, `${site.url}/about`]));
    service = await startTestService();
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });

  afterAll(async () => {
    await service?.stop();
    await site?.stop();
  });

  const { lastSync, syncAfter } = connectionProbe(call, () => connectionId);
  const documentsDone = () =>
    waitFor(async () => {
      const docs = await client.connections.listDocuments("web-crawler", { containerTags: [TAG] });
      return docs.every((d) => d.status === "done" || d.status === "failed") ? docs : undefined;
    }, "the crawled documents to be processed");
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

  const FIRST_TITLES = [
    "About the club",
    "Autumn regatta",
    "Coaching team",
    "Knots",
    "Member guides",
    "Tides",
    "Tidewater Rowing Club",
  ];

  it("crawls linked and sitemap-only pages into searchable documents, not the 404 or disallowed pages", async () => {
    const created = await client.connections.create("web-crawler", {
      containerTag: TAG,
      metadata: { startUrls: `${site.url}/`, maxDepth: 2, maxPages: 50 },
    });
    connectionId = created.id;
    expect(created.expiresIn).toBe("0");

    const run = await syncAfter(undefined);
    expect(run).toMatchObject({
      status: "done",
      trigger: "create",
      errorCode: null,
      counts: { added: 7, updated: 0, deleted: 0, unchanged: 0, failed: 0 },
    });
    const connection = (await call("GET", `/v3/connections/${connectionId}`)).json;
    expect(connection).toMatchObject({ provider: "web-crawler", status: "active", containerTags: [TAG] });

    const docs = await documentsDone();
    expect(docs.filter((d) => d.status !== "done")).toEqual([]);
    expect(docs.map((d) => d.title).sort()).toEqual(FIRST_TITLES);
    aboutId = docs.find((d) => d.title === "About the club")?.id;

    // The dead link was fetched and answered 404; the disallowed page was never even requested.
    expect(site.requests).toContain("/missing");
    expect(site.requests).toContain("/robots.txt");
    expect(site.requests.some((p) => p.startsWith("/private/"))).toBe(false);
    const all = await allDocuments();
    expect(all).toHaveLength(7);
    expect(all.map((d) => d.title)).not.toContain("Not found");
    expect(all.map((d) => d.title)).not.toContain("Staff only");
    const about = all.find((d) => d.title === "About the club");
    expect(about).toMatchObject({ connectionId, url: `${site.url}/about`, filepath: "/about" });

    const found = await search("founded by ferry pilots, four wooden racing gigs");
    expect(found.titles[0]).toBe("About the club");
    expect(found.text).toContain("ferry pilots in 1898");
    expect((await search("autumn regatta timetable heats")).titles[0]).toBe("Autumn regatta");
    // Nothing of the 404 page or the disallowed page was indexed.
    expect((await search("boathouse alarm code")).text).not.toContain("alarm code");
    expect((await search("page could not be found")).text).not.toContain("could not be found");
  });

  it("an import applies exactly the site's changes: one page modified, one removed, one added", async () => {
    expect(aboutId).toBeDefined();
    const before = (await lastSync())?.id;
    // Modified, and now links to a new page.
    site.setPage(
      "/about",
      htmlPage(
        "About the club",
        ["The club was founded by lighthouse keepers in 1898 and now races six carbon gigs."],
        ["/team", "/news"],
      ),
    );
    site.setPage(
      "/news",
      htmlPage("Club news", ["A new electric safety launch arrived from the boatyard on Monday."]),
    );
    // Removed: /guides still links to it, a dead link now.
    site.removePage("/guides/knots");

    expect(await client.connections.import("web-crawler", { containerTags: [TAG] })).toMatch(/started for 1/);
    const run = await syncAfter(before);
    expect(run).toMatchObject({
      status: "done",
      trigger: "import",
      errorCode: null,
      counts: { added: 1, updated: 1, deleted: 1, unchanged: 5, failed: 0 },
    });

    const docs = await documentsDone();
    expect(docs.filter((d) => d.status !== "done")).toEqual([]);
    const expected = [...FIRST_TITLES.filter((t) => t !== "Knots"), "Club news"].sort();
    expect(docs.map((d) => d.title).sort()).toEqual(expected);
    // The modified page was updated in place.
    expect(docs.find((d) => d.title === "About the club")?.id).toBe(aboutId);

    const changed = await search("founded by lighthouse keepers, six carbon gigs");
    expect(changed.titles[0]).toBe("About the club");
    expect(changed.text).toContain("lighthouse keepers");
    expect(changed.text).not.toContain("ferry pilots");
    const added = await search("electric safety launch from the boatyard");
    expect(added.titles[0]).toBe("Club news");
    const removed = await search("bowline knot painter mooring ring");
    expect(removed.titles).not.toContain("Knots");
    expect(removed.text).not.toContain("bowline");

    // No duplicates: one document per page, each under its own customId.
    const all = await allDocuments();
    expect(all).toHaveLength(expected.length);
    expect(all.map((d) => d.title).sort()).toEqual(expected);
    expect(new Set(all.map((d) => d.customId)).size).toBe(expected.length);
    expect(new Set(all.map((d) => d.url)).size).toBe(expected.length);
  });

  it("a sync with nothing changed touches nothing", async () => {
    const before = await lastSync();
    const docsBefore = await client.connections.listDocuments("web-crawler", { containerTags: [TAG] });
    await client.connections.import("web-crawler", {});
    const run = await syncAfter(before?.id);
    expect(run).toMatchObject({
      status: "done",
      trigger: "import",
      counts: { added: 0, updated: 0, deleted: 0, unchanged: 7, failed: 0 },
    });
    const docs = await client.connections.listDocuments("web-crawler", { containerTags: [TAG] });
    expect(docs.map((d) => `${d.id} ${d.title} ${d.updatedAt}`).sort()).toEqual(
      docsBefore.map((d) => `${d.id} ${d.title} ${d.updatedAt}`).sort(),
    );
  });

  it("syncs this one connection on request and lists its runs, newest first, with their workflow", async () => {
    const before = await lastSync();
    const started = await call("POST", `/v3/connections/${connectionId}/sync`);
    expect(started.status).toBe(200);
    expect(started.json).toMatchObject({ id: connectionId, message: expect.stringMatching(/started/) });
    const run = await syncAfter(before?.id);
    expect(run).toMatchObject({ status: "done", trigger: "import" });

    const listed = await call("GET", `/v3/connections/${connectionId}/runs?limit=50`);
    expect(listed.status).toBe(200);
    const runs = (
      listed.json as { runs: { id: string; trigger: string; startedAt: string; workflowId: string }[] }
    ).runs;
    // The first crawl, two imports through the provider, and this one.
    expect(runs.map((r) => r.trigger)).toEqual(["import", "import", "import", "create"]);
    expect(runs[0]?.id).toBe(run.id);
    const starts = runs.map((r) => Date.parse(r.startedAt));
    expect(starts).toEqual([...starts].sort((a, b) => b - a));
    for (const r of runs) expect(r.workflowId).toBe(`sync/${connectionId}`);
    expect((await call("GET", `/v3/connections/${connectionId}/runs?limit=1`)).json).toEqual({
      runs: [runs[0]],
    });

    expect((await call("GET", `/v3/connections/${connectionId}/runs?limit=0`)).status).toBe(400);
    expect((await call("POST", "/v3/connections/no-such-connection/sync")).status).toBe(404);
    expect((await call("GET", "/v3/connections/no-such-connection/runs")).status).toBe(404);
  });
  it("keeps a page that now answers 403 while the rest syncs, and the connection stays active", async () => {
    const before = await lastSync();
    // A login wall or a firewall rule on one page: the site may serve it again, so it is not gone.
    site.setPage("/guides/tides", { body: "<html><body>Forbidden</body></html>", status: 403 });
    site.setPage(
      "/team",
      htmlPage("Coaching team", ["Our coaches now teach sliding-seat technique on Thursday evenings too."]),
    );
    expect((await call("POST", `/v3/connections/${connectionId}/sync`)).status).toBe(200);
    const run = await syncAfter(before?.id);
    expect(run).toMatchObject({
      status: "done",
      errorCode: null,
      counts: { added: 0, updated: 1, deleted: 0, failed: 0 },
    });
    expect((await call("GET", `/v3/connections/${connectionId}`)).json.status).toBe("active");
    const docs = await documentsDone();
    expect(docs.map((d) => d.title)).toContain("Tides");
    expect((await search("coaches Thursday evenings")).titles[0]).toBe("Coaching team");
  });

  it("shows a run waiting on the site's 429 as lastSyncRun.errorCode rate_limited, in Supermemory's shape", async () => {
    const before = await lastSync();
    site.setPage("/", { body: "<html><body>Slow down</body></html>", status: 429 });
    expect((await call("POST", `/v3/connections/${connectionId}/sync`)).status).toBe(200);
    const waiting = await waitFor(async () => {
      const c = (await call("GET", `/v3/connections/${connectionId}`)).json;
      return c.lastSync?.id !== before?.id && c.lastSyncRun?.errorCode === "rate_limited" ? c : undefined;
    }, "the run to note the rate limit");
    expect(waiting.lastSyncRun).toEqual({
      status: "running",
      errorCode: "rate_limited",
      error: null,
      startedAt: waiting.lastSync.startedAt,
    });
    expect(waiting.lastSync).toMatchObject({ status: "running", errorCode: "rate_limited" });
    // The list answers the same shape.
    const listed = (await call("POST", "/v3/connections/list", {})).json as {
      id: string;
      lastSyncRun?: unknown;
    }[];
    expect(listed.find((c) => c.id === connectionId)?.lastSyncRun).toMatchObject({
      errorCode: "rate_limited",
    });
    // The last case of this file: deleting the connection ends the waiting run.
    expect((await call("DELETE", `/v3/connections/${connectionId}`)).status).toBe(200);
  });
});
