import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ConnectorAuthError,
  ConnectorConfigError,
  ConnectorRateLimitError,
  ItemSkippedError,
} from "../../connectors/errors.ts";
import { type GithubCursor, githubConnector } from "../../connectors/github/index.ts";
import {
  type GithubConfig,
  type GithubSecrets,
  githubConfigSchema,
  githubSecretsSchema,
} from "../../connectors/github/settings.ts";
import type { GithubCarry } from "../../connectors/github/sync.ts";
import { MAX_INLINE_RETRIES } from "../../connectors/request-budget.ts";
import type { SourceItem, SyncContext } from "../../connectors/types.ts";
import { type FakeGitHub, startFakeGitHub } from "../support/fake-github.ts";

type Ctx = SyncContext<GithubConfig, GithubSecrets> & { heartbeats: () => number };

let fake: FakeGitHub;

beforeEach(async () => {
  fake = await startFakeGitHub();
});

afterEach(async () => {
  await fake.stop();
});

function contextFor(
  metadata: Record<string, string | number | boolean>,
  options: { token?: string; allowPrivateNetwork?: boolean } = {},
): Ctx {
  let beats = 0;
  return {
    connectionId: "conn_github_test",
    config: githubConfigSchema.parse({ baseUrl: fake.url, ...metadata }),
    secrets: githubSecretsSchema.parse({ token: options.token ?? fake.token }),
    network: {
      allowPrivateNetwork: options.allowPrivateNetwork ?? true,
      timeoutMs: 10_000,
      maxBytes: 1 << 24,
    },
    signal: new AbortController().signal,
    heartbeat: () => {
      beats++;
    },
    heartbeats: () => beats,
    log: pino({ level: "silent" }),
  };
}

/** One complete pass the way the engine runs it; fails on a repeated id, which would mean a broken listing. */
async function runPass(
  ctx: Ctx,
): Promise<{ versions: Map<string, string>; pages: number; items: SourceItem[] }> {
  const versions = new Map<string, string>();
  const items: SourceItem[] = [];
  let cursor: GithubCursor | null = await githubConnector.initialCursor(ctx);
  let pages = 0;
  while (cursor) {
    const page = await githubConnector.listPage(ctx, cursor);
    pages++;
    expect(page.deleted).toBeUndefined();
    for (const item of page.items) {
      expect(versions.has(item.id), `listed twice: ${item.id}`).toBe(false);
      versions.set(item.id, item.version);
      items.push(item);
    }
    cursor = page.next;
    if (pages > 200) throw new Error("pass does not end");
  }
  return { versions, pages, items };
}

async function fetchById(ctx: Ctx, items: SourceItem[], id: string) {
  const item = items.find((i) => i.id === id);
  if (!item) throw new Error(`not listed: ${id}`);
  return githubConnector.fetchItem(ctx, item);
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

/** A repository with documentation, code, an oversized file, issues with comments and pull requests. */
function seedDocs(name = "acme/docs") {
  fake.addRepository(name, { description: "Product docs" });
  const shas = {
    readme: fake.setFile(name, "README.md", "# Acme\n\nWelcome to the docs."),
    guide: fake.setFile(name, "docs/guide.md", "# Guide\n\nInstall with npm."),
    api: fake.setFile(name, "docs/api.mdx", "# API\n\n<Endpoint />"),
    nestedReadme: fake.setFile(name, "docs/deep/README", "plain readme in a subfolder"),
    notes: fake.setFile(name, "notes.txt", "release notes"),
  };
  fake.setFile(name, "src/index.ts", "export const x = 1;");
  fake.setFile(name, "logo.png", Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  fake.setFile(name, "docs/huge.md", "x".repeat(5000));
  const bug = fake.addIssue(name, {
    title: "Crash on start",
    body: "It crashes.",
    labels: ["bug", "p1"],
    user: "alice",
  });
  fake.addComment(name, bug, { body: "Same here.", user: "bob" });
  fake.addComment(name, bug, { body: "Fixed in 1.2.", user: "carol" });
  const pull = fake.addPullRequest(name, {
    title: "Fix crash",
    body: "Closes #1",
    merged: true,
    user: "carol",
  });
  const closed = fake.addIssue(name, { title: "Old question", state: "closed" });
  return { shas, bug, pull, closed };
}

describe("github connector", () => {
  it("lists the repositories the token can see and turns picked ones into the repositories setting", async () => {
    fake.addRepository("acme/docs", { description: "Product docs" });
    fake.addRepository("acme/secret", { private: true });
    fake.addRepository("zeta/tools", { defaultBranch: "trunk" });
    const ctx = contextFor({});
    const resources = githubConnector.resources;
    const configure = githubConnector.configure;
    if (!resources || !configure) throw new Error("the github connector offers resources and configure");

    const first = await resources(ctx, { page: 1, perPage: 2 });
    expect(first.total_count).toBe(3);
    expect(first.resources).toEqual([
      {
        id: expect.any(Number),
        full_name: "acme/docs",
        private: false,
        default_branch: "main",
        description: "Product docs",
        updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
      expect.objectContaining({ full_name: "acme/secret", private: true, description: null }),
    ]);
    const second = await resources(ctx, { page: 2, perPage: 2 });
    expect(second.total_count).toBe(3);
    expect(second.resources).toEqual([
      expect.objectContaining({ full_name: "zeta/tools", default_branch: "trunk" }),
    ]);

    const picked = [first.resources[0], { full_name: second.resources[0]?.full_name }] as Record<
      string,
      unknown
    >[];
    expect(configure(picked)).toEqual({ repositories: "acme/docs,zeta/tools" });
    expect(configure([{ full_name: "a/b" }, { id: 7, full_name: "A/B" }, { full_name: "c/d" }])).toEqual({
      repositories: "a/b,c/d",
    });
    for (const bad of [
      [],
      [{ id: 1 }],
      [{ full_name: "no-slash" }],
      [{ full_name: "a/b/c" }],
      [{ full_name: 5 }],
    ]) {
      expect(() => configure(bad as Record<string, unknown>[])).toThrow(ConnectorConfigError);
    }
    expect(githubConfigSchema.safeParse({ repositories: "acme/docs, ../etc" }).success).toBe(false);
    expect(githubConfigSchema.parse({ repositories: " acme/docs , zeta/tools,," }).repositories).toBe(
      " acme/docs , zeta/tools,,",
    );
  });

  it("lists READMEs, documentation files, issues and pull requests with their versions and fetches their text", async () => {
    const { shas, bug, pull, closed } = seedDocs();
    const ctx = contextFor({ repositories: "acme/docs", maxFileBytes: 4096 });
    const { versions, items } = await runPass(ctx);

    expect(Object.fromEntries(versions)).toEqual({
      "acme/docs/blob/README.md": shas.readme,
      "acme/docs/blob/docs/api.mdx": shas.api,
      "acme/docs/blob/docs/deep/README": shas.nestedReadme,
      "acme/docs/blob/docs/guide.md": shas.guide,
      "acme/docs/blob/notes.txt": shas.notes,
      [`acme/docs/issues/${bug}`]: fake.issueUpdatedAt("acme/docs", bug),
      [`acme/docs/pull/${pull}`]: fake.issueUpdatedAt("acme/docs", pull),
      [`acme/docs/issues/${closed}`]: fake.issueUpdatedAt("acme/docs", closed),
    });
    // Versions are git blob shas: the well-known sha of this content proves the hashing matches git.
    expect(fake.setFile("acme/docs", "empty.md", "")).toBe("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    expect(ctx.heartbeats()).toBeGreaterThan(0);

    const readme = await fetchById(ctx, items, "acme/docs/blob/README.md");
    expect(readme).toEqual({
      title: "README.md",
      text: "# Acme\n\nWelcome to the docs.",
      url: "https://github.com/acme/docs/blob/main/README.md",
      filepath: "/acme/docs/",
      metadata: { repository: "acme/docs", path: "README.md", kind: "file" },
    });
    const guide = await fetchById(ctx, items, "acme/docs/blob/docs/guide.md");
    expect(guide).toMatchObject({
      title: "docs/guide.md",
      text: "# Guide\n\nInstall with npm.",
      filepath: "/acme/docs/docs/",
    });
    const nested = await fetchById(ctx, items, "acme/docs/blob/docs/deep/README");
    expect(nested).toMatchObject({ text: "plain readme in a subfolder", filepath: "/acme/docs/docs/deep/" });

    const issue = await fetchById(ctx, items, `acme/docs/issues/${bug}`);
    expect(issue?.title).toBe("Crash on start");
    expect(issue?.url).toBe(`https://github.com/acme/docs/issues/${bug}`);
    expect(issue?.filepath).toBe("/acme/docs/issues/");
    expect(issue?.text).toMatch(
      /^# Crash on start\n\nIt crashes\.\n\n---\n\n\*\*bob\*\* commented on .+:\n\nSame here\./,
    );
    expect(issue?.text).toContain("**carol** commented on");
    expect(issue?.text).toContain("Fixed in 1.2.");
    expect(issue?.metadata).toEqual({
      repository: "acme/docs",
      number: bug,
      state: "open",
      author: "alice",
      labels: ["bug", "p1"],
      kind: "issue",
    });

    const pr = await fetchById(ctx, items, `acme/docs/pull/${pull}`);
    expect(pr).toMatchObject({
      title: "Fix crash",
      text: "# Fix crash\n\nCloses #1",
      url: `https://github.com/acme/docs/pull/${pull}`,
      filepath: "/acme/docs/pull/",
      metadata: {
        number: pull,
        state: "closed",
        author: "carol",
        labels: [],
        kind: "pull_request",
        merged: true,
      },
    });
    const old = await fetchById(ctx, items, `acme/docs/issues/${closed}`);
    expect(old).toMatchObject({ text: "# Old question", metadata: { state: "closed", kind: "issue" } });
  });

  it("pages through files and issues across listPage calls, each pass over the same snapshot", async () => {
    fake.addRepository("acme/one");
    for (const n of [1, 2, 3, 4, 5]) fake.setFile("acme/one", `docs/page-${n}.md`, `page ${n}`);
    for (const n of [1, 2, 3, 4, 5]) fake.addIssue("acme/one", { title: `issue ${n}` });
    fake.addRepository("acme/two");
    fake.setFile("acme/two", "README.md", "two");
    fake.addPullRequest("acme/two", { title: "pr" });
    const ctx = contextFor({ repositories: "acme/one,acme/two", filesPerPage: 2, issuesPerPage: 2 });

    // Walk by hand to change the repository in the middle of its file listing.
    let cursor: GithubCursor | null = await githubConnector.initialCursor(ctx);
    const first = await githubConnector.listPage(ctx, cursor);
    expect(first.items.map((i) => i.id)).toEqual([
      "acme/one/blob/docs/page-1.md",
      "acme/one/blob/docs/page-2.md",
    ]);
    // Sorts first: without a pinned tree, later pages would shift and list page-2.md again.
    fake.setFile("acme/one", "docs/a-new.md", "new");
    const seen = first.items.map((i) => i.id);
    const pageSizes = [first.items.length];
    cursor = first.next;
    while (cursor) {
      const page = await githubConnector.listPage(ctx, cursor);
      seen.push(...page.items.map((i) => i.id));
      pageSizes.push(page.items.length);
      cursor = page.next;
    }
    expect(seen).toEqual([
      "acme/one/blob/docs/page-1.md",
      "acme/one/blob/docs/page-2.md",
      "acme/one/blob/docs/page-3.md",
      "acme/one/blob/docs/page-4.md",
      "acme/one/blob/docs/page-5.md",
      "acme/one/issues/1",
      "acme/one/issues/2",
      "acme/one/issues/3",
      "acme/one/issues/4",
      "acme/one/issues/5",
      "acme/two/blob/README.md",
      "acme/two/pull/1",
    ]);
    // files 2+2+1, issues 2+2+1, then acme/two: files, issues.
    expect(pageSizes).toEqual([2, 2, 1, 2, 2, 1, 1, 1]);
    const issuePages = fake.requests
      .filter((r) => r.path.startsWith("/repos/acme/one/issues?"))
      .map((r) => new URL(r.path, fake.url).searchParams);
    expect(
      issuePages.map((q) => [q.get("per_page"), q.get("page"), q.get("state"), q.get("direction")]),
    ).toEqual([
      ["2", "1", "all", "asc"],
      ["2", "2", "all", "asc"],
      ["2", "3", "all", "asc"],
    ]);
    // The first page asks for the branch, later pages for the tree it named.
    const trees = fake.requests
      .filter((r) => r.path.startsWith("/repos/acme/one/git/trees/"))
      .map((r) => r.path);
    expect(trees[0]).toBe("/repos/acme/one/git/trees/main?recursive=1");
    expect(trees.slice(1).every((p) => /\/git\/trees\/[0-9a-f]{40}\?recursive=1$/.test(p))).toBe(true);

    // The next pass sees the new file.
    const { versions } = await runPass(ctx);
    expect(versions.has("acme/one/blob/docs/a-new.md")).toBe(true);
    expect(versions.size).toBe(13);
  });

  it("lists exactly the new set after changes, with only the changed versions differing", async () => {
    const { bug, pull, closed } = seedDocs();
    const ctx = contextFor({
      repositories: "acme/docs",
      maxFileBytes: 4096,
      filesPerPage: 3,
      issuesPerPage: 2,
    });
    const before = (await runPass(ctx)).versions;

    fake.setFile("acme/docs", "docs/guide.md", "# Guide\n\nInstall with pnpm.");
    fake.deleteFile("acme/docs", "notes.txt");
    fake.setFile("acme/docs", "src/other.ts", "code is not synced");
    const added = fake.addIssue("acme/docs", { title: "New idea", body: "What about dark mode?" });
    fake.addComment("acme/docs", closed, { body: "Reopening the discussion." });

    const { versions: after, items } = await runPass(ctx);
    const expectedIds = [...before.keys()].filter((id) => id !== "acme/docs/blob/notes.txt");
    expectedIds.push(`acme/docs/issues/${added}`);
    expect([...after.keys()].sort()).toEqual(expectedIds.sort());

    const changed = [...after.keys()].filter((id) => before.get(id) !== after.get(id)).sort();
    expect(changed).toEqual(
      [`acme/docs/issues/${added}`, `acme/docs/issues/${closed}`, "acme/docs/blob/docs/guide.md"].sort(),
    );
    expect(after.get(`acme/docs/issues/${bug}`)).toBe(before.get(`acme/docs/issues/${bug}`));
    expect(after.get(`acme/docs/pull/${pull}`)).toBe(before.get(`acme/docs/pull/${pull}`));

    const guide = await fetchById(ctx, items, "acme/docs/blob/docs/guide.md");
    expect(guide?.text).toBe("# Guide\n\nInstall with pnpm.");
    const reopened = await fetchById(ctx, items, `acme/docs/issues/${closed}`);
    expect(reopened?.text).toContain("Reopening the discussion.");
    // An item deleted after it was listed is skipped as not found; the next pass no longer lists it.
    fake.deleteFile("acme/docs", "docs/guide.md");
    const gone = await rejection(
      githubConnector.fetchItem(ctx, { id: "acme/docs/blob/docs/guide.md", version: "x" }),
    );
    expect(gone).toBeInstanceOf(ItemSkippedError);
    expect(gone).toMatchObject({ reason: "not_found" });
    expect(
      await rejection(githubConnector.fetchItem(ctx, { id: "acme/docs/issues/999", version: "x" })),
    ).toMatchObject({ name: "ItemSkippedError", reason: "not_found" });
  });

  it("honours includeIssues, includePullRequests and fileExtensions", async () => {
    const { pull } = seedDocs();
    const onlyPulls = await runPass(
      contextFor({ repositories: "acme/docs", includeIssues: "false", fileExtensions: ".TXT, rst" }),
    );
    expect([...onlyPulls.versions.keys()].sort()).toEqual(
      [
        "acme/docs/blob/README.md",
        "acme/docs/blob/docs/deep/README",
        "acme/docs/blob/notes.txt",
        `acme/docs/pull/${pull}`,
      ].sort(),
    );
    const filesOnly = await runPass(
      contextFor({ repositories: "acme/docs", includeIssues: false, includePullRequests: false }),
    );
    expect([...filesOnly.versions.keys()].every((id) => id.includes("/blob/"))).toBe(true);
    expect(fake.requests.filter((r) => r.path.includes("/issues?")).length).toBe(1);
  });

  it("walks a truncated recursive tree folder by folder so the listing stays complete", async () => {
    fake.addRepository("big/repo");
    const paths = ["README.md", "a/one.md", "a/b/two.md", "a/b/c/three.md", "z/four.md", "z/skip.js"];
    for (const path of paths) fake.setFile("big/repo", path, `content of ${path}`);
    const ctx = contextFor({ repositories: "big/repo", includeIssues: false, includePullRequests: false });
    const whole = await runPass(ctx);
    expect(whole.versions.size).toBe(5);

    fake.setTreeTruncation(3);
    const walked = await runPass(ctx);
    expect(Object.fromEntries(walked.versions)).toEqual(Object.fromEntries(whole.versions));
    expect(fake.requests.some((r) => /\/git\/trees\/[0-9a-f]{40}$/.test(r.path))).toBe(true);
  });

  it("lists pull requests through /pulls when a repository has issues turned off, and copes with an empty repository", async () => {
    fake.addRepository("acme/no-issues", { hasIssues: false });
    fake.setFile("acme/no-issues", "README.md", "hi");
    const pr = fake.addPullRequest("acme/no-issues", { title: "Docs fix", body: "typo", labels: ["docs"] });
    fake.addRepository("acme/empty");
    const bare = fake.addIssue("acme/empty", { title: "First issue" });
    const ctx = contextFor({ repositories: "acme/no-issues,acme/empty" });
    const { versions, items } = await runPass(ctx);
    expect(Object.fromEntries(versions)).toEqual({
      "acme/no-issues/blob/README.md": expect.stringMatching(/^[0-9a-f]{40}$/),
      [`acme/no-issues/pull/${pr}`]: fake.issueUpdatedAt("acme/no-issues", pr),
      [`acme/empty/issues/${bare}`]: fake.issueUpdatedAt("acme/empty", bare),
    });
    const fetched = await fetchById(ctx, items, `acme/no-issues/pull/${pr}`);
    expect(fetched).toMatchObject({
      text: "# Docs fix\n\ntypo",
      metadata: { labels: ["docs"], merged: false },
    });
  });

  it("fetches files over the contents API's 1 MB through the blob API and hands non-UTF-8 files over as bytes", async () => {
    fake.addRepository("acme/large");
    const large = `# Big\n\n${"lorem ipsum ".repeat(100_000)}`;
    fake.setFile("acme/large", "big.md", large);
    const latin1 = Buffer.from("caf\xe9 cr\xe8me", "latin1");
    fake.setFile("acme/large", "legacy.txt", latin1);
    const ctx = contextFor({ repositories: "acme/large", maxFileBytes: 2 * 1024 * 1024 });
    const { items } = await runPass(ctx);
    const big = await fetchById(ctx, items, "acme/large/blob/big.md");
    expect(big?.text).toBe(large);
    expect(fake.requests.some((r) => r.path.startsWith("/repos/acme/large/git/blobs/"))).toBe(true);
    const legacy = await fetchById(ctx, items, "acme/large/blob/legacy.txt");
    expect(legacy?.text).toBeUndefined();
    expect(legacy?.file).toEqual({ bytes: latin1, name: "legacy.txt" });
  });

  it("reports a refused token as ConnectorAuthError", async () => {
    seedDocs();
    const ctx = contextFor({ repositories: "acme/docs" }, { token: "ghp_revoked" });
    const cursor = await githubConnector.initialCursor(ctx);
    const listing = await rejection(githubConnector.listPage(ctx, cursor));
    expect(listing).toBeInstanceOf(ConnectorAuthError);
    expect((listing as Error).message).toContain("Bad credentials");
    expect(await rejection(githubConnector.verify?.(ctx) ?? Promise.resolve())).toBeInstanceOf(
      ConnectorAuthError,
    );
    expect(
      await rejection(githubConnector.resources?.(ctx, { page: 1, perPage: 10 }) ?? Promise.resolve()),
    ).toBeInstanceOf(ConnectorAuthError);
    expect(
      await rejection(githubConnector.fetchItem(ctx, { id: "acme/docs/issues/1", version: "x" })),
    ).toBeInstanceOf(ConnectorAuthError);
  });

  it("waits out a short secondary limit in place, and hands a primary or long one to the engine", async () => {
    seedDocs("acme/docs");
    const ctx = contextFor({ repositories: "acme/docs" });
    const cursor = await githubConnector.initialCursor(ctx);
    const clean = await githubConnector.listPage(ctx, cursor);

    // Secondary limits with a short retry-after (429, then 403): the same request goes again after each
    // wait, and the page comes back whole.
    fake.rateLimitNext({ status: 429, retryAfterSeconds: 1 });
    fake.rateLimitNext({ status: 403, retryAfterSeconds: 1 });
    const start = fake.requests.length;
    const page = await githubConnector.listPage(ctx, cursor);
    expect(page.items).toEqual(clean.items);
    const sent = fake.requests.slice(start);
    expect(sent.slice(0, 3).map((r) => r.status)).toEqual([429, 403, sent[2]?.status === 304 ? 304 : 200]);
    expect(new Set(sent.slice(0, 3).map((r) => r.path)).size).toBe(1);

    // The primary limit resets in two minutes: longer than an activity waits, so the engine's.
    fake.rateLimitNext({ resetInSeconds: 120 });
    const primary = await rejection(githubConnector.listPage(ctx, cursor));
    expect(primary).toBeInstanceOf(ConnectorRateLimitError);
    expect((primary as Error).message).toContain("API rate limit exceeded");
    // Measured against the response's Date header (whole seconds), so within a second or two of 120 s.
    expect((primary as ConnectorRateLimitError).retryAfterMs).toBeGreaterThanOrEqual(118_000);
    expect((primary as ConnectorRateLimitError).retryAfterMs).toBeLessThanOrEqual(121_000);
    // Meanwhile the user's other requests are held back without being sent.
    const count = fake.requests.length;
    const held = await rejection(githubConnector.fetchItem(ctx, { id: "acme/docs/issues/1", version: "x" }));
    expect(held).toBeInstanceOf(ConnectorRateLimitError);
    expect((held as ConnectorRateLimitError).retryAfterMs).toBeGreaterThan(60_000);
    expect(fake.requests.length).toBe(count);
  });

  it("refuses a missing repository at creation, and a private-network host, as ConnectorConfigError", async () => {
    seedDocs();
    const missing = contextFor({ repositories: "acme/docs,acme/gone" });
    const refused = await rejection(githubConnector.verify?.(missing) ?? Promise.resolve());
    expect(refused).toBeInstanceOf(ConnectorConfigError);
    expect((refused as Error).message).toContain("acme/gone");

    const answered = fake.requests.length;
    const literal = contextFor({ repositories: "acme/docs" }, { allowPrivateNetwork: false });
    expect(await rejection(runPass(literal))).toBeInstanceOf(ConnectorConfigError);
    const byName = contextFor(
      { repositories: "acme/docs", baseUrl: fake.url.replace("127.0.0.1", "localhost") },
      { allowPrivateNetwork: false },
    );
    expect(await rejection(githubConnector.verify?.(byName) ?? Promise.resolve())).toBeInstanceOf(
      ConnectorConfigError,
    );
    // Neither refused context reached the server.
    expect(fake.requests.length).toBe(answered);
  });

  it("keeps ids and versions when a configured repository is renamed (GitHub answers 301)", async () => {
    const { bug } = seedDocs("acme/old-name");
    const ctx = contextFor({ repositories: "acme/old-name", maxFileBytes: 4096 });
    const before = await runPass(ctx);
    fake.renameRepository("acme/old-name", "acme/new-name");
    const after = await runPass(ctx);
    expect(Object.fromEntries(after.versions)).toEqual(Object.fromEntries(before.versions));
    expect(fake.requests.some((r) => r.status === 301)).toBe(true);
    const readme = await fetchById(ctx, after.items, "acme/old-name/blob/README.md");
    expect(readme).toMatchObject({
      text: "# Acme\n\nWelcome to the docs.",
      url: "https://github.com/acme/new-name/blob/main/README.md",
    });
    const issue = await fetchById(ctx, after.items, `acme/old-name/issues/${bug}`);
    expect(issue?.text).toContain("Fixed in 1.2.");
  });

  it("stops at once when the activity is cancelled, without turning that into a connector error", async () => {
    seedDocs();
    const controller = new AbortController();
    const ctx = { ...contextFor({ repositories: "acme/docs" }), signal: controller.signal };
    const cursor = await githubConnector.initialCursor(ctx);
    controller.abort();
    const error = await rejection(githubConnector.listPage(ctx, cursor));
    expect((error as Error).name).toBe("AbortError");
    expect(fake.requests.length).toBe(0);
  });

  it("lists nothing while no repository is configured", async () => {
    seedDocs();
    const ctx = contextFor({});
    expect(ctx.config).toMatchObject({
      baseUrl: fake.url,
      includeIssues: true,
      includePullRequests: true,
      fileExtensions: ["md", "mdx", "markdown", "txt", "rst"],
      maxFileBytes: 1024 * 1024,
    });
    const { versions, pages } = await runPass(ctx);
    expect(versions.size).toBe(0);
    expect(pages).toBe(1);
    expect(githubConfigSchema.parse({}).baseUrl).toBe("https://api.github.com");
    expect(githubConnector.secretKeys).toEqual(["token"]);
  });
});

describe("github connector when GitHub refuses one repository or item", () => {
  /** One pass, keeping each page's unchanged prefixes, with the log lines it wrote. */
  async function passWithPrefixes(ctx: Ctx) {
    const ids: string[] = [];
    const unchanged: string[] = [];
    let cursor: GithubCursor | null = await githubConnector.initialCursor(ctx);
    for (let pages = 0; cursor; pages++) {
      if (pages > 100) throw new Error("pass does not end");
      const page = await githubConnector.listPage(ctx, cursor);
      ids.push(...page.items.map((i) => i.id));
      unchanged.push(...(page.unchanged ?? []));
      cursor = page.next;
    }
    return { ids: ids.sort(), unchanged };
  }

  function loggingContext(metadata: Record<string, string | number | boolean>) {
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: "warn" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    return { ctx: { ...contextFor(metadata), log }, lines };
  }

  it("lists the other repositories and keeps a refused repository's ids (SAML, IP allow list, hidden, gone)", async () => {
    seedDocs("sso-org/wiki");
    seedDocs("fenced-org/handbook");
    seedDocs("acme/docs");
    seedDocs("acme/private");
    const { ctx, lines } = loggingContext({
      repositories: "sso-org/wiki,fenced-org/handbook,acme/gone,acme/private,acme/docs",
    });
    const open = await passWithPrefixes(ctx);
    expect(open.unchanged).toEqual(["acme/gone/"]);

    fake.refuse("sso-org", "saml");
    fake.refuse("fenced-org", "ip_allow_list");
    fake.refuse("acme/private", "hidden");
    const { ids, unchanged } = await passWithPrefixes(ctx);
    // The repository that still answers is listed in full; the others are kept, not listed as empty.
    expect(ids).toEqual(open.ids.filter((id) => id.startsWith("acme/docs/")));
    expect(unchanged.sort()).toEqual([
      "acme/gone/",
      "acme/private/",
      "fenced-org/handbook/",
      "sso-org/wiki/",
    ]);
    expect(fake.requests.some((r) => r.status === 403)).toBe(true);
    const said = lines.map((l) => String(l.msg)).join("\n");
    expect(said).toContain("Resource protected by organization SAML enforcement");
    expect(said).toContain("organization has an IP allow list enabled");
    expect(lines.filter((l) => l.repository === "acme/private")).toEqual([
      expect.objectContaining({ reason: "not_found" }),
    ]);
  });

  it("keeps only the part a fine-grained token may not read, and lists the rest of that repository", async () => {
    const { bug, pull } = seedDocs("acme/docs");
    const ctx = contextFor({ repositories: "acme/docs", maxFileBytes: 4096 });
    const open = await runPass(ctx);

    // A fine-grained token granted issues and pull requests but not contents.
    fake.refuse("acme/docs", ["issues", "pull_requests"]);
    const withoutFiles = await passWithPrefixes(ctx);
    expect(withoutFiles.unchanged).toEqual(["acme/docs/blob/"]);
    expect(withoutFiles.ids).toEqual([...open.versions.keys()].filter((id) => !id.includes("/blob/")).sort());
    const readme = await rejection(
      githubConnector.fetchItem(ctx, { id: "acme/docs/blob/README.md", version: "x" }),
    );
    expect(readme).toBeInstanceOf(ItemSkippedError);
    expect(readme).toMatchObject({ reason: "no_permission" });

    // One granted contents only.
    fake.refuse("acme/docs", ["contents"]);
    const withoutConversations = await passWithPrefixes(ctx);
    expect(withoutConversations.unchanged).toEqual(["acme/docs/issues/", "acme/docs/pull/"]);
    expect(withoutConversations.ids).toEqual(
      [...open.versions.keys()].filter((id) => id.includes("/blob/")).sort(),
    );
    expect(fake.requests.filter((r) => r.status === 403).map((r) => r.path)).toEqual([
      expect.stringMatching(/\/git\/trees\//),
      expect.stringMatching(/\/contents\/README\.md/),
      expect.stringMatching(/\/issues\?/),
    ]);
    const issue = await rejection(
      githubConnector.fetchItem(ctx, { id: `acme/docs/issues/${bug}`, version: "x" }),
    );
    expect(issue).toBeInstanceOf(ItemSkippedError);
    expect(issue).toMatchObject({ reason: "no_permission" });

    // A pull request's conversation is readable with pull_requests alone.
    fake.refuse("acme/docs", ["pull_requests"]);
    expect((await fetchById(ctx, open.items, `acme/docs/pull/${pull}`))?.title).toBe("Fix crash");
    // SAML enforced on the organization refuses every item of it, as no_permission.
    fake.refuse("acme/docs", null);
    fake.refuse("acme", "saml");
    expect(
      await rejection(githubConnector.fetchItem(ctx, { id: `acme/docs/pull/${pull}`, version: "x" })),
    ).toMatchObject({ name: "ItemSkippedError", reason: "no_permission" });
    fake.refuse("acme", null);
    expect((await fetchById(ctx, open.items, "acme/docs/blob/README.md"))?.title).toBe("README.md");
  });

  it("forgets what the pages before a refusal taught, so the next pass lists that part in full", async () => {
    fake.addRepository("sso-org/wiki");
    for (const n of [1, 2, 3]) fake.setFile("sso-org/wiki", `page-${n}.md`, `page ${n}`);
    for (const n of [1, 2, 3]) fake.addIssue("sso-org/wiki", { title: `issue ${n}` });
    const ctx = contextFor({ repositories: "sso-org/wiki", filesPerPage: 2, issuesPerPage: 2 });
    const complete = async (first: GithubCursor | null, refuseAfter: "files" | "issues" | null) => {
      let cursor = first;
      let carry: unknown;
      let refused = false;
      while (cursor) {
        const page = await githubConnector.listPage(ctx, cursor);
        carry = page.carry ?? carry;
        // The organization turns on SAML enforcement after the first page of that phase.
        if (!refused && cursor.phase === refuseAfter) {
          fake.refuse("sso-org", "saml");
          refused = true;
        }
        cursor = page.next;
      }
      fake.refuse("sso-org", null);
      return carry as GithubCarry;
    };
    const whole = await complete(await githubConnector.initialCursor(ctx), null);
    expect(Object.keys(whole.treeEtags)).toEqual(["sso-org/wiki"]);
    expect(Object.keys(whole.issuesListedAt)).toEqual(["sso-org/wiki"]);

    // Without a carried ETag, so the tree is listed page by page rather than answered 304.
    const filesCut = await complete(await githubConnector.initialCursor(ctx), "files");
    expect(filesCut.treeEtags).toEqual({});
    const issuesCut = await complete(await githubConnector.initialCursor(ctx, whole), "issues");
    expect(issuesCut.issuesListedAt).toEqual({});
    expect(Object.keys(issuesCut.treeEtags)).toEqual(["sso-org/wiki"]);
  });

  it("tells a rate limit and a refused token apart from a refused repository", async () => {
    seedDocs("acme/docs");
    const ctx = contextFor({ repositories: "acme/docs" });
    const cursor = await githubConnector.initialCursor(ctx);
    await githubConnector.listPage(ctx, cursor);
    // A secondary limit that persists past the retries in place (the wait stays short for the test).
    fake.rateLimitNext({ status: 403, retryAfterSeconds: 1, times: MAX_INLINE_RETRIES + 1 });
    expect(
      await rejection(githubConnector.fetchItem(ctx, { id: "acme/docs/blob/README.md", version: "x" })),
    ).toBeInstanceOf(ConnectorRateLimitError);
    fake.revokeToken();
    expect(await rejection(githubConnector.listPage(ctx, cursor))).toBeInstanceOf(ConnectorAuthError);
  });
});

describe("fake GitHub", () => {
  it("answers conditional requests with 304 without counting them against the rate limit", async () => {
    fake.addRepository("acme/docs");
    const headers = { authorization: `token ${fake.token}` };
    const first = await fetch(`${fake.url}/repos/acme/docs`, { headers });
    const etag = first.headers.get("etag");
    expect(first.status).toBe(200);
    expect(etag).toMatch(/^W\/"[0-9a-f]{32}"$/);
    const remaining = first.headers.get("x-ratelimit-remaining");
    const again = await fetch(`${fake.url}/repos/acme/docs`, {
      headers: { ...headers, "if-none-match": etag ?? "" },
    });
    expect(again.status).toBe(304);
    expect(again.headers.get("x-ratelimit-remaining")).toBe(remaining);
    fake.setFile("acme/docs", "README.md", "changed");
    const changed = await fetch(`${fake.url}/repos/acme/docs`, {
      headers: { ...headers, "if-none-match": etag ?? "" },
    });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).not.toBe(etag);
  });
});
