// test/support/fake-github.ts says its answers follow GitHub's own recordings in @octokit/fixtures. This checks
// it: the fake answers the recorded requests of get-repository, get-content and paginate-issues like the
// recordings (fields, types, pages, Link rels); and for every call the github connector makes, the fields
// and headers the connector reads are in the fake's answer and in GitHub's recording of that call (or of
// the same object from another call), and the fake's answer has the recording's shape both ways, error
// answers included. The calls no recording covers are listed by the last test.

import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeGitHub, startFakeGitHub } from "../support/fake-github.ts";

interface Recorded {
  method: string;
  path: string;
  status: number;
  response: unknown;
  headers: Record<string, string>;
}

const require = createRequire(import.meta.url);
const recording = (scenario: string): Recorded[] =>
  require(`@octokit/fixtures/scenarios/api.github.com/${scenario}/normalized-fixture.json`);

const jsonType = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

/**
 * Where `fake` strays from `recorded`: a field the recording does not have, or one of another JSON type. A
 * null on either side matches any type (GitHub sends null for an absent description, milestone, assignee...);
 * arrays are compared by their first elements when both have one.
 */
function strays(fake: unknown, recorded: unknown, at = "$"): string[] {
  if (fake === null || recorded === null) return [];
  if (jsonType(fake) !== jsonType(recorded))
    return [`${at}: ${jsonType(fake)} where GitHub sends ${jsonType(recorded)}`];
  if (Array.isArray(fake) && Array.isArray(recorded))
    return fake.length && recorded.length ? strays(fake[0], recorded[0], `${at}[0]`) : [];
  if (typeof fake !== "object") return [];
  const got = fake as Record<string, unknown>;
  const want = recorded as Record<string, unknown>;
  return Object.keys(got).flatMap((key) =>
    key in want ? strays(got[key], want[key], `${at}.${key}`) : [`${at}.${key}: not in GitHub's answer`],
  );
}

/** The rel names of a Link header, in order, with the page each points at. */
function linkRels(link: string | null | undefined): string[] {
  if (!link) return [];
  return link.split(",").map((part) => {
    const page = /[?&]page=(\d+)/.exec(part)?.[1];
    const rel = /rel="([^"]+)"/.exec(part)?.[1];
    return `${rel}=${page}`;
  });
}

describe("the fake GitHub against @octokit/fixtures recordings", () => {
  let fake: FakeGitHub;
  const get = async (path: string) => {
    const res = await fetch(`${fake.url}${path}`, {
      headers: { accept: "application/vnd.github.v3+json", authorization: `token ${fake.token}` },
    });
    return { status: res.status, link: res.headers.get("link"), body: (await res.json()) as unknown };
  };

  beforeAll(async () => {
    fake = await startFakeGitHub();
    fake.addRepository("octokit-fixture-org/hello-world", { description: "Hello, world" });
    fake.setFile("octokit-fixture-org/hello-world", "README.md", "# hello-world\n");
    fake.addRepository("octokit-fixture-org/paginate-issues");
    // The recording's repository holds 13 issues, listed 3 to a page.
    for (let i = 1; i <= 13; i++)
      fake.addIssue("octokit-fixture-org/paginate-issues", { title: `Test issue ${i}`, body: null });
  });
  afterAll(async () => {
    await fake?.stop();
  });

  it("answers get-repository with GitHub's fields and types", async () => {
    const [recorded] = recording("get-repository");
    expect(recorded?.path).toBe("/repos/octokit-fixture-org/hello-world");
    const answer = await get("/repos/octokit-fixture-org/hello-world");
    expect(answer.status).toBe(recorded?.status);
    expect(strays(answer.body, recorded?.response)).toEqual([]);
    // And it is a real answer, not an empty object that trivially has no strays.
    expect(Object.keys(answer.body as object).length).toBeGreaterThan(20);
  });

  it("answers get-content with the fields GitHub lists for a file", async () => {
    const [listing] = recording("get-content");
    expect(listing?.path).toBe("/repos/octokit-fixture-org/hello-world/contents/");
    const entry = ((listing?.response ?? []) as unknown[])[0] as Record<string, unknown>;
    expect(entry.path).toBe("README.md");
    const answer = await get("/repos/octokit-fixture-org/hello-world/contents/README.md");
    expect(answer.status).toBe(200);
    const body = answer.body as Record<string, unknown>;
    // A single file's answer is the listing entry plus its content (GitHub's documented file response).
    const { content, encoding, ...asListed } = body;
    expect([typeof content, encoding]).toEqual(["string", "base64"]);
    expect(strays(asListed, entry)).toEqual([]);
    expect(Object.keys(asListed).sort()).toEqual(Object.keys(entry).sort());
  });

  it("pages issues like paginate-issues: the same pages, Link rels and issue fields", async () => {
    const recorded = recording("paginate-issues");
    expect(recorded).toHaveLength(5);
    let path = "/repos/octokit-fixture-org/paginate-issues/issues?per_page=3";
    for (const [index, page] of recorded.entries()) {
      const answer = await get(path);
      expect(answer.status).toBe(page.status);
      expect((answer.body as unknown[]).length, `page ${index + 1}`).toBe(
        (page.response as unknown[]).length,
      );
      expect(linkRels(answer.link), `page ${index + 1}`).toEqual(linkRels(page.headers.link));
      expect(strays(answer.body, page.response)).toEqual([]);
      const next = /<([^>]+)>; rel="next"/.exec(answer.link ?? "")?.[1];
      if (next) path = next.slice(fake.url.length);
    }
  });
});

/** Where `recorded` has a field the fake leaves out (the other direction of `strays`). */
function absent(fake: unknown, recorded: unknown, at = "$"): string[] {
  if (fake === null || recorded === null || typeof recorded !== "object") return [];
  if (Array.isArray(recorded))
    return Array.isArray(fake) && fake.length && recorded.length
      ? absent(fake[0], recorded[0], `${at}[0]`)
      : [];
  if (typeof fake !== "object" || Array.isArray(fake)) return [];
  const got = fake as Record<string, unknown>;
  return Object.entries(recorded as Record<string, unknown>).flatMap(([key, value]) =>
    key in got
      ? absent(got[key], value, `${at}.${key}`)
      : [`${at}.${key}: GitHub sends it, the fake does not`],
  );
}

/**
 * Whether `body` holds the field the connector reads at `path` ("user.login", "tree[].path"; a trailing
 * "?" marks a field GitHub sends only for some objects, such as `pull_request` on an issue). An empty array
 * in a recording shows no element: `elements` gives a recording of that element instead.
 */
function holds(body: unknown, path: string, elements: Record<string, unknown> = {}): boolean {
  const optional = path.endsWith("?");
  let values: unknown[] = [body];
  for (const part of (optional ? path.slice(0, -1) : path).split(".")) {
    const each = part.endsWith("[]");
    const key = each ? part.slice(0, -2) : part;
    const next: unknown[] = [];
    for (const value of values) {
      if (value === null || typeof value !== "object" || !(key in value)) {
        if (!optional) return false;
        continue;
      }
      const field = (value as Record<string, unknown>)[key];
      if (!each) next.push(field);
      else if (Array.isArray(field) && field.length) next.push(field[0]);
      else if (key in elements) next.push(elements[key]);
      else return false;
    }
    values = next;
  }
  return optional || values.length > 0;
}

interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

/**
 * Every request the github connector makes (connectors/github/sync.ts, client.ts), the fields and headers it
 * reads from the answer, and the @octokit/fixtures recording of that call where one exists. Checked both
 * ways: what the connector reads must be in GitHub's recorded answer (else the connector relies on
 * something GitHub does not send), and the fake's answer must have the recording's shape, every field
 * both ways with the same JSON types (else the connector's tests pass on an answer GitHub never gives).
 */
describe("contract of every GitHub call the connector makes", () => {
  let fake: FakeGitHub;
  let issueNumber: number;
  let pullNumber: number;
  let readmeSha: string;
  const REPO = "octokit-fixture-org/hello-world";
  const ask = async (path: string, headers: Record<string, string> = {}): Promise<Answer> => {
    const res = await fetch(`${fake.url}${path}`, {
      redirect: "manual",
      headers: { accept: "application/vnd.github.v3+json", authorization: `token ${fake.token}`, ...headers },
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  };

  beforeAll(async () => {
    fake = await startFakeGitHub();
    fake.addRepository(REPO, { description: "Hello, world" });
    readmeSha = fake.setFile(REPO, "README.md", "# hello-world\n");
    fake.setFile(REPO, "docs/guide.md", "# Guide\n");
    issueNumber = fake.addIssue(REPO, { title: "Bug", body: "It breaks.", labels: ["bug"] });
    fake.addComment(REPO, issueNumber, { body: "Same here." });
    pullNumber = fake.addPullRequest(REPO, { title: "Fix", body: "Fixes it.", labels: ["fix"] });
    fake.addRepository("octokit-fixture-org/rename-repository");
    fake.renameRepository("octokit-fixture-org/rename-repository", "octokit-fixture-org/renamed");
    fake.addRepository("octokit-fixture-org/empty");
    fake.addRepository("octokit-fixture-org/no-issues", { hasIssues: false });
    fake.addRepository("sso-org/wiki");
    fake.setFile("sso-org/wiki", "README.md", "wiki");
    fake.refuse("sso-org", "saml");
    fake.addRepository("octokit-fixture-org/fine-grained");
    fake.setFile("octokit-fixture-org/fine-grained", "README.md", "fine");
    // A fine-grained token granted contents only: issues answer 403.
    fake.refuse("octokit-fixture-org/fine-grained", ["contents"]);
  });
  afterAll(async () => {
    await fake?.stop();
  });

  const one = (scenario: string, index: number) => () => recording(scenario)[index] as Recorded;
  /** GitHub's error envelope, from the one recorded error answer to a GET (branch-protection: 404). */
  const recordedError = one("branch-protection", 0);
  const label = () => (recording("labels")[2] as Recorded).response;

  interface Call {
    /** The Octokit method, or what the connector does. */
    call: string;
    answer: () => Promise<Answer>;
    status: number;
    reads: string[];
    headers?: string[];
    /** The recording of this call, or of the same object from another call (said in `note`). */
    recorded?: () => Recorded;
    note?: string;
    /** The answer is a list: its first element is compared. */
    list?: boolean;
  }

  const calls: Call[] = [
    {
      call: "users.getAuthenticated (verify): GET /user",
      answer: () => ask("/user"),
      status: 200,
      reads: [],
    },
    {
      call: "repos.listForAuthenticatedUser (resources): GET /user/repos",
      answer: () => ask("/user/repos?per_page=1&page=1&sort=full_name&direction=asc"),
      status: 200,
      reads: ["id", "full_name", "private", "default_branch", "description", "updated_at"],
      headers: ["link"],
      list: true,
    },
    {
      call: "repos.get: GET /repos/{owner}/{repo}",
      answer: () => ask(`/repos/${REPO}`),
      status: 200,
      reads: ["default_branch"],
      recorded: one("get-repository", 0),
    },
    {
      call: "repos.get of a renamed repository: 301 Moved Permanently",
      answer: () => ask("/repos/octokit-fixture-org/rename-repository"),
      status: 301,
      reads: [],
      headers: ["location"],
      recorded: one("rename-repository", 1),
    },
    {
      call: "git.getTree: GET /repos/{owner}/{repo}/git/trees/{branch}?recursive=1",
      answer: () => ask(`/repos/${REPO}/git/trees/main?recursive=1`),
      status: 200,
      reads: ["sha", "truncated", "tree[].path", "tree[].mode", "tree[].type", "tree[].sha", "tree[].size?"],
      headers: ["etag"],
    },
    {
      call: "git.getTree with If-None-Match: 304 Not Modified",
      answer: async () => {
        const first = await ask(`/repos/${REPO}/git/trees/main?recursive=1`);
        return ask(`/repos/${REPO}/git/trees/main?recursive=1`, {
          "if-none-match": first.headers.get("etag") ?? "",
        });
      },
      status: 304,
      reads: [],
    },
    {
      call: "git.getTree of an empty repository: 409",
      answer: () => ask("/repos/octokit-fixture-org/empty/git/trees/main?recursive=1"),
      status: 409,
      reads: ["message"],
      recorded: recordedError,
      note: "no recording of a 409; compared with GitHub's recorded error envelope",
    },
    {
      call: "repos.getContent: GET /repos/{owner}/{repo}/contents/{path}",
      answer: () => ask(`/repos/${REPO}/contents/README.md`),
      status: 200,
      reads: ["type", "encoding", "content", "size", "sha", "html_url"],
      recorded: () => {
        // The recording fetched the file raw; its JSON form is the directory listing's entry plus
        // `content` and `encoding` (GitHub's documented file answer), so those two are added here.
        const listing = recording("get-content")[0] as Recorded;
        const entry = (listing.response as Record<string, unknown>[])[0];
        return { ...listing, response: { ...entry, content: "", encoding: "base64" } };
      },
    },
    {
      call: "git.getBlob (files over 1 MB): GET /repos/{owner}/{repo}/git/blobs/{sha}",
      answer: () => ask(`/repos/${REPO}/git/blobs/${readmeSha}`),
      status: 200,
      reads: ["content", "encoding"],
    },
    {
      call: "issues.listForRepo: GET /repos/{owner}/{repo}/issues",
      answer: () => ask(`/repos/${REPO}/issues?state=all&sort=created&direction=asc&per_page=1&page=1`),
      status: 200,
      reads: ["number", "updated_at", "pull_request?"],
      headers: ["link", "date"],
      recorded: one("paginate-issues", 0),
      list: true,
    },
    {
      call: "issues.listForRepo with issues turned off: 410",
      answer: () => ask("/repos/octokit-fixture-org/no-issues/issues?state=all"),
      status: 410,
      reads: ["message"],
      recorded: recordedError,
      note: "no recording of a 410; compared with GitHub's recorded error envelope",
    },
    {
      call: "issues.get: GET /repos/{owner}/{repo}/issues/{number}",
      answer: () => ask(`/repos/${REPO}/issues/${issueNumber}`),
      status: 200,
      reads: [
        "title",
        "body",
        "html_url",
        "state",
        "user.login",
        "labels[].name",
        "comments",
        "pull_request?",
      ],
      recorded: () => {
        const page = recording("paginate-issues")[0] as Recorded;
        return { ...page, response: (page.response as unknown[])[0] };
      },
      note: "no recording of this call; compared with the issue object of paginate-issues",
    },
    {
      call: "issues.listComments: GET /repos/{owner}/{repo}/issues/{number}/comments",
      answer: () => ask(`/repos/${REPO}/issues/${issueNumber}/comments?per_page=100`),
      status: 200,
      reads: ["body", "user.login", "created_at"],
      headers: [],
      list: true,
    },
    {
      call: "pulls.list (repositories with issues turned off): GET /repos/{owner}/{repo}/pulls",
      answer: () => ask(`/repos/${REPO}/pulls?state=all&sort=created&direction=asc&per_page=1&page=1`),
      status: 200,
      reads: ["number", "updated_at"],
      list: true,
    },
    {
      call: "pulls.get: GET /repos/{owner}/{repo}/pulls/{number}",
      answer: () => ask(`/repos/${REPO}/pulls/${pullNumber}`),
      status: 200,
      reads: ["title", "body", "html_url", "state", "user.login", "labels[].name", "comments", "merged_at"],
    },
    {
      call: "any call for a missing or hidden repository or item: 404",
      answer: () => ask("/repos/octokit-fixture-org/missing"),
      status: 404,
      reads: ["message"],
      recorded: recordedError,
    },
    {
      call: "any call with a refused token: 401",
      answer: async () => {
        const res = await fetch(`${fake.url}/user`, { headers: { authorization: "token ghp_refused" } });
        return { status: res.status, headers: res.headers, body: await res.json() };
      },
      status: 401,
      reads: ["message"],
      recorded: recordedError,
      note: "no recording of a 401; compared with GitHub's recorded error envelope",
    },
    {
      call: "any call past the primary rate limit: 403 with x-ratelimit-remaining 0",
      answer: () => {
        fake.rateLimitNext({ resetInSeconds: 60 });
        return ask(`/repos/${REPO}`);
      },
      status: 403,
      reads: ["message"],
      headers: ["x-ratelimit-remaining", "x-ratelimit-reset", "date"],
      recorded: recordedError,
      note: "no recording of a rate limit; compared with GitHub's recorded error envelope",
    },
    {
      call: "any call past a secondary rate limit: 429 with retry-after",
      answer: () => {
        fake.rateLimitNext({ status: 429, retryAfterSeconds: 3 });
        return ask(`/repos/${REPO}`);
      },
      status: 429,
      reads: ["message"],
      headers: ["retry-after"],
      recorded: recordedError,
      note: "no recording of a rate limit; compared with GitHub's recorded error envelope",
    },
    {
      call: "a repository of an organization enforcing SAML SSO: 403",
      answer: () => ask("/repos/sso-org/wiki"),
      status: 403,
      reads: ["message"],
      headers: ["x-github-sso"],
      recorded: recordedError,
      note: "no recording of SAML enforcement; compared with GitHub's recorded error envelope",
    },
    {
      call: "a fine-grained token without a permission: 403",
      answer: () => ask("/repos/octokit-fixture-org/fine-grained/issues?state=all"),
      status: 403,
      reads: ["message"],
      headers: ["x-accepted-github-permissions"],
      recorded: recordedError,
      note: "no recording of a fine-grained refusal; compared with GitHub's recorded error envelope",
    },
  ];

  /**
   * Error bodies have carried `"status": "<code>"` since the recordings were made (2017); GitHub sends it
   * today (https://github.com/github/rest-api-description/issues/3726 shows one), so it is the one field an
   * error answer of the fake may have beyond the recorded envelope.
   */
  const sinceRecorded = (path: string, status: number) => status >= 400 && path === "$.status";
  /** Sent only for a repository an organization owns (the recording's is); the fake's owners are users. */
  const ownedByOrganization = (path: string) => path === "$.organization";

  it.each(calls)("$call", async (c) => {
    const answer = await c.answer();
    expect(answer.status).toBe(c.status);
    const body = c.list ? (answer.body as unknown[])[0] : answer.body;
    if (c.list) expect(body, "a list with one element to compare").toBeDefined();
    const elements = { labels: label() };
    // The connector finds what it reads in the fake's answer...
    for (const path of c.reads) expect(holds(body, path, elements), `the fake's ${path}`).toBe(true);
    for (const name of c.headers ?? []) expect(answer.headers.get(name), `the fake's ${name}`).not.toBeNull();
    if (!c.recorded) return;
    const recorded = c.recorded();
    const recordedBody = c.list ? (recorded.response as unknown[])[0] : recorded.response;
    // ...and in GitHub's recorded answer.
    for (const path of c.reads) expect(holds(recordedBody, path, elements), `GitHub's ${path}`).toBe(true);
    for (const name of c.headers ?? []) {
      // Headers of error kinds that were never recorded are checked on the fake only.
      if (recorded.status === c.status) expect(recorded.headers[name], `GitHub's ${name}`).toBeDefined();
    }
    if (recorded.status === c.status) expect(answer.status).toBe(recorded.status);
    else expect([c.status >= 400, recorded.status >= 400]).toEqual([true, true]);
    // Same shape both ways, nested objects included.
    expect(strays(body, recordedBody).filter((s) => !sinceRecorded(s.split(":")[0] ?? "", c.status))).toEqual(
      [],
    );
    expect(absent(body, recordedBody).filter((s) => !ownedByOrganization(s.split(":")[0] ?? ""))).toEqual([]);
  });

  it("lists the calls that have no recording of their own", () => {
    const unrecorded = calls.filter((c) => !c.recorded || c.note).map((c) => c.call);
    // Kept in docs/connectors.md (GitHub section) and checked here so the two do not drift apart.
    expect(unrecorded).toEqual([
      "users.getAuthenticated (verify): GET /user",
      "repos.listForAuthenticatedUser (resources): GET /user/repos",
      "git.getTree: GET /repos/{owner}/{repo}/git/trees/{branch}?recursive=1",
      "git.getTree with If-None-Match: 304 Not Modified",
      "git.getTree of an empty repository: 409",
      "git.getBlob (files over 1 MB): GET /repos/{owner}/{repo}/git/blobs/{sha}",
      "issues.listForRepo with issues turned off: 410",
      "issues.get: GET /repos/{owner}/{repo}/issues/{number}",
      "issues.listComments: GET /repos/{owner}/{repo}/issues/{number}/comments",
      "pulls.list (repositories with issues turned off): GET /repos/{owner}/{repo}/pulls",
      "pulls.get: GET /repos/{owner}/{repo}/pulls/{number}",
      "any call with a refused token: 401",
      "any call past the primary rate limit: 403 with x-ratelimit-remaining 0",
      "any call past a secondary rate limit: 429 with retry-after",
      "a repository of an organization enforcing SAML SSO: 403",
      "a fine-grained token without a permission: 403",
    ]);
  });
});
