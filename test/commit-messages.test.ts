// The commit-message rule (docs/development.md, "Commits"): from the commit that added scripts/commit-msg.mjs on,
// every subject is at most 72 characters. The hook refuses longer ones at commit time; this test catches what got
// past it (a commit made with --no-verify, in a checkout without the hook, or by a merge tool).

import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..");
const HOOK_SCRIPT = "scripts/commit-msg.mjs";
const MAX_SUBJECT = 72; // scripts/commit-msg.mjs MAX_SUBJECT

const git = (args: string[], cwd = ROOT) => execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
const chars = (s: string) => [...s].length;

describe("commit subjects since the rule came in", () => {
  it("are at most 72 characters", () => {
    // No history to check is a failure, not a pass: npm test runs in a clone.
    let inside = "";
    try {
      inside = git(["rev-parse", "--is-inside-work-tree"]);
    } catch (err) {
      throw new Error(
        `this test reads the commit history, and ${ROOT} has none: run npm test in a git clone (${err})`,
      );
    }
    expect(inside).toBe("true");

    // The oldest commit that added the hook script. In a shallow clone whose history starts after it, the
    // clone's first commit shows every file as added, so the check covers the history the clone has.
    const added = git(["log", "--diff-filter=A", "--format=%H %ct", "--", HOOK_SCRIPT])
      .split("\n")
      .filter(Boolean);
    const introducing = added.at(-1);
    if (!introducing) throw new Error(`no commit in this history adds ${HOOK_SCRIPT}`);
    const [marker, markerTime] = introducing.split(" ") as [string, string];

    // The marker itself, and every commit reachable from HEAD but not from it that was made after it (commits
    // of older branches merged later were made before the rule).
    const rows = git(["log", "--format=%H%x09%ct%x09%s", "HEAD", "--not", `${marker}^@`])
      .split("\n")
      .filter(Boolean)
      .map((line) => {
        const [hash, time, ...subject] = line.split("\t");
        return { hash: hash as string, time: Number(time), subject: subject.join("\t") };
      })
      .filter((c) => c.time >= Number(markerTime));
    expect(rows.map((c) => c.hash)).toContain(marker);

    const tooLong = rows
      .filter((c) => chars(c.subject) > MAX_SUBJECT)
      .map((c) => `${c.hash.slice(0, 7)} (${chars(c.subject)} characters): ${c.subject}`);
    expect(tooLong, "subjects over 72 characters; reword them (git rebase -i, reword)").toEqual([]);
  });
});

describe("the commit-msg hook", () => {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), "commit-msg-"));
  afterAll(() => fs.rmSync(repo, { recursive: true, force: true }));

  const inRepo = (args: string[]) =>
    spawnSync("git", ["-c", "user.name=Test", "-c", "user.email=test@example.invalid", ...args], {
      cwd: repo,
      encoding: "utf8",
    });

  it("is installed by the set-up's installer and refuses a subject over 72 characters", () => {
    git(["init", "-q"], repo);
    fs.mkdirSync(path.join(repo, "scripts"));
    fs.copyFileSync(path.join(ROOT, HOOK_SCRIPT), path.join(repo, HOOK_SCRIPT));
    const installed = execFileSync(process.execPath, [HOOK_SCRIPT, "--install", repo], {
      cwd: repo,
      encoding: "utf8",
    });
    expect(installed).toContain("installed");
    // A second run finds it in place.
    expect(
      execFileSync(process.execPath, [HOOK_SCRIPT, "--install", repo], { cwd: repo, encoding: "utf8" }),
    ).toContain("up to date");

    fs.writeFileSync(path.join(repo, "a.txt"), "a\n");
    inRepo(["add", "a.txt"]);
    const long = `Explain ${"at great length ".repeat(5)}what this commit does`;
    expect(chars(long)).toBeGreaterThan(MAX_SUBJECT);
    const refused = inRepo(["commit", "-q", "-m", long, "-m", "Why it is needed."]);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain(`more than ${MAX_SUBJECT}`);
    expect(inRepo(["rev-parse", "--verify", "-q", "HEAD"]).status).not.toBe(0); // nothing was committed

    // Exactly 72 characters passes; git's subject is the first paragraph, which the hook measures the same way.
    const subject = "Add a.txt".padEnd(MAX_SUBJECT, ".");
    const accepted = inRepo(["commit", "-q", "-m", subject, "-m", "Why it is needed."]);
    expect(accepted.status, accepted.stderr).toBe(0);
    expect(git(["log", "-1", "--format=%s"], repo)).toBe(subject);

    // A first paragraph of two short lines is one subject to git, and too long together.
    fs.writeFileSync(path.join(repo, "b.txt"), "b\n");
    inRepo(["add", "b.txt"]);
    const twoLines = `${"Wrap a subject".padEnd(40, ".")}\n${"over two lines".padEnd(40, ".")}\n\nBody.`;
    const wrapped = inRepo(["commit", "-q", "-m", twoLines]);
    expect(wrapped.status).not.toBe(0);
    expect(git(["log", "--format=%s"], repo).split("\n")).toEqual([subject]);
  });

  it("leaves a hook that is not its own in place", () => {
    const other = fs.mkdtempSync(path.join(os.tmpdir(), "commit-msg-other-"));
    try {
      git(["init", "-q"], other);
      const hooks = path.resolve(other, git(["rev-parse", "--git-path", "hooks"], other));
      fs.mkdirSync(hooks, { recursive: true });
      fs.writeFileSync(path.join(hooks, "commit-msg"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
      const out = execFileSync(process.execPath, [path.join(ROOT, HOOK_SCRIPT), "--install", other], {
        encoding: "utf8",
      });
      expect(out).toContain("left as it is");
      expect(fs.readFileSync(path.join(hooks, "commit-msg"), "utf8")).toBe("#!/bin/sh\nexit 0\n");
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});
