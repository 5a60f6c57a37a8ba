import { readFileSync } from "node:fs";
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import { describe, expect, it } from "vitest";
import { htmlToText } from "../../pipeline/html.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";

const FIXTURES = `${FIXTURES_DIR}/html`;
const fixture = (name: string) => readFileSync(`${FIXTURES}/${name}`, "utf8");

/** Every line is trimmed and has single spaces; paragraphs are separated by exactly one blank line. */
function expectCleanWhitespace(text: string) {
  expect(text).toBe(text.trim());
  expect(text).not.toMatch(/\n{3,}/);
  for (const line of text.split("\n")) {
    expect(line).toBe(line.trim());
    expect(line).not.toMatch(/ {2}|\t/);
  }
}

describe("htmlToText on real pages", () => {
  it("extracts the ISW article without navigation or scripts", () => {
    const { title, text } = htmlToText(
      fixture("example-with-scripts.html"),
      "https://www.understandingwar.org/backgrounder/russian-offensive-campaign-assessment-december-13",
    );
    // <title> is "Article | Site" while og:title is the site name; the article's own title wins.
    expect(title).toBe("Russian Offensive Campaign Assessment, December 13");
    expect(text).toContain(
      "Belarusian forces remain unlikely to attack Ukraine despite a snap Belarusian military readiness check on December 13.",
    );
    expect(text).toContain("Senior Israeli officials stated that Iran seeks to limit the range of missiles");
    // Navigation menu, search box and script/style bodies are gone.
    for (const junk of [
      "Skip to main content",
      "Who We Are",
      "Planned Giving",
      "Search form",
      "jQuery",
      "Drupal.settings",
      "googleanalytics",
      "@import",
      "function(",
    ]) {
      expect(text, junk).not.toContain(junk);
    }
    expectCleanWhitespace(text);
    // Paragraphs stay separate: the first two article paragraphs are not run together.
    expect(text).toMatch(/in this report\.\n\nBelarusian forces remain unlikely/);
  });

  it("extracts the essay from an old table-layout page with stray scripts", () => {
    const { title, text } = htmlToText(fixture("ideas-page.html"));
    expect(title).toBe("How to Get New Ideas");
    expect(text).toContain(
      "The way to get new ideas is to notice anomalies: what seems strange, or missing, or broken?",
    );
    expect(text).toContain("In the best case, exploring such gaps yields whole new fractal buds.");
    for (const junk of ["csell", "YStore", "storeCheckoutDomain", "TOK_STORE_ID", "new Image"]) {
      expect(text, junk).not.toContain(junk);
    }
    // <br><br> paragraphs become blank-line paragraphs.
    expect(text).toContain("frontiers of knowledge.\n\nKnowledge grows fractally.");
    expectCleanWhitespace(text);
  });

  it("keeps the text of an inline-XBRL filing and drops its styling", () => {
    const { text } = htmlToText(fixture("example-10k-1p.html"));
    expect(text).toContain("Galaxy Gaming, Inc.");
    expect(text).toContain("ANNUAL REPORT ON FORM 10-K FOR THE YEAR ENDED DECEMBER 31, 2021");
    expect(text).not.toContain("font-family");
    expect(text).not.toContain("ix:nonNumeric");
    expectCleanWhitespace(text);
  });

  it("puts headings, list items and table rows on their own lines", () => {
    const { title, text } = htmlToText(fixture("fake-html.html"));
    expect(title).toBe("My First Heading"); // no <title>: the first heading stands in
    expect(text).toBe(
      [
        "My First Heading",
        "",
        "My Second Heading",
        "",
        "My first paragraph. lorem ipsum dolor set amet. if the cow comes home under the sun how do you fault the cow for it's worn hooves?",
        "",
        "A test list",
        "With sub-bullets!",
        "And another",
        "Back at the root",
        "",
        "A Third Heading",
        "",
        "Column 1 | Column 2",
        "Row 1, Cell 1 | Row 1, Cell 2",
        "Row 2, Cell 1 | Row 2, Cell 2",
      ].join("\n"),
    );
  });

  it("ignores a header and footer placed outside the body", () => {
    const { text } = htmlToText(fixture("fake-html-with-footer-and-header.html"));
    expect(text).toBe("My First Heading\n\nMy first paragraph.");
  });

  it("keeps <pre> lines of a page decoded from windows-1252", () => {
    // latin1 agrees with windows-1252 on these letters. (Node 20's TextDecoder("windows-1252") is
    // really latin1 too: it turns the 0x80 euro sign into U+0080, so the test avoids that byte.)
    const html = readFileSync(`${FIXTURES}/fake-html-cp1252.html`).toString("latin1");
    const { text } = htmlToText(html);
    expect(text).toContain("My first paragraph.\n\nSome text with CP1252-specific characters:");
    // Each <pre> line stays a line of its own.
    const lines = text.split("\n");
    const starts = [
      "Die schöne Frau",
      "L'été était très chaud",
      "El niño comió",
      "Kvinnan åt",
      "O João",
      "De vrouw",
    ];
    for (const start of starts)
      expect(
        lines.filter((l) => l.startsWith(start)),
        start,
      ).toHaveLength(1);
    expect(lines.find((l) => l.startsWith("De vrouw"))).toMatch(/Het kind vroeg: "Mag ik ook wat\?"$/);
  });
});

describe("htmlToText edge cases", () => {
  it("falls back to the body text when Readability finds no article", () => {
    const html =
      "<html><head><title>Contact</title></head><body><footer>Visit us at 12 Elm Street, Springfield.</footer></body></html>";
    // Precondition: this page really is one Readability gives up on.
    expect(new Readability(parseHTML(html).document as unknown as Document).parse()).toBeNull();
    expect(htmlToText(html)).toEqual({ title: "Contact", text: "Visit us at 12 Elm Street, Springfield." });
  });

  it("collapses whitespace outside <pre> and keeps indentation inside it", () => {
    const html =
      "<html><body><p>a   b\n   c <b>bold</b>,\t<i>it</i></p><pre>  x = 1\n    y = 2</pre><script>var junk = 1</script></body></html>";
    expect(htmlToText(html).text).toBe("a b c bold, it\n\n  x = 1\n    y = 2");
  });

  it("handles fragments, plain text, entities and empty input", () => {
    expect(htmlToText("")).toEqual({ title: null, text: "" });
    expect(htmlToText("<html><head><title> T </title></head><body>  </body></html>")).toEqual({
      title: "T",
      text: "",
    });
    expect(htmlToText("plain &amp; simple").text).toBe("plain & simple");
    expect(htmlToText("<html><p>x &amp; y</p>tail &lt;b&gt;</html>").text).toBe("x & y\n\ntail <b>");
  });

  it("is deterministic", () => {
    const html = fixture("example-with-scripts.html");
    expect(htmlToText(html)).toEqual(htmlToText(html));
  });
});
