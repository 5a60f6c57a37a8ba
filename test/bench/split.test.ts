import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SCIFACT_DIR } from "../../bench/lib/corpus.ts";
import { readQrels } from "../../bench/lib/scifact.ts";
import { makeSplit, readSplit, sha256Of, splitOf } from "../../bench/lib/split.ts";

const split = readSplit();

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

  // The judgements are not in the repository (a public clone has no ../shared): checked where they are.
  it.skipIf(!existsSync(SCIFACT_DIR))("covers exactly the queries judged in qrels/test.tsv", () => {
    const judged = [...readQrels("test").keys()];
    expect(new Set(judged)).toEqual(new Set([...split.dev, ...split.test]));
    expect(sha256Of(path.join(SCIFACT_DIR, "qrels", "test.tsv"))).toBe(split.source.sha256);
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
