import { describe, expect, it } from "vitest";
import { searchChunkDocuments } from "../../bench/lib/search-corpus.ts";

const abstracts = [
  { id: "1", title: "A", text: "One two three four. Five six seven eight. Nine ten eleven twelve." },
  { id: "2", title: "B", text: "Alpha beta gamma delta. Epsilon zeta eta theta. Short." },
];

describe("searchChunkDocuments", () => {
  it("takes single sentences of every abstract first, then pairs, then triples, all distinct", () => {
    const all = searchChunkDocuments(abstracts, 9).flatMap((d) => d.pieces);
    expect(new Set(all).size).toBe(9);
    const small = searchChunkDocuments(abstracts, 4).flatMap((d) => d.pieces);
    expect(small).toEqual([
      "One two three four.",
      "Five six seven eight.",
      "Nine ten eleven twelve.",
      "Alpha beta gamma delta.",
    ]);
    // "Short." alone has too few words; its pair with the sentence before it is kept.
    expect(all).toContain("Epsilon zeta eta theta. Short.");
    expect(all.every((p) => all.filter((q) => q === p).length === 1)).toBe(true);
    for (const p of small) expect(all).toContain(p);
  });

  it("fails when the corpus cannot yield that many chunks", () => {
    expect(() => searchChunkDocuments(abstracts, 100)).toThrow(/yields only/);
  });
});
