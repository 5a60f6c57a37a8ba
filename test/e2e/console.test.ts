import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { AxeResults } from "axe-core";
import pg from "pg";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleStaticApp } from "../../api/console/static.ts";
import { launchChromium } from "../support/browser.ts";
import { type FakeGoogle, startFakeGoogle } from "../support/fake-google.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { caller } from "../support/http.ts";
import { type LocalSite, startLocalSite } from "../support/local-site.ts";
import { repoRoot } from "../support/processes.ts";
import {
  freshDatabase,
  startTestService,
  TEST_ADMIN_KEY,
  type TestService,
  waitFor,
} from "../support/service.ts";

// The web console at /console/: its own sign-in (admin key or console user, session cookie + CSRF
// token) and pages that call the same REST API as every client. Driven in Debian's Chromium by
// playwright-core; a screenshot of each page goes to test-artifacts/console-<page>.png.
const FIXTURE = path.join(FIXTURES_DIR, "text", "norwich-city.txt");
const PHRASE = "Wolverhampton Wanderers";
const TAG = "console-test";
const USER_EMAIL = "ada@example.com";
const USER_PASSWORD = "correct horse battery staple";

/** npm test builds the console first (scripts/setup.mjs); a direct vitest run builds it here if needed. */
function ensureConsoleBuilt() {
  const dir = path.join(repoRoot, "console");
  const newest = (p: string): number => {
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) return 0;
    if (!st.isDirectory()) return st.mtimeMs;
    return Math.max(st.mtimeMs, ...readdirSync(p).map((n) => newest(path.join(p, n))));
  };
  const built = statSync(path.join(dir, "dist", "index.html"), { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const sources = Math.max(...["src", "index.html", "vite.config.ts"].map((p) => newest(path.join(dir, p))));
  if (built < sources) {
    execFileSync(
      process.execPath,
      [path.join(repoRoot, "node_modules", "vite", "bin", "vite.js"), "build", dir],
      {
        stdio: "ignore",
      },
    );
  }
}

describe("web console", () => {
  let service: TestService;
  let browser: Browser;
  let site: LocalSite;
  let google: FakeGoogle;
  let databaseUrl: string;
  const call = caller(() => service.url);
  const artefacts = path.join(repoRoot, "test-artifacts");
  const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  /** axe-core's WCAG 2 A and AA rules (labels, names, contrast, landmarks) over the page as it is now. */
  async function accessibilityViolations(page: Page) {
    // Evaluated through the DevTools protocol: the console's CSP (rightly) refuses injected script tags.
    await page.evaluate(axeSource);
    return page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run: (...args: unknown[]) => Promise<AxeResults> } }).axe;
      const result = await axe.run(document, {
        runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] },
      });
      return result.violations.map((v) => ({
        rule: v.id,
        impact: v.impact,
        help: v.help,
        nodes: v.nodes
          .slice(0, 3)
          .map((n) => `${n.target.join(" ")}: ${n.failureSummary?.split("\n")[1] ?? ""}`),
      }));
    });
  }

  /** A screenshot for the artefacts, and every page shot is checked for accessibility on the way. */
  const shot = async (page: Page, name: string, fullPage = true) => {
    await page.screenshot({ path: path.join(artefacts, `console-${name}.png`), fullPage });
    expect(await accessibilityViolations(page), `accessibility of ${name}`).toEqual([]);
  };

  beforeAll(async () => {
    ensureConsoleBuilt();
    site = await startLocalSite({
      "/": "<html><head><title>Allotment</title></head><body><p>Leeks grow slowly in clay soil.</p></body></html>",
    });
    google = await startFakeGoogle();
    google.addFolder("Allotment notes");
    databaseUrl = await freshDatabase();
    service = await startTestService({
      env: {
        DATABASE_URL: databaseUrl,
        TEMPORAL_UI_URL: "http://127.0.0.1:8233",
        // Key-expiry notices are looked for often, so the keys page can show one.
        KEY_EXPIRY_NOTICE_INTERVAL: "2s",
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
    browser = await launchChromium();
    mkdirSync(artefacts, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await site?.stop();
    await google?.stop();
  });

  /** Signs in over HTTP; the session cookie (name=value) and the response. */
  async function signIn(body: unknown) {
    const res = await fetch(`${service.url}/v3/console/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const setCookie = res.headers.getSetCookie();
    const json = (await res.json()) as { csrfToken?: string; user?: { kind: string; name: string } };
    return { status: res.status, setCookie, cookie: setCookie[0]?.split(";")[0] ?? "", json };
  }

  const withCookie = (
    cookie: string,
    method: string,
    p: string,
    body?: unknown,
    extra: Record<string, string> = {},
  ) =>
    fetch(`${service.url}${p}`, {
      method,
      headers: {
        cookie,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...extra,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  describe("serving and sessions (HTTP)", () => {
    it("serves the built console at /console/ with content types, and client routes fall back to it", async () => {
      const bare = await fetch(`${service.url}/console`, { redirect: "manual" });
      expect(bare.status).toBe(301);
      expect(bare.headers.get("location")).toBe("/console/");
      const index = await fetch(`${service.url}/console/`);
      expect(index.status).toBe(200);
      expect(index.headers.get("content-type")).toMatch(/^text\/html/);
      expect(index.headers.get("content-security-policy")).toContain("default-src 'self'");
      const html = await index.text();
      const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
      const style = /href="(\/console\/assets\/[^"]+\.css)"/.exec(html)?.[1];
      expect(script && style).toBeTruthy();
      const js = await fetch(`${service.url}${script}`);
      expect(js.headers.get("content-type")).toMatch(/^text\/javascript/);
      expect(js.headers.get("cache-control")).toContain("immutable");
      const css = await fetch(`${service.url}${style}`);
      expect(css.headers.get("content-type")).toMatch(/^text\/css/);
      // A client-side route is the same page; a missing asset is a 404; nothing escapes the folder.
      const route = await fetch(`${service.url}/console/documents/abc`);
      expect(route.status).toBe(200);
      expect(await route.text()).toBe(html);
      expect((await fetch(`${service.url}/console/assets/missing.js`)).status).toBe(404);
      const outside = await fetch(`${service.url}/console/..%2f..%2fpackage.json`);
      expect(await outside.text()).toBe(html);
    });

    it("answers 503 with what to run when the console is not built, and never crashes", async () => {
      const app = consoleStaticApp(path.join(artefacts, "no-console-build-here"));
      const res = await app.request("/console/keys");
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: string }).error).toContain("npm run console:build");
    });

    it("signs in with the admin key: an HttpOnly, SameSite=Strict cookie the API accepts, writes need the CSRF token", async () => {
      const { status, setCookie, cookie, json } = await signIn({ apiKey: TEST_ADMIN_KEY });
      expect(status).toBe(200);
      expect(setCookie[0]).toMatch(/^memory_console=/);
      expect(setCookie[0]).toMatch(/HttpOnly/i);
      expect(setCookie[0]).toMatch(/SameSite=Strict/i);
      expect(setCookie[0]).toMatch(/Path=\//);
      // PUBLIC_URL is http here, so not Secure (a browser would drop it on http).
      expect(setCookie[0]).not.toMatch(/Secure/i);
      expect(json.user?.kind).toBe("key");
      const csrf = json.csrfToken as string;
      expect(csrf.length).toBeGreaterThan(20);

      const session = await withCookie(cookie, "GET", "/v3/console/session");
      expect(session.status).toBe(200);
      expect(((await session.json()) as { csrfToken: string }).csrfToken).toBe(csrf);
      // Reads with the cookie alone.
      const list = await withCookie(cookie, "POST", "/v3/documents/list", {}, { "x-csrf-token": csrf });
      expect(list.status).toBe(200);
      const read = await withCookie(cookie, "GET", "/v3/documents/processing");
      expect(read.status).toBe(200);
      // Writes without the token, or with another one, are refused.
      const noToken = await withCookie(cookie, "POST", "/v3/documents/list", {});
      expect(noToken.status).toBe(403);
      expect(((await noToken.json()) as { code: string }).code).toBe("forbidden");
      const wrong = await withCookie(
        cookie,
        "POST",
        "/v3/documents/list",
        {},
        { "x-csrf-token": `${csrf}x` },
      );
      expect(wrong.status).toBe(403);
      // A bearer header wins over the cookie: requests with one behave as before.
      const badBearer = await withCookie(cookie, "GET", "/v3/documents/processing", undefined, {
        authorization: "Bearer sm_not_a_key",
      });
      expect(badBearer.status).toBe(401);
      // Signing out clears the cookie.
      const out = await withCookie(cookie, "DELETE", "/v3/console/session");
      expect(out.status).toBe(200);
      expect(out.headers.getSetCookie()[0]).toMatch(/memory_console=;.*Max-Age=0/i);
    });

    it("refuses tampered, foreign and missing sessions, and scoped keys", async () => {
      const { cookie } = await signIn({ apiKey: TEST_ADMIN_KEY });
      const [name, value] = cookie.split("=") as [string, string];
      const [payload, signature] = value.split(".") as [string, string];
      const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
      // Same signature, claims changed (a longer expiry): refused.
      const forged = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 86_400_000 })).toString(
        "base64url",
      );
      for (const bad of [
        `${name}=${forged}.${signature}`,
        `${name}=${payload}.${signature.slice(0, -2)}xx`,
        `${name}=junk`,
      ]) {
        const res = await withCookie(bad, "GET", "/v3/documents/processing");
        expect(res.status).toBe(401);
        expect((await withCookie(bad, "GET", "/v3/console/session")).status).toBe(401);
      }
      expect((await fetch(`${service.url}/v3/console/session`)).status).toBe(401);
      expect((await fetch(`${service.url}/v3/documents/processing`)).status).toBe(401);

      // A scoped key cannot sign in; a wrong key neither.
      const scoped = await call("POST", "/v3/auth/scoped-key", { containerTag: "elsewhere" });
      expect(scoped.status).toBe(200);
      expect((await signIn({ apiKey: scoped.json.key })).status).toBe(403);
      expect((await signIn({ apiKey: "sm_wrong" })).status).toBe(401);
      expect((await signIn({ apiKey: TEST_ADMIN_KEY, password: "x" })).status).toBe(400);
    });

    it("console users: created by an admin, scrypt-hashed, wrong passwords refused, disabling ends their sessions", async () => {
      const short = await call("POST", "/v3/console/users", { email: USER_EMAIL, password: "too short" });
      expect(short.status).toBe(400);
      const created = await call("POST", "/v3/console/users", { email: USER_EMAIL, password: USER_PASSWORD });
      expect(created.status).toBe(200);
      expect(created.json).toEqual({
        id: expect.any(String),
        email: USER_EMAIL,
        createdAt: expect.any(String),
        disabledAt: null,
      });
      expect(JSON.stringify(created.json)).not.toContain(USER_PASSWORD);
      expect(
        (await call("POST", "/v3/console/users", { email: USER_EMAIL, password: USER_PASSWORD })).status,
      ).toBe(409);
      const listed = await call("GET", "/v3/console/users");
      expect(listed.json.users.map((u: { email: string }) => u.email)).toContain(USER_EMAIL);
      // Only admins manage users.
      const scoped = await call("POST", "/v3/auth/scoped-key", { containerTag: "elsewhere" });
      expect((await call("GET", "/v3/console/users", undefined, scoped.json.key)).status).toBe(403);

      // The stored hash is scrypt with a memory-hard cost, never the password.
      const hash = await storedPasswordHash(USER_EMAIL);
      const [scheme, n, r, p, salt, digest] = hash.split("$");
      expect(scheme).toBe("scrypt");
      expect(Number(n)).toBeGreaterThanOrEqual(2 ** 14);
      expect(Number(r)).toBe(8);
      expect(Number(p)).toBeGreaterThanOrEqual(1);
      expect(Buffer.from(salt as string, "base64").length).toBe(16);
      expect(Buffer.from(digest as string, "base64").length).toBe(32);
      expect(hash).not.toContain(USER_PASSWORD);

      expect((await signIn({ email: USER_EMAIL, password: `${USER_PASSWORD}!` })).status).toBe(401);
      expect((await signIn({ email: "nobody@example.com", password: USER_PASSWORD })).status).toBe(401);
      const ok = await signIn({ email: USER_EMAIL.toUpperCase(), password: USER_PASSWORD });
      expect(ok.status).toBe(200);
      expect(ok.json.user).toMatchObject({ kind: "user", name: USER_EMAIL });
      const asUser = await withCookie(ok.cookie, "GET", "/v3/console/users");
      expect(asUser.status).toBe(200);

      // A second user, disabled: their live session stops at once.
      const other = await call("POST", "/v3/console/users", {
        email: "bob@example.com",
        password: USER_PASSWORD,
      });
      const bob = await signIn({ email: "bob@example.com", password: USER_PASSWORD });
      expect((await withCookie(bob.cookie, "GET", "/v3/documents/processing")).status).toBe(200);
      expect((await call("DELETE", `/v3/console/users/${other.json.id}`)).status).toBe(200);
      expect((await withCookie(bob.cookie, "GET", "/v3/documents/processing")).status).toBe(401);
      expect((await signIn({ email: "bob@example.com", password: USER_PASSWORD })).status).toBe(401);
      expect((await call("DELETE", `/v3/console/users/${other.json.id}`)).status).toBe(404);
    });

    it("tells the page where the Temporal UI is", async () => {
      const { cookie } = await signIn({ apiKey: TEST_ADMIN_KEY });
      const res = await withCookie(cookie, "GET", "/v3/console/config");
      expect(await res.json()).toMatchObject({
        temporalUiUrl: "http://127.0.0.1:8233",
        temporalNamespace: "default",
      });
    });
  });

  /** The password hash as stored (the service runs on the suite's PostgreSQL here, so it can be read). */
  async function storedPasswordHash(email: string): Promise<string> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const res = await client.query("SELECT password_hash FROM console_users WHERE email = $1", [email]);
      return res.rows[0]?.password_hash as string;
    } finally {
      await client.end();
    }
  }

  describe("in the browser", () => {
    let context: BrowserContext;
    let page: Page;
    let createdSecret = "";
    let createdKeyName = "";
    let documentId = "";

    beforeAll(async () => {
      context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
      page.on("dialog", (d) => void d.accept());
    });

    afterAll(async () => {
      await context?.close();
    });

    it("signs in with the keyboard alone (Tab, typing, Enter)", async () => {
      await page.goto(`${service.url}/console/`);
      await page.getByRole("heading", { name: "Sign in to the memory console" }).waitFor();
      await shot(page, "sign-in");
      // A wrong key first: the error is announced and the form stays.
      await page.keyboard.press("Tab");
      expect(await page.evaluate(() => document.activeElement?.id)).toBe("api-key");
      await page.keyboard.type("sm_wrong_key");
      await page.keyboard.press("Enter");
      await expectAlert(page, /invalid, expired or disabled API key/);
      await page.locator("#api-key").fill("");
      await page.locator("#api-key").focus();
      await page.keyboard.type(TEST_ADMIN_KEY);
      await page.keyboard.press("Tab");
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Sign in with key");
      await page.keyboard.press("Enter");
      await page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
      // The page heading takes focus on arrival; the nav marks where we are.
      await page.waitForFunction(() => document.activeElement?.tagName === "H1");
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("API keys");
      expect(await page.getByRole("link", { name: "Keys" }).getAttribute("aria-current")).toBe("page");
      // The cookie is not readable by scripts.
      expect(await page.evaluate(() => document.cookie)).toBe("");
    });

    it("signs a console user in with email and password, and refuses a wrong password", async () => {
      const other = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const p = await other.newPage();
      await p.goto(`${service.url}/console/`);
      await p.getByLabel("Email").fill(USER_EMAIL);
      await p.getByLabel("Password").fill("not the password");
      await p.getByRole("button", { name: "Sign in", exact: true }).click();
      await expectAlert(p, /wrong email or password/);
      await p.getByLabel("Password").fill(USER_PASSWORD);
      await p.getByRole("button", { name: "Sign in", exact: true }).click();
      await p.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
      await p.getByText(USER_EMAIL, { exact: true }).first().waitFor();
      // Signing out returns to the form, and a reload stays signed out.
      await p.getByRole("button", { name: "Sign out" }).click();
      await p.getByRole("heading", { name: "Sign in to the memory console" }).waitFor();
      await p.reload();
      await p.getByRole("heading", { name: "Sign in to the memory console" }).waitFor();
      await other.close();
    });

    it("creates a key and shows its secret exactly once", async () => {
      createdKeyName = `console key ${Date.now().toString(36)}`;
      await page.getByLabel("Name").fill(createdKeyName);
      await page.getByLabel("Container tags (comma-separated)").fill(TAG);
      await page.getByLabel("Expires in (days, empty = default)").fill("30");
      await page.getByLabel("Contact email for expiry notices").fill("owner@example.com");
      await page.getByLabel("Rate limit (requests per window, empty = default)").fill("100");
      await page.getByRole("button", { name: "Create key" }).click();
      const secretBox = page.getByLabel("Secret");
      await secretBox.waitFor();
      createdSecret = await secretBox.inputValue();
      expect(createdSecret).toMatch(/^sm_/);
      await shot(page, "keys-secret");
      // The key works (inside its container tag).
      const use = await call("POST", "/v3/documents/list", { containerTags: [TAG] }, createdSecret);
      expect(use.status).toBe(200);
      // Dismissed, the secret is gone from the page; the list shows only its prefix.
      await page.getByRole("button", { name: "I have saved it" }).click();
      const row = page.locator("tr", { hasText: createdKeyName });
      await row.waitFor();
      expect(await row.textContent()).toContain(createdSecret.slice(0, 8));
      expect(await page.content()).not.toContain(createdSecret);
      const listed = await call("GET", "/v3/auth/keys");
      expect(JSON.stringify(listed.json)).not.toContain(createdSecret);
      await page.reload();
      await page.locator("tr", { hasText: createdKeyName }).waitFor();
      expect(await page.content()).not.toContain(createdSecret);
      await shot(page, "keys");
    });

    it("shows the key-expiry notices that went out", async () => {
      const soon = await call("POST", "/v3/auth/keys", {
        name: "expires tomorrow",
        containerTags: [TAG],
        expiresInDays: 1,
        contactEmail: "owner@example.com",
      });
      expect(soon.status).toBe(200);
      // No SMTP here: the notice is logged and recorded, which is what the page lists.
      await waitFor(async () => {
        const res = await call("GET", "/v3/auth/key-notices");
        return res.json.notices.some((n: { keyId: string }) => n.keyId === soon.json.id) ? true : undefined;
      }, "a key-expiry notice for the key expiring tomorrow");
      await page.reload();
      const notices = page.getByRole("region", { name: "Key-expiry notices" });
      await notices.getByText("expires tomorrow").first().waitFor();
      expect(await notices.textContent()).toMatch(/1d notice written to the log \(for owner@example\.com\)/);
      expect(await page.locator("tr", { hasText: "expires tomorrow" }).textContent()).toContain("1d");
      await shot(page, "keys-notices");
    });

    it("uploads a file with a progress bar and watches it reach done", async () => {
      await page.getByRole("link", { name: "Documents" }).click();
      await page.getByRole("heading", { name: "Documents", level: 1 }).waitFor();
      await page.getByLabel("File", { exact: true }).setInputFiles(FIXTURE);
      await page.locator("#upload-tag").fill(TAG);
      await page.getByRole("button", { name: "Upload" }).click();
      const follow = page.getByRole("link", { name: "Follow its processing" });
      await follow.waitFor();
      expect(await page.locator("#upload-progress").getAttribute("value")).toBe("100");
      await shot(page, "documents-upload");
      documentId = decodeURIComponent((await follow.getAttribute("href"))?.split("/").pop() ?? "");
      expect(documentId).not.toBe("");
      await follow.click();
      await page.locator(".facts", { hasText: "norwich-city.txt" }).waitFor();
      // The page polls until processing ends.
      await page.locator(".facts .badge-done").waitFor({ timeout: 110_000 });
      await page.getByRole("heading", { name: /^Chunks \(\d+\)$/ }).waitFor();
      const chunkCount = Number(
        /\((\d+)\)/.exec((await page.getByRole("heading", { name: /^Chunks/ }).textContent()) ?? "")?.[1],
      );
      expect(chunkCount).toBeGreaterThan(1);
      // Stages with their times, the text, and a link to the workflow in the Temporal UI.
      const stages = await page.locator("ol.stages li").allTextContents();
      expect(stages.map((s) => s.split(" ")[0])).toEqual([
        "queued",
        "extracting",
        "chunking",
        "embedding",
        "done",
      ]);
      expect(await page.locator("pre.content").textContent()).toContain("Iwan Roberts");
      const workflow = page.getByRole("link", { name: /in Temporal UI/ });
      expect(await workflow.getAttribute("href")).toBe(
        `http://127.0.0.1:8233/namespaces/default/workflows/${encodeURIComponent(`doc/${documentId}/1`)}`,
      );
      await shot(page, "document", false);
      await shot(page, "document-full");
      // Back in the list, filtered by tag and status.
      await page.getByRole("link", { name: "← All documents" }).click();
      await page.locator("#filter-tag").fill(TAG);
      await page.getByLabel("Status").selectOption("done");
      await page.getByRole("button", { name: "Apply filters" }).click();
      await page.locator(`tr[data-document-id="${documentId}"]`).waitFor();
      await page.getByText("Page 1 of 1 (1 documents)").waitFor();
      await shot(page, "documents");
    });

    it("shows documents in processing, live, and reprocesses one", async () => {
      await page.getByRole("link", { name: "Processing" }).click();
      await page.getByRole("heading", { name: "Processing", level: 1 }).waitFor();
      await page.getByText("Nothing is processing right now.").waitFor();
      // Reprocessing from the document page puts it back in processing, with its next workflow run.
      await page.goto(`${service.url}/console/documents/${documentId}`);
      await page.getByRole("button", { name: "Reprocess" }).click();
      await page.getByText("Queued for processing again.").waitFor();
      await page.getByText("(run 2)").waitFor();
      await page.getByRole("link", { name: "Processing" }).click();
      // Either seen while processing (with its run-2 workflow), or already done again: both are live views.
      await waitFor(async () => {
        const text = (await page.locator("main").textContent()) ?? "";
        return text.includes(`doc/${documentId}/2`) || text.includes("Nothing is processing")
          ? true
          : undefined;
      }, "the processing page to show the reprocessed document or none");
      await shot(page, "processing");
      await waitFor(
        async () => {
          const doc = await call("GET", `/v3/documents/${documentId}`);
          return doc.json.status === "done" ? true : undefined;
        },
        "the reprocessed document to be done again",
        110_000,
      );
      await page.getByText("Nothing is processing right now.").waitFor();
    });

    it("finds a phrase of the upload in search, and memories in their timeline", async () => {
      await page.getByRole("link", { name: "Search" }).click();
      await page.getByLabel("Search for").fill(PHRASE);
      await page.getByLabel("Container tag").fill(TAG);
      await page.getByRole("button", { name: "Search", exact: true }).click();
      const hit = page.locator("ol.results li").first();
      await hit.waitFor();
      expect(await hit.locator("a").getAttribute("href")).toBe(`/console/documents/${documentId}`);
      expect(await hit.textContent()).toContain(PHRASE);
      // The words searched for are marked in the matching chunks.
      expect(await hit.locator("mark").first().textContent()).toMatch(/^(Wolverhampton|Wanderers)$/i);
      await shot(page, "search");

      // Memories with versions: one updated (v2 updates v1), one static fact.
      const created = await call("POST", "/v4/memories", {
        containerTag: TAG,
        memories: [
          { content: "Iwan Roberts plays for Norwich City.", isStatic: false },
          { content: "Iwan Roberts was born in Bangor, Wales.", isStatic: true },
        ],
      });
      expect(created.status).toBe(201);
      const updated = await call("PATCH", "/v4/memories", {
        containerTag: TAG,
        id: created.json.memories[0].id,
        newContent: "Iwan Roberts retired from football in 2005.",
      });
      expect(updated.status).toBe(200);
      await page.getByRole("radio", { name: "Memories" }).check();
      await page.getByLabel("Search for").fill("Where was Iwan Roberts born?");
      await page.getByRole("button", { name: "Search", exact: true }).click();
      await page.locator("ol.results li", { hasText: "born in Bangor" }).first().waitFor();

      await page.getByRole("link", { name: "Memories" }).click();
      await page.getByLabel("Container tag").fill(TAG);
      await page.getByRole("button", { name: "Show profile and memories" }).click();
      await page.getByRole("heading", { name: `Profile of “${TAG}”` }).waitFor();
      await page.locator("li", { hasText: "born in Bangor" }).first().waitFor();
      const timeline = page.locator("article.memory", { hasText: "retired from football" });
      await timeline.waitFor();
      const versions = await timeline.locator("ol.timeline > li").allTextContents();
      expect(versions).toHaveLength(2);
      expect(versions[0]).toContain("v1");
      expect(versions[0]).toContain("plays for Norwich City");
      expect(versions[1]).toContain("v2");
      expect(versions[1]).toMatch(/updates/);
      expect(versions[1]).toContain("latest");
      await shot(page, "memories");
    });

    it("creates a connection, syncs it now and shows its last run", async () => {
      await page.getByRole("link", { name: "Connections" }).click();
      await page.getByLabel("Provider", { exact: true }).selectOption("web-crawler");
      await page.getByLabel("Container tags (comma-separated)").fill("garden");
      await page.getByLabel("Sync every (minutes, 0 = manual)").fill("0");
      await page
        .getByLabel(/Provider settings/)
        .fill(JSON.stringify({ startUrls: `${site.url}/`, maxDepth: 1, maxPages: 5 }));
      await page.getByRole("button", { name: "Create connection" }).click();
      await page.getByText("Connection created.").waitFor();
      const row = page.locator("tr", { hasText: "web-crawler" });
      await row.waitFor();
      // The first sync runs on create; the list shows it once the page is refreshed.
      await waitFor(async () => {
        const list = await call("POST", "/v3/connections/list", {});
        return list.json[0]?.lastSync?.status === "done" ? true : undefined;
      }, "the first sync to finish");
      await row.getByRole("button", { name: "Sync now" }).click();
      await page.getByText("Sync of web-crawler started.").waitFor();
      await row
        .getByText(/\d+ added, \d+ updated, \d+ deleted, \d+ unchanged, \d+ failed \(import\)/)
        .waitFor();
      await shot(page, "connections");

      // Its runs, newest first: the sync asked for here, then the first one.
      await row.getByRole("button", { name: "Runs" }).click();
      const runs = page.getByRole("region", { name: "Sync runs of web-crawler" });
      await waitFor(
        async () => ((await runs.locator("tbody tr").count()) === 2 ? true : undefined),
        "two runs",
      );
      expect(await runs.locator("tbody tr td:nth-child(3)").allTextContents()).toEqual(["import", "create"]);
      // The panel refreshes itself while a run is going.
      await waitFor(
        async () => ((await runs.getByText("done", { exact: true }).count()) === 2 ? true : undefined),
        "both runs done",
      );
      await shot(page, "connections-runs");
      await page.getByRole("button", { name: "Close" }).click();
    });

    it("hands an OAuth connection to the provider's consent page, then opens the picker", async () => {
      await page.getByLabel("Provider", { exact: true }).selectOption("google-drive");
      await page.getByLabel("Container tags (comma-separated)").fill("drive");
      await page.getByLabel(/Provider settings/).fill("");
      // The consent page opens in a new tab and comes back to the service's picker.
      const [consent] = await Promise.all([
        context.waitForEvent("page"),
        page.getByRole("button", { name: "Create connection" }).click(),
      ]);
      await consent.waitForURL(/\/v3\/connections\/[^/]+\/picker\?t=/);
      await consent.getByRole("heading", { name: /Choose what to sync/ }).waitFor();
      await consent.close();
      await page.getByRole("heading", { name: "Continue with google-drive" }).waitFor();
      await page.getByRole("button", { name: "Refresh list" }).click();
      const row = page.locator("tr", { hasText: "google-drive" });
      await row.locator(".badge-setup").waitFor();
      await shot(page, "connections-oauth");
      // "Choose files" asks for a fresh picker link and opens it.
      const [picker] = await Promise.all([
        context.waitForEvent("page"),
        row.getByRole("button", { name: "Choose files" }).click(),
      ]);
      await picker.waitForURL(/\/v3\/connections\/[^/]+\/picker\?t=/);
      await picker.getByRole("checkbox", { name: /Allotment notes/ }).waitFor();
      await picker.close();
    });

    it("disables the key, which the API then refuses", async () => {
      await page.getByRole("link", { name: "Keys" }).click();
      const row = page.locator("tr", { hasText: createdKeyName });
      await row.getByRole("button", { name: `Disable key ${createdKeyName}` }).click();
      await row.locator(".badge-disabled").waitFor();
      await page.getByText(`Key “${createdKeyName}” disabled.`).waitFor();
      const refused = await call("POST", "/v3/documents/list", { containerTags: [TAG] }, createdSecret);
      expect(refused.status).toBe(401);
      // The operator's key from MEMORY_ADMIN_KEY offers no Disable button (the API would refuse it).
      const envRow = page.locator("tr", { hasText: "MEMORY_ADMIN_KEY" });
      await envRow.getByText("set by MEMORY_ADMIN_KEY").waitFor();
      expect(await envRow.getByRole("button").count()).toBe(0);
    });

    it("fits a phone screen", async () => {
      const phone = await browser.newContext({
        viewport: { width: 390, height: 844 },
        isMobile: true,
        hasTouch: true,
      });
      const p = await phone.newPage();
      await p.goto(`${service.url}/console/`);
      await shot(p, "phone-sign-in");
      await p.getByLabel("Admin API key", { exact: true }).fill(TEST_ADMIN_KEY);
      await p.getByRole("button", { name: "Sign in with key" }).click();
      await p.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
      await p.locator("tr", { hasText: createdKeyName }).waitFor();
      const pageWider = () => p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(await pageWider()).toBeLessThanOrEqual(0);
      await shot(p, "phone-keys");
      await p.goto(`${service.url}/console/documents/${documentId}`);
      await p.locator(".facts .badge-done").waitFor();
      // Nothing but scrollable tables is wider than the screen.
      expect(await pageWider()).toBeLessThanOrEqual(0);
      await shot(p, "phone-document", false);
      await phone.close();
    });

    it("deletes a document from its page", async () => {
      await page.goto(`${service.url}/console/documents/${documentId}`);
      await page.getByRole("button", { name: "Delete" }).click();
      await page.getByRole("heading", { name: "Documents", level: 1 }).waitFor();
      expect((await call("GET", `/v3/documents/${documentId}`)).status).toBe(404);
    });
  });
});

async function expectAlert(page: Page, text: RegExp) {
  const alert = page.getByRole("alert");
  await alert.first().waitFor();
  expect(await alert.first().textContent()).toMatch(text);
}
