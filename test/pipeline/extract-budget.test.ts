// Issue 68, "each document has a budget": the text kept from one document, attachments and attached
// messages included, stops at MAX_EXTRACTED_CHARS, and its chunks at MAX_CHUNKS_PER_DOCUMENT. Reading
// stops where the budget ends (each extraction is handed what is left), the text so far is kept, and
// the metadata says which cap cut it. Runs the real extraction path: extractAll over the CPU pool.

import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ExtractionRunner, extractAll } from "../../activities/extract.ts";
import { loadConfig } from "../../config/env.ts";
import { type CpuPool, createCpuPool } from "../../pipeline/cpu-pool.ts";
import { chunkCapMetadata, cutSegments, MAX_ATTACHED_MAIL_DEPTH } from "../../pipeline/extract/budget.ts";
import { segmentsToText } from "../../pipeline/extract/types.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import { DOCX_MIME, MiB, mailWith, manyDocxMail, repetitiveDocx } from "../support/hostile-files.ts";
import { sampleRss } from "../support/memory.ts";

const RSS_BUDGET = 256 * MiB;
const fixture = (path: string) => readFileSync(`${FIXTURES_DIR}/${path}`);
const ctx = () => ({ heartbeat() {}, signal: new AbortController().signal });

describe("cutting segments to a budget", () => {
  it("counts what segmentsToText joins (trimmed text, blank segments dropped, two characters between)", () => {
    const segments = [{ text: " abc " }, { text: "   " }, { text: "defgh", page: 2 }, { text: "ij" }];
    const { segments: kept, cut } = cutSegments(segments, 7);
    expect(kept).toEqual([{ text: "abc" }, { text: "de", page: 2 }]);
    expect(segmentsToText(kept)).toHaveLength(7);
    expect(cut).toBe(true);
    expect(cutSegments(segments, 14)).toEqual({
      segments: [{ text: "abc" }, { text: "defgh", page: 2 }, { text: "ij" }],
      cut: false,
    });
    // A surrogate pair is never split: "a😀" cut at 2 units keeps "a".
    expect(cutSegments([{ text: "a😀b" }], 2).segments).toEqual([{ text: "a" }]);
  });

  it("the chunk cap's note names both caps once, however often chunking is retried", () => {
    const first = chunkCapMetadata({ truncated: "MAX_EXTRACTED_CHARS", keptChars: 5, note: "text cut" }, 10);
    expect(first.truncated).toBe("MAX_EXTRACTED_CHARS, MAX_CHUNKS_PER_DOCUMENT");
    expect(first.keptChunks).toBe(10);
    expect(first.note).toMatch(/^text cut; chunks stopped at the cap of 10 per document/);
    expect(chunkCapMetadata(first, 10)).toEqual(first);
  });
});

describe("a document's budget through the CPU pool", () => {
  let pool: CpuPool;
  let run: ExtractionRunner;
  const defaults = loadConfig({});

  beforeAll(async () => {
    pool = createCpuPool(1);
    run = (type, input, c) => pool.extract(type, input, c.signal, c.maxChars);
    // The thread up and the extractors loaded before any memory baseline is taken.
    await pool.extract("docx", { bytes: fixture("docx/simple.docx") });
  });

  afterAll(async () => {
    await pool?.close();
  });

  it("spans the mail, its attachments, attached messages and their attachments, and stops reading where it ends", async () => {
    const simple = fixture("docx/simple.docx");
    const big = repetitiveDocx(simple, 20); // about 138,000 characters
    const innermost = mailWith("Fwd: Fwd: the figures", "Innermost body text.", [
      { filename: "deep.docx", contentType: DOCX_MIME, bytes: simple },
    ]);
    const forwarded = mailWith("Fwd: the figures", "Forwarded body text.", [
      { filename: "inner.docx", contentType: DOCX_MIME, bytes: simple },
      { filename: "fwd-fwd.eml", contentType: "message/rfc822", bytes: innermost },
      { filename: "inner-big.docx", contentType: DOCX_MIME, bytes: big },
      { filename: "inner-after.docx", contentType: DOCX_MIME, bytes: simple },
    ]);
    const mail = mailWith("Outer", "Outer body text.", [
      { filename: "a.docx", contentType: DOCX_MIME, bytes: simple },
      { filename: "fwd.eml", contentType: "message/rfc822", bytes: forwarded },
      { filename: "after.docx", contentType: DOCX_MIME, bytes: simple },
    ]);
    const calls: (number | undefined)[] = [];
    const counted: ExtractionRunner = (type, input, c) => {
      calls.push(c.maxChars);
      return run(type, input, c);
    };
    const maxChars = 50_000;
    const extracted = await extractAll("email", { bytes: mail, filename: "outer.eml" }, counted, ctx(), {
      maxChars,
    });
    expect(extracted.content.length).toBeLessThanOrEqual(maxChars);
    expect(extracted.content.length).toBeGreaterThan(maxChars - 100);
    expect(extracted.content).toContain("Forwarded body text.");
    expect(extracted.content).toContain("Innermost body text.");
    const sources = [...new Set(extracted.segments.map((s) => s.source ?? "body"))];
    expect(sources).toEqual([
      "headers",
      "body",
      "attachment:a.docx",
      "attachment:fwd.eml",
      "attachment:fwd.eml/inner.docx",
      "attachment:fwd.eml/fwd-fwd.eml",
      "attachment:fwd.eml/fwd-fwd.eml/deep.docx",
      "attachment:fwd.eml/inner-big.docx",
    ]);
    expect(extracted.metadata).toMatchObject({
      truncated: "MAX_EXTRACTED_CHARS",
      keptChars: extracted.content.length,
      // inner-after.docx and after.docx: the budget was spent before them.
      unreadAttachments: 2,
    });
    expect(extracted.metadata.note).toMatch(
      /^text cut at the cap of 50,000 characters per document \(MAX_EXTRACTED_CHARS\): the first \d{2},\d{3} are kept and searchable, 2 attachments were not read$/,
    );
    // Each extraction was handed what was left: the mail the whole budget, each attachment less.
    expect(calls[0]).toBe(maxChars);
    expect(calls).toHaveLength(7);
    for (let i = 1; i < calls.length; i++) expect(calls[i]).toBeLessThan(calls[i - 1] as number);
  });

  it(`reads attached messages ${MAX_ATTACHED_MAIL_DEPTH} levels deep, and deeper ones by name only`, async () => {
    let mail = mailWith("level 5", "Body of level 5.", []);
    for (let level = 4; level >= 0; level--) {
      mail = mailWith(`level ${level}`, `Body of level ${level}.`, [
        { filename: `level-${level + 1}.eml`, contentType: "message/rfc822", bytes: mail },
      ]);
    }
    const extracted = await extractAll("email", { bytes: mail }, run, ctx(), { maxChars: 100_000 });
    for (let level = 0; level <= MAX_ATTACHED_MAIL_DEPTH; level++)
      expect(extracted.content).toContain(`Body of level ${level}.`);
    expect(extracted.content).not.toContain(`Body of level ${MAX_ATTACHED_MAIL_DEPTH + 1}.`);
    // Listed by the message it is attached to.
    expect(extracted.content).toContain(`Attachments: level-${MAX_ATTACHED_MAIL_DEPTH + 1}.eml`);
    expect(extracted.metadata.truncated).toBeUndefined();
  });

  it("a document within the budget says nothing about it", async () => {
    const mail = fixture("email/fake-email-attachment.eml");
    const extracted = await extractAll("email", { bytes: mail }, run, ctx(), { maxChars: 1_000_000 });
    expect(extracted.metadata.truncated).toBeUndefined();
    expect(extracted.metadata.note).toBeUndefined();
  });

  it("a PDF stops at its page where the budget ends, and says it was cut", async () => {
    const pdf = fixture("pdf/copy-protected.pdf");
    const whole = await extractAll("pdf", { bytes: pdf }, run, ctx(), { maxChars: 10_000_000 });
    expect(whole.metadata.truncated).toBeUndefined();
    const cut = await extractAll("pdf", { bytes: pdf }, run, ctx(), { maxChars: 100 });
    expect(cut.content).toBe(whole.content.slice(0, cut.content.length));
    expect(cut.content.length).toBeLessThanOrEqual(100);
    expect(cut.metadata).toMatchObject({ truncated: "MAX_EXTRACTED_CHARS", pages: whole.metadata.pages });
    // The pages after the cut were never read: only the first few are in the segments.
    const pages = new Set(cut.segments.map((s) => s.page));
    expect(pages.size).toBeLessThan(Number(whole.metadata.pages));
  });

  it("chunking stops at the chunk cap", async () => {
    const segments = [{ text: "One sentence here. ".repeat(2000) }, { text: "More text. ".repeat(500) }];
    const all = await pool.chunkSegments(segments, { maxChars: 200, overlapSentences: 0 });
    expect(all.truncated).toBe(false);
    const capped = await pool.chunkSegments(segments, { maxChars: 200, overlapSentences: 0, maxChunks: 25 });
    expect(capped.truncated).toBe(true);
    expect(capped.pieces).toEqual(all.pieces.slice(0, 25));
  });

  it(`the hostile mail (hundreds of compressed .docx) keeps ${defaults.MAX_EXTRACTED_CHARS.toLocaleString("en")} characters, reads only what it keeps, within +256 MB of RSS`, async () => {
    const mail = manyDocxMail(fixture("docx/simple.docx"), 300);
    console.log(`hostile mail: ${(mail.length / MiB).toFixed(1)} MiB`);
    const calls: (number | undefined)[] = [];
    const counted: ExtractionRunner = (type, input, c) => {
      calls.push(c.maxChars);
      return run(type, input, c);
    };
    const before = process.memoryUsage.rss();
    const rss = sampleRss();
    const extracted = await extractAll("email", { bytes: mail, filename: "reports.eml" }, counted, ctx(), {
      maxChars: defaults.MAX_EXTRACTED_CHARS,
    });
    const peak = rss.stop();
    const rise = peak - before;
    console.log(
      `RSS ${Math.round(before / MiB)} MiB before, peak ${Math.round(peak / MiB)} MiB (+${Math.round(rise / MiB)} MiB); ${calls.length} extractions; kept ${extracted.content.length} characters`,
    );
    expect(extracted.content.length).toBeLessThanOrEqual(defaults.MAX_EXTRACTED_CHARS);
    expect(extracted.metadata.truncated).toBe("MAX_EXTRACTED_CHARS");
    // The mail and the few attachments the budget covered were read; the other hundreds were not.
    expect(calls.length).toBeLessThan(10);
    expect(Number(extracted.metadata.unreadAttachments)).toBe(300 - (calls.length - 1));
    // Each extraction was handed what was left, less each time.
    expect(calls[0]).toBe(defaults.MAX_EXTRACTED_CHARS);
    for (let i = 1; i < calls.length; i++) expect(calls[i]).toBeLessThan(calls[i - 1] as number);
    expect(rise).toBeLessThan(RSS_BUDGET);
  });
});
