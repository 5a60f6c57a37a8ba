import { readdirSync, readFileSync } from "node:fs";
import sharp from "sharp";
import { afterAll, describe, expect, it, vi } from "vitest";
import { extractImage } from "../../../pipeline/extract/image.ts";
import { closeSharedOcr, createOcr, sniffImageFormat } from "../../../pipeline/extract/ocr.ts";
import { type ExtractContext, UnprocessableContentError } from "../../../pipeline/extract/types.ts";
import { FIXTURES_DIR } from "../../support/fixtures.ts";

/** OS threads of this process (Linux): a worker thread that ends leaves the list. */
const threadCount = () => readdirSync("/proc/self/task").length;

const FIXTURES = `${FIXTURES_DIR}/image`;
const fixture = (name: string) => readFileSync(`${FIXTURES}/${name}`);
/** The table fixture: small and quick to OCR, so it is the one converted to other formats. */
const TABLE = fixture("table-multi-row-column-cells.png");

function context(signal = new AbortController().signal) {
  const beats: unknown[] = [];
  const ctx: ExtractContext = { heartbeat: (details) => beats.push(details), signal };
  return { ctx, beats };
}

const flat = (text: string) => text.replace(/\s+/g, " ");

function bmpHeader(width: number, height: number, bpp: number, paletteColors: number, pixelBytes: number) {
  const header = Buffer.alloc(54);
  header.write("BM", 0, "latin1");
  header.writeUInt32LE(54 + paletteColors * 4 + pixelBytes, 2);
  header.writeUInt32LE(54 + paletteColors * 4, 10);
  header.writeUInt32LE(40, 14);
  header.writeInt32LE(width, 18);
  header.writeInt32LE(height, 22); // positive: rows stored bottom-up
  header.writeUInt16LE(1, 26);
  header.writeUInt16LE(bpp, 28);
  header.writeUInt32LE(pixelBytes, 34);
  header.writeUInt32LE(paletteColors, 46);
  return header;
}

/**
 * The image as an uncompressed BMP, written by hand (sharp cannot write BMP): 24-bit colour, or
 * 8-bit with a grey palette (bmp-ts decodes the two with different code).
 */
async function toBmp(image: Buffer, bpp: 24 | 8): Promise<Buffer> {
  const channels = bpp / 8;
  const pipeline = bpp === 8 ? sharp(image).grayscale() : sharp(image).removeAlpha();
  const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
  const rowBytes = Math.ceil((info.width * channels) / 4) * 4;
  const pixels = Buffer.alloc(rowBytes * info.height);
  for (let y = 0; y < info.height; y++) {
    const row = (info.height - 1 - y) * rowBytes;
    for (let x = 0; x < info.width; x++) {
      const src = (y * info.width + x) * info.channels;
      if (bpp === 8) pixels[row + x] = data[src] ?? 0;
      else {
        pixels[row + x * 3] = data[src + 2] ?? 0; // BMP stores BGR
        pixels[row + x * 3 + 1] = data[src + 1] ?? 0;
        pixels[row + x * 3 + 2] = data[src] ?? 0;
      }
    }
  }
  const palette = Buffer.alloc(bpp === 8 ? 256 * 4 : 0);
  for (let i = 0; i < palette.length / 4; i++) palette.fill(i, i * 4, i * 4 + 3);
  return Buffer.concat([
    bmpHeader(info.width, info.height, bpp, palette.length / 4, pixels.length),
    palette,
    pixels,
  ]);
}

afterAll(async () => {
  await closeSharedOcr();
});

describe("extractImage on the real image fixtures", () => {
  it("reads a scanned book page (PNG)", async () => {
    const { ctx, beats } = context();
    const result = await extractImage({ bytes: fixture("DA-1p.png") }, ctx);
    expect(result.type).toBe("image");
    expect(result.title).toBeNull();
    expect(result.segments).toHaveLength(1);
    const [segment] = result.segments;
    expect(segment?.source).toBe("ocr");
    expect(segment?.page).toBeUndefined();
    const text = flat(segment?.text ?? "");
    expect(text).toContain("We arrived in the dead of night. We had been tracking the maleficar for days");
    expect(text).toContain("Arcane Horror");
    expect(text).toContain("the business of the Circle of Magi very seriously indeed");
    expect(result.metadata).toMatchObject({ width: 595, height: 842, format: "png" });
    expect(result.metadata.ocrConfidence).toBeGreaterThan(80);
    expect(beats).toEqual([{ page: 1, pages: 1 }]);
  });

  it("reads a low-resolution paper page (JPEG)", async () => {
    const { ctx } = context();
    const result = await extractImage({ bytes: fixture("layout-parser-paper-fast.jpg") }, ctx);
    const text = flat(result.segments[0]?.text ?? "");
    expect(text).toContain("A Unified Toolkit for Deep Learning Based Document Image Analysis");
    expect(text).toContain("Recent advances in document image analysis (DIA) have been primarily driven");
    expect(text).toContain("Deep Learning(DL)-based approaches are the state-of-the-art");
    expect(result.metadata).toMatchObject({ width: 612, height: 792, format: "jpeg" });
  });

  it("reads the cells of a table with coloured header cells", async () => {
    const { ctx } = context();
    const result = await extractImage({ bytes: TABLE }, ctx);
    const text = flat(result.segments[0]?.text ?? "");
    for (const cell of [
      "Participants",
      "Accuracy",
      "Low Vision",
      "Dexterity",
      "Mobility",
      "1672.1 sec, n=4",
    ]) {
      expect(text).toContain(cell);
    }
  });

  it("reads the English of a screenshot in English and Korean (RGBA PNG)", async () => {
    const { ctx } = context();
    const result = await extractImage({ bytes: fixture("english-and-korean.png") }, ctx);
    const text = flat(result.segments[0]?.text ?? "");
    expect(text).toContain("RULES AND INSTRUCTIONS");
    expect(text).toContain("Harutonations@gmail.com");
    expect(text).toContain("Use the hashtag of Haruto on your tweet");
  });

  it("returns an empty segment for a photo without text, with what its EXIF says", async () => {
    const { ctx } = context();
    const result = await extractImage({ bytes: fixture("example.jpg") }, ctx);
    expect(result.segments).toEqual([{ text: "", source: "ocr" }]);
    expect(result.metadata).toEqual({
      width: 480,
      height: 360,
      format: "jpeg",
      ocrConfidence: 0,
      camera: "Canon PowerShot S40",
      takenAt: "2003-12-14 12:01:44",
    });
  });
});

describe("extractImage formats", () => {
  it("reads TIFF (which tesseract.js cannot), WebP, GIF and BMP, detected from the bytes", async () => {
    const variants = {
      tiff: await sharp(TABLE).tiff({ compression: "lzw" }).toBuffer(),
      webp: await sharp(TABLE).webp({ lossless: true }).toBuffer(),
      gif: await sharp(TABLE).gif().toBuffer(),
      bmp: await toBmp(TABLE, 24),
      "bmp (8-bit palette)": await toBmp(TABLE, 8),
    };
    for (const [variant, bytes] of Object.entries(variants)) {
      const format = variant.split(" ")[0];
      expect(sniffImageFormat(bytes)).toBe(format);
      const { ctx } = context();
      // A wrong declared type must not matter.
      const result = await extractImage({ bytes, mimeType: "image/png", filename: "table.png" }, ctx);
      expect(result.metadata).toMatchObject({ format, width: 1377, height: 648 });
      const text = flat(result.segments[0]?.text ?? "");
      expect(text, variant).toContain("Dexterity");
      expect(text, variant).toContain("Mobility");
    }
  });

  it("reads every page of a multi-page TIFF", async () => {
    // Page 1: the header and the "Blind" row; page 2: the rows from "Low Vision"'s second line down.
    const top = await sharp(TABLE).extract({ left: 0, top: 0, width: 1377, height: 300 }).png().toBuffer();
    const bottom = await sharp(TABLE)
      .extract({ left: 0, top: 348, width: 1377, height: 300 })
      .png()
      .toBuffer();
    const tiff = await sharp([top, bottom], { join: { animated: true } })
      .tiff()
      .toBuffer();
    const { ctx, beats } = context();
    const result = await extractImage({ bytes: tiff }, ctx);
    expect(result.metadata).toMatchObject({ format: "tiff", pages: 2, width: 1377, height: 300 });
    expect(result.segments.map((s) => s.page)).toEqual([1, 2]);
    const [first, second] = result.segments.map((s) => flat(s.text));
    expect(first).toContain("Participants");
    expect(first).toContain("1199 sec, n=1");
    expect(first).not.toContain("Dexterity");
    expect(second).toContain("Dexterity");
    expect(second).toContain("Mobility");
    expect(second).not.toContain("Participants");
    expect(beats).toEqual([
      { page: 1, pages: 2 },
      { page: 2, pages: 2 },
    ]);
  });
});

describe("extractImage on bad input", () => {
  it("refuses corrupt and truncated images with a readable reason, and keeps working", async () => {
    const { ctx } = context();
    const png = fixture("DA-1p.png");
    const jpeg = fixture("example.jpg");
    const garbledPng = Buffer.from(png);
    garbledPng.fill(0x5a, 200, 4000); // header intact, compressed pixel data destroyed
    const badBmp = await toBmp(TABLE, 24);
    badBmp.writeInt32LE(2000, 18); // a header promising more pixels than the file holds
    const cases: [Buffer, RegExp][] = [
      [Buffer.from("%PDF-1.4 definitely not an image"), /not an image in a supported format/],
      [png.subarray(0, 3000), /the PNG image is corrupt or truncated/],
      [garbledPng, /the PNG image is corrupt or truncated/],
      [jpeg.subarray(0, 2000), /the JPEG image is corrupt or truncated/],
      [badBmp, /the BMP image is corrupt/],
    ];
    for (const [bytes, message] of cases) {
      const run = extractImage({ bytes, mimeType: "image/png" }, ctx);
      await expect(run).rejects.toBeInstanceOf(UnprocessableContentError);
      await expect(run).rejects.toThrow(message);
    }
    // The engine survived all of that.
    const after = await extractImage({ bytes: TABLE }, ctx);
    expect(after.segments[0]?.text).toContain("Dexterity");
  });

  it("stops a recognition in progress when cancelled, then recognises again with a fresh worker", async () => {
    const ocr = createOcr();
    try {
      expect((await ocr.recognize(TABLE)).text).toContain("Dexterity"); // the worker is up
      const controller = new AbortController();
      const running = ocr.recognize(fixture("DA-1p.png"), { signal: controller.signal }); // ~2 s of OCR
      await new Promise((resolve) => setTimeout(resolve, 500));
      // The recognition runs in the engine's worker thread: aborting must end that thread, not leave it to
      // finish the seconds of OCR in the background.
      const threadsWhileRecognising = threadCount();
      controller.abort(new Error("cancelled by test"));
      await expect(running).rejects.toThrow("cancelled by test");
      await vi.waitFor(() => expect(threadCount()).toBeLessThan(threadsWhileRecognising), {
        timeout: 30_000,
        interval: 20,
      });
      const again = await ocr.recognize(TABLE);
      expect(again.text).toContain("Mobility");
    } finally {
      await ocr.close();
    }
    await expect(ocr.recognize(TABLE)).rejects.toThrow("the OCR engine is closed");
  });
});
