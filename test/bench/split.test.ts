import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SCIFACT_DIR } from "../../bench/lib/corpus.ts";
import { readQrels } from "../../bench/lib/scifact.ts";
import { makeSplit, readSplit, sha256Of, splitOf } from "../../bench/lib/split.ts";

const split = readSplit();

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

describe("the committed SciFact split (bench/scifact-split.json)", () => {
  it("is a partition of the 300 judged queries into 150 dev and 150 test, each id once", () => {
    expect(split.source.queries).toBe(300);
    expect(split.dev).toHaveLength(150);
    expect(split.test).toHaveLength(150);
    const all = [...split.dev, ...split.test];
    expect(new Set(all).size).toBe(300);
    const test = new Set(split.test);
    expect(split.dev.filter((id) => test.has(id))).toEqual([]);
    expect(split.tuning).toBe("dev");
    expect(split.description).toMatch(/no qrels\/train\.tsv/);
  });

  it("is what makeSplit gives for its ids, whatever their order (so it can be re-derived, never edited)", () => {
    const ids = [...split.test, ...split.dev].reverse();
    const again = makeSplit(ids, { file: split.source.file, sha256: split.source.sha256 });
    expect(again).toEqual(split);
  });

  // The judgements the split was made from are kept beside it (bench/scifact-qrels-test.tsv, a copy of SciFact's
  // qrels/test.tsv: BEIR distribution, SciFact by Wadden et al. 2020, CC BY-NC 2.0), so a clone without ../shared
  // checks them too.
  it("covers exactly the queries judged in qrels/test.tsv", () => {
    const file = path.join(repoRoot, "bench", "scifact-qrels-test.tsv");
    expect(sha256Of(file)).toBe(split.source.sha256);
    const judged = new Set(
      readFileSync(file, "utf8")
        .split("\n")
        .slice(1)
        .filter((line) => line.trim())
        .map((line) => line.split("\t")[0] as string),
    );
    expect(judged).toEqual(new Set([...split.dev, ...split.test]));
    if (existsSync(SCIFACT_DIR)) expect([...readQrels("test").keys()].sort()).toEqual([...judged].sort());
  });

  it("answers each query's half and refuses an id it does not know", () => {
    const halfOf = splitOf(split);
    expect(halfOf(split.dev[0] as string)).toBe("dev");
    expect(halfOf(split.test[0] as string)).toBe("test");
    expect(() => halfOf("not-a-query")).toThrow(/neither half/);
  });

  it("depends only on the ids: a smaller set splits in half, deterministically", () => {
    const ids = Array.from({ length: 11 }, (_, i) => String(i * 7));
    const a = makeSplit(ids, { file: "x", sha256: "y" });
    const b = makeSplit([...ids].reverse(), { file: "x", sha256: "y" });
    expect(a.dev).toEqual(b.dev);
    expect(a.dev).toHaveLength(5);
    expect(a.test).toHaveLength(6);
    expect(() => makeSplit(["1", "1"], { file: "x", sha256: "y" })).toThrow(/repeated/);
  });
});
