// test/support/fake-github.ts says its answers follow GitHub's own recordings in @octokit/fixtures. This checks
// it: the fake answers the recorded requests of three scenarios (get-repository, get-content, paginate-issues),
// and every field it sends is in the recorded answer with the same JSON type, nested objects included. A field
// the fake made up, or one whose type drifted, fails here instead of passing the connector's tests on a shape
// GitHub never sends.

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
