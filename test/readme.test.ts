import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// The README is the user's door and docs/ holds the manual behind it: the door stays small, and no link from
// either leads nowhere (a moved section keeps its anchor reachable).
const repoRoot = resolve(import.meta.dirname, "..");
const pages = ["README.md", ...readdirSync(join(repoRoot, "docs")).map((f) => join("docs", f))].filter((f) =>
  f.endsWith(".md"),
);

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, "")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[^\p{L}\p{N}\s-]/gu, "")
    .replace(/\s/g, "-");
}

function anchorsIn(file: string): Set<string> {
  const text = readFileSync(join(repoRoot, file), "utf8").replace(/```[\s\S]*?```/g, "");
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of text.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = anchorOf(match[1] ?? "");
    const count = seen.get(base) ?? 0;
    anchors.add(count === 0 ? base : `${base}-${count}`);
    seen.set(base, count + 1);
  }
  return anchors;
}

function relativeLinks(file: string): string[] {
  const text = readFileSync(join(repoRoot, file), "utf8").replace(/```[\s\S]*?```/g, "");
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1] ?? "")
    .filter((target) => !/^[a-z]+:/i.test(target));
}

describe("README and docs", () => {
  it("the README stays a door: under 10 KB", () => {
    expect(readFileSync(join(repoRoot, "README.md")).length).toBeLessThan(10 * 1024);
  });

  it.each(pages)("every relative link in %s reaches an existing file and heading", (page) => {
    const broken: string[] = [];
    for (const target of relativeLinks(page)) {
      const [path = "", anchor] = target.split("#");
      const file = path === "" ? page : join(dirname(page), path);
      if (!existsSync(join(repoRoot, file))) {
        broken.push(`${target} (no file ${file})`);
        continue;
      }
      if (anchor && file.endsWith(".md") && !anchorsIn(file).has(anchor))
        broken.push(`${target} (no heading)`);
    }
    expect(broken).toEqual([]);
  });
});
