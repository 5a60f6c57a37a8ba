import pg from "pg";
import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectionProbe } from "../support/connections.ts";
import { caller } from "../support/http.ts";
import { htmlPage, type LocalSite, startLocalSite } from "../support/local-site.ts";
import { freshDatabase, startTestService, TEST_ADMIN_KEY, type TestService } from "../support/service.ts";

// No deletion on one miss, through the real sync engine: a web crawler over a local site whose index drops
// links at random on every crawl, as an incomplete listing does (Notion's search, an eventually consistent
// listing). A page the listing misses is asked about directly: one the site still serves stays, one that
// answers 404 goes at once, one that cannot be asked (5xx) stays until a later listing misses it too. Pages that
// leave the listing all at once but are still served stay; a pass that would delete more than a fifth of the
// pages at once deletes nothing and says so.

const PAGES = 12;
const TAG = "drops";
const page = (i: number) => `/p/${i}`;
const content = (i: number) =>
  htmlPage(`Page ${i}`, [`Page number ${i} of the dropping site describes harbour crane ${i * 7}.`]);

describe("deletions when the listing drops results", () => {
  let service: TestService;
  let site: LocalSite;
  let client: Supermemory;
  let connectionId: string;
  const call = caller(() => service.url);
  const { lastSync, syncAfter } = connectionProbe(call, () => connectionId);
  const live = new Set<number>();

  /** The index, linking each live page with probability `keep` (every one at 1). */
  const publishIndex = (pages: Iterable<number>, keep = 1) => {
    const links = [...pages].filter(() => Math.random() < keep).map(page);
    site.setPage("/", htmlPage("Dropping site", ["The index of the dropping site lists its pages."], links));
    return links.length;
  };

  const syncOnce = async () => {
    const before = (await lastSync())?.id;
    expect((await call("POST", `/v3/connections/${connectionId}/sync`)).status).toBe(200);
    return syncAfter(before);
  };

  /** The page numbers the connection holds a document of. */
  const held = async () => {
    const docs = await client.connections.listDocuments("web-crawler", { containerTags: [TAG] });
    return new Set(
      docs.flatMap((d) => {
        const m = /^Page (\d+)$/.exec(d.title ?? "");
        return m ? [Number(m[1])] : [];
      }),
    );
  };

  beforeAll(async () => {
    site = await startLocalSite();
    for (let i = 0; i < PAGES; i++) {
      site.setPage(page(i), content(i));
      live.add(i);
    }
    publishIndex(live);
    service = await startTestService();
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    const created = await client.connections.create("web-crawler", {
      containerTag: TAG,
      metadata: { startUrls: `${site.url}/`, maxDepth: 1, maxPages: 200 },
    });
    connectionId = created.id;
    const first = await syncAfter(undefined);
    expect(first).toMatchObject({ status: "done", counts: { added: PAGES + 1, deleted: 0 } });
  });

  afterAll(async () => {
    await service?.stop();
    await site?.stop();
  });

  it("never deletes a page the site still serves over 20 crawls that drop links at random, and drops a removed one within two", async () => {
    const removedAt = new Map<number, number>();
    let unreachable: number | undefined;
    for (let crawl = 1; crawl <= 20; crawl++) {
      // Pages leave the site now and then: their links go, and they answer 404.
      if (crawl === 4 || crawl === 9 || crawl === 15) {
        const gone = [...live][0] as number;
        live.delete(gone);
        site.removePage(page(gone));
        removedAt.set(gone, crawl);
      }
      // One page answers 500 while its link is missing: the source cannot say it is gone.
      if (crawl === 6) {
        unreachable = [...live].at(-1) as number;
        site.setPage(page(unreachable), { body: "overloaded", status: 500 });
      }
      if (crawl === 8 && unreachable !== undefined) site.setPage(page(unreachable), content(unreachable));
      const linked = publishIndex(
        [...live].filter((i) => !(crawl >= 6 && crawl < 8 && i === unreachable)),
        0.7,
      );
      const run = await syncOnce();
      expect(run.status, JSON.stringify(run)).toBe("done");
      expect(run.counts.heldForReview).toBe(0);
      const docs = await held();
      // Every page the site serves (or served a moment ago and may again) keeps its document.
      for (const i of live) expect(docs.has(i), `crawl ${crawl}: page ${i} (${linked} linked)`).toBe(true);
      // A page that answers 404 is gone within two crawls of its removal.
      for (const [i, at] of removedAt)
        if (crawl >= at + 1) expect(docs.has(i), `crawl ${crawl}: page ${i}`).toBe(false);
    }
    expect(removedAt.size).toBe(3);
  });

  it("keeps pages that leave the listing all at once but are still served, as an archived inbox", async () => {
    // Below the threshold of 50 a mass deletion is still only a few documents: add pages until it is not.
    for (let i = PAGES; i < PAGES + 50; i++) {
      site.setPage(page(i), content(i));
      live.add(i);
    }
    publishIndex(live);
    const grown = await syncOnce();
    expect(grown.status).toBe("done");
    const all = await held();
    expect(all.size).toBe(live.size);

    // The index lists nothing, yet every page is still there: each is asked about and kept, twice over.
    site.setPage("/", htmlPage("Dropping site", ["The index of the dropping site lists nothing now."], []));
    for (let pass = 0; pass < 2; pass++) {
      const run = await syncOnce();
      expect(run).toMatchObject({ status: "done", counts: { deleted: 0, heldForReview: 0 } });
      expect(await held()).toEqual(all);
    }
    publishIndex(live);
  });

  it("deletes nothing when a pass would delete more than a fifth of the pages, and says how many it held", async () => {
    const all = await held();
    expect(all.size).toBeGreaterThanOrEqual(50);
    // The site answers 404 for every page and its index lists none (a broken deployment, not a mass deletion).
    site.setPage("/", htmlPage("Dropping site", ["The index of the dropping site is being rebuilt."], []));
    for (const i of live) site.removePage(page(i));
    const run = await syncOnce();
    expect(run).toMatchObject({ status: "done", counts: { deleted: 0, heldForReview: live.size } });
    expect(await held()).toEqual(all);

    // The site comes back: the next complete crawl sees every page again; nothing was lost.
    for (const i of live) site.setPage(page(i), content(i));
    publishIndex(live);
    const back = await syncOnce();
    expect(back).toMatchObject({ status: "done", counts: { deleted: 0, heldForReview: 0 } });
    expect(await held()).toEqual(all);
  });
});

// The "cannot say" path to its end: a page that left the index and answers 500 on every request is never
// confirmed gone, so it goes only when a complete crawl at least one sync interval after the first miss
// misses it again. The service runs on the suite's PostgreSQL so the test can move the recorded first miss
// back in time instead of waiting an hour.
describe("deletions of a missed item the source never answers about", () => {
  let service: TestService;
  let site: LocalSite;
  let client: Supermemory;
  let db: pg.Client;
  let connectionId: string;
  const call = caller(() => service.url);
  const { connection, lastSync, syncAfter } = connectionProbe(call, () => connectionId);
  const KEPT = [0, 1, 2, 3];
  const FAILING = 4;

  const syncOnce = async () => {
    const before = (await lastSync())?.id;
    expect((await call("POST", `/v3/connections/${connectionId}/sync`)).status).toBe(200);
    return syncAfter(before);
  };
  const titles = async () =>
    (await client.connections.listDocuments("web-crawler", { containerTags: ["unanswered"] }))
      .map((d) => d.title)
      .sort();
  /** The connection's items a listing has missed, with when it first did. */
  const missed = async () =>
    (
      await db.query<{ item_id: string; missed_at: Date }>(
        "SELECT item_id, missed_at FROM connection_items WHERE connection_id = $1 AND missed_at IS NOT NULL",
        [connectionId],
      )
    ).rows;
  /** As if the first miss had happened `minutes` earlier than recorded. */
  const moveFirstMissBack = (minutes: number) =>
    db.query(
      "UPDATE connection_items SET missed_at = missed_at - make_interval(mins => $2) WHERE connection_id = $1 AND missed_at IS NOT NULL",
      [connectionId, minutes],
    );

  beforeAll(async () => {
    site = await startLocalSite();
    for (const i of [...KEPT, FAILING]) site.setPage(page(i), content(i));
    site.setPage(
      "/",
      htmlPage("Unanswered site", ["The index of the unanswered site."], [...KEPT, FAILING].map(page)),
    );
    const databaseUrl = await freshDatabase();
    service = await startTestService({ env: { DATABASE_URL: databaseUrl } });
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    const created = await client.connections.create("web-crawler", {
      containerTag: "unanswered",
      metadata: { startUrls: `${site.url}/`, maxDepth: 1, maxPages: 50 },
    });
    connectionId = created.id;
    expect(await syncAfter(undefined)).toMatchObject({ status: "done", counts: { added: 6, deleted: 0 } });
  });

  afterAll(async () => {
    await db?.end();
    await service?.stop();
    await site?.stop();
  });

  it("keeps it through misses within one sync interval and deletes it at the first miss after", async () => {
    const interval = (await connection()).syncIntervalMinutes as number;
    expect(interval).toBe(60);
    const everyTitle = await titles();
    expect(everyTitle).toContain(`Page ${FAILING}`);

    // The page leaves the index and fails on every request from now on.
    site.setPage("/", htmlPage("Unanswered site", ["The index of the unanswered site."], KEPT.map(page)));
    site.setPage(page(FAILING), { body: "overloaded", status: 500 });

    const first = await syncOnce();
    expect(first).toMatchObject({ status: "done", counts: { deleted: 0, heldForReview: 0 } });
    const [recorded, ...others] = await missed();
    expect(others).toEqual([]);
    expect(recorded?.item_id).toBe(`${site.url}${page(FAILING)}`);
    expect(await titles()).toEqual(everyTitle);

    // A second miss right away: the first miss stands as recorded, nothing goes.
    const second = await syncOnce();
    expect(second).toMatchObject({ status: "done", counts: { deleted: 0 } });
    expect(await missed()).toEqual([recorded]);
    expect(await titles()).toEqual(everyTitle);

    // Still short of an interval since the first miss (by five minutes): it stays.
    await moveFirstMissBack(interval - 5);
    const third = await syncOnce();
    expect(third).toMatchObject({ status: "done", counts: { deleted: 0 } });
    expect(await missed()).toHaveLength(1);
    expect(await titles()).toEqual(everyTitle);

    // An interval and more since the first miss, and missed again: it goes, and only it.
    await moveFirstMissBack(10);
    const fourth = await syncOnce();
    expect(fourth).toMatchObject({ status: "done", counts: { deleted: 1, failed: 0 } });
    expect(await missed()).toEqual([]);
    expect(await titles()).toEqual(everyTitle.filter((t) => t !== `Page ${FAILING}`));
    expect((await connection()).status).toBe("active");
  });
});
