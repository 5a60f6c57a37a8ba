import { createHash } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectorConfigError, ConnectorRateLimitError, ItemSkippedError } from "../../connectors/errors.ts";
import type { ListPage, SourceItem, SyncContext } from "../../connectors/types.ts";
import { GuardedHttpClient } from "../../connectors/web-crawler/http.ts";
import { webCrawlerConnector as connector } from "../../connectors/web-crawler/index.ts";
import {
  splitStartUrls,
  type WebCrawlerConfig,
  type WebCrawlerSecrets,
  webCrawlerConfigSchema,
} from "../../connectors/web-crawler/settings.ts";
import { type Cursor, crawlPage } from "../../connectors/web-crawler/sync.ts";
import { FetchRefusedError } from "../../pipeline/safe-fetch.ts";
import {
  htmlPage,
  type LocalSite,
  NOT_FOUND_TEXT,
  sitemapXml,
  startLocalSite,
} from "../support/local-site.ts";

type Ctx = SyncContext<WebCrawlerConfig, WebCrawlerSecrets>;

function ctxFor(metadata: Record<string, string | number | boolean>, allowPrivateNetwork = true): Ctx {
  return {
    connectionId: "conn-test",
    config: webCrawlerConfigSchema.parse(metadata),
    secrets: {},
    network: { allowPrivateNetwork, timeoutMs: 5_000, maxBytes: 2_000_000 },
    signal: new AbortController().signal,
    heartbeat: () => {},
    log: pino({ level: "silent" }),
  };
}

interface Pass {
  items: SourceItem[];
  pages: number;
}

/** A whole pass the way the engine runs it, the cursor serialised between pages as a checkpoint would be. */
async function runPass(ctx: Ctx, budget?: number): Promise<Pass> {
  let cursor: Cursor | null = await connector.initialCursor(ctx);
  const items: SourceItem[] = [];
  let pages = 0;
  while (cursor) {
    const page: ListPage<Cursor> =
      budget === undefined ? await connector.listPage(ctx, cursor) : await crawlPage(ctx, cursor, budget);
    pages++;
    items.push(...page.items);
    cursor = page.next ? (JSON.parse(JSON.stringify(page.next)) as Cursor) : null;
    if (pages > 500) throw new Error("pass did not end");
  }
  return { items, pages };
}

const paths = (items: SourceItem[], site: LocalSite) => items.map((i) => i.id.replace(site.url, "")).sort();
const byPath = (items: SourceItem[], site: LocalSite) =>
  new Map(items.map((i) => [i.id.replace(site.url, ""), i] as const));
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

let site: LocalSite;
let other: LocalSite;

function buildSite(s: LocalSite, o: LocalSite) {
  s.setPage(
    "/",
    htmlPage(
      "Home",
      ["Welcome to the harbour museum, home of the ropewalk collection."],
      [
        "/about",
        "/about#history", // the same page: fragments are not pages
        "/blog",
        "/private/secret",
        "/missing",
        "/data.json",
        "/files/report.pdf",
        "/noindex",
        "/old-about",
        `${o.url}/elsewhere`,
        "mailto:someone@example.com",
      ],
    ),
  );
  s.setPage(
    "/about",
    htmlPage("About", ["The museum was founded by lighthouse keepers in 1921."], ["/team"]),
  );
  s.setPage("/team", htmlPage("Team", ["Our curators restore brass sextants by hand."], ["/team/deep"]));
  s.setPage(
    "/team/deep",
    htmlPage("Deep", ["Three links away lives the archive of tide tables."], ["/team/deeper"]),
  );
  s.setPage("/team/deeper", htmlPage("Deeper", ["Four links away: beyond the default depth."]));
  s.setPage("/blog", htmlPage("Blog", ["News from the workshop and the slipway."], ["/blog/post-1"]));
  s.setPage("/blog/post-1", htmlPage("Post one", ["The first post describes caulking a wooden hull."]));
  s.setPage("/private/secret", htmlPage("Secret", ["Robots must never read this staff rota."]));
  s.setPage("/data.json", { body: '{"text":"json is not a page"}', contentType: "application/json" });
  s.setPage("/files/report.pdf", { body: "%PDF-1.4 not really", contentType: "application/pdf" });
  s.setPage(
    "/noindex",
    `<html><head><title>Hidden</title><meta name="robots" content="noindex"></head><body><p>Not for the index.</p><a href="/via-noindex">next</a></body></html>`,
  );
  s.setPage("/via-noindex", htmlPage("Via noindex", ["Reached through a page that is not indexed itself."]));
  s.setPage("/old-about", { body: "", status: 301, headers: { location: "/about" } });
  s.setPage("/only-in-sitemap", htmlPage("Sitemap only", ["Nothing links here; only the sitemap knows it."]));
  s.setPage(
    "/from-robots-sitemap",
    htmlPage("Robots sitemap", ["Listed by the sitemap named in robots.txt."]),
  );
  s.setPage("/robots.txt", `User-agent: *\nDisallow: /private/\n\nSitemap: ${s.url}/extra-sitemap.xml\n`);
  s.setPage(
    "/sitemap.xml",
    sitemapXml([`${s.url}/only-in-sitemap`, `${s.url}/about`, `${o.url}/other-sitemap`]),
  );
  s.setPage("/extra-sitemap.xml", sitemapXml([`${s.url}/from-robots-sitemap`]));
  o.setPage("/elsewhere", htmlPage("Elsewhere", ["Another origin entirely."]));
  o.setPage("/other-sitemap", htmlPage("Other", ["Another origin in the sitemap."]));
}

const FIRST_PASS = [
  "/",
  "/about",
  "/blog",
  "/blog/post-1",
  "/from-robots-sitemap",
  "/only-in-sitemap",
  "/team",
  "/team/deep",
  "/via-noindex",
];

beforeAll(async () => {
  site = await startLocalSite();
  other = await startLocalSite();
  buildSite(site, other);
});

afterAll(async () => {
  await site?.stop();
  await other?.stop();
});

describe("web-crawler config", () => {
  it("accepts several start URLs separated by commas or whitespace, and startUrl", () => {
    expect(splitStartUrls("https://a.example/x, https://b.example/y\nhttps://c.example/?q=1,2")).toEqual([
      "https://a.example/x",
      "https://b.example/y",
      "https://c.example/?q=1,2",
    ]);
    const config = webCrawlerConfigSchema.parse({
      startUrls: "https://a.example/#top https://a.example/",
      startUrl: "https://b.example",
    });
    expect(config.startUrls).toEqual(["https://a.example/", "https://b.example/"]);
    expect(config).toMatchObject({
      maxDepth: 3,
      maxPages: 200,
      sameOrigin: true,
      respectRobotsTxt: true,
      useSitemaps: true,
    });
    expect(config.includePattern).toBeUndefined();
  });

  it("takes numbers and booleans given as strings", () => {
    const config = webCrawlerConfigSchema.parse({
      startUrl: "https://a.example",
      maxDepth: "1",
      maxPages: 50,
      sameOrigin: "false",
      respectRobotsTxt: false,
      useSitemaps: "no",
    });
    expect(config).toMatchObject({
      maxDepth: 1,
      maxPages: 50,
      sameOrigin: false,
      respectRobotsTxt: false,
      useSitemaps: false,
    });
  });

  it("rejects settings that can never work", () => {
    const bad = [
      {},
      { startUrls: "   " },
      { startUrls: "ftp://a.example/" },
      { startUrls: "not a url" },
      { startUrls: "https://user:pw@a.example/" },
      { startUrls: "https://a.example", maxPages: 5001 },
      { startUrls: "https://a.example", maxPages: 0 },
      { startUrls: "https://a.example", maxDepth: -1 },
      { startUrls: "https://a.example", includePattern: "([" },
      { startUrls: "https://a.example", sameOrigin: "perhaps" },
    ];
    for (const metadata of bad)
      expect(webCrawlerConfigSchema.safeParse(metadata).success, JSON.stringify(metadata)).toBe(false);
  });

  it("declares a full listing without secrets", () => {
    expect(connector.provider).toBe("web-crawler");
    expect(connector.listing).toBe("full");
    expect(connector.secretKeys).toEqual([]);
  });
});

describe("web-crawler against a local site", () => {
  let first: Pass;

  it("finds linked and sitemap-only pages with their text, and nothing else", async () => {
    const before = site.requests.length;
    first = await runPass(ctxFor({ startUrls: `${site.url}/` }));
    expect(paths(first.items, site)).toEqual(FIRST_PASS);
    expect(new Set(first.items.map((i) => i.id)).size).toBe(first.items.length);

    const pages = byPath(first.items, site);
    const about = pages.get("/about");
    expect(about?.content?.title).toBe("About");
    expect(about?.content?.text).toContain("founded by lighthouse keepers in 1921");
    expect(about?.content?.url).toBe(`${site.url}/about`);
    expect(about?.content?.filepath).toBe("/about");
    expect(pages.get("/only-in-sitemap")?.content?.text).toContain("only the sitemap knows it");
    expect(pages.get("/team/deep")?.content?.text).toContain("archive of tide tables");
    for (const item of first.items) {
      expect(item.content?.text).toBeTruthy();
      expect(item.version).toBe(sha256(`${item.content?.title ?? ""}\0${item.content?.text}`));
      expect(item.content?.text).not.toContain(NOT_FOUND_TEXT);
    }

    const requested = site.requests.slice(before);
    expect(requested).toContain("/robots.txt");
    expect(requested).toContain("/missing"); // fetched, answered 404, not listed
    expect(requested.some((p) => p.startsWith("/private/"))).toBe(false);
    expect(requested).not.toContain("/team/deeper"); // depth 4 > maxDepth 3
    expect(requested).not.toContain("/files/report.pdf"); // never requested: not a page
    expect(other.requests).toEqual([]); // other origins are not crawled, not even from the sitemap
  });

  it("fetchItem re-fetches a page, and gives null for a 404", async () => {
    const ctx = ctxFor({ startUrls: `${site.url}/` });
    const fetched = await connector.fetchItem(ctx, { id: `${site.url}/team`, version: "x" });
    expect(fetched?.text).toContain("brass sextants");
    expect(fetched?.filepath).toBe("/team");
    expect(await connector.fetchItem(ctx, { id: `${site.url}/missing`, version: "x" })).toBeNull();
    expect(await connector.fetchItem(ctx, { id: `${site.url}/data.json`, version: "x" })).toBeNull();
  });

  it("fetchItem skips a page the site refuses (401, 403) as no_permission: refused is not gone", async () => {
    const ctx = ctxFor({ startUrls: `${site.url}/` });
    for (const status of [401, 403]) {
      site.setPage(`/refused-${status}`, { body: "<html><body>Sign in first</body></html>", status });
      const refused = await connector
        .fetchItem(ctx, { id: `${site.url}/refused-${status}`, version: "x" })
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ItemSkippedError);
      expect(refused).toMatchObject({
        reason: "no_permission",
        message: expect.stringContaining(String(status)),
      });
      site.removePage(`/refused-${status}`);
    }
  });

  it("verify accepts the site and rejects a start URL that is a 404", async () => {
    await expect(connector.verify?.(ctxFor({ startUrls: `${site.url}/` }))).resolves.toBeUndefined();
    await expect(connector.verify?.(ctxFor({ startUrls: `${site.url}/missing` }))).rejects.toBeInstanceOf(
      ConnectorConfigError,
    );
  });

  it("keeps to maxDepth", async () => {
    const depth0 = await runPass(ctxFor({ startUrls: `${site.url}/`, maxDepth: 0, useSitemaps: false }));
    expect(paths(depth0.items, site)).toEqual(["/"]);
    const depth1 = await runPass(ctxFor({ startUrls: `${site.url}/`, maxDepth: 1, useSitemaps: false }));
    expect(paths(depth1.items, site)).toEqual(["/", "/about", "/blog"]);
    // Sitemap entries are depth 0 like start URLs: listed even when no link is followed.
    const sitemap0 = await runPass(ctxFor({ startUrls: `${site.url}/`, maxDepth: 0 }));
    expect(paths(sitemap0.items, site)).toEqual(["/", "/about", "/from-robots-sitemap", "/only-in-sitemap"]);
  });

  it("keeps to maxPages, breadth first", async () => {
    const limited = await runPass(ctxFor({ startUrls: `${site.url}/`, maxPages: 3 }));
    expect(limited.items).toHaveLength(3);
    expect(paths(limited.items, site)).toEqual(["/", "/about", "/blog"]);
  });

  it("follows include and exclude patterns", async () => {
    const excluded = await runPass(ctxFor({ startUrls: `${site.url}/`, excludePattern: "/(blog|team)" }));
    expect(paths(excluded.items, site)).toEqual([
      "/",
      "/about",
      "/from-robots-sitemap",
      "/only-in-sitemap",
      "/via-noindex",
    ]);
    // The start page is fetched for its links but, not matching, is not listed.
    const included = await runPass(ctxFor({ startUrls: `${site.url}/`, includePattern: "/(about|team)" }));
    expect(paths(included.items, site)).toEqual(["/about", "/team", "/team/deep"]);
  });

  it("without respectRobotsTxt reads disallowed and noindex pages too", async () => {
    const pass = await runPass(ctxFor({ startUrls: `${site.url}/`, respectRobotsTxt: false, maxDepth: 1 }));
    expect(paths(pass.items, site)).toContain("/private/secret");
    expect(paths(pass.items, site)).toContain("/noindex");
  });

  it("lists the same pages over many small pages of work as in one", async () => {
    const wide = await startLocalSite();
    try {
      const links = Array.from({ length: 45 }, (_, i) => `/p/${i}`);
      wide.setPage("/", htmlPage("Index", ["An index of numbered pages."], links));
      for (const [i, link] of links.entries()) {
        // Each page also links back and to its neighbours, so the same URL is found many times.
        const neighbours = [`/p/${(i + 1) % 45}`, `/p/${(i + 44) % 45}`, "/", `${link}#top`];
        wide.setPage(
          link,
          htmlPage(`Page ${i}`, [`This is numbered page ${i} of the wide site.`], neighbours),
        );
      }
      wide.setPage("/sitemap.xml", sitemapXml([`${wide.url}/p/3`, `${wide.url}/extra`]));
      wide.setPage("/extra", htmlPage("Extra", ["Only in the sitemap of the wide site."], ["/p/44"]));
      const ctx = ctxFor({ startUrls: wide.url });

      const whole = await runPass(ctx, Number.POSITIVE_INFINITY);
      expect(whole.pages).toBe(1);
      const paged = await runPass(ctx, 7);
      expect(paged.pages).toBeGreaterThanOrEqual(7);
      const standard = await runPass(ctx);
      expect(standard.pages).toBeGreaterThan(1);

      expect(whole.items).toHaveLength(47);
      for (const pass of [paged, standard]) {
        expect(new Set(pass.items.map((i) => i.id)).size).toBe(pass.items.length);
        expect(new Map(pass.items.map((i) => [i.id, i.version]))).toEqual(
          new Map(whole.items.map((i) => [i.id, i.version])),
        );
      }
    } finally {
      await wide.stop();
    }
  });

  it("a second pass after changes lists exactly the new set, with a new version only for the changed page", async () => {
    expect(first).toBeDefined();
    site.setPage("/about", htmlPage("About", ["The museum was founded by net makers in 1921."], ["/team"]));
    site.removePage("/blog/post-1");
    site.setPage("/blog/post-2", htmlPage("Post two", ["The second post is about splicing ropes."]));
    site.setPage(
      "/sitemap.xml",
      sitemapXml([`${site.url}/only-in-sitemap`, `${site.url}/about`, `${site.url}/blog/post-2`]),
    );

    const second = await runPass(ctxFor({ startUrls: `${site.url}/` }));
    const expected = [...FIRST_PASS.filter((p) => p !== "/blog/post-1"), "/blog/post-2"].sort();
    expect(paths(second.items, site)).toEqual(expected);

    const before = byPath(first.items, site);
    const after = byPath(second.items, site);
    const changed = [...after.keys()].filter(
      (p) => before.has(p) && before.get(p)?.version !== after.get(p)?.version,
    );
    expect(changed).toEqual(["/about"]);
    expect(after.get("/about")?.content?.text).toContain("net makers");
    expect(after.get("/blog/post-2")?.content?.text).toContain("splicing ropes");
  });
});

describe("web-crawler network policy and failures", () => {
  it("refuses a loopback start URL unless private networks are allowed", async () => {
    const ctx = ctxFor({ startUrls: `${site.url}/` }, false);
    const before = site.requests.length;
    await expect(connector.listPage(ctx, await connector.initialCursor(ctx))).rejects.toBeInstanceOf(
      ConnectorConfigError,
    );
    await expect(connector.verify?.(ctx)).rejects.toBeInstanceOf(ConnectorConfigError);
    const localhost = ctxFor({ startUrls: `http://localhost:${new URL(site.url).port}/` }, false);
    await expect(
      connector.listPage(localhost, await connector.initialCursor(localhost)),
    ).rejects.toBeInstanceOf(ConnectorConfigError);
    expect(site.requests.length).toBe(before);
  });

  it("sends crawlee's requests through the guarded client", async () => {
    const guarded = new GuardedHttpClient({
      allowPrivateNetwork: false,
      timeoutMs: 5_000,
      maxBytes: 1_000_000,
    });
    await expect(guarded.stream({ url: `${site.url}/about` })).rejects.toBeInstanceOf(FetchRefusedError);
    const open = new GuardedHttpClient({ allowPrivateNetwork: true, timeoutMs: 5_000, maxBytes: 1_000_000 });
    const response = await open.sendRequest({ url: `${site.url}/old-about` });
    expect(response.url).toBe(`${site.url}/about`); // redirects are followed, each hop checked
    expect(response.body).toContain("The museum was founded by");
  });

  it("stops when the activity is cancelled", async () => {
    const ctx = ctxFor({ startUrls: `${site.url}/` });
    const controller = new AbortController();
    controller.abort(new Error("worker shutting down"));
    const before = site.requests.length;
    await expect(
      connector.listPage({ ...ctx, signal: controller.signal }, await connector.initialCursor(ctx)),
    ).rejects.toThrow("worker shutting down");
    expect(site.requests.length).toBe(before);
  });

  it("reports a 429 as a rate limit", async () => {
    const busy = await startLocalSite({
      "/": htmlPage("Busy", ["A site that asks crawlers to slow down."], ["/slow"]),
      "/slow": { body: "slow down", status: 429, headers: { "retry-after": "30" } },
    });
    try {
      const ctx = ctxFor({ startUrls: busy.url, useSitemaps: false });
      await expect(runPass(ctx)).rejects.toBeInstanceOf(ConnectorRateLimitError);
    } finally {
      await busy.stop();
    }
  });

  it("fails (to be retried) rather than list nothing when the site is down", async () => {
    const gone = await startLocalSite({ "/": htmlPage("Gone", ["Soon unreachable."]) });
    const url = gone.url;
    await gone.stop();
    const ctx = ctxFor({ startUrls: url });
    const error = await runPass(ctx).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(ConnectorConfigError);
    expect(String(error)).toMatch(/could not be fetched/);
  });
});
