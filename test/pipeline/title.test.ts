import { describe, expect, it } from "vitest";
import { titleFromText } from "../../activities/extract.ts";

describe("a title from a document's text", () => {
  it("takes the first line that reads as words", () => {
    // The first lines of the 10-K fixture: a checkbox glyph on a line of its own.
    expect(titleFromText("☐\n\nTRANSITION REPORT PURSUANT TO SECTION 13\n\nFor the transition period")).toBe(
      "TRANSITION REPORT PURSUANT TO SECTION 13",
    );
    expect(titleFromText("---\n12\n## Tides and currents\nbody")).toBe("Tides and currents");
    expect(titleFromText("• ☑ Packing list for the trip")).toBe("Packing list for the trip");
    expect(titleFromText("“Quoted” openings stay")).toBe("“Quoted” openings stay");
    expect(titleFromText("Straße über Köln")).toBe("Straße über Köln");
    expect(titleFromText("> - $5 lunch specials")).toBe("$5 lunch specials");
    expect(titleFromText("¿Qué pasa?")).toBe("¿Qué pasa?");
  });

  it("falls back to the first line when no line has words, and shortens long lines", () => {
    expect(titleFromText("200.01 1 400.01 3\n600.01 5")).toBe("200.01 1 400.01 3");
    expect(titleFromText("   \n\n")).toBeNull();
    const long = titleFromText("word ".repeat(40));
    expect(long?.length).toBe(100);
    expect(long?.endsWith("...")).toBe(true);
  });
});
