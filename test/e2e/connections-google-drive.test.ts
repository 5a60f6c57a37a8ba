import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { Browser } from "playwright-core";
import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../support/browser.ts";
import { connectionProbe } from "../support/connections.ts";
import { EXPORT_LIMIT_BYTES, type FakeGoogle, startFakeGoogle } from "../support/fake-google.ts";
import { caller } from "../support/http.ts";
import { repoRoot } from "../support/processes.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, waitFor } from "../support/service.ts";

// Google Drive with the hosted picker, in a real browser (Debian's Chromium driven by playwright-core):
// the authLink's consent page (a local server answering as Google) returns to our callback, the picker
// opens, a folder is ticked and saved, and the sync takes only that folder's files. Then the Drive
// changes API carries edits and deletions, an expired token is refreshed, and a revoked one stops it.
/** Items a run did not sync: `failed`, plus `skipped` (a number, or counts by reason) where the run has it. */
function notSynced(counts: Record<string, unknown>): number {
  const skipped = counts.skipped;
  const skippedTotal =
    typeof skipped === "number"
      ? skipped
      : skipped && typeof skipped === "object"
        ? Object.values(skipped).reduce<number>((sum, n) => sum + (typeof n === "number" ? n : 0), 0)
        : 0;
  return Number(counts.failed ?? 0) + skippedTotal;
}

describe("Google Drive with the hosted picker", () => {
  let service: TestService;
  let google: FakeGoogle;
  let browser: Browser;
  let client: Supermemory;
  let landing: Server;
  let landingUrl: string;
  let connectionId: string;
  const call = caller(() => service.url);
  const ids: Record<string, string> = {};
  const artefacts = path.join(repoRoot, "test-artifacts");

  beforeAll(async () => {
    google = await startFakeGoogle();
    const projects = google.addFolder("Projects");
    const personal = google.addFolder("Personal");
    ids.projects = projects;
    ids.garden = google.addFile({
      name: "garden-plan.txt",
      mimeType: "text/plain",
      content: "Plant the runner beans along the south fence in May.",
      parent: projects,
    });
    ids.budget = google.addDoc("Budget notes", "The greenhouse repair costs four hundred pounds.", projects);
    google.addFile({
      name: "diary.txt",
      mimeType: "text/plain",
      content: "Private diary: never synced, not picked.",
      parent: personal,
    });
    google.addFile({ name: "loose.txt", mimeType: "text/plain", content: "A loose file at the root." });
    landing = createServer((_req, res) =>
      res.writeHead(200, { "content-type": "text/html" }).end("<h1>Back in the app</h1>"),
    );
    await new Promise<void>((resolve) => landing.listen(0, "127.0.0.1", resolve));
    landingUrl = `http://127.0.0.1:${(landing.address() as AddressInfo).port}/connected`;
    service = await startTestService({
      env: {
        GOOGLE_CLIENT_ID: google.clientId,
        GOOGLE_CLIENT_SECRET: google.clientSecret,
        CONNECTOR_ENDPOINTS: JSON.stringify({
          "google-drive": {
            authorizeUrl: google.authorizeUrl,
            tokenUrl: google.tokenUrl,
            apiBaseUrl: google.url,
          },
        }),
      },
    });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    browser = await launchChromium();
    mkdirSync(artefacts, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await google?.stop();
    await new Promise((resolve) => landing?.close(resolve));
  });

  const { connection, syncAfter } = connectionProbe(call, () => connectionId);
  const titles = async () =>
    (await client.connections.listDocuments("google-drive", { containerTags: ["home"] }))
      .map((d) => d.title)
      .sort();

  it("opens the picker from the authLink flow, saves a folder, and syncs only that folder", async () => {
    const created = await client.connections.create("google-drive", {
      containerTag: "home",
      redirectUrl: landingUrl,
    });
    connectionId = created.id;
    const consent = new URL(created.authLink);
    expect(consent.searchParams.get("code_challenge_method")).toBe("S256");
    expect(consent.searchParams.get("access_type")).toBe("offline");

    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await page.goto(created.authLink);
    // Consent → our callback → the picker (scoped by default: no syncScope "full").
    await page.waitForURL(/\/v3\/connections\/[^/]+\/picker\?t=/);
    expect((await connection()).status).toBe("setup");
    // Until the selection is saved, imports leave the connection alone.
    expect(await client.connections.import("google-drive", {})).toMatch(/started for 0/);

    await page.getByRole("heading", { name: /Choose what to sync/ }).waitFor();
    await page.locator(`li[data-id="${ids.projects}"]`).waitFor();
    await page.screenshot({ path: path.join(artefacts, "picker-root.png"), fullPage: true });
    // Look inside the folder, come back, tick it.
    await page.getByRole("button", { name: "Open Projects" }).click();
    await page.locator(`li[data-id="${ids.garden}"]`).waitFor();
    await page.getByRole("button", { name: "My files" }).click();
    await page.getByRole("checkbox", { name: /Projects/ }).check();
    expect(await page.getByRole("status").textContent()).toBe("1 item selected");
    await page.getByRole("button", { name: "Save selection" }).click();
    await page.waitForURL((url) => url.toString().startsWith(landingUrl));
    const back = new URL(page.url());
    expect(back.searchParams.get("connectionId")).toBe(connectionId);
    expect(back.searchParams.get("status")).toBe("connected");
    await page.close();

    const run = await syncAfter(undefined);
    expect(run).toMatchObject({ status: "done", counts: { added: 2, failed: 0 } });
    expect(await titles()).toEqual(["Budget notes", "garden-plan.txt"]);
    const shown = await connection();
    expect(shown.status).toBe("active");
    await waitFor(async () => {
      const docs = await client.connections.listDocuments("google-drive", { containerTags: ["home"] });
      return docs.every((d) => d.status === "done") ? true : undefined;
    }, "documents processed");
    const found = await client.search.documents({ q: "greenhouse repair costs", containerTags: ["home"] });
    expect(found.results[0]?.title).toBe("Budget notes");
  });

  it("follows the Drive changes feed: an edit, a new file in the folder, a deletion", async () => {
    const before = (await connection()).lastSync.id;
    google.updateFile(ids.garden as string, {
      content: "Plant the runner beans along the north wall in June.",
    });
    google.addFile({
      name: "seeds.txt",
      mimeType: "text/plain",
      content: "Order tomato seeds in February.",
      parent: ids.projects,
    });
    google.trashFile(ids.budget as string);
    google.addFile({ name: "outside.txt", mimeType: "text/plain", content: "Outside the picked folder." });
    await client.connections.import("google-drive", {});
    const run = await syncAfter(before);
    expect(run).toMatchObject({ status: "done", counts: { added: 1, updated: 1, deleted: 1, failed: 0 } });
    expect(await titles()).toEqual(["garden-plan.txt", "seeds.txt"]);
  });

  it("syncs every tab of a Sheet, and skips files Google will not give while the rest sync", async () => {
    const before = (await connection()).lastSync.id;
    google.addSheet(
      "Household",
      [
        { title: "Groceries", csv: "item,price\nbread,2\n" },
        { title: "Repairs", csv: "job,cost\nboiler service by the plumber,180\n" },
      ],
      ids.projects,
    );
    // Past Drive's 10 MB export limit: 403 exportSizeLimitExceeded.
    google.addDoc("Minutes archive", "minutes ".repeat(Math.ceil(EXPORT_LIMIT_BYTES / 8) + 10), ids.projects);
    const locked = google.addFile({
      name: "locked.txt",
      content: "Viewers may not download this.",
      parent: ids.projects,
    });
    google.refuseContent(locked, "insufficientFilePermissions");
    // Downloads turned off for viewers, and another domain's policy: each skipped alone.
    const viewOnly = google.addFile({ name: "view-only.txt", content: "Look only.", parent: ids.projects });
    google.refuseContent(viewOnly, "cannotDownloadFile");
    const partner = google.addFile({ name: "partner.txt", content: "Their domain.", parent: ids.projects });
    google.refuseContent(partner, "domainPolicy");
    // Deleted for good between the listing and the fetch: 404.
    const racing = google.addFile({ name: "racing.txt", content: "Soon gone.", parent: ids.projects });
    google.deleteAfterListing(racing);
    await client.connections.import("google-drive", {});
    const run = await syncAfter(before);
    expect(run).toMatchObject({ status: "done", counts: { added: 1 } });
    // Counted as failed until the engine counts ItemSkippedError as skipped; either way, all five show.
    expect(notSynced(run.counts)).toBe(5);
    expect((await connection()).status).toBe("active");
    expect(await titles()).toEqual(["Household", "garden-plan.txt", "seeds.txt"]);
    await waitFor(async () => {
      const docs = await client.connections.listDocuments("google-drive", { containerTags: ["home"] });
      return docs.every((d) => d.status === "done") ? true : undefined;
    }, "documents processed");
    // The second tab, which a CSV export would have dropped, is searchable.
    const found = await client.search.documents({ q: "boiler service plumber", containerTags: ["home"] });
    expect(found.results[0]?.title).toBe("Household");
  });

  it("shares one request budget between two connections of one user, waiting out 403 user rate limits in place", async () => {
    const connect = async (tag: string) => {
      const created = await client.connections.create("google-drive", {
        containerTag: tag,
        redirectUrl: landingUrl,
        metadata: { syncScope: "full", pageSize: 2 },
      });
      // Consent → our callback → straight back to the caller (no picker with syncScope "full").
      const toCallback = await fetch(created.authLink, { redirect: "manual" });
      const back = await fetch(toCallback.headers.get("location") as string, { redirect: "manual" });
      expect(back.headers.get("location")).toContain("status=connected");
      return created.id;
    };
    const seen = google.requests.length;
    // Far below what two first syncs send at once, counted over both connections' tokens.
    google.throttleUser({ requests: 6, windowSeconds: 2 });
    const first = await connect("shared-a");
    const second = await connect("shared-b");
    const runs = await Promise.all([syncAfter(undefined, first), syncAfter(undefined, second)]);
    google.throttleUser(null);
    const listed = async (tag: string) =>
      (await client.connections.listDocuments("google-drive", { containerTags: [tag] }))
        .map((d) => d.title)
        .sort();
    const a = await listed("shared-a");
    expect(a).toContain("loose.txt");
    expect(a).toContain("diary.txt");
    expect(await listed("shared-b")).toEqual(a);
    for (const [i, run] of runs.entries()) {
      expect(run, JSON.stringify(run)).toMatchObject({ status: "done", errorCode: null });
      expect(run.counts.added).toBe(a.length);
      expect((await connection(i === 0 ? first : second)).status).toBe("active");
    }
    const requests = google.requests.slice(seen).filter((r) => r.path.startsWith("/drive/v3/"));
    const limited = requests.filter((r) => r.status === 403);
    expect(limited.length).toBeGreaterThan(0);
    // Some came mid-listing: after a page of files.list answered to the same token.
    expect(
      limited.some((t) =>
        requests
          .slice(0, requests.indexOf(t))
          .some(
            (r) =>
              r.authorization === t.authorization &&
              r.status === 200 &&
              r.path.startsWith("/drive/v3/files?"),
          ),
      ),
    ).toBe(true);
    // No listing page answered twice to one connection: throttled requests were sent again in place.
    const pages = new Map<string, number>();
    for (const r of requests.filter((r) => r.status === 200 && r.path.startsWith("/drive/v3/files?"))) {
      const key = `${r.authorization} ${r.path}`;
      pages.set(key, (pages.get(key) ?? 0) + 1);
    }
    expect(pages.size).toBeGreaterThan(4);
    expect([...pages.values()].every((n) => n === 1)).toBe(true);
  });

  it("refreshes an expired token, and stops with auth_expired when access is revoked", async () => {
    let before = (await connection()).lastSync.id;
    google.expireAccessTokens();
    google.addFile({
      name: "tools.txt",
      mimeType: "text/plain",
      content: "The spade is in the shed.",
      parent: ids.projects,
    });
    await client.connections.import("google-drive", {});
    let run = await syncAfter(before);
    expect(run).toMatchObject({ status: "done", counts: { added: 1 } });

    before = run.id;
    google.revoke();
    await client.connections.import("google-drive", {});
    run = await syncAfter(before);
    expect(run).toMatchObject({ status: "auth_expired" });
    expect((await connection()).status).toBe("auth_expired");
    expect(await titles()).toEqual(["Household", "garden-plan.txt", "seeds.txt", "tools.txt"]);
  });
});
