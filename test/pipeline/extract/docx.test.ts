import { readdirSync, readFileSync } from "node:fs";
import JSZip from "jszip";
import { describe, expect, it } from "vitest";
import { extractDocx } from "../../../pipeline/extract/docx.ts";
import {
  type ExtractResult,
  segmentsToText,
  UnprocessableContentError,
} from "../../../pipeline/extract/types.ts";
import { FIXTURES_DIR } from "../../support/fixtures.ts";

const DIR = `${FIXTURES_DIR}/docx`;
const FIXTURES = readdirSync(DIR)
  .filter((f) => f.endsWith(".docx"))
  .sort();
const ctx = () => ({ heartbeat() {}, signal: new AbortController().signal });
const read = (name: string) => readFileSync(`${DIR}/${name}`);
const extract = (bytes: Buffer, filename = "test.docx") => extractDocx({ bytes, filename }, ctx());

/** Fixtures that hold no text at all: they extract to no segments (the pipeline fails them), not an error. */
const NO_TEXT = new Set(["empty.docx"]);

function decodeXml(s: string): string {
  return s
    .replace(/&#x([0-9a-f]+);/gi, (_, h: string) => String.fromCodePoint(Number.parseInt(h, 16)))
    .replace(/&#(\d+);/g, (_, d: string) => String.fromCodePoint(Number(d)))
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, "&");
}

const words = (text: string) => new Set(text.match(/[\p{L}\p{N}]*\p{L}[\p{L}\p{N}]*/gu) ?? []);

/** Every word of the body, footnotes and endnotes as Word stores them (<w:t> runs), read straight from the XML. */
async function wordsInXml(bytes: Buffer): Promise<Set<string>> {
  const zip = await JSZip.loadAsync(bytes);
  const found = new Set<string>();
  for (const part of ["word/document.xml", "word/footnotes.xml", "word/endnotes.xml"]) {
    const xml = await zip.file(part)?.async("string");
    if (!xml) continue;
    for (const paragraph of xml.split(/<\/w:p>/)) {
      const runs = [...paragraph.matchAll(/<w:t(?:\s[^>]*)?>([^<]*)<\/w:t>/g)].map((m) =>
        decodeXml(m[1] ?? ""),
      );
      for (const w of words(runs.join(""))) found.add(w);
    }
  }
  return found;
}

describe("extractDocx on every docx fixture", () => {
  it.each(FIXTURES)("%s: extracts every word Word stored, in well-formed segments", async (name) => {
    const result = await extract(read(name), name);
    expect(result.type).toBe("docx");
    const text = segmentsToText(result.segments);
    if (NO_TEXT.has(name)) {
      expect(result.segments).toEqual([]);
      expect(text).toBe("");
      return;
    }
    expect(text.length).toBeGreaterThan(0);
    for (const segment of result.segments) {
      expect(segment.text).toBe(segment.text.trim());
      expect(segment.text).not.toBe("");
      expect(segment.text).not.toMatch(/\n{3,}/);
    }
    const extracted = words(text);
    const missing = [...(await wordsInXml(read(name)))].filter((w) => !extracted.has(w));
    expect(missing).toEqual([]);
  });
});

/** What each fixture really says (read with `unzip -p <file> word/document.xml`). */
const EXPECTATIONS: Record<string, (r: ExtractResult, text: string) => void> = {
  "docx-tables.docx": (r, text) => {
    expect(text).toContain(
      "Simple uniform table\n\nHeader Col 1 | Header Col 2\nLorem ipsum | A link example",
    );
    // A table nested in a cell stays in that cell, on its row.
    expect(text).toContain("a | >b< | c\nd | e, f; g&t, h | i\nj | k | l");
    expect(text).toContain("Table with merged cells");
    expect(r.title).toBeNull(); // no heading, and core.xml's <dc:title> is empty
    expect(r.metadata.author).toBeUndefined();
    expect(r.metadata.created).toBe("2023-11-06T19:03:00Z");
  },
  "empty.docx": (r) => {
    expect(r.title).toBeNull();
    expect(r.segments).toEqual([]);
  },
  "fake.docx": (r, text) => {
    expect(text).toBe("Lorem ipsum dolor sit amet.");
    expect(r.metadata.author).toBe("Mr. Miagi");
    expect(r.segments[0]?.section).toBeUndefined();
  },
  "footnotes.docx": (r) => {
    expect(r.segments).toEqual([
      { text: "Ouch[1].[2]" },
      { text: "[1] A tachyon walks into a bar.\n[2] Fin.", section: "Footnotes", source: "footnotes" },
    ]);
    expect(r.metadata.author).toBe("Michael Williamson");
  },
  "handbook-1p.docx": (r, text) => {
    expect(text).toContain("CHAPTER 1 – INTRODUCTION");
    expect(text).toContain(
      "A. PURPOSE\n\nThe United States Trustee appoints and supervises standing trustees",
    );
    expect(text).toContain("B. ROLE OF THE UNITED STATES TRUSTEE");
    expect(text).toContain("C. STATUTORY DUTIES OF A STANDING TRUSTEE");
    // Bold paragraphs are not headings (no heading style), and docProps/core.xml is empty.
    expect(r.title).toBeNull();
    expect(r.segments).toHaveLength(1);
  },
  "page-breaks.docx": (_r, text) => {
    expect(text).toContain("First page, tab here: followed by line-break here:\nhere:\nand here:");
    expect(text).toContain("<<Text on second page.");
    expect(text).toContain("<<producing two page-breaks to get from page-3 to page-5.");
  },
  "simple.docx": (r, text) => {
    expect(r.title).toBe("These are a few of my favorite things:");
    expect(r.segments[0]?.section).toBe("These are a few of my favorite things:");
    expect(text.startsWith("# These are a few of my favorite things:\n\n")).toBe(true);
    expect(text).toContain("\n- Hockey\n");
    expect(text).toContain("This is my first thought. This is my second thought.");
    expect(text).toContain("DOYLESTOWN, PA 18901");
    expect(r.metadata.author).toBe("python-docx");
  },
  "tables.docx": (_r, text) => {
    expect(text).toBe("Above\n\nTop left | Top right\nBottom left | Bottom right\n\nBelow");
  },
  "utf8-bom.docx": (r, text) => {
    expect(text).toBe("This XML has a byte order mark.");
    expect(r.metadata).toEqual({}); // the package has no docProps/core.xml
  },
};

describe("extractDocx fixture contents", () => {
  it.each(Object.keys(EXPECTATIONS))("%s", async (name) => {
    const result = await extract(read(name), name);
    EXPECTATIONS[name]?.(result, segmentsToText(result.segments));
  });
});

/** simple.docx with its body replaced, so heading, list and section handling can be checked on a real package. */
async function docxWithBody(body: string, numbering = ""): Promise<Buffer> {
  const zip = await JSZip.loadAsync(read("simple.docx"));
  const xml = (await zip.file("word/document.xml")?.async("string")) ?? "";
  zip.file("word/document.xml", xml.replace(/<w:body>[\s\S]*<\/w:body>/, `<w:body>${body}</w:body>`));
  const numberingXml = (await zip.file("word/numbering.xml")?.async("string")) ?? "";
  zip.file("word/numbering.xml", numberingXml.replace("</w:numbering>", `${numbering}</w:numbering>`));
  return zip.generateAsync({ type: "nodebuffer" });
}
const para = (text: string, style?: string) =>
  `<w:p>${style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : ""}<w:r><w:t xml:space="preserve">${text}</w:t></w:r></w:p>`;

describe("extractDocx structure", () => {
  it("cuts sections at the top level that repeats, keeps deeper headings inside, and takes the first heading as title", async () => {
    const bytes = await docxWithBody(
      [
        para("Before any heading."),
        para("Report", "Title"),
        para("Intro text."),
        para("Methods", "Heading1"),
        para("We measured."),
        para("Details", "Heading2"),
        para("Fine print."),
        para("Results", "Heading1"),
        para("It worked."),
      ].join(""),
    );
    const result = await extract(bytes);
    expect(result.title).toBe("Report");
    expect(result.segments).toEqual([
      { text: "Before any heading." },
      { text: "# Report\n\nIntro text.", section: "Report" },
      { text: "# Methods\n\nWe measured.\n\n## Details\n\nFine print.", section: "Methods" },
      { text: "# Results\n\nIt worked.", section: "Results" },
    ]);
  });

  it("writes numbered and nested lists as '1. ' and indented '- ' lines", async () => {
    const item = (text: string, level: number) =>
      `<w:p><w:pPr><w:numPr><w:ilvl w:val="${level}"/><w:numId w:val="90"/></w:numPr></w:pPr><w:r><w:t>${text}</w:t></w:r></w:p>`;
    const bytes = await docxWithBody(
      [para("Steps:"), item("Unpack", 0), item("Check the seal", 1), item("Plug in", 0)].join(""),
      // A list whose first level is numbered "1." and second level bulleted.
      `<w:abstractNum w:abstractNumId="90"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="bullet"/><w:lvlText w:val="o"/></w:lvl></w:abstractNum><w:num w:numId="90"><w:abstractNumId w:val="90"/></w:num>`,
    );
    const result = await extract(bytes);
    expect(segmentsToText(result.segments)).toBe("Steps:\n\n1. Unpack\n  - Check the seal\n2. Plug in");
  });

  it("falls back to the core properties title when there is no heading", async () => {
    const zip = await JSZip.loadAsync(read("fake.docx"));
    const core = (await zip.file("docProps/core.xml")?.async("string")) ?? "";
    expect(core).toContain("<dc:title/>");
    zip.file(
      "docProps/core.xml",
      core.replace("<dc:title/>", "<dc:title>Quarterly &#x2019;Plan&#x2019;</dc:title>"),
    );
    const result = await extract(await zip.generateAsync({ type: "nodebuffer" }));
    expect(result.title).toBe("Quarterly ’Plan’");
    expect(result.metadata.title).toBe("Quarterly ’Plan’");
    expect(result.metadata.author).toBe("Mr. Miagi");
  });

  it("refuses a truncated file as UnprocessableContentError with a readable reason", async () => {
    const bytes = read("fake.docx");
    const error = await extract(bytes.subarray(0, Math.floor(bytes.length / 2))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnprocessableContentError);
    expect((error as Error).message).toMatch(
      /^the file is not a valid \.docx document: it is not a readable zip archive/,
    );
  });

  it("refuses bytes that are not a zip, an empty file, a legacy/encrypted file and a zip that is not a docx", async () => {
    await expect(extract(Buffer.from("just some text, not a document"))).rejects.toThrow(
      UnprocessableContentError,
    );
    await expect(extract(Buffer.alloc(0))).rejects.toThrow("the file is empty, not a .docx document");
    const cfb = Buffer.concat([
      Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]),
      Buffer.alloc(504),
    ]);
    await expect(extract(cfb)).rejects.toThrow(/password-protected or in the old binary Office format/);
    const zip = new JSZip();
    zip.file("hello.txt", "hi");
    await expect(extract(await zip.generateAsync({ type: "nodebuffer" }))).rejects.toThrow(
      "the file is a zip archive but not a .docx document (no word/document.xml)",
    );
  });

  it("stops when the signal is aborted", async () => {
    const controller = new AbortController();
    controller.abort(new Error("cancelled"));
    await expect(
      extractDocx({ bytes: read("fake.docx") }, { heartbeat() {}, signal: controller.signal }),
    ).rejects.toThrow("cancelled");
  });
});
