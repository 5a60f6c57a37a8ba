import { readdirSync, readFileSync } from "node:fs";
import iconv from "iconv-lite";
import { describe, expect, it } from "vitest";
import { decodeBytes, extractText, sectionLevel } from "../../../pipeline/extract/text.ts";
import {
  type ExtractResult,
  segmentsToText,
  UnprocessableContentError,
} from "../../../pipeline/extract/types.ts";
import { FIXTURES_DIR } from "../../support/fixtures.ts";

const DIR = `${FIXTURES_DIR}/text`;
const FIXTURES = readdirSync(DIR).sort();
const ctx = () => ({ heartbeat() {}, signal: new AbortController().signal });
const read = (name: string) => readFileSync(`${DIR}/${name}`);
const extract = (bytes: Buffer, filename?: string, mimeType?: string) =>
  extractText({ bytes, filename, mimeType }, ctx());

/** Fixtures with no text: they extract to no segments and no title (the pipeline fails them), not an error. */
const NO_TEXT = new Set(["empty.txt", "fake-text-all-whitespace.txt"]);

describe("extractText on every text fixture", () => {
  it.each(FIXTURES)("%s: decoded text in trimmed segments, nothing lost", async (name) => {
    const result = await extract(read(name), name);
    expect(result.type).toBe("text");
    const text = segmentsToText(result.segments);
    if (NO_TEXT.has(name)) {
      expect(result.segments).toEqual([]);
      expect(result.title).toBeNull();
      return;
    }
    expect(text).not.toMatch(/[\uFFFD\u0080-\u009F\uFEFF]/);
    expect(text).not.toContain(String.fromCharCode(0));
    for (const segment of result.segments) {
      expect(segment.text).not.toBe("");
      expect(segment.text).toBe(segment.text.trim());
    }
    // Segments are consecutive slices of the file: every non-blank line appears, in order.
    const lines = (s: string) =>
      s
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter(Boolean);
    expect(lines(text)).toEqual(lines(decodeBytes(read(name)).text));
    expect(result.title).toBe(lines(text)[0]?.replace(/^#+\s*/, ""));
  });
});

/** What each fixture really says (read with `cat`, `xxd` and `iconv`). */
const EXPECTATIONS: Record<string, (r: ExtractResult, text: string) => void> = {
  "codeblock.md": (r) => {
    expect(r.title).toBe("HTML Example");
    expect(r.metadata).toMatchObject({ format: "markdown", encoding: "utf-8" });
    expect(r.segments.map((s) => s.section)).toEqual(["HTML Example", "XML Example"]);
    expect(r.segments[0]?.text).toMatch(/^## HTML Example\n\n```html\n<!DOCTYPE html>/);
    expect(r.segments[0]?.text).toContain("    <h1>Hello, World!</h1>");
    expect(r.segments[1]?.text).toMatch(/^## XML Example\n```xml\n<note>/);
    expect(r.segments[1]?.text).toContain(
      "    <body>Don't forget me this weekend!</body>\n</note>\n```\n```xml",
    );
  },
  "empty.txt": (r) => {
    expect(r.segments).toEqual([]);
  },
  "fake-text-all-whitespace.txt": (r) => {
    expect(r.segments).toEqual([]);
  },
  "fake-text-utf-16.txt": (r, text) => {
    expect(r.metadata).toMatchObject({ encoding: "utf-16le", format: "plain" });
    expect(r.title).toBe("This is a test document to use for unit tests.");
    expect(text).toContain("    Doylestown, PA 18901");
    expect(text).toContain(
      "       - Hamburgers are delicious\n       - Dogs are the best\n       - I love fuzzy blankets",
    );
  },
  "fake-text.txt": (r, text) => {
    expect(r.segments).toHaveLength(1);
    expect(r.segments[0]?.section).toBeUndefined();
    expect(text).toBe(
      "This is a test document to use for unit tests.\n\nDoylestown, PA 18901\n\nImportant points:\n\n   - Hamburgers are delicious\n   - Dogs are the best\n   - I love fuzzy blankets",
    );
  },
  "norwich-city.txt": (r, text) => {
    // The file is UTF-8 whose dashes were once mis-decoded as Latin-1 ("1986â\u0080\u00931990"); repaired.
    expect(r.metadata).toMatchObject({ encoding: "utf-8", repairedMojibake: true });
    expect(text).toContain("1986–1990 Watford 63 (9)\n1990–1993 Huddersfield Town 142 (50)");
    expect(text).toContain(
      "Iwan Wyn Roberts (born 26 June 1968) is a Welsh former professional footballer who\nplayed as a forward from 1986 to 2005",
    );
    expect(r.title).toBe("Iwan Roberts");
  },
  "umlauts-utf8.md": (r) => {
    expect(r.title).toBe("können");
    expect(r.segments).toEqual([{ text: "## können\n\nkönnen\n\näöüß", section: "können" }]);
  },
};

describe("extractText fixture contents", () => {
  it.each(Object.keys(EXPECTATIONS))("%s", async (name) => {
    const result = await extract(read(name), name);
    EXPECTATIONS[name]?.(result, segmentsToText(result.segments));
  });
});

describe("extractText decoding", () => {
  const german = "Größe: 5 € – „Grüße“ aus Köln\r\nZweite Zeile";

  it("detects windows-1252 when the bytes are not UTF-8", async () => {
    const result = await extract(iconv.encode(german, "windows-1252"), "notes.txt");
    expect(segmentsToText(result.segments)).toBe("Größe: 5 € – „Grüße“ aus Köln\nZweite Zeile");
    expect(result.metadata.encoding).toBe("windows-1252");
  });

  it("reads UTF-16 BE and UTF-8 with a BOM, and UTF-16 LE without one", async () => {
    const be = Buffer.concat([Buffer.from([0xfe, 0xff]), iconv.encode(german, "utf-16be")]);
    expect((await extract(be, "a.txt")).metadata.encoding).toBe("utf-16be");
    expect(segmentsToText((await extract(be, "a.txt")).segments)).toContain("„Grüße“ aus Köln");
    const utf8 = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(german)]);
    expect((await extract(utf8, "a.txt")).title).toBe("Größe: 5 € – „Grüße“ aus Köln");
    const le = iconv.encode(german, "utf-16le");
    expect(segmentsToText((await extract(le, "a.txt")).segments)).toContain("„Grüße“ aus Köln");
  });

  it("uses a declared charset when there is no BOM", async () => {
    const result = await extract(
      iconv.encode("Привет, мир", "koi8-r"),
      "a.txt",
      "text/plain; charset=koi8-r",
    );
    expect(segmentsToText(result.segments)).toBe("Привет, мир");
  });

  it("refuses binary content as UnprocessableContentError", async () => {
    const binary = Buffer.from([
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52,
    ]);
    await expect(extract(binary, "image.txt")).rejects.toThrow(
      new UnprocessableContentError("the file is not text: it contains binary data"),
    );
  });
});

describe("extractText markdown sections", () => {
  it("cuts at the top level that repeats, keeps the preamble, and ignores # lines in code", async () => {
    const md = [
      "Intro line.",
      "",
      "# Guide",
      "Welcome.",
      "## Install",
      "```sh",
      "# not a heading",
      "npm install",
      "```",
      "### Linux",
      "apt",
      "## Use ##",
      "Run it.",
    ].join("\n");
    const result = await extract(Buffer.from(md), "guide.md");
    expect(result.title).toBe("Guide");
    expect(result.segments).toEqual([
      { text: "Intro line." },
      { text: "# Guide\nWelcome.", section: "Guide" },
      { text: "## Install\n```sh\n# not a heading\nnpm install\n```\n### Linux\napt", section: "Install" },
      { text: "## Use ##\nRun it.", section: "Use" },
    ]);
  });

  it("does not cut a .txt file at lines starting with #", async () => {
    const result = await extract(Buffer.from("# comment\nvalue = 1\n# another\nvalue = 2\n"), "config.txt");
    expect(result.segments).toEqual([{ text: "# comment\nvalue = 1\n# another\nvalue = 2" }]);
    expect(result.metadata.format).toBe("plain");
  });

  it("picks the section level", () => {
    expect(sectionLevel([1, 2, 2, 3])).toBe(2);
    expect(sectionLevel([1, 1, 2])).toBe(1);
    expect(sectionLevel([2, 3])).toBe(3);
    expect(sectionLevel([])).toBe(1);
  });
});
