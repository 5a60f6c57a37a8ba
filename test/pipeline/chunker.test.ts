import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type Chunk, chunkText } from "../../pipeline/chunker.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";

const TEXT = `${FIXTURES_DIR}/text`;
const fixture = (name: string) => readFileSync(`${TEXT}/${name}`, "utf8");

/** Properties every chunking must have, whatever the input. */
function expectWellFormed(text: string, chunks: Chunk[], maxChars: number) {
  chunks.forEach((chunk, i) => {
    expect(chunk.position).toBe(i);
    expect(chunk.content.length).toBeGreaterThan(0);
    expect(chunk.content.length).toBeLessThanOrEqual(maxChars);
    expect(chunk.content).toBe(chunk.content.trim());
    expect(text.slice(chunk.startOffset, chunk.startOffset + chunk.content.length)).toBe(chunk.content);
    if (i > 0) expect(chunk.startOffset).toBeGreaterThan((chunks[i - 1] as Chunk).startOffset);
  });
  // Nothing is lost: every non-space character lies inside some chunk.
  const covered = new Uint8Array(text.length);
  for (const c of chunks) covered.fill(1, c.startOffset, c.startOffset + c.content.length);
  for (let i = 0; i < text.length; i++) {
    if (!/\s/.test(text[i] as string) && !covered[i]) throw new Error(`character ${i} not in any chunk`);
  }
}

function prose(sentences: number): string {
  const topics = ["rivers", "mountains", "libraries", "harbours", "orchards", "railways", "bridges"];
  return Array.from(
    { length: sentences },
    (_, i) => `Sentence ${i} describes the ${topics[i % topics.length]} of the region in some detail.`,
  ).join(" ");
}

describe("chunkText", () => {
  it("chunks a long real document within the limit without losing text", () => {
    const text = fixture("norwich-city.txt");
    for (const maxChars of [300, 1200, 4000]) {
      const chunks = chunkText(text, { maxChars });
      expectWellFormed(text, chunks, maxChars);
      // Chunks are reasonably full: the greedy packing does not fragment the text.
      const average = chunks.reduce((n, c) => n + c.content.length, 0) / chunks.length;
      expect(average).toBeGreaterThan(maxChars * 0.6);
    }
  });

  it("keeps hard-wrapped sentences together", () => {
    const text = fixture("norwich-city.txt");
    const chunks = chunkText(text, { maxChars: 1200 });
    // This sentence is wrapped over two lines in the fixture; it must not start a chunk mid-way.
    expect(text).toContain("Having made only one full first team appearance for Watford prior to the\nmatch");
    for (const c of chunks) expect(c.content.startsWith("match, Roberts came on")).toBe(false);
    const small = chunkText("He was also\ninfluenced by Graham Taylor. Roberts joined Watford.", {
      maxChars: 40,
      overlapSentences: 0,
    });
    expect(small.map((c) => c.content)).toEqual([
      "He was also\ninfluenced by Graham Taylor.",
      "Roberts joined Watford.",
    ]);
  });

  it("cuts at sentence boundaries and overlaps one sentence", () => {
    const text = prose(40);
    const chunks = chunkText(text, { maxChars: 300 });
    expectWellFormed(text, chunks, 300);
    expect(chunks.length).toBeGreaterThan(5);
    const sentences = (c: Chunk) => c.content.match(/Sentence \d+ [^.]*\./g) ?? [];
    for (const c of chunks) {
      expect(c.content).toMatch(/^Sentence \d+ .*\.$/s);
      expect(sentences(c).join(" ")).toBe(c.content); // whole sentences only
    }
    for (let i = 1; i < chunks.length; i++) {
      const previous = sentences(chunks[i - 1] as Chunk);
      expect(sentences(chunks[i] as Chunk)[0]).toBe(previous[previous.length - 1]);
    }
  });

  it("does not overlap when overlapSentences is 0", () => {
    const text = prose(40);
    const chunks = chunkText(text, { maxChars: 300, overlapSentences: 0 });
    expectWellFormed(text, chunks, 300);
    for (let i = 1; i < chunks.length; i++) {
      const previous = chunks[i - 1] as Chunk;
      expect((chunks[i] as Chunk).startOffset).toBeGreaterThanOrEqual(
        previous.startOffset + previous.content.length,
      );
    }
  });

  it("prefers to end a chunk at a paragraph break", () => {
    const paragraphs = [prose(3), prose(2), prose(4), prose(3)];
    const text = paragraphs.join("\n\n");
    const chunks = chunkText(text, { maxChars: 400, overlapSentences: 0 });
    expectWellFormed(text, chunks, 400);
    // Each paragraph is under 400 chars, so each chunk is exactly one or more whole paragraphs.
    for (const c of chunks) {
      for (const part of c.content.split("\n\n")) expect(paragraphs).toContain(part);
    }
  });

  it("splits a sentence longer than maxChars at word boundaries", () => {
    const words = Array.from({ length: 600 }, (_, i) => `word${i}`);
    const text = words.join(" "); // one 4,000-character "sentence" without punctuation
    const chunks = chunkText(text, { maxChars: 500, overlapSentences: 0 });
    expectWellFormed(text, chunks, 500);
    expect(chunks.length).toBeGreaterThanOrEqual(8);
    expect(chunks.flatMap((c) => c.content.split(" "))).toEqual(words); // no word was cut
  });

  it("cuts an over-long word by length without splitting a surrogate pair", () => {
    const text = "😀".repeat(50); // 100 UTF-16 code units, no spaces
    const chunks = chunkText(text, { maxChars: 7, overlapSentences: 0 });
    expectWellFormed(text, chunks, 7);
    expect(chunks.map((c) => c.content).join("")).toBe(text);
    for (const c of chunks) expect(c.content).toMatch(/^(😀)+$/u);
  });

  it("keeps markdown code lines intact", () => {
    const text = fixture("codeblock.md");
    const chunks = chunkText(text, { maxChars: 200 });
    expectWellFormed(text, chunks, 200);
    expect(chunks[0]?.content.startsWith("## HTML Example\n\n```html\n<!DOCTYPE html>")).toBe(true);
    const lines = new Set(text.split("\n").map((l) => l.trim()));
    for (const c of chunks) {
      // Chunks start and end on whole lines: code is never cut mid-line here.
      const chunkLines = c.content.split("\n");
      expect(lines.has((chunkLines[0] as string).trim())).toBe(true);
      expect(lines.has((chunkLines[chunkLines.length - 1] as string).trim())).toBe(true);
    }
    expect(chunks.some((c) => c.content.includes('    <meta charset="UTF-8">'))).toBe(true);
  });

  it("returns one chunk for short texts and none for empty ones", () => {
    const umlauts = fixture("umlauts-utf8.md");
    expect(chunkText(umlauts)).toEqual([{ content: umlauts.trim(), position: 0, startOffset: 0 }]);
    const plain = fixture("fake-text.txt");
    expect(chunkText(plain)).toEqual([{ content: plain.trim(), position: 0, startOffset: 0 }]);
    expect(chunkText(fixture("empty.txt"))).toEqual([]);
    expect(chunkText(fixture("fake-text-all-whitespace.txt"))).toEqual([]);
    expect(chunkText("  \n\n  \t")).toEqual([]);
  });

  it("is deterministic", () => {
    const text = fixture("norwich-city.txt");
    expect(chunkText(text, { maxChars: 500 })).toEqual(chunkText(text, { maxChars: 500 }));
  });

  it("rejects nonsensical options", () => {
    expect(() => chunkText("x", { maxChars: 0 })).toThrow(RangeError);
    expect(() => chunkText("x", { overlapSentences: -1 })).toThrow(RangeError);
  });
});
