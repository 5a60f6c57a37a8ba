import { readdirSync, readFileSync } from "node:fs";
import { posix } from "node:path";
import JSZip from "jszip";
import { describe, expect, it } from "vitest";
import { extractPptx } from "../../../pipeline/extract/pptx.ts";
import {
  type ExtractResult,
  segmentsToText,
  UnprocessableContentError,
} from "../../../pipeline/extract/types.ts";
import { FIXTURES_DIR } from "../../support/fixtures.ts";

const DIR = `${FIXTURES_DIR}/pptx`;
const FIXTURES = readdirSync(DIR)
  .filter((f) => f.endsWith(".pptx"))
  .sort();
const ctx = () => ({ heartbeat() {}, signal: new AbortController().signal });
const read = (name: string) => readFileSync(`${DIR}/${name}`);
const extract = (bytes: Buffer, filename = "test.pptx") => extractPptx({ bytes, filename }, ctx());

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

/** The slide parts in presentation order, read with regular expressions (independently of the extractor). */
async function slidePartsOf(zip: JSZip): Promise<string[]> {
  const presentation = (await zip.file("ppt/presentation.xml")?.async("string")) ?? "";
  const rels = (await zip.file("ppt/_rels/presentation.xml.rels")?.async("string")) ?? "";
  const targets = new Map(
    [...rels.matchAll(/<Relationship\b[^>]*>/g)].map((m) => [
      m[0].match(/Id="([^"]+)"/)?.[1],
      m[0].match(/Target="([^"]+)"/)?.[1],
    ]),
  );
  return [...presentation.matchAll(/<p:sldId\b[^>]*r:id="([^"]+)"/g)].map((m) =>
    posix.join("ppt", targets.get(m[1]) ?? ""),
  );
}

/** Every word on every slide (<a:t> runs, joined per paragraph), straight from the XML. */
async function slideWords(bytes: Buffer): Promise<Set<string>> {
  const zip = await JSZip.loadAsync(bytes);
  const found = new Set<string>();
  for (const part of await slidePartsOf(zip)) {
    const xml = (await zip.file(part)?.async("string")) ?? "";
    for (const paragraph of xml.split(/<\/a:p>/)) {
      const runs = [...paragraph.matchAll(/<a:t(?:\s[^>]*)?>([^<]*)<\/a:t>/g)].map((m) =>
        decodeXml(m[1] ?? ""),
      );
      for (const w of words(runs.join(""))) found.add(w);
    }
  }
  return found;
}

describe("extractPptx on every pptx fixture", () => {
  it.each(FIXTURES)("%s: every word on the slides, one segment per slide in order", async (name) => {
    const result = await extract(read(name), name);
    expect(result.type).toBe("pptx");
    const slides = result.metadata.slides;
    expect(slides).toBe((await slidePartsOf(await JSZip.loadAsync(read(name)))).length);
    const slideSegments = result.segments.filter((s) => s.source === undefined);
    const numbers = slideSegments.map((s) => s.slide);
    expect(numbers).toEqual([...new Set(numbers)].sort((a, b) => (a ?? 0) - (b ?? 0)));
    for (const segment of result.segments) {
      expect(segment.slide).toBeGreaterThanOrEqual(1);
      expect(segment.slide).toBeLessThanOrEqual(slides as number);
      expect(segment.text).toBe(segment.text.trim());
      expect(segment.text).not.toBe("");
    }
    const extracted = words(segmentsToText(result.segments));
    const missing = [...(await slideWords(read(name)))].filter((w) => !extracted.has(w));
    expect(missing).toEqual([]);
  });
});

/** What each fixture really says (read with `unzip -p <file> ppt/slides/slideN.xml`). */
const EXPECTATIONS: Record<string, (r: ExtractResult) => void> = {
  // Named "malformed": its slide has a date placeholder that the slide master lacks, which breaks
  // python-pptx. The package itself is sound (every part is well-formed XML), so it is read, not refused.
  "fake-power-point-malformed.pptx": (r) => {
    expect(r.title).toBe("Test Slide");
    // The date placeholder comes first in the XML; the title is still read first, footers last.
    expect(r.segments).toEqual([{ text: "Test Slide\n\nProblem Date Placeholder", slide: 1 }]);
    expect(r.metadata).toMatchObject({ slides: 1, author: "Heather Hoyt", title: "PowerPoint Presentation" });
  },
  "fake-power-point-many-pages.pptx": (r) => {
    expect(r.title).toBe("Page 1");
    expect(r.segments).toEqual([
      { text: "Page 1", slide: 1 },
      { text: "Page 2", slide: 2 },
    ]);
    expect(r.metadata.slides).toBe(2);
  },
  "fake-power-point-table.pptx": (r) => {
    expect(r.title).toBe("A Slide with a Table");
    expect(r.segments).toEqual([
      {
        text: [
          "A Slide with a Table",
          "",
          "Column 1 | Column 2 | Column 3",
          "Red | Green | Blue",
          "Purple | Orange | Yellow",
          "Tangerine | Pink | Aqua",
        ].join("\n"),
        slide: 1,
      },
    ]);
  },
  "fake-power-point.pptx": (r) => {
    expect(r.title).toBe("Adding a Bullet Slide");
    const text = r.segments[0]?.text ?? "";
    expect(text).toContain(
      [
        "- Find the bullet slide layout",
        "  - Use _TextFrame.text for first bullet",
        "    - Use _TextFrame.add_paragraph() for subsequent bullets",
      ].join("\n"),
    );
    // The text box sits below the bullets on the slide.
    expect(text.indexOf("Here is some text in a text box!")).toBeGreaterThan(
      text.indexOf("Here is a lot of text!"),
    );
  },
  "sample-presentation.pptx": (r) => {
    expect(r.title).toBe("Title Slide");
    expect(r.metadata.slides).toBe(4);
    expect(r.segments.map((s) => s.slide)).toEqual([1, 2, 3, 4]);
    expect(r.segments.some((s) => s.source === "notes")).toBe(false); // its notes pages are blank
    expect(r.segments[0]?.text).toBe("Title Slide\n\nWith a subtitle");
    expect(r.segments[1]?.text).toContain(
      "There’s text here\n- And a list of bulleted information\n  - With a sub-bullet",
    );
    // Two columns side by side: the left one is read first.
    const columns = r.segments[2]?.text ?? "";
    expect(columns.indexOf("What happens when there’s one here")).toBeLessThan(
      columns.indexOf("What happens when there’s 2"),
    );
    expect(columns).toContain("    - This one is a sub-sub-detail");
    // The title sits below the table on slide 4, but a slide is read title first.
    expect(r.segments[3]?.text).toBe(
      "This is kinda backwards, huh?\n\nTable | A | B | C\n1 | A1 | B1 | C1\n2 | A2 | B2 | C2",
    );
  },
};

describe("extractPptx fixture contents", () => {
  it.each(Object.keys(EXPECTATIONS))("%s", async (name) => {
    EXPECTATIONS[name]?.(await extract(read(name), name));
  });
});

async function edited(name: string, edit: (zip: JSZip) => Promise<void>): Promise<Buffer> {
  const zip = await JSZip.loadAsync(read(name));
  await edit(zip);
  return zip.generateAsync({ type: "nodebuffer" });
}

async function replaceIn(zip: JSZip, part: string, replace: (xml: string) => string) {
  const xml = await zip.file(part)?.async("string");
  if (xml === undefined) throw new Error(`${part} is not in the fixture`);
  const updated = replace(xml);
  expect(updated).not.toBe(xml);
  zip.file(part, updated);
}

describe("extractPptx structure", () => {
  it("numbers slides in presentation order (p:sldIdLst), not by file name", async () => {
    const bytes = await edited("sample-presentation.pptx", (zip) =>
      replaceIn(zip, "ppt/presentation.xml", (xml) =>
        xml.replace(/<p:sldIdLst>([\s\S]*?)<\/p:sldIdLst>/, (_, ids: string) => {
          const entries = ids.match(/<p:sldId\b[^>]*\/>/g) ?? [];
          return `<p:sldIdLst>${entries.reverse().join("")}</p:sldIdLst>`;
        }),
      ),
    );
    const result = await extract(bytes);
    expect(result.title).toBe("This is kinda backwards, huh?");
    expect(result.segments.map((s) => [s.slide, s.text.split("\n")[0]])).toEqual([
      [1, "This is kinda backwards, huh?"],
      [2, "This is the second content slide"],
      [3, "This is the first content slide"],
      [4, "Title Slide"],
    ]);
  });

  it("keeps speaker notes as a segment of their own after the slide's", async () => {
    const bytes = await edited("sample-presentation.pptx", (zip) =>
      replaceIn(zip, "ppt/notesSlides/notesSlide2.xml", (xml) =>
        xml.replace(
          "<a:r><a:t></a:t></a:r>",
          "<a:r><a:t>Remember the budget &amp; the </a:t></a:r><a:r><a:t>timeline.</a:t></a:r></a:p><a:p><a:r><a:t>Then take questions.</a:t></a:r>",
        ),
      ),
    );
    const result = await extract(bytes);
    const index = result.segments.findIndex((s) => s.source === "notes");
    expect(result.segments[index]).toEqual({
      text: "Remember the budget & the timeline.\nThen take questions.",
      slide: 2,
      source: "notes",
    });
    expect(result.segments[index - 1]?.slide).toBe(2);
    expect(result.segments[index - 1]?.source).toBeUndefined();
  });

  it("refuses a slide that is not well-formed XML, naming the slide", async () => {
    const bytes = await edited("fake-power-point.pptx", (zip) =>
      replaceIn(zip, "ppt/slides/slide1.xml", (xml) => xml.replace("</p:cSld>", "")),
    );
    const error = await extract(bytes).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnprocessableContentError);
    expect((error as Error).message).toMatch(
      /^the presentation is damaged: slide 1 \(ppt\/slides\/slide1\.xml\) is not well-formed XML \(line \d+: .+\)$/,
    );
  });

  it("refuses a presentation whose slide part is missing", async () => {
    const bytes = await edited("fake-power-point-many-pages.pptx", async (zip) => {
      zip.remove("ppt/slides/slide2.xml");
    });
    await expect(extract(bytes)).rejects.toThrow(
      new UnprocessableContentError(
        "the presentation is damaged: slide 2 (ppt/slides/slide2.xml) is missing",
      ),
    );
  });

  it("refuses a truncated file, bytes that are not a zip, and a zip that is not a presentation", async () => {
    const bytes = read("fake-power-point.pptx");
    await expect(extract(bytes.subarray(0, 1000))).rejects.toThrow(
      /^the file is not a valid \.pptx document: it is not a readable zip archive/,
    );
    await expect(extract(Buffer.from("%PDF-1.7 not a presentation"))).rejects.toThrow(
      UnprocessableContentError,
    );
    const zip = new JSZip();
    zip.file("word/document.xml", "<w:document/>");
    await expect(extract(await zip.generateAsync({ type: "nodebuffer" }))).rejects.toThrow(
      "the file is a zip archive but not a .pptx presentation (no ppt/presentation.xml)",
    );
  });

  it("reports progress per slide and stops when the signal is aborted", async () => {
    const beats: unknown[] = [];
    await extractPptx(
      { bytes: read("sample-presentation.pptx") },
      { heartbeat: (d) => beats.push(d), signal: new AbortController().signal },
    );
    expect(beats).toEqual([1, 2, 3, 4].map((slide) => ({ slide, of: 4 })));
    const controller = new AbortController();
    controller.abort(new Error("cancelled"));
    await expect(
      extractPptx({ bytes: read("sample-presentation.pptx") }, { heartbeat() {}, signal: controller.signal }),
    ).rejects.toThrow("cancelled");
  });
});
