import { readdirSync, readFileSync } from "node:fs";
import iconv from "iconv-lite";
import { describe, expect, it } from "vitest";
import { extractHtml } from "../../../pipeline/extract/html.ts";
import { type ExtractResult, segmentsToText } from "../../../pipeline/extract/types.ts";
import { FIXTURES_DIR } from "../../support/fixtures.ts";

const DIR = `${FIXTURES_DIR}/html`;
const FIXTURES = readdirSync(DIR)
  .filter((f) => /\.html?$/.test(f))
  .sort();
const ctx = () => ({ heartbeat() {}, signal: new AbortController().signal });
const read = (name: string) => readFileSync(`${DIR}/${name}`);
const extract = (bytes: Buffer, mimeType?: string) =>
  extractHtml({ bytes, filename: "page.html", mimeType }, ctx());

describe("extractHtml on every html fixture", () => {
  it.each(FIXTURES)("%s: one clean segment of text, correctly decoded", async (name) => {
    const result = await extractHtml({ bytes: read(name), filename: name }, ctx());
    expect(result.type).toBe("webpage");
    expect(result.segments).toHaveLength(1);
    const text = segmentsToText(result.segments);
    expect(text.length).toBeGreaterThan(0);
    expect(text).not.toMatch(/[\uFFFD\u0080-\u009F]/); // no undecodable bytes, no C1 controls from a wrong charset
    expect(text).not.toMatch(/<\/?(p|div|script|style)\b/);
    expect(typeof result.metadata.encoding).toBe("string");
  });
});

/** What each fixture really says (read with `cat`). */
const EXPECTATIONS: Record<string, (r: ExtractResult, text: string) => void> = {
  "example-10k-1p.html": (r, text) => {
    expect(text).toContain(
      "TRANSITION REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
    );
    expect(text).toContain("Commission file number: 000-30653");
    expect(text).toContain("Galaxy Gaming, Inc.");
    expect(text).toContain("6480 Cameron Street Ste. 305 – Las Vegas, NV 89118");
    // No <meta charset>, but an XML declaration says utf-8.
    expect(r.metadata).toMatchObject({ encoding: "utf-8", encodingSource: "xml-declaration" });
    expect(r.title).toBeNull(); // its <title> is blank and it has no h1/h2
  },
  "example-with-scripts.html": (r, text) => {
    expect(r.title).toBe("Russian Offensive Campaign Assessment, December 13");
    expect(text).toContain(
      "Belarusian forces remain unlikely to attack Ukraine despite a snap Belarusian military readiness check on December 13.",
    );
    expect(text).not.toContain("jQuery");
    expect(r.metadata).toMatchObject({
      ogTitle: "Institute for the Study of War",
      siteName: "Institute for the Study of War",
      canonicalUrl: "/backgrounder/russian-offensive-campaign-assessment-december-13",
      lang: "en",
      encoding: "utf-8",
      encodingSource: "meta",
    });
    expect(String(r.metadata.description)).toMatch(/^Belarusian forces remain unlikely to attack Ukraine/);
  },
  "fake-html-cp1252.html": (r, text) => {
    // No charset declared anywhere: the bytes are not UTF-8, and are detected as windows-1252 (0x80 is €).
    expect(r.metadata).toMatchObject({ encoding: "windows-1252", encodingSource: "detected" });
    expect(text).toContain(
      'Die schöne Frau hat einen Kaffee mit Kuchen gegessen. Sie sagte: "Das war köstlich!"',
    );
    expect(text).toContain("Der Preis betrug 15,50 €.");
    expect(text).toContain("L'été était très chaud cette année. J'ai acheté un café au lait pour 3,50 €.");
    expect(text).toContain('El niño comió paella con ñoquis. La señora dijo: "¡Qué rico!" y pagó 25,75 €.');
    expect(text).toContain("Kvinnan åt köttbullar med lingonsylt.");
    expect(text).toContain('O João comprou um café por 2,50 €. Ele disse: "Está ótimo!"');
    expect(r.title).toBe("My First Heading");
  },
  "fake-html-with-footer-and-header.html": (r, text) => {
    expect(r.title).toBe("My First Heading");
    expect(text).toBe("My First Heading\n\nMy first paragraph.");
  },
  "fake-html.html": (_r, text) => {
    expect(text).toContain("My Second Heading");
    expect(text).toContain("A test list\nWith sub-bullets!\nAnd another\nBack at the root");
    expect(text).toContain(
      "Column 1 | Column 2\nRow 1, Cell 1 | Row 1, Cell 2\nRow 2, Cell 1 | Row 2, Cell 2",
    );
  },
  "ideas-page.html": (r, text) => {
    expect(r.title).toBe("How to Get New Ideas");
    expect(text).toContain(
      "The way to get new ideas is to notice anomalies: what seems strange, or missing, or broken?",
    );
    expect(text).toContain("Knowledge grows fractally.");
  },
};

describe("extractHtml fixture contents", () => {
  it.each(Object.keys(EXPECTATIONS))("%s", async (name) => {
    const result = await extractHtml({ bytes: read(name), filename: name }, ctx());
    EXPECTATIONS[name]?.(result, segmentsToText(result.segments));
  });
});

describe("extractHtml charset", () => {
  const russian = "Съешь же ещё этих мягких французских булок, да выпей чаю.";

  it("follows <meta charset>", async () => {
    const html = `<html><head><meta charset="windows-1251"><title>Тест</title></head><body><p>${russian}</p></body></html>`;
    const result = await extract(iconv.encode(html, "windows-1251"));
    expect(segmentsToText(result.segments)).toContain(russian);
    expect(result.metadata).toMatchObject({ encoding: "windows-1251", encodingSource: "meta" });
  });

  it("reads ISO-8859-1 in <meta http-equiv> as windows-1252, as browsers do", async () => {
    const html = Buffer.concat([
      Buffer.from(
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1"></head><body><p>Price: 5 ',
      ),
      Buffer.from([0x80, 0x20, 0x96, 0x20, 0x93, 0x71, 0x75, 0x6f, 0x74, 0x65, 0x64, 0x94]), // € – “quoted”
      Buffer.from("</p></body></html>"),
    ]);
    const result = await extract(html);
    expect(segmentsToText(result.segments)).toContain("Price: 5 € – “quoted”");
    expect(result.metadata.encoding).toBe("windows-1252");
  });

  it("lets the caller's Content-Type charset win over <meta>, and a BOM win over both", async () => {
    const html = `<html><head><meta charset="utf-8"></head><body><p>${russian}</p></body></html>`;
    const koi8 = await extract(iconv.encode(html, "koi8-r"), "text/html; charset=KOI8-R");
    expect(segmentsToText(koi8.segments)).toContain(russian);
    expect(koi8.metadata).toMatchObject({ encoding: "koi8-r", encodingSource: "content-type" });

    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), iconv.encode(html, "utf-16le")]);
    const bom = await extract(utf16, "text/html; charset=windows-1252");
    expect(segmentsToText(bom.segments)).toContain(russian);
    expect(bom.metadata).toMatchObject({ encoding: "utf-16le", encodingSource: "bom" });
  });
});

describe("extractHtml metadata", () => {
  it("keeps what the page says about itself", async () => {
    const html = `<!doctype html><html lang="de-AT"><head>
      <title>Ein Artikel | Beispielzeitung</title>
      <meta name="description" content="  Eine kurze
        Beschreibung. ">
      <meta property="og:title" content="Ein Artikel">
      <meta property="og:description" content="OG-Beschreibung">
      <meta property="og:site_name" content="Beispielzeitung">
      <meta name="author" content="Erika Mustermann">
      <meta property="article:published_time" content="2024-05-01T08:00:00Z">
      <base href="https://news.example.org/ressort/">
      <link rel="canonical" href="artikel-1">
    </head><body><article><h1>Ein Artikel</h1><p>Der erste Absatz des Artikels ist lang genug, um gelesen zu werden.</p></article></body></html>`;
    const result = await extract(Buffer.from(html));
    expect(result.title).toBe("Ein Artikel");
    expect(result.metadata).toEqual({
      description: "Eine kurze Beschreibung.",
      ogTitle: "Ein Artikel",
      ogDescription: "OG-Beschreibung",
      siteName: "Beispielzeitung",
      author: "Erika Mustermann",
      publishedTime: "2024-05-01T08:00:00Z",
      canonicalUrl: "https://news.example.org/ressort/artikel-1",
      lang: "de-AT",
      encoding: "utf-8",
      encodingSource: "detected",
    });
  });

  it("yields no segments for a page without text", async () => {
    const result = await extract(
      Buffer.from("<html><head><title></title></head><body><script>x()</script></body></html>"),
    );
    expect(result.segments).toEqual([]);
    expect(result.title).toBeNull();
  });
});
