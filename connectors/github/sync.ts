// Lists the configured repositories one after the other, each in phases: the documentation files of the
// default branch (one recursive git tree), then its issues and pull requests (one issues listing, which
// holds both). Every pass lists everything, because the engine deletes what a complete pass did not see;
// the versions (blob sha, updated_at) keep unchanged items from being fetched again.
//
// Incremental: what a complete pass learnt is carried to the next one (ListPage.carry): each repository's
// tree ETag and the server time its issues were listed at. The next pass asks for the tree with
// If-None-Match (a 304 costs no rate limit; all of that repository's files are then reported unchanged
// by prefix) and for issues with `since` (only those updated since are listed; the others are reported
// unchanged). An issue deleted on GitHub (only admins can) is not in a `since` listing, so every
// FULL_ISSUE_PASS_EVERY-th pass lists issues in full and the engine removes what it no longer sees.

import type { Octokit } from "@octokit/rest";
import { z } from "zod";
import { ConnectorConfigError, ItemSkippedError } from "../errors.ts";
import type { FetchedItem, ItemMetadata, ListPage, SourceItem } from "../types.ts";
import {
  type AccessReason,
  accessProblem,
  type GithubContext,
  githubClient,
  httpStatus,
  parseLink,
  toConnectorError,
} from "./client.ts";
import { parseRepositoryList } from "./repositories.ts";

/** State a complete pass hands to the next, per repository. */
export const githubCarrySchema = z.object({
  treeEtags: z.record(z.string(), z.string()),
  /** Server time (Date header) at which the issues listing of the repository began. */
  issuesListedAt: z.record(z.string(), z.string()),
  /** Passes since issues were last listed in full. */
  passesSinceFullIssues: z.number().int().min(0),
});
export type GithubCarry = z.infer<typeof githubCarrySchema>;

export const githubCursorSchema = z.object({
  /** The repositories of this pass, fixed at its start so a pass never mixes two settings. */
  repositories: z.array(z.string()),
  /** Which of them is being listed. */
  index: z.number().int().min(0),
  /**
   * "files": the default branch's tree; "issues": the issues listing (issues and pull requests);
   * "pulls": the pull request listing, used instead when the repository has issues turned off (410).
   */
  phase: z.enum(["files", "issues", "pulls"]),
  /** files: the root tree sha, pinned after the first page so later pages list the same commit. */
  tree: z.string().nullable(),
  /** files: how many matching files earlier pages of this tree listed. */
  offset: z.number().int().min(0),
  /** issues/pulls: the next page to ask for (1-based). */
  page: z.number().int().min(1),
  /** What the last complete pass learnt (ETags, issue listing times); empty on a first pass. */
  previous: githubCarrySchema.optional(),
  /** What this pass has learnt so far; handed to the engine as `carry` with every page. */
  learnt: githubCarrySchema.optional(),
});
export type GithubCursor = z.infer<typeof githubCursorSchema>;

/** Issues are listed in full every this many passes, to notice issues deleted on GitHub. */
const FULL_ISSUE_PASS_EVERY = 24;
/** `since` reaches back this far before the last listing, for clock skew and in-flight edits. */
const SINCE_MARGIN_MS = 5 * 60 * 1000;

const emptyCarry = (): GithubCarry => ({ treeEtags: {}, issuesListedAt: {}, passesSinceFullIssues: 0 });

interface RepoRef {
  repository: string;
  owner: string;
  repo: string;
}

interface FileEntry {
  path: string;
  sha: string;
  size: number;
}

const README = /^readme(?:\.(?:md|mdx|markdown|txt|rst|adoc|asciidoc|org|textile))?$/i;
const SYMLINK_MODE = "120000";

export function initialGithubCursor(ctx: GithubContext, previous?: GithubCarry): GithubCursor {
  const fullIssues = !previous || previous.passesSinceFullIssues + 1 >= FULL_ISSUE_PASS_EVERY;
  return {
    repositories: parseRepositoryList(ctx.config.repositories).repositories,
    index: 0,
    phase: "files",
    tree: null,
    offset: 0,
    page: 1,
    previous: fullIssues && previous ? { ...previous, issuesListedAt: {} } : previous,
    learnt: {
      ...emptyCarry(),
      passesSinceFullIssues: fullIssues ? 0 : (previous?.passesSinceFullIssues ?? 0) + 1,
    },
  };
}

export async function listGithubPage(
  ctx: GithubContext,
  cursor: GithubCursor,
): Promise<ListPage<GithubCursor, GithubCarry>> {
  const repository = cursor.repositories[cursor.index];
  if (repository === undefined) return { items: [], next: null, carry: cursor.learnt };
  const ref = splitRepository(repository);
  try {
    const octokit = githubClient(ctx);
    const page =
      cursor.phase === "files"
        ? await listFiles(ctx, octokit, ref, cursor)
        : cursor.phase === "issues"
          ? await listIssues(ctx, octokit, ref, cursor)
          : await listPulls(ctx, octokit, ref, cursor);
    const learnt = page.next?.learnt ?? page.learnt ?? cursor.learnt;
    return { items: page.items, next: page.next, unchanged: page.unchanged, carry: learnt };
  } catch (error) {
    throw toConnectorError(error, ctx);
  }
}

type RepoPage = ListPage<GithubCursor, GithubCarry> & { learnt?: GithubCarry };

function learn(cursor: GithubCursor, change: (carry: GithubCarry) => void): GithubCarry {
  const carry: GithubCarry = structuredClone(cursor.learnt ?? emptyCarry());
  change(carry);
  return carry;
}

async function listFiles(
  ctx: GithubContext,
  octokit: Octokit,
  ref: RepoRef,
  cursor: GithubCursor,
): Promise<RepoPage> {
  const { filesPerPage, maxFileBytes, fileExtensions } = ctx.config;
  let tree: { sha: string; files: FileEntry[]; etag?: string } | null;
  let etag: string | undefined;
  if (cursor.tree === null) {
    let defaultBranch: string;
    try {
      defaultBranch = (await octokit.repos.get({ owner: ref.owner, repo: ref.repo })).data.default_branch;
    } catch (error) {
      const problem = accessProblem(error);
      if (!problem) throw error;
      return unlisted(ctx, ref, problem, [`${ref.repository}/`], nextRepository, cursor);
    }
    const known = cursor.previous?.treeEtags[ref.repository];
    let read: Awaited<ReturnType<typeof readTree>>;
    try {
      read = await readTree(octokit, ref, defaultBranch, known);
    } catch (error) {
      const problem = accessProblem(error);
      if (!problem) throw error;
      return unlisted(ctx, ref, problem, [`${ref.repository}/blob/`], (c) => afterFiles(ctx, c), cursor);
    }
    if (read === "not-modified") {
      // Same tree as at the last complete pass: every file listed then is still there, unchanged.
      const next = afterFiles(ctx, {
        ...cursor,
        learnt: learn(cursor, (c) => {
          c.treeEtags[ref.repository] = known as string;
        }),
      });
      return {
        items: [],
        unchanged: [`${ref.repository}/blob/`],
        next,
        learnt: next
          ? undefined
          : learn(cursor, (c) => {
              c.treeEtags[ref.repository] = known as string;
            }),
      };
    }
    tree = read;
    etag = read?.etag;
  } else {
    // git objects never go away, so a pinned tree that is not found means the repository went away or
    // out of the token's reach during the pass: its files not listed yet are kept, as for a refused tree.
    const pinned = cursor.tree;
    let read: Awaited<ReturnType<typeof readTree>>;
    try {
      read = await readTree(octokit, ref, pinned);
    } catch (error) {
      const problem = accessProblem(error);
      if (!problem) throw error;
      return unlisted(ctx, ref, problem, [`${ref.repository}/blob/`], (c) => afterFiles(ctx, c), cursor);
    }
    tree = read === "not-modified" ? null : read;
  }
  if (!tree) return { items: [], next: afterFiles(ctx, cursor) };

  const extensions = new Set(fileExtensions);
  const wanted = tree.files.filter((file) => isDocument(file.path, extensions));
  const files = wanted.filter((file) => file.size <= maxFileBytes).sort((a, b) => compare(a.path, b.path));
  if (cursor.offset === 0 && files.length < wanted.length) {
    ctx.log.info(
      { repository: ref.repository, skipped: wanted.length - files.length, maxFileBytes },
      "github: files larger than maxFileBytes are not synced",
    );
  }
  const end = cursor.offset + filesPerPage;
  const items = files.slice(cursor.offset, end).map((file) => ({
    id: `${ref.repository}/blob/${file.path}`,
    version: file.sha,
  }));
  const learnt = etag
    ? learn(cursor, (c) => {
        c.treeEtags[ref.repository] = etag as string;
      })
    : cursor.learnt;
  const next =
    end < files.length
      ? { ...cursor, tree: tree.sha, offset: end, learnt }
      : afterFiles(ctx, { ...cursor, learnt });
  return { items, next, learnt };
}

async function listIssues(
  ctx: GithubContext,
  octokit: Octokit,
  ref: RepoRef,
  cursor: GithubCursor,
): Promise<RepoPage> {
  const { includeIssues, includePullRequests, issuesPerPage } = ctx.config;
  const listedBefore = cursor.previous?.issuesListedAt[ref.repository];
  const since = listedBefore ? new Date(Date.parse(listedBefore) - SINCE_MARGIN_MS).toISOString() : undefined;
  let response: Awaited<ReturnType<Octokit["issues"]["listForRepo"]>>;
  try {
    response = await octokit.issues.listForRepo({
      owner: ref.owner,
      repo: ref.repo,
      state: "all",
      // Oldest first: issues opened during a pass land on later pages instead of shifting earlier ones.
      sort: "created",
      direction: "asc",
      per_page: issuesPerPage,
      page: cursor.page,
      ...(since ? { since } : {}),
    });
  } catch (error) {
    if (httpStatus(error) === 410) {
      // "Issues are disabled for this repo": its pull requests are still there, under /pulls.
      const next = includePullRequests
        ? { ...cursor, phase: "pulls" as const, page: 1 }
        : nextRepository(cursor);
      return { items: [], next };
    }
    const problem = accessProblem(error);
    if (!problem) throw error;
    return unlisted(ctx, ref, problem, conversationPrefixes(ref), nextRepository, cursor);
  }
  const items: SourceItem[] = [];
  for (const issue of response.data) {
    const isPull = Boolean(issue.pull_request);
    if (isPull ? !includePullRequests : !includeIssues) continue;
    items.push({
      id: `${ref.repository}/${isPull ? "pull" : "issues"}/${issue.number}`,
      version: issue.updated_at,
    });
  }
  // The server's clock, taken when the listing began, is where the next pass's `since` starts.
  const learnt =
    cursor.page === 1
      ? learn(cursor, (c) => {
          c.issuesListedAt[ref.repository] = serverTime(response.headers.date);
        })
      : cursor.learnt;
  const more = Boolean(parseLink(response.headers.link).next);
  if (more) return { items, next: { ...cursor, page: cursor.page + 1, learnt }, learnt };
  // With `since`, issues not listed did not change: keep those the engine holds.
  const unchanged = since ? [`${ref.repository}/issues/`, `${ref.repository}/pull/`] : undefined;
  return { items, unchanged, next: nextRepository({ ...cursor, learnt }), learnt };
}

function serverTime(date: string | undefined): string {
  const parsed = date ? Date.parse(date) : Number.NaN;
  return new Date(Number.isNaN(parsed) ? Date.now() : parsed).toISOString();
}

async function listPulls(
  ctx: GithubContext,
  octokit: Octokit,
  ref: RepoRef,
  cursor: GithubCursor,
): Promise<RepoPage> {
  let response: Awaited<ReturnType<Octokit["pulls"]["list"]>>;
  try {
    response = await octokit.pulls.list({
      owner: ref.owner,
      repo: ref.repo,
      state: "all",
      sort: "created",
      direction: "asc",
      per_page: ctx.config.issuesPerPage,
      page: cursor.page,
    });
  } catch (error) {
    const problem = accessProblem(error);
    if (!problem) throw error;
    return unlisted(ctx, ref, problem, [`${ref.repository}/pull/`], nextRepository, cursor);
  }
  const items = response.data.map((pull) => ({
    id: `${ref.repository}/pull/${pull.number}`,
    version: pull.updated_at,
  }));
  const more = Boolean(parseLink(response.headers.link).next);
  return { items, next: more ? { ...cursor, page: cursor.page + 1 } : nextRepository(cursor) };
}

const conversationPrefixes = (ref: RepoRef) => [`${ref.repository}/issues/`, `${ref.repository}/pull/`];

/**
 * A part of one repository GitHub would not list this pass (403 from SAML enforcement, a fine-grained
 * token's permissions or an IP allow list; 404 when it is gone or hidden from the token): the pass goes on
 * with the rest, and the ids under `prefixes` are reported unchanged so the engine keeps the documents it
 * made of them instead of sweeping them as vanished. What earlier pages of that part taught (its tree
 * ETag, its issues' listing time) is forgotten, so the next pass lists it in full rather than trusting a
 * 304 or a `since` for pages this pass never saw.
 */
function unlisted(
  ctx: GithubContext,
  ref: RepoRef,
  problem: { reason: AccessReason; detail: string },
  prefixes: string[],
  advance: (cursor: GithubCursor) => GithubCursor | null,
  cursor: GithubCursor,
): RepoPage {
  ctx.log.warn(
    { repository: ref.repository, phase: cursor.phase, reason: problem.reason, detail: problem.detail },
    `github: could not list ${prefixes.join(", ")} (${problem.detail}); its documents are kept`,
  );
  const learnt = learn(cursor, (carry) => {
    if (cursor.phase === "files") delete carry.treeEtags[ref.repository];
    else delete carry.issuesListedAt[ref.repository];
  });
  const next = advance({ ...cursor, learnt });
  return { items: [], unchanged: prefixes, next, learnt };
}

function afterFiles(ctx: GithubContext, cursor: GithubCursor): GithubCursor | null {
  if (!ctx.config.includeIssues && !ctx.config.includePullRequests) return nextRepository(cursor);
  return { ...cursor, phase: "issues", tree: null, offset: 0, page: 1 };
}

function nextRepository(cursor: GithubCursor): GithubCursor | null {
  const index = cursor.index + 1;
  if (index >= cursor.repositories.length) return null;
  return { ...cursor, index, phase: "files", tree: null, offset: 0, page: 1 };
}

/**
 * The blobs under a tree, by full path. GitHub cuts recursive listings off (100,000 entries or 7 MB) and
 * says so with `truncated`; a cut listing would make the engine delete the files it left out, so such a
 * tree is walked one level at a time instead. Null: the repository has no commits yet (409).
 */
async function readTree(
  octokit: Octokit,
  ref: RepoRef,
  treeish: string,
  ifNoneMatch?: string,
): Promise<{ sha: string; files: FileEntry[]; etag?: string } | null | "not-modified"> {
  let data: Awaited<ReturnType<Octokit["git"]["getTree"]>>["data"];
  let etag: string | undefined;
  try {
    const response = await octokit.git.getTree({
      owner: ref.owner,
      repo: ref.repo,
      tree_sha: treeish,
      recursive: "1",
      ...(ifNoneMatch ? { headers: { "if-none-match": ifNoneMatch } } : {}),
    });
    data = response.data;
    etag = response.headers.etag;
  } catch (error) {
    if (httpStatus(error) === 304) return "not-modified";
    if (httpStatus(error) === 409) return null;
    throw error;
  }
  if (!data.truncated) return { sha: data.sha, files: blobsOf(data.tree, ""), etag };

  const { data: top } = await octokit.git.getTree({ owner: ref.owner, repo: ref.repo, tree_sha: data.sha });
  if (top.truncated) {
    throw new ConnectorConfigError(
      `${ref.repository}: a folder of the default branch has too many entries for GitHub to list`,
    );
  }
  const files = blobsOf(top.tree, "");
  for (const entry of top.tree) {
    if (entry.type !== "tree" || !entry.sha || !entry.path) continue;
    const sub = await readTree(octokit, ref, entry.sha);
    if (sub === "not-modified") continue;
    for (const file of sub?.files ?? []) files.push({ ...file, path: `${entry.path}/${file.path}` });
  }
  return { sha: data.sha, files, etag };
}

function blobsOf(
  entries: { path?: string; mode?: string; type?: string; sha?: string; size?: number }[],
  prefix: string,
): FileEntry[] {
  const files: FileEntry[] = [];
  for (const entry of entries) {
    if (entry.type !== "blob" || entry.mode === SYMLINK_MODE || !entry.path || !entry.sha) continue;
    files.push({ path: prefix + entry.path, sha: entry.sha, size: entry.size ?? 0 });
  }
  return files;
}

function isDocument(path: string, extensions: Set<string>): boolean {
  const name = path.slice(path.lastIndexOf("/") + 1);
  if (README.test(name)) return true;
  const dot = name.lastIndexOf(".");
  return dot > 0 && extensions.has(name.slice(dot + 1).toLowerCase());
}

/** Code-unit order, so pages slice the same list whatever the locale. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function splitRepository(repository: string): RepoRef {
  const [owner = "", repo = ""] = repository.split("/");
  return { repository, owner, repo };
}

/** At creation (verify): a repository that is gone or hidden from the token is a setting to fix at once. */
async function inRepository<T>(ref: RepoRef, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const status = httpStatus(error);
    if (status === 404) {
      throw new ConnectorConfigError(
        `repository ${ref.repository} does not exist or the token cannot see it`,
      );
    }
    if (status === 451) throw new ConnectorConfigError(`repository ${ref.repository} is blocked (451)`);
    throw error;
  }
}

type ItemRef =
  | (RepoRef & { kind: "blob"; path: string })
  | (RepoRef & { kind: "issues" | "pull"; number: number });

function parseItemId(id: string): ItemRef | undefined {
  const match = id.match(/^([^/]+)\/([^/]+)\/(blob|issues|pull)\/(.+)$/);
  if (!match) return undefined;
  const [, owner = "", repo = "", kind, rest = ""] = match;
  const ref = { repository: `${owner}/${repo}`, owner, repo };
  if (kind === "blob") return { ...ref, kind, path: rest };
  if (!/^\d+$/.test(rest)) return undefined;
  return { ...ref, kind: kind as "issues" | "pull", number: Number(rest) };
}

export async function fetchGithubItem(ctx: GithubContext, item: SourceItem): Promise<FetchedItem | null> {
  const ref = parseItemId(item.id);
  if (!ref) return null;
  try {
    const octokit = githubClient(ctx);
    if (ref.kind === "blob") return await fetchFile(ctx, octokit, ref);
    return await fetchConversation(octokit, ref);
  } catch (error) {
    if (error instanceof ItemSkippedError) throw error;
    // One item GitHub will not give (deleted since it was listed, issues turned off, SAML or a
    // fine-grained permission refusing it): skipped with its reason, the other items go on.
    const problem = ctx.signal.aborted ? undefined : accessProblem(error);
    if (problem) throw new ItemSkippedError(problem.reason, `${item.id}: GitHub answered ${problem.detail}`);
    throw toConnectorError(error, ctx);
  }
}

async function fetchFile(
  ctx: GithubContext,
  octokit: Octokit,
  ref: RepoRef & { path: string },
): Promise<FetchedItem | null> {
  const { data } = await octokit.repos.getContent({ owner: ref.owner, repo: ref.repo, path: ref.path });
  if (Array.isArray(data) || data.type !== "file") return null;
  let bytes: Buffer;
  if ("encoding" in data && data.encoding === "base64") {
    bytes = Buffer.from(data.content ?? "", "base64");
  } else {
    // Over 1 MB the contents API leaves the content out (encoding "none"); the blob API serves up to 100 MB.
    if (data.size > ctx.config.maxFileBytes) throw tooLarge(ref, data.size, ctx.config.maxFileBytes);
    const { data: blob } = await octokit.git.getBlob({
      owner: ref.owner,
      repo: ref.repo,
      file_sha: data.sha,
    });
    bytes = Buffer.from(blob.content, blob.encoding === "base64" ? "base64" : "utf8");
  }
  if (bytes.length > ctx.config.maxFileBytes) throw tooLarge(ref, bytes.length, ctx.config.maxFileBytes);

  const slash = ref.path.lastIndexOf("/");
  const dir = slash >= 0 ? `${ref.path.slice(0, slash)}/` : "";
  const common = {
    title: ref.path,
    url: data.html_url ?? undefined,
    filepath: `/${ref.owner}/${ref.repo}/${dir}`,
    metadata: { repository: ref.repository, path: ref.path, kind: "file" },
  };
  const text = decodeUtf8(bytes);
  if (text !== undefined) return { ...common, text };
  // Not UTF-8 (a Latin-1 .txt, a misnamed binary): the pipeline detects what it is, as for an upload.
  return { ...common, file: { bytes, name: ref.path.slice(slash + 1) } };
}

/** The file grew past maxFileBytes between the listing (which leaves such files out) and the fetch. */
function tooLarge(ref: RepoRef & { path: string }, size: number, max: number): ItemSkippedError {
  return new ItemSkippedError(
    "too_large",
    `${ref.repository}/${ref.path}: ${size} bytes, over maxFileBytes ${max}`,
  );
}

function decodeUtf8(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

interface Conversation {
  title: string;
  body?: string | null;
  html_url: string;
  state: string;
  user: { login: string } | null;
  labels: (string | { name?: string })[];
  comments?: number;
}

async function fetchConversation(
  octokit: Octokit,
  ref: RepoRef & { kind: "issues" | "pull"; number: number },
): Promise<FetchedItem | null> {
  const params = { owner: ref.owner, repo: ref.repo };
  let conversation: Conversation;
  let merged: boolean | undefined;
  if (ref.kind === "pull") {
    // /pulls also answers when the repository has issues turned off.
    const { data } = await octokit.pulls.get({ ...params, pull_number: ref.number });
    conversation = data;
    merged = Boolean(data.merged_at);
  } else {
    const { data } = await octokit.issues.get({ ...params, issue_number: ref.number });
    // The number belongs to a pull request now listed under its own id.
    if (data.pull_request) return null;
    conversation = data;
  }

  let comments: { body?: string; user: { login: string } | null; created_at: string }[] = [];
  if (conversation.comments !== 0) {
    try {
      comments = await octokit.paginate(octokit.issues.listComments, {
        ...params,
        issue_number: ref.number,
        per_page: 100,
      });
    } catch (error) {
      if (httpStatus(error) !== 410) throw error;
    }
  }

  const parts = [`# ${conversation.title}`];
  if (conversation.body?.trim()) parts.push(conversation.body.trim());
  for (const comment of comments) {
    if (!comment.body?.trim()) continue;
    parts.push(
      `---\n\n**${comment.user?.login ?? "ghost"}** commented on ${comment.created_at}:\n\n${comment.body.trim()}`,
    );
  }
  const labels = conversation.labels
    .map((label) => (typeof label === "string" ? label : (label.name ?? "")))
    .filter((name) => name.length > 0);
  const metadata: ItemMetadata = {
    repository: ref.repository,
    number: ref.number,
    state: conversation.state,
    author: conversation.user?.login ?? "ghost",
    labels,
    kind: ref.kind === "pull" ? "pull_request" : "issue",
  };
  if (merged !== undefined) metadata.merged = merged;
  return {
    title: conversation.title,
    text: parts.join("\n\n"),
    url: conversation.html_url,
    filepath: `/${ref.owner}/${ref.repo}/${ref.kind}/`,
    metadata,
  };
}

export async function verifyGithub(ctx: GithubContext): Promise<void> {
  try {
    const octokit = githubClient(ctx);
    await octokit.users.getAuthenticated();
    for (const repository of parseRepositoryList(ctx.config.repositories).repositories) {
      const ref = splitRepository(repository);
      await inRepository(ref, () => octokit.repos.get({ owner: ref.owner, repo: ref.repo }));
    }
  } catch (error) {
    throw toConnectorError(error, ctx);
  }
}

/** The repositories the token can see, for picking (`GET /v3/connections/:id/resources`). */
export async function githubResources(
  ctx: GithubContext,
  query: { page: number; perPage: number },
): Promise<{ resources: Record<string, unknown>[]; total_count?: number }> {
  const perPage = Math.min(100, Math.max(1, Math.trunc(query.perPage) || 30));
  const page = Math.max(1, Math.trunc(query.page) || 1);
  try {
    const octokit = githubClient(ctx);
    const list = (p: number) =>
      octokit.repos.listForAuthenticatedUser({
        per_page: perPage,
        page: p,
        sort: "full_name",
        direction: "asc",
      });
    const response = await list(page);
    const resources = response.data.map((repo) => ({
      id: repo.id,
      full_name: repo.full_name,
      private: repo.private,
      default_branch: repo.default_branch,
      description: repo.description,
      updated_at: repo.updated_at,
    }));
    // GitHub sends no total for this listing; the last page's position and length give it exactly.
    const links = parseLink(response.headers.link);
    let total: number | undefined;
    const lastPage = links.last ? Number(new URL(links.last).searchParams.get("page")) : Number.NaN;
    if (Number.isInteger(lastPage) && lastPage > 0 && lastPage !== page) {
      total = (lastPage - 1) * perPage + (await list(lastPage)).data.length;
    } else if (!links.next && (resources.length > 0 || page === 1)) {
      total = (page - 1) * perPage + resources.length;
    }
    return total === undefined ? { resources } : { resources, total_count: total };
  } catch (error) {
    throw toConnectorError(error, ctx);
  }
}
