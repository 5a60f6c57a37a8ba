// A local stand-in for the GitHub REST API (the endpoints the github connector uses), on 127.0.0.1.
// Response shapes follow real recordings (@octokit/fixtures scenarios: paginate-issues, get-content,
// get-repository) and GitHub's documented behaviour: git object shas computed as git does, Link headers
// for pagination, ETag / If-None-Match → 304 (not counted against the rate limit), 401 "Bad credentials",
// primary (403 + x-ratelimit-reset) and secondary (403/429 + retry-after) rate limits, 409 for the tree of
// an empty repository, 410 for the issues of a repository with issues turned off, truncated recursive trees.
// Repositories live in memory; tests change them between passes.

import { createHash } from "node:crypto";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import zlib from "node:zlib";
import { UserQuota } from "./user-quota.ts";

export interface FakeRepositoryOptions {
  private?: boolean;
  description?: string | null;
  defaultBranch?: string;
  /** false: the issues listing answers 410, as GitHub does when issues are turned off. */
  hasIssues?: boolean;
}

export interface FakeIssueInput {
  title: string;
  body?: string | null;
  user?: string;
  labels?: string[];
  state?: "open" | "closed";
}

export interface FakePullInput extends FakeIssueInput {
  merged?: boolean;
  draft?: boolean;
}

export interface RateLimitInjection {
  /** 403 (default, what GitHub mostly sends) or 429. */
  status?: 403 | 429;
  /** Secondary limit: sends `retry-after` with this many seconds. */
  retryAfterSeconds?: number;
  /** Primary limit: `x-ratelimit-remaining: 0` and a reset this many seconds from now (default 3600). */
  resetInSeconds?: number;
  /** How many requests in a row are refused (default 1). */
  times?: number;
}

/**
 * Why GitHub refuses a repository's resources to a token that is otherwise valid:
 * - "saml": the organization enforces SAML SSO and the token was not authorized for it (every repository
 *   of that owner answers 403);
 * - "ip_allow_list": the organization accepts requests only from its allowed IP addresses, and ours is
 *   not one (every repository of that owner answers 403);
 * - a list of fine-grained permissions: a fine-grained token granted only these on the repository (the
 *   repository itself, metadata, always answers; the other parts answer 403);
 * - "hidden": the token cannot see the repository at all, which GitHub answers with 404 as if it did not
 *   exist.
 */
export type FakeRefusal = "saml" | "ip_allow_list" | "hidden" | FineGrainedPermission[];
export type FineGrainedPermission = "contents" | "issues" | "pull_requests";

export interface FakeRequest {
  method: string;
  path: string;
  status: number;
  /** The Authorization header it came with (tells connections apart). */
  authorization?: string;
}

export interface FakeGitHub {
  /** API root to use as `baseUrl`. */
  url: string;
  /** The token the fake accepts (`authorization: token …` or `Bearer …`). */
  token: string;
  /** Every request answered, in order. */
  requests: FakeRequest[];
  addRepository(fullName: string, options?: FakeRepositoryOptions): void;
  /** Renames (or transfers) a repository; requests under the old name answer 301, as on GitHub. */
  renameRepository(fullName: string, newFullName: string): void;
  /** Creates or replaces a file on the default branch; returns its git blob sha. */
  setFile(fullName: string, path: string, content: string | Buffer): string;
  deleteFile(fullName: string, path: string): void;
  /** Returns the issue number (issues and pull requests share numbers, as on GitHub). */
  addIssue(fullName: string, issue: FakeIssueInput): number;
  addPullRequest(fullName: string, pull: FakePullInput): number;
  updateIssue(fullName: string, number: number, patch: Partial<FakePullInput>): void;
  addComment(fullName: string, number: number, comment: { body: string; user?: string }): void;
  deleteIssue(fullName: string, number: number): void;
  /** `updated_at` of an issue or pull request, as the API shows it. */
  issueUpdatedAt(fullName: string, number: number): string;
  /** The next request(s) are refused with a rate limit. */
  rateLimitNext(injection?: RateLimitInjection): void;
  /**
   * From now on the user may send at most `requests` requests per `windowSeconds`, whichever of its tokens
   * sends them; past that, 403 secondary rate limit with retry-after until the window ends. Null lifts it.
   */
  throttleUser(quota: { requests: number; windowSeconds: number } | null): void;
  /** From now on every token is refused with 401, as after the user revoked the app's access. */
  revokeToken(): void;
  /**
   * How the token endpoint issues user tokens from now on: false (an OAuth app: one token that does not
   * expire, the fake's `token`), true (a GitHub App with expiring user tokens: a `ghu_` access token for
   * eight hours and a `ghr_` refresh token).
   */
  setExpiringUserTokens(expiring: boolean): void;
  /**
   * The user access tokens issued so far stop working (401), as eight hours after they were issued; with
   * `refreshTokens`, their refresh tokens too (expired after six months, or revoked).
   */
  expireUserTokens(options?: { refreshTokens?: boolean }): void;
  /** Requests to the OAuth token endpoint, in order: the grant type and the error answered, if any. */
  tokenRequests: { grantType: string; error?: string }[];
  /** Refuses a repository (owner/name), or with "saml" or "ip_allow_list" every repository of an owner; null lifts it. */
  refuse(target: string, refusal: FakeRefusal | null): void;
  /** Recursive tree listings with more entries than this come back cut off with `truncated: true`. */
  setTreeTruncation(limit: number | null): void;
  stop(): Promise<void>;
}

interface Issue {
  id: number;
  number: number;
  title: string;
  body: string | null;
  user: string;
  labels: string[];
  state: "open" | "closed";
  pull: boolean;
  merged: boolean;
  draft: boolean;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  comments: { id: number; body: string; user: string; createdAt: string; updatedAt: string }[];
}

interface Repository {
  id: number;
  owner: string;
  name: string;
  private: boolean;
  description: string | null;
  defaultBranch: string;
  hasIssues: boolean;
  createdAt: string;
  updatedAt: string;
  pushedAt: string;
  files: Map<string, Buffer>;
  issues: Map<number, Issue>;
  nextNumber: number;
  /** Every git object ever written, like a repository's object store: old trees stay readable by sha. */
  objects: Map<string, GitObject>;
}

type GitObject = { type: "blob"; content: Buffer } | { type: "tree"; entries: TreeEntry[] };

interface TreeEntry {
  name: string;
  type: "blob" | "tree";
  sha: string;
  size?: number;
}

const FIXTURE_USER_ID = 1000;
const CONTENTS_MAX_BYTES = 1024 * 1024;

/** The OAuth app the fake's token endpoint accepts. */
export const OAUTH_CLIENT_ID = "Iv1.fakegithubclient";
export const OAUTH_CLIENT_SECRET = "fake-github-client-secret";

export async function startFakeGitHub(options: { token?: string; login?: string } = {}): Promise<FakeGitHub> {
  const token = options.token ?? "ghp_fake0000000000000000000000000000000001";
  let revoked = false;
  let expiringUserTokens = false;
  /** Expiring user tokens issued and still valid; refresh token → the access token it came with. */
  const userTokens = new Set<string>();
  const refreshTokens = new Map<string, string>();
  let nextUserToken = 1;
  const tokenRequests: { grantType: string; error?: string }[] = [];
  /** Lower-cased owner or owner/name → refusal. */
  const refusals = new Map<string, FakeRefusal>();
  let nextCode = 1;
  const issuedCodes = new Map<string, string>();
  const login = options.login ?? "octocat";
  const repositories = new Map<string, Repository>();
  /** Old name → the repository, after a rename. */
  const renamed = new Map<string, Repository>();
  const requests: FakeRequest[] = [];
  const injections: RateLimitInjection[] = [];
  let userQuota: UserQuota | null = null;
  let treeTruncation: number | null = null;
  let nextId = 1000;
  // A clock that moves one second per change, so every change shows in updated_at.
  // Real time, so updated_at agrees with the Date header as on GitHub (`since` listings rely on it);
  // at least a second apart, so every change gets a new updated_at.
  let clock = Date.now() - 60_000;
  const tick = () => {
    clock = Math.max(clock + 1000, Date.now());
    return iso(clock);
  };
  const rateLimitReset = Math.floor(Date.now() / 1000) + 3600;
  let rateLimitRemaining = 5000;

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error) => {
      if (!res.headersSent) send(req, res, 500, { message: String(error) });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  function repoOf(fullName: string): Repository {
    const repo = repositories.get(fullName.toLowerCase());
    if (!repo) throw new Error(`fake github: no repository ${fullName}`);
    return repo;
  }

  function issueOf(fullName: string, number: number): Issue {
    const issue = repoOf(fullName).issues.get(number);
    if (!issue) throw new Error(`fake github: no issue ${fullName}#${number}`);
    return issue;
  }

  function touch(repo: Repository, pushed = false) {
    const now = tick();
    repo.updatedAt = now;
    if (pushed) repo.pushedAt = now;
    return now;
  }

  // --- git objects -------------------------------------------------------------------------------

  function writeBlob(repo: Repository, content: Buffer): string {
    const sha = createHash("sha1")
      .update(Buffer.concat([Buffer.from(`blob ${content.length}\0`), content]))
      .digest("hex");
    repo.objects.set(sha, { type: "blob", content });
    return sha;
  }

  /** The root tree of the current files, written as git would (same shas for the same content). */
  function writeTree(repo: Repository): string {
    interface Dir {
      dirs: Map<string, Dir>;
      blobs: Map<string, Buffer>;
    }
    const root: Dir = { dirs: new Map(), blobs: new Map() };
    for (const [path, content] of repo.files) {
      const parts = path.split("/");
      const name = parts.pop() as string;
      let dir = root;
      for (const part of parts) {
        let sub = dir.dirs.get(part);
        if (!sub) {
          sub = { dirs: new Map(), blobs: new Map() };
          dir.dirs.set(part, sub);
        }
        dir = sub;
      }
      dir.blobs.set(name, content);
    }
    const write = (dir: Dir): string => {
      const entries: TreeEntry[] = [];
      for (const [name, content] of dir.blobs) {
        entries.push({ name, type: "blob", sha: writeBlob(repo, content), size: content.length });
      }
      for (const [name, sub] of dir.dirs) entries.push({ name, type: "tree", sha: write(sub) });
      // git orders entries by name, a folder's name compared as if it ended in "/".
      const key = (e: TreeEntry) => (e.type === "tree" ? `${e.name}/` : e.name);
      entries.sort((a, b) => Buffer.compare(Buffer.from(key(a)), Buffer.from(key(b))));
      const body = Buffer.concat(
        entries.flatMap((e) => [
          Buffer.from(`${e.type === "tree" ? "40000" : "100644"} ${e.name}\0`),
          Buffer.from(e.sha, "hex"),
        ]),
      );
      const sha = createHash("sha1")
        .update(Buffer.concat([Buffer.from(`tree ${body.length}\0`), body]))
        .digest("hex");
      repo.objects.set(sha, { type: "tree", entries });
      return sha;
    };
    return write(root);
  }

  // --- JSON shapes (after api.github.com recordings) ---------------------------------------------

  const userJson = (name: string) => ({
    login: name,
    id: FIXTURE_USER_ID,
    node_id: "MDQ6VXNlcjE=",
    avatar_url: `https://avatars.githubusercontent.com/u/${FIXTURE_USER_ID}?v=4`,
    gravatar_id: "",
    url: `${url}/users/${name}`,
    html_url: `https://github.com/${name}`,
    followers_url: `${url}/users/${name}/followers`,
    following_url: `${url}/users/${name}/following{/other_user}`,
    gists_url: `${url}/users/${name}/gists{/gist_id}`,
    starred_url: `${url}/users/${name}/starred{/owner}{/repo}`,
    subscriptions_url: `${url}/users/${name}/subscriptions`,
    organizations_url: `${url}/users/${name}/orgs`,
    repos_url: `${url}/users/${name}/repos`,
    events_url: `${url}/users/${name}/events{/privacy}`,
    received_events_url: `${url}/users/${name}/received_events`,
    type: "User",
    site_admin: false,
  });

  /** The URL templates of a repository, as the get-repository recording lists them. */
  const repoUrlTemplates = (api: string) =>
    Object.fromEntries(
      Object.entries({
        forks_url: "/forks",
        keys_url: "/keys{/key_id}",
        collaborators_url: "/collaborators{/collaborator}",
        teams_url: "/teams",
        hooks_url: "/hooks",
        issue_events_url: "/issues/events{/number}",
        events_url: "/events",
        assignees_url: "/assignees{/user}",
        branches_url: "/branches{/branch}",
        tags_url: "/tags",
        blobs_url: "/git/blobs{/sha}",
        git_tags_url: "/git/tags{/sha}",
        git_refs_url: "/git/refs{/sha}",
        statuses_url: "/statuses/{sha}",
        languages_url: "/languages",
        stargazers_url: "/stargazers",
        contributors_url: "/contributors",
        subscribers_url: "/subscribers",
        subscription_url: "/subscription",
        commits_url: "/commits{/sha}",
        git_commits_url: "/git/commits{/sha}",
        comments_url: "/comments{/number}",
        issue_comment_url: "/issues/comments{/number}",
        compare_url: "/compare/{base}...{head}",
        merges_url: "/merges",
        archive_url: "/{archive_format}{/ref}",
        downloads_url: "/downloads",
        milestones_url: "/milestones{/number}",
        notifications_url: "/notifications{?since,all,participating}",
        labels_url: "/labels{/name}",
        releases_url: "/releases{/id}",
        deployments_url: "/deployments",
      }).map(([key, suffix]) => [key, `${api}${suffix}`]),
    );

  const repoJson = (repo: Repository) => {
    const full = `${repo.owner}/${repo.name}`;
    const api = `${url}/repos/${full}`;
    const openIssues = [...repo.issues.values()].filter((i) => i.state === "open").length;
    return {
      id: repo.id,
      node_id: "MDEwOlJlcG9zaXRvcnkx",
      name: repo.name,
      full_name: full,
      private: repo.private,
      owner: userJson(repo.owner),
      html_url: `https://github.com/${full}`,
      description: repo.description,
      fork: false,
      url: api,
      issues_url: `${api}/issues{/number}`,
      pulls_url: `${api}/pulls{/number}`,
      trees_url: `${api}/git/trees{/sha}`,
      contents_url: `${api}/contents/{+path}`,
      ...repoUrlTemplates(api),
      created_at: repo.createdAt,
      updated_at: repo.updatedAt,
      pushed_at: repo.pushedAt,
      git_url: `git://github.com/${full}.git`,
      ssh_url: `git@github.com:${full}.git`,
      clone_url: `https://github.com/${full}.git`,
      svn_url: `https://github.com/${full}`,
      homepage: null,
      size: 0,
      stargazers_count: 0,
      watchers_count: 0,
      language: null,
      has_issues: repo.hasIssues,
      has_projects: true,
      has_downloads: true,
      has_wiki: true,
      has_pages: false,
      forks_count: 0,
      mirror_url: null,
      archived: false,
      disabled: false,
      open_issues_count: openIssues,
      license: null,
      allow_forking: true,
      is_template: false,
      web_commit_signoff_required: false,
      topics: [],
      visibility: repo.private ? "private" : "public",
      forks: 0,
      open_issues: openIssues,
      watchers: 0,
      default_branch: repo.defaultBranch,
      permissions: { admin: true, maintain: true, push: true, triage: true, pull: true },
      temp_clone_token: "",
      allow_squash_merge: true,
      allow_merge_commit: true,
      allow_rebase_merge: true,
      allow_auto_merge: false,
      delete_branch_on_merge: false,
      allow_update_branch: false,
      use_squash_pr_title_as_default: false,
      // Only GET /repos/{owner}/{repo} (a "full repository") has these; listings leave them out.
      network_count: 0,
      subscribers_count: 0,
    };
  };

  const labelJson = (repo: Repository, name: string, index: number) => ({
    id: 2000 + index,
    node_id: "MDU6TGFiZWwx",
    url: `${url}/repos/${repo.owner}/${repo.name}/labels/${encodeURIComponent(name)}`,
    name,
    color: "ededed",
    default: false,
    description: null,
  });

  const issueJson = (repo: Repository, issue: Issue) => {
    const full = `${repo.owner}/${repo.name}`;
    const api = `${url}/repos/${full}/issues/${issue.number}`;
    return {
      url: api,
      repository_url: `${url}/repos/${full}`,
      labels_url: `${api}/labels{/name}`,
      comments_url: `${api}/comments`,
      events_url: `${api}/events`,
      html_url: `https://github.com/${full}/${issue.pull ? "pull" : "issues"}/${issue.number}`,
      id: issue.id,
      node_id: "MDA6RW50aXR5MQ==",
      number: issue.number,
      title: issue.title,
      user: userJson(issue.user),
      labels: issue.labels.map((name, i) => labelJson(repo, name, i)),
      state: issue.state,
      locked: false,
      assignee: null,
      assignees: [],
      milestone: null,
      comments: issue.comments.length,
      created_at: issue.createdAt,
      updated_at: issue.updatedAt,
      closed_at: issue.closedAt,
      author_association: "MEMBER",
      active_lock_reason: null,
      ...(issue.pull
        ? {
            draft: issue.draft,
            pull_request: {
              url: `${url}/repos/${full}/pulls/${issue.number}`,
              html_url: `https://github.com/${full}/pull/${issue.number}`,
              diff_url: `https://github.com/${full}/pull/${issue.number}.diff`,
              patch_url: `https://github.com/${full}/pull/${issue.number}.patch`,
              merged_at: issue.merged ? issue.closedAt : null,
            },
          }
        : {}),
      body: issue.body,
      reactions: {
        url: `${api}/reactions`,
        total_count: 0,
        "+1": 0,
        "-1": 0,
        laugh: 0,
        hooray: 0,
        confused: 0,
        heart: 0,
        rocket: 0,
        eyes: 0,
      },
      timeline_url: `${api}/timeline`,
      performed_via_github_app: null,
      state_reason: issue.state === "closed" ? "completed" : null,
    };
  };

  const pullJson = (repo: Repository, issue: Issue) => {
    const full = `${repo.owner}/${repo.name}`;
    const api = `${url}/repos/${full}/pulls/${issue.number}`;
    return {
      url: api,
      id: issue.id,
      node_id: "MDExOlB1bGxSZXF1ZXN0MQ==",
      html_url: `https://github.com/${full}/pull/${issue.number}`,
      diff_url: `https://github.com/${full}/pull/${issue.number}.diff`,
      patch_url: `https://github.com/${full}/pull/${issue.number}.patch`,
      issue_url: `${url}/repos/${full}/issues/${issue.number}`,
      number: issue.number,
      state: issue.state,
      locked: false,
      title: issue.title,
      user: userJson(issue.user),
      body: issue.body,
      created_at: issue.createdAt,
      updated_at: issue.updatedAt,
      closed_at: issue.closedAt,
      merged_at: issue.merged ? issue.closedAt : null,
      merge_commit_sha: null,
      assignee: null,
      assignees: [],
      requested_reviewers: [],
      labels: issue.labels.map((name, i) => labelJson(repo, name, i)),
      milestone: null,
      draft: issue.draft,
      head: { label: `${repo.owner}:feature`, ref: "feature", sha: "0".repeat(40) },
      base: { label: `${repo.owner}:${repo.defaultBranch}`, ref: repo.defaultBranch, sha: "0".repeat(40) },
      author_association: "MEMBER",
      merged: issue.merged,
      comments: issue.comments.length,
    };
  };

  const commentJson = (repo: Repository, issue: Issue, comment: Issue["comments"][number]) => {
    const full = `${repo.owner}/${repo.name}`;
    return {
      url: `${url}/repos/${full}/issues/comments/${comment.id}`,
      html_url: `https://github.com/${full}/issues/${issue.number}#issuecomment-${comment.id}`,
      issue_url: `${url}/repos/${full}/issues/${issue.number}`,
      id: comment.id,
      node_id: "MDEyOklzc3VlQ29tbWVudDE=",
      user: userJson(comment.user),
      created_at: comment.createdAt,
      updated_at: comment.updatedAt,
      author_association: "MEMBER",
      body: comment.body,
      performed_via_github_app: null,
    };
  };

  // --- HTTP ----------------------------------------------------------------------------------------

  function baseHeaders(): Record<string, string> {
    return {
      "x-github-media-type": "github.v3; format=json",
      "x-github-request-id": `0000:${String(requests.length).padStart(5, "0")}`,
      "x-ratelimit-limit": "5000",
      "x-ratelimit-remaining": String(rateLimitRemaining),
      "x-ratelimit-reset": String(rateLimitReset),
      "x-ratelimit-used": String(5000 - rateLimitRemaining),
      "x-ratelimit-resource": "core",
      "access-control-expose-headers":
        "ETag, Link, Location, Retry-After, X-GitHub-OTP, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Used, X-RateLimit-Resource, X-RateLimit-Reset",
    };
  }

  function send(
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) {
    requests.push({
      method: req.method ?? "GET",
      path: req.url ?? "",
      status,
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    });
    const text = Buffer.from(JSON.stringify(body));
    // GitHub compresses whenever the client accepts it.
    const gzip = /\bgzip\b/.test(req.headers["accept-encoding"] ?? "");
    const payload = gzip ? zlib.gzipSync(text) : text;
    res.writeHead(status, {
      "content-type": "application/json; charset=utf-8",
      "content-length": payload.length,
      ...(gzip ? { "content-encoding": "gzip", vary: "Accept-Encoding" } : {}),
      ...baseHeaders(),
      ...headers,
    });
    res.end(payload);
  }

  /** 200 with an ETag, or 304 when the client already holds this representation. */
  function ok(
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
    headers: Record<string, string> = {},
  ) {
    const etag = `W/"${createHash("sha256").update(JSON.stringify(body)).digest("hex").slice(0, 32)}"`;
    const held = (req.headers["if-none-match"] ?? "").split(",").map((t) => t.trim().replace(/^W\//, ""));
    if (held.includes(etag.replace(/^W\//, ""))) {
      requests.push({
        method: req.method ?? "GET",
        path: req.url ?? "",
        status: 304,
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
      });
      res.writeHead(304, { etag, ...baseHeaders(), ...headers });
      res.end();
      return;
    }
    rateLimitRemaining = Math.max(0, rateLimitRemaining - 1);
    send(req, res, 200, body, { etag, "cache-control": "private, max-age=60, s-maxage=60", ...headers });
  }

  function notFound(req: IncomingMessage, res: ServerResponse) {
    send(req, res, 404, {
      message: "Not Found",
      documentation_url: "https://docs.github.com/rest",
      status: "404",
    });
  }

  /** A page of a list, with GitHub's Link header (absent when everything fits on one page). */
  function paginated(req: IncomingMessage, res: ServerResponse, query: URLSearchParams, all: unknown[]) {
    const perPage = Math.min(100, Math.max(1, Number(query.get("per_page")) || 30));
    const page = Math.max(1, Number(query.get("page")) || 1);
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const at = (p: number) => {
      const q = new URLSearchParams(query);
      q.set("per_page", String(perPage));
      q.set("page", String(p));
      return `<${url}${new URL(req.url ?? "/", url).pathname}?${q}>`;
    };
    const links: string[] = [];
    if (page > 1) links.push(`${at(page - 1)}; rel="prev"`);
    if (page < last) links.push(`${at(page + 1)}; rel="next"`, `${at(last)}; rel="last"`);
    if (page > 1) links.push(`${at(1)}; rel="first"`);
    ok(
      req,
      res,
      all.slice((page - 1) * perPage, page * perPage),
      links.length ? { link: links.join(", ") } : {},
    );
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    let requestBody = "";
    for await (const chunk of req) requestBody += chunk;
    // GitHub's OAuth web flow (github.com/login/oauth/*): the consent page approves at once.
    const oauthUrl = new URL(req.url ?? "/", "http://fake");
    if (oauthUrl.pathname === "/login/oauth/authorize") {
      const code = `code_${nextCode++}`;
      issuedCodes.set(code, oauthUrl.searchParams.get("redirect_uri") ?? "");
      const back = new URL(oauthUrl.searchParams.get("redirect_uri") ?? "http://invalid/");
      back.searchParams.set("code", code);
      back.searchParams.set("state", oauthUrl.searchParams.get("state") ?? "");
      res.writeHead(302, { location: back.toString() }).end();
      return;
    }
    if (oauthUrl.pathname === "/login/oauth/access_token" && req.method === "POST") {
      return tokenEndpoint(res, new URLSearchParams(requestBody));
    }
    const auth = req.headers.authorization ?? "";
    const presented = auth.match(/^(?:token|bearer)\s+(.+)$/i)?.[1];
    if (revoked || presented === undefined || (presented !== token && !userTokens.has(presented))) {
      send(req, res, 401, {
        message: "Bad credentials",
        documentation_url: "https://docs.github.com/rest",
        status: "401",
      });
      return;
    }
    // Secondary limits count the user's requests, whichever token sends them: 403 (or 429) with
    // retry-after, to be honoured before trying again
    // (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits,
    // https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#handle-rate-limit-errors-appropriately).
    const quota = userQuota?.take();
    if (quota?.exceeded) {
      injections.unshift({ status: 403, retryAfterSeconds: quota.retryAfterSeconds, times: 1 });
    }
    const injection = injections[0];
    if (injection) {
      injection.times = (injection.times ?? 1) - 1;
      if (injection.times <= 0) injections.shift();
      const status = injection.status ?? 403;
      if (injection.retryAfterSeconds !== undefined) {
        send(
          req,
          res,
          status,
          {
            message:
              "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0000:00000.",
            documentation_url:
              "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
            status: String(status),
          },
          { "retry-after": String(injection.retryAfterSeconds) },
        );
      } else {
        send(
          req,
          res,
          status,
          {
            message: `API rate limit exceeded for user ID ${FIXTURE_USER_ID}. If you reach out to GitHub Support for help, please include the request ID 0000:00000.`,
            documentation_url:
              "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit",
            status: String(status),
          },
          {
            "x-ratelimit-remaining": "0",
            "x-ratelimit-used": "5000",
            "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + (injection.resetInSeconds ?? 3600)),
          },
        );
      }
      return;
    }

    const target = new URL(req.url ?? "/", url);
    const raw = target.pathname.split("/").slice(1);
    let segments = raw.map(decodeURIComponent);
    const query = target.searchParams;
    if (req.method !== "GET") return notFound(req, res);

    // `/repositories/:id/...` is where GitHub sends the requests for a renamed repository.
    if (segments[0] === "repositories" && segments[1]) {
      const repo = [...repositories.values()].find((r) => String(r.id) === segments[1]);
      if (!repo) return notFound(req, res);
      segments = ["repos", repo.owner, repo.name, ...segments.slice(2)];
    } else if (segments[0] === "repos" && segments.length >= 3) {
      const key = `${segments[1]}/${segments[2]}`.toLowerCase();
      const moved = renamed.get(key);
      if (moved && !repositories.has(key)) {
        const location = `${url}/repositories/${moved.id}${raw.length > 3 ? `/${raw.slice(3).join("/")}` : ""}${target.search}`;
        return send(
          req,
          res,
          301,
          {
            message: "Moved Permanently",
            url: location,
            documentation_url: "https://docs.github.com/v3/#http-redirects",
          },
          { location },
        );
      }
    }

    if (segments[0] === "user" && segments.length === 1) {
      return ok(req, res, { ...userJson(login), name: "The Octocat", public_repos: repositories.size });
    }
    if (segments[0] === "user" && segments[1] === "repos" && segments.length === 2) {
      const all = [...repositories.values()]
        .sort((a, b) =>
          `${a.owner}/${a.name}`.toLowerCase().localeCompare(`${b.owner}/${b.name}`.toLowerCase()),
        )
        .map((repo) => {
          // A listing holds "repository" objects, without the counts only a full repository has
          // (https://docs.github.com/en/rest/repos/repos#list-repositories-for-the-authenticated-user).
          const { network_count: _, subscribers_count: __, ...listed } = repoJson(repo);
          return listed;
        });
      return paginated(req, res, query, all);
    }
    if (segments[0] !== "repos" || segments.length < 3) return notFound(req, res);
    const repo = repositories.get(`${segments[1]}/${segments[2]}`.toLowerCase());
    if (!repo) return notFound(req, res);
    const full = `${repo.owner}/${repo.name}`;
    const [, , , section, ...rest] = segments;
    if (refused(req, res, repo, section, rest)) return;

    if (section === undefined) return ok(req, res, repoJson(repo));

    if (section === "git" && rest[0] === "trees" && rest.length >= 2) {
      const ref = rest.slice(1).join("/");
      if (repo.files.size === 0) {
        return send(req, res, 409, {
          message: "Git Repository is empty.",
          documentation_url: "https://docs.github.com/rest/git/trees#get-a-tree",
          status: "409",
        });
      }
      const sha = ref === repo.defaultBranch ? writeTree(repo) : ref;
      const object = repo.objects.get(sha);
      if (object?.type !== "tree") return notFound(req, res);
      const entries: Record<string, unknown>[] = [];
      const list = (tree: TreeEntry[], prefix: string, recursive: boolean) => {
        for (const e of tree) {
          const api = `${url}/repos/${full}/git/${e.type === "tree" ? "trees" : "blobs"}/${e.sha}`;
          entries.push({
            path: prefix + e.name,
            mode: e.type === "tree" ? "040000" : "100644",
            type: e.type,
            sha: e.sha,
            ...(e.type === "blob" ? { size: e.size } : {}),
            url: api,
          });
          const sub = repo.objects.get(e.sha);
          if (recursive && sub?.type === "tree") list(sub.entries, `${prefix}${e.name}/`, true);
        }
      };
      const recursive =
        query.has("recursive") && query.get("recursive") !== "0" && query.get("recursive") !== "false";
      list(object.entries, "", recursive);
      const truncated = recursive && treeTruncation !== null && entries.length > treeTruncation;
      return ok(req, res, {
        sha,
        url: `${url}/repos/${full}/git/trees/${sha}`,
        tree: truncated ? entries.slice(0, treeTruncation ?? 0) : entries,
        truncated,
      });
    }

    if (section === "git" && rest[0] === "blobs" && rest.length === 2) {
      const object = repo.objects.get(rest[1] ?? "");
      if (object?.type !== "blob") return notFound(req, res);
      return ok(req, res, {
        sha: rest[1],
        node_id: "MDQ6QmxvYjE=",
        size: object.content.length,
        url: `${url}/repos/${full}/git/blobs/${rest[1]}`,
        content: base64Lines(object.content),
        encoding: "base64",
      });
    }

    if (section === "contents" && rest.length >= 1) {
      const path = rest.join("/");
      const ref = query.get("ref") ?? repo.defaultBranch;
      if (ref !== repo.defaultBranch) {
        return send(req, res, 404, {
          message: `No commit found for the ref ${ref}`,
          documentation_url: "https://docs.github.com/rest/repos/contents#get-repository-content",
          status: "404",
        });
      }
      const content = repo.files.get(path);
      if (!content) return notFound(req, res);
      const sha = writeBlob(repo, content);
      const self = `${url}/repos/${full}/contents/${path}?ref=${repo.defaultBranch}`;
      const html = `https://github.com/${full}/blob/${repo.defaultBranch}/${path}`;
      const git = `${url}/repos/${full}/git/blobs/${sha}`;
      const small = content.length <= CONTENTS_MAX_BYTES;
      return ok(req, res, {
        type: "file",
        encoding: small ? "base64" : "none",
        size: content.length,
        name: path.slice(path.lastIndexOf("/") + 1),
        path,
        content: small ? base64Lines(content) : "",
        sha,
        url: self,
        git_url: git,
        html_url: html,
        download_url: `https://raw.githubusercontent.com/${full}/${repo.defaultBranch}/${path}`,
        _links: { self, git, html },
      });
    }

    if (section === "issues" && rest.length === 0) {
      if (!repo.hasIssues) {
        return send(req, res, 410, {
          message: "Issues are disabled for this repo",
          documentation_url: "https://docs.github.com/v3/issues/",
          status: "410",
        });
      }
      const state = query.get("state") ?? "open";
      const since = query.get("since");
      let list = [...repo.issues.values()].filter(
        (i) => (state === "all" || i.state === state) && (!since || i.updatedAt >= since),
      );
      list = sortIssues(list, query.get("sort") ?? "created", query.get("direction") ?? "desc");
      return paginated(
        req,
        res,
        query,
        list.map((i) => issueJson(repo, i)),
      );
    }

    if (section === "issues" && rest.length >= 1) {
      const issue = repo.issues.get(Number(rest[0]));
      if (!issue || !/^\d+$/.test(rest[0] ?? "")) return notFound(req, res);
      if (rest.length === 1) {
        if (!repo.hasIssues && !issue.pull) {
          return send(req, res, 410, {
            message: "Issues are disabled for this repo",
            documentation_url: "https://docs.github.com/v3/issues/",
            status: "410",
          });
        }
        return ok(req, res, issueJson(repo, issue));
      }
      if (rest.length === 2 && rest[1] === "comments") {
        return paginated(
          req,
          res,
          query,
          issue.comments.map((c) => commentJson(repo, issue, c)),
        );
      }
      return notFound(req, res);
    }

    if (section === "pulls" && rest.length === 0) {
      const state = query.get("state") ?? "open";
      let list = [...repo.issues.values()].filter((i) => i.pull && (state === "all" || i.state === state));
      list = sortIssues(list, query.get("sort") ?? "created", query.get("direction") ?? "desc");
      return paginated(
        req,
        res,
        query,
        list.map((i) => {
          const { comments: _, merged: __, ...listed } = pullJson(repo, i);
          return listed;
        }),
      );
    }

    if (section === "pulls" && rest.length === 1) {
      const issue = repo.issues.get(Number(rest[0]));
      if (!issue?.pull) return notFound(req, res);
      return ok(req, res, pullJson(repo, issue));
    }

    return notFound(req, res);
  }

  /**
   * The documented OAuth token endpoint. Errors come back with status 200 and an `error` field, not a 4xx
   * ("Troubleshooting OAuth app access token request errors":
   * https://docs.github.com/en/apps/oauth-apps/maintaining-oauth-apps/troubleshooting-oauth-app-access-token-request-errors).
   * A GitHub App with expiring user tokens answers an access token valid eight hours and a refresh token
   * valid six months; using a refresh token retires it and the access token issued with it
   * ("Refreshing user access tokens":
   * https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/refreshing-user-access-tokens).
   */
  function tokenEndpoint(res: ServerResponse, form: URLSearchParams) {
    const grantType = form.get("grant_type") ?? "authorization_code";
    const answer = (body: Record<string, unknown>) => {
      tokenRequests.push({
        grantType,
        ...(typeof body.error === "string" ? { error: body.error } : {}),
      });
      res.writeHead(200, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(body));
    };
    if (form.get("client_id") !== OAUTH_CLIENT_ID || form.get("client_secret") !== OAUTH_CLIENT_SECRET) {
      return answer({
        error: "incorrect_client_credentials",
        error_description: "The client_id and/or client_secret passed are incorrect.",
        error_uri:
          "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#incorrect-client-credentials",
      });
    }
    if (grantType === "refresh_token") {
      const presented = form.get("refresh_token") ?? "";
      const access = refreshTokens.get(presented);
      if (access === undefined) {
        return answer({
          error: "bad_refresh_token",
          error_description: "The refresh token passed is incorrect or expired.",
          error_uri:
            "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors#bad-refresh-token",
        });
      }
      refreshTokens.delete(presented);
      userTokens.delete(access);
      return answer(issueUserToken());
    }
    const code = form.get("code") ?? "";
    const redirect = issuedCodes.get(code);
    issuedCodes.delete(code);
    if (redirect === undefined || redirect !== form.get("redirect_uri")) {
      return answer({
        error: redirect === undefined ? "bad_verification_code" : "redirect_uri_mismatch",
        error_description:
          redirect === undefined
            ? "The code passed is incorrect or expired."
            : "The redirect_uri MUST match the registered callback URL for this application.",
        error_uri: `https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#${redirect === undefined ? "bad-verification-code" : "redirect-uri-mismatch"}`,
      });
    }
    return answer(
      expiringUserTokens ? issueUserToken() : { access_token: token, token_type: "bearer", scope: "repo" },
    );
  }

  function issueUserToken() {
    const n = String(nextUserToken++).padStart(36, "0");
    const access = `ghu_${n}`;
    const refresh = `ghr_${n}`;
    userTokens.add(access);
    refreshTokens.set(refresh, access);
    // GitHub Apps' user tokens carry no scopes: the app's permissions apply, so `scope` is empty.
    return {
      access_token: access,
      expires_in: 28800,
      refresh_token: refresh,
      refresh_token_expires_in: 15811200,
      scope: "",
      token_type: "bearer",
    };
  }

  /**
   * Answers a refused request (true) as GitHub documents it, or lets it through (false).
   * - SAML: 403 "Resource protected by organization SAML enforcement..." with an `X-GitHub-SSO` header
   *   naming where to authorize the token ("Authorizing a personal access token for use with SAML single
   *   sign-on": https://docs.github.com/en/enterprise-cloud@latest/authentication/authenticating-with-saml-single-sign-on/authorizing-a-personal-access-token-for-use-with-saml-single-sign-on;
   *   the REST v3 docs' "Authenticating for SAML SSO": "Visit the URL specified in X-GitHub-SSO"; the
   *   message as users report it: https://github.com/octokit/octokit.rb/discussions/1504).
   * - A fine-grained token without a permission: 403 "Resource not accessible by personal access token"
   *   with `X-Accepted-GitHub-Permissions` naming the permission the endpoint needs
   *   (https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api#insufficient-permission-errors,
   *   https://github.blog/changelog/2023-08-10-x-accepted-github-permissions-header-for-fine-grained-permission-actors/);
   *   the repository itself needs only metadata, which every fine-grained token has
   *   (https://docs.github.com/en/rest/overview/permissions-required-for-fine-grained-personal-access-tokens).
   * - A repository the token cannot see: 404, as if it did not exist
   *   (https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api#404-not-found-for-an-existing-resource).
   */
  function refused(
    req: IncomingMessage,
    res: ServerResponse,
    repo: Repository,
    section: string | undefined,
    rest: string[],
  ): boolean {
    // An organization's IP allow list: the message GitHub sends, as integrations quote it
    // (https://docs.github.com/en/organizations/keeping-your-organization-secure/managing-security-settings-for-your-organization/managing-allowed-ip-addresses-for-your-organization).
    if (refusals.get(repo.owner.toLowerCase()) === "ip_allow_list") {
      send(req, res, 403, {
        message: `Although you appear to have the correct authorization credentials, the \`${repo.owner}\` organization has an IP allow list enabled, and your IP address is not permitted to access this resource.`,
        documentation_url: "https://docs.github.com/rest",
        status: "403",
      });
      return true;
    }
    if (refusals.get(repo.owner.toLowerCase()) === "saml") {
      send(
        req,
        res,
        403,
        {
          message:
            "Resource protected by organization SAML enforcement. You must grant your Personal Access token access to this organization.",
          documentation_url:
            "https://docs.github.com/articles/authenticating-to-a-github-organization-with-saml-single-sign-on/",
          status: "403",
        },
        {
          "x-github-sso": `required; url=https://github.com/orgs/${repo.owner}/sso?authorization_request=AZSCKtL4U8yX1H3sCQIVnVgmjmon5fWxks5YrqhJzaGV2JIbmF0aW9uX3JlcXVlc3TOAAHjiM0B`,
        },
      );
      return true;
    }
    const refusal = refusals.get(`${repo.owner}/${repo.name}`.toLowerCase());
    if (refusal === undefined || refusal === "saml" || refusal === "ip_allow_list") return false;
    if (refusal === "hidden") {
      notFound(req, res);
      return true;
    }
    const needed: FineGrainedPermission | undefined =
      section === "git" || section === "contents"
        ? "contents"
        : section === "pulls"
          ? "pull_requests"
          : section === "issues"
            ? "issues"
            : undefined;
    if (needed === undefined || refusal.includes(needed)) return false;
    // Issues and their comments are also readable with pull_requests when they belong to a pull request.
    if (needed === "issues" && refusal.includes("pull_requests") && rest.length > 0) {
      if (repo.issues.get(Number(rest[0]))?.pull) return false;
    }
    send(
      req,
      res,
      403,
      {
        message: "Resource not accessible by personal access token",
        documentation_url: "https://docs.github.com/rest",
        status: "403",
      },
      { "x-accepted-github-permissions": `${needed}=read` },
    );
    return true;
  }

  function addConversation(fullName: string, input: FakePullInput, pull: boolean): number {
    const repo = repoOf(fullName);
    const now = touch(repo);
    const number = repo.nextNumber++;
    const closed = input.state === "closed" || input.merged === true;
    repo.issues.set(number, {
      id: nextId++,
      number,
      title: input.title,
      body: input.body ?? null,
      user: input.user ?? login,
      labels: input.labels ?? [],
      state: closed ? "closed" : "open",
      pull,
      merged: pull && input.merged === true,
      draft: input.draft ?? false,
      createdAt: now,
      updatedAt: now,
      closedAt: closed ? now : null,
      comments: [],
    });
    return number;
  }

  return {
    url,
    token,
    requests,
    tokenRequests,
    revokeToken() {
      revoked = true;
    },
    setExpiringUserTokens(expiring) {
      expiringUserTokens = expiring;
    },
    expireUserTokens(opts = {}) {
      userTokens.clear();
      if (opts.refreshTokens) refreshTokens.clear();
    },
    throttleUser(quota) {
      userQuota = quota && new UserQuota(quota);
    },
    refuse(target, refusal) {
      if (refusal === null) refusals.delete(target.toLowerCase());
      else refusals.set(target.toLowerCase(), refusal);
    },
    addRepository(fullName, opts = {}) {
      const [owner, name] = fullName.split("/");
      if (!owner || !name) throw new Error(`fake github: ${fullName} is not owner/name`);
      const now = tick();
      repositories.set(fullName.toLowerCase(), {
        id: nextId++,
        owner,
        name,
        private: opts.private ?? false,
        description: opts.description ?? null,
        defaultBranch: opts.defaultBranch ?? "main",
        hasIssues: opts.hasIssues ?? true,
        createdAt: now,
        updatedAt: now,
        pushedAt: now,
        files: new Map(),
        issues: new Map(),
        nextNumber: 1,
        objects: new Map(),
      });
    },
    renameRepository(fullName, newFullName) {
      const repo = repoOf(fullName);
      const [owner, name] = newFullName.split("/");
      if (!owner || !name) throw new Error(`fake github: ${newFullName} is not owner/name`);
      repositories.delete(fullName.toLowerCase());
      renamed.set(fullName.toLowerCase(), repo);
      repo.owner = owner;
      repo.name = name;
      repositories.set(newFullName.toLowerCase(), repo);
      touch(repo);
    },
    setFile(fullName, path, content) {
      const repo = repoOf(fullName);
      const bytes = typeof content === "string" ? Buffer.from(content) : content;
      repo.files.set(path, bytes);
      touch(repo, true);
      return writeBlob(repo, bytes);
    },
    deleteFile(fullName, path) {
      const repo = repoOf(fullName);
      if (!repo.files.delete(path)) throw new Error(`fake github: no file ${path} in ${fullName}`);
      touch(repo, true);
    },
    addIssue: (fullName, issue) => addConversation(fullName, issue, false),
    addPullRequest: (fullName, pull) => addConversation(fullName, pull, true),
    updateIssue(fullName, number, patch) {
      const issue = issueOf(fullName, number);
      const now = touch(repoOf(fullName));
      if (patch.title !== undefined) issue.title = patch.title;
      if (patch.body !== undefined) issue.body = patch.body;
      if (patch.labels !== undefined) issue.labels = patch.labels;
      if (patch.user !== undefined) issue.user = patch.user;
      if (patch.draft !== undefined) issue.draft = patch.draft;
      if (patch.merged !== undefined && issue.pull) issue.merged = patch.merged;
      if (patch.state !== undefined || patch.merged) {
        const state = patch.merged ? "closed" : (patch.state ?? issue.state);
        if (state !== issue.state) issue.closedAt = state === "closed" ? now : null;
        issue.state = state;
      }
      issue.updatedAt = now;
    },
    addComment(fullName, number, comment) {
      const issue = issueOf(fullName, number);
      const now = touch(repoOf(fullName));
      issue.comments.push({
        id: nextId++,
        body: comment.body,
        user: comment.user ?? login,
        createdAt: now,
        updatedAt: now,
      });
      issue.updatedAt = now;
    },
    deleteIssue(fullName, number) {
      const repo = repoOf(fullName);
      if (!repo.issues.delete(number)) throw new Error(`fake github: no issue ${fullName}#${number}`);
      touch(repo);
    },
    issueUpdatedAt: (fullName, number) => issueOf(fullName, number).updatedAt,
    rateLimitNext(injection = {}) {
      injections.push({ ...injection });
    },
    setTreeTruncation(limit) {
      treeTruncation = limit;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** GitHub wraps base64 content at 60 characters. */
function base64Lines(content: Buffer): string {
  const encoded = content.toString("base64");
  const lines: string[] = [];
  for (let i = 0; i < encoded.length; i += 60) lines.push(encoded.slice(i, i + 60));
  return lines.length ? `${lines.join("\n")}\n` : "";
}

function sortIssues(list: Issue[], sort: string, direction: string): Issue[] {
  const key = (i: Issue) =>
    sort === "updated"
      ? i.updatedAt
      : sort === "comments"
        ? String(i.comments.length).padStart(9, "0")
        : i.createdAt;
  const sorted = [...list].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : a.number - b.number));
  return direction === "asc" ? sorted : sorted.reverse();
}
