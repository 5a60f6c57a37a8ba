#!/usr/bin/env node
// The repository's commit-message rule, as a git commit-msg hook: a subject of at most 72 characters (what
// `git log --oneline` and most tools show whole), then a blank line and a body that says why. See
// docs/development.md, "Commits"; test/commit-messages.test.ts checks the history made since this file exists.
//
//   node scripts/commit-msg.mjs <message file>     check a message (what the hook runs)
//   node scripts/commit-msg.mjs --install [dir]    install the hook into the git repository at dir (default: here)
//
// Plain Node with no dependencies: scripts/setup.mjs runs the installer before node_modules exists.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const MAX_SUBJECT = 72;
const MARKER = "# memory-service commit-msg hook";

/** The subject as git sees it: the first paragraph, its lines joined by spaces (what `%s` prints). */
export function subjectOf(message) {
  const lines = message
    .split("\n")
    .filter((l) => !l.startsWith("#"))
    .map((l) => l.trimEnd());
  while (lines.length > 0 && lines[0] === "") lines.shift();
  const end = lines.indexOf("");
  return (end === -1 ? lines : lines.slice(0, end)).join(" ");
}

/** What is wrong with a message, or an empty list. Lengths count characters, not bytes. */
export function problems(message) {
  const subject = subjectOf(message);
  const found = [];
  if ([...subject].length > MAX_SUBJECT)
    found.push(
      `the subject is ${[...subject].length} characters, more than ${MAX_SUBJECT}: say what the commit does in ` +
        "fewer words, put the why and the figures in the body (after a blank line)",
    );
  return found;
}

/**
 * Installs the hook where git looks for hooks: `git rev-parse --git-path hooks` follows worktrees (whose `.git` is
 * a file), a shared common directory and `core.hooksPath`. The hook runs this script from the checkout being
 * committed in, so every worktree uses its own copy, and a checkout without it commits unchecked. A hook that is
 * not ours is left alone. Returns what it did, for setup's log.
 */
export function install(dir) {
  let hooks;
  try {
    hooks = execFileSync("git", ["rev-parse", "--git-path", "hooks"], { cwd: dir, encoding: "utf8" }).trim();
  } catch {
    return "not a git checkout (or no git): no commit-msg hook installed";
  }
  hooks = path.resolve(dir, hooks);
  const file = path.join(hooks, "commit-msg");
  const script = `#!/bin/sh\n${MARKER}: checks the subject's length (scripts/commit-msg.mjs).\n[ -f scripts/commit-msg.mjs ] || exit 0\nexec node scripts/commit-msg.mjs "$1"\n`;
  const existing = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined;
  if (existing === script) return `commit-msg hook: up to date (${file})`;
  if (existing !== undefined && !existing.includes(MARKER))
    return `commit-msg hook: WARNING ${file} is someone else's, left as it is`;
  fs.mkdirSync(hooks, { recursive: true });
  fs.writeFileSync(file, script, { mode: 0o755 });
  fs.chmodSync(file, 0o755);
  return `commit-msg hook: installed (${file})`;
}

const invoked = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invoked) {
  const args = process.argv.slice(2);
  if (args[0] === "--install") {
    console.log(
      install(path.resolve(args[1] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), ".."))),
    );
  } else if (args.length === 1) {
    const found = problems(fs.readFileSync(args[0], "utf8"));
    if (found.length > 0) {
      for (const p of found) console.error(`commit-msg: ${p}`);
      console.error(`commit-msg: the message is kept in ${args[0]}`);
      process.exit(1);
    }
  } else {
    console.error("usage: node scripts/commit-msg.mjs <message file> | --install [dir]");
    process.exit(2);
  }
}
