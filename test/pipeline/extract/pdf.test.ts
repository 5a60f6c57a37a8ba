import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { closeSharedOcr } from "../../../pipeline/extract/ocr.ts";
import { createPdfExtractor, extractPdf } from "../../../pipeline/extract/pdf.ts";
import {
  type ExtractContext,
  segmentsToText,
  UnprocessableContentError,
} from "../../../pipeline/extract/types.ts";
import { FIXTURES_DIR } from "../../support/fixtures.ts";

const FIXTURES = FIXTURES_DIR;
const fixture = (name: string) => readFileSync(`${FIXTURES}/pdf/${name}`);

function context(signal = new AbortController().signal) {
  const beats: unknown[] = [];
  const ctx: ExtractContext = { heartbeat: (details) => beats.push(details), signal };
  return { ctx, beats };
}

/** Whitespace-insensitive: PDF line breaks fall anywhere. */
const flat = (text: string) => text.replace(/\s+/g, " ");

/** A one-page PDF whose only content is a JPEG drawn over the whole page: a scan, no text layer. */
function scannedPdf(jpeg: Buffer, width: number, height: number): Buffer {
  const content = Buffer.from(`q ${width} 0 0 ${height} 0 0 cm /Im0 Do Q`);
  const objects = [
    Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
    Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
    Buffer.from(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${width} ${height}] /Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>`,
    ),
    Buffer.concat([
      Buffer.from(
        `<< /Type /XObject /Subtype /Image /Width ${width} /Height ${height} /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode /Length ${jpeg.length} >>\nstream\n`,
      ),
      jpeg,
      Buffer.from("\nendstream"),
    ]),
    Buffer.concat([
      Buffer.from(`<< /Length ${content.length} >>\nstream\n`),
      content,
      Buffer.from("\nendstream"),
    ]),
  ];
  const parts: Buffer[] = [Buffer.from("%PDF-1.4\n")];
  let size = parts[0]?.length ?? 0;
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(size);
    const obj = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), body, Buffer.from("\nendobj\n")]);
    parts.push(obj);
    size += obj.length;
  });
  const xref = [
    "xref",
    `0 ${objects.length + 1}`,
    "0000000000 65535 f ",
    ...offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n `),
    "trailer",
    `<< /Size ${objects.length + 1} /Root 1 0 R >>`,
    "startxref",
    String(size),
    "%%EOF",
    "",
  ].join("\n");
  parts.push(Buffer.from(xref));
  return Buffer.concat(parts);
}

/**
 * A one-page PDF saying "Confidential salary review", encrypted with a user password (AES-256), made
 * with `qpdf --encrypt secret owner 256 -- plain.pdf enc.pdf`.
 */
const PASSWORD_PROTECTED_PDF = Buffer.from(
  [
    "JVBERi0xLjcKJb/3ov4KMSAwIG9iago8PCAvRXh0ZW5zaW9ucyA8PCAvQURCRSA8PCAvQmFzZVZlcnNpb24gLzEuNyAvRXh0",
    "ZW5zaW9uTGV2ZWwgOCA+PiA+PiAvUGFnZXMgMiAwIFIgL1R5cGUgL0NhdGFsb2cgPj4KZW5kb2JqCjIgMCBvYmoKPDwgL0Nv",
    "dW50IDEgL0tpZHMgWyAzIDAgUiBdIC9UeXBlIC9QYWdlcyA+PgplbmRvYmoKMyAwIG9iago8PCAvQ29udGVudHMgNCAwIFIg",
    "L01lZGlhQm94IFsgMCAwIDMwMCAxMDAgXSAvUGFyZW50IDIgMCBSIC9SZXNvdXJjZXMgPDwgL0ZvbnQgPDwgL0YxIDUgMCBS",
    "ID4+ID4+IC9UeXBlIC9QYWdlID4+CmVuZG9iago0IDAgb2JqCjw8IC9MZW5ndGggOTYgL0ZpbHRlciAvRmxhdGVEZWNvZGUg",
    "Pj4Kc3RyZWFtCm0ai7/zuZju8O/Kq7l9x9M8l4jtdlxcz6tiSPDT9ag9nq7F5NraoF0ONbxn/YEFBQUaBQsjOFPY+34Wu+MN",
    "XgUOFxwPg4p0uebRl1zB9dfflbENkSfZezYSknNtITDxG2VuZHN0cmVhbQplbmRvYmoKNSAwIG9iago8PCAvQmFzZUZvbnQg",
    "L0hlbHZldGljYSAvU3VidHlwZSAvVHlwZTEgL1R5cGUgL0ZvbnQgPj4KZW5kb2JqCjYgMCBvYmoKPDwgL0NGIDw8IC9TdGRD",
    "RiA8PCAvQXV0aEV2ZW50IC9Eb2NPcGVuIC9DRk0gL0FFU1YzIC9MZW5ndGggMzIgPj4gPj4gL0ZpbHRlciAvU3RhbmRhcmQg",
    "L0xlbmd0aCAyNTYgL08gPDEyNjY4NTU5ZThhZGY2ZjkwMTllZjZkZDlkNTVjYmRlMzQ3NWUyMTc0M2M4YjlhYjI2OWQxYWNh",
    "YmU5YWM1ZWYwZjFlMWViYTllNTc3ZjVlOGMxNzA2ZDQ0YjY5MWJkNj4gL09FIDw3ZmQzOWFiNTE1NmJlMjQxMWQ2ZWVkNDgx",
    "YWMyYTQ0ZjBhYjExZGM5MDExYjQ5NGNhMDMwNWMwMDcyOTZhOWI2PiAvUCAtNCAvUGVybXMgPDVlZTJlMmU4OGVlNzNiYjgz",
    "OTRiNDkxM2U3ZGQ2MzE3PiAvUiA2IC9TdG1GIC9TdGRDRiAvU3RyRiAvU3RkQ0YgL1UgPGZkYjhhZjY0MDY2YTU3NjI2OTAy",
    "MWNmNTc5MjY1Mzk3YWMzZDJmNDNiMGMzZWUyNDk3ZDQyNTJjYjUzZTNkYWM0MmMyMWJkYjRhMGJmNDhhYWYzMTc3OTlhZDEz",
    "ODhhZj4gL1VFIDw4NDgyMmVlYjY5MGZjZWE0N2RkYWU4NGMyMTAwMjAzMmNkNTUzYjc3OTAwZWVhMjE4NGYyN2FmZmEyMjFk",
    "MWZkPiAvViA1ID4+CmVuZG9iagp4cmVmCjAgNwowMDAwMDAwMDAwIDY1NTM1IGYgCjAwMDAwMDAwMTUgMDAwMDAgbiAKMDAw",
    "MDAwMDEzMCAwMDAwMCBuIAowMDAwMDAwMTg5IDAwMDAwIG4gCjAwMDAwMDAzMTcgMDAwMDAgbiAKMDAwMDAwMDQ4MyAwMDAw",
    "MCBuIAowMDAwMDAwNTUzIDAwMDAwIG4gCnRyYWlsZXIgPDwgL1Jvb3QgMSAwIFIgL1NpemUgNyAvSUQgWzw1NDBmMmQzZGQ3",
    "ZWMxOWQ5ODZkZjhkNmEwZWZhYWVhOT48NTQwZjJkM2RkN2VjMTlkOTg2ZGY4ZDZhMGVmYWFlYTk+XSAvRW5jcnlwdCA2IDAg",
    "UiA+PgpzdGFydHhyZWYKMTEwMAolJUVPRgo=",
  ].join(""),
  "base64",
);

afterAll(async () => {
  await closeSharedOcr();
});

describe("extractPdf on real PDFs (text layer)", () => {
  it("reads a one-page text PDF into one page segment", async () => {
    const { ctx, beats } = context();
    const result = await extractPdf({ bytes: fixture("DA-1p.pdf") }, ctx);
    expect(result.type).toBe("pdf");
    expect(result.title).toBeNull(); // the info dictionary has no Title
    expect(result.metadata).toEqual({ pages: 1 });
    expect(result.segments).toHaveLength(1);
    const [page] = result.segments;
    expect(page?.page).toBe(1);
    expect(page?.source).toBeUndefined();
    expect(page?.text).toContain(
      "We arrived in the dead of night. We had been tracking the maleficar for days, and",
    );
    expect(flat(page?.text ?? "")).toContain(
      "Thankfully, abominations are rare. The Circle has methods for weeding out those who are too at risk",
    );
    expect(beats).toEqual([{ page: 1, pages: 1 }]);
  });

  it("keeps pages apart, reads an owner-password (copy-protected) PDF, and beats once per page", async () => {
    const { ctx, beats } = context();
    const result = await extractPdf({ bytes: fixture("copy-protected.pdf") }, ctx);
    expect(result.metadata.pages).toBe(2);
    expect(result.segments.map((s) => s.page)).toEqual([1, 2]);
    expect(result.segments[0]?.text).toContain("LayoutParser: A Unified Toolkit for Deep");
    expect(result.segments[0]?.text).not.toContain("A generalized learning-based framework");
    expect(result.segments[1]?.text).toContain(
      "A generalized learning-based framework dramatically reduces the need for the",
    );
    expect(beats).toEqual([
      { page: 1, pages: 2 },
      { page: 2, pages: 2 },
    ]);
  });

  it("takes title and author from the info dictionary", async () => {
    const { ctx } = context();
    const result = await extractPdf({ bytes: fixture("embedded-images-tables.pdf") }, ctx);
    expect(result.title).toBe(
      "Data on environmental sustainable corrosion inhibitor for stainless steel in aggressive environment",
    );
    expect(result.metadata).toEqual({ pages: 1, author: "Omotayo Sanni" });
    expect(flat(segmentsToText(result.segments))).toContain(
      "Potentiodynamic polarization data for stainless steel in the absence and presence of ES",
    );

    const table = await extractPdf({ bytes: fixture("all-number-table.pdf") }, ctx);
    expect(table.title).toBe("Untitled spreadsheet");
    expect(table.segments[0]?.text.split("\n")).toEqual([
      "200.01 1",
      "400.01 3",
      "600.01 5",
      "800.01 7",
      "1000.01 9",
      "1200.01 11",
      "1400.01 13",
      "1600.01 15",
    ]);

    const links = await extractPdf({ bytes: fixture("embedded-link.pdf") }, ctx);
    expect(links.title).toBe("embedded-link");
    expect(links.segments[0]?.text).toContain(
      "This is the link.\nThis is the email.\nThis is the phone number.",
    );
  });

  it("uses the text layer of a scanned page that has one (a1977-backus-p21.pdf)", async () => {
    const { ctx } = context();
    const result = await extractPdf({ bytes: fixture("a1977-backus-p21.pdf") }, ctx);
    expect(result.metadata).toEqual({ pages: 1 });
    expect(result.segments[0]?.source).toBeUndefined();
    expect(result.segments[0]?.text).toContain(
      "position is that it permits the definition of new functional",
    );
  });
});

describe("extractPdf OCR of scanned pages", () => {
  it("OCRs a page that is only an image", async () => {
    // The layout-parser page image, as a scanner would wrap it: one JPEG per page, no text.
    const jpeg = readFileSync(`${FIXTURES}/image/layout-parser-paper-fast.jpg`);
    const { ctx } = context();
    const result = await extractPdf({ bytes: scannedPdf(jpeg, 612, 792) }, ctx);
    expect(result.metadata).toEqual({ pages: 1, ocrPages: 1 });
    expect(result.segments).toHaveLength(1);
    const [page] = result.segments;
    expect(page?.source).toBe("ocr");
    expect(page?.page).toBe(1);
    const text = flat(page?.text ?? "");
    expect(text).toContain("A Unified Toolkit for Deep Learning Based Document Image Analysis");
    expect(text).toContain("Recent advances in document image analysis");
    expect(text).toContain("Introduction");
  });

  it("reads the scan itself when told to ignore the text layer (forceOcr)", async () => {
    const { ctx } = context();
    // 200 dpi rather than the default 300 keeps the test quick; the test above runs the default.
    const extract = createPdfExtractor({ forceOcr: true, ocrDpi: 200 });
    const result = await extract({ bytes: fixture("a1977-backus-p21.pdf") }, ctx);
    expect(result.metadata).toEqual({ pages: 1, ocrPages: 1 });
    const [page] = result.segments;
    expect(page?.source).toBe("ocr");
    // Two columns: the left one must come out in order, not interleaved with the right one.
    expect(page?.text).toContain(
      "position is that it permits the definition of new functional\nforms, in effect, merely by defining new functions. It also",
    );
    expect(page?.text).toContain("I am indebted to Paul McJones for his observation");
    expect(page?.text).toContain("Summary of the properties");
  });
});

describe("extractPdf on bad input", () => {
  it("refuses the damaged invalid.pdf with a readable reason", async () => {
    const { ctx } = context();
    const run = extractPdf({ bytes: fixture("invalid.pdf") }, ctx);
    await expect(run).rejects.toBeInstanceOf(UnprocessableContentError);
    await expect(run).rejects.toThrow("the PDF is damaged or not a valid PDF (Invalid PDF structure)");
  });

  it("refuses a PDF that needs a password", async () => {
    const { ctx } = context();
    const run = extractPdf({ bytes: PASSWORD_PROTECTED_PDF }, ctx);
    await expect(run).rejects.toBeInstanceOf(UnprocessableContentError);
    await expect(run).rejects.toThrow(/password-protected/);
  });

  it("refuses bytes that are not a PDF, and empty files", async () => {
    const { ctx } = context();
    const png = readFileSync(`${FIXTURES}/image/table-multi-row-column-cells.png`);
    await expect(extractPdf({ bytes: png }, ctx)).rejects.toBeInstanceOf(UnprocessableContentError);
    await expect(extractPdf({ bytes: Buffer.alloc(0) }, ctx)).rejects.toThrow("the PDF file is empty");
  });

  it("stops when the activity is cancelled", async () => {
    const controller = new AbortController();
    controller.abort(new Error("cancelled by test"));
    const { ctx, beats } = context(controller.signal);
    await expect(extractPdf({ bytes: fixture("copy-protected.pdf") }, ctx)).rejects.toThrow(
      "cancelled by test",
    );
    expect(beats).toEqual([]);
  });
});
