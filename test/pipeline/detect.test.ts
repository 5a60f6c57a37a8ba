import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { detectContentType } from "../../pipeline/extract/detect.ts";

const fixtures = fileURLToPath(new URL("../fixtures/", import.meta.url));
const folderType: Record<string, string> = {
  audio: "audio",
  docx: "docx",
  email: "email",
  html: "webpage",
  image: "image",
  pdf: "pdf",
  pptx: "pptx",
  text: "text",
};

describe("content type detection from bytes", () => {
  for (const folder of Object.keys(folderType)) {
    for (const file of readdirSync(path.join(fixtures, folder))) {
      // An empty file has no bytes to go by; its name is all there is.
      const hints = file === "empty.eml" ? { filename: file } : {};
      it(`${folder}/${file}`, async () => {
        const bytes = readFileSync(path.join(fixtures, folder, file));
        expect((await detectContentType(bytes, hints)).type).toBe(folderType[folder]);
      });
    }
  }

  it("trusts bytes over a misleading name or declared type", async () => {
    const pdf = readFileSync(path.join(fixtures, "pdf/embedded-link.pdf"));
    expect(await detectContentType(pdf, { filename: "notes.txt", mimeType: "text/plain" })).toMatchObject({
      type: "pdf",
    });
    const text = Buffer.from("Just words, nothing more.");
    expect((await detectContentType(text, { filename: "photo.png", mimeType: "image/png" })).type).toBe(
      "text",
    );
  });

  it("reads prose whose first bytes match a short file signature as text", async () => {
    // Real SciFact titles: "BM" is a bitmap's signature, "wide" at offset 4 a QuickTime atom.
    const bmp = "BMP-2 signalling in the adult hippocampus regulates neurogenesis.";
    const mov = "The widespread use of antibiotics selects for resistant bacteria.";
    for (const text of [bmp, mov]) {
      expect((await detectContentType(Buffer.from(text), { inlineText: true })).type).toBe("text");
      expect((await detectContentType(Buffer.from(text))).type).toBe("text");
    }
    // A real bitmap (binary after its signature) is still an image.
    const header = Buffer.alloc(62);
    header.write("BM", 0, "latin1");
    header.writeUInt32LE(62 + 4, 2);
    header.writeUInt32LE(62, 10);
    header.writeUInt32LE(40, 14);
    header.writeInt32LE(1, 18);
    header.writeInt32LE(1, 22);
    header.writeUInt16LE(1, 26);
    header.writeUInt16LE(1, 28);
    const bitmap = Buffer.concat([header, Buffer.from([0x80, 0, 0, 0])]);
    expect((await detectContentType(bitmap)).type).toBe("image");
  });

  it("refuses binary it cannot read", async () => {
    const zip = Buffer.from([
      0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ]);
    expect((await detectContentType(Buffer.concat([zip, Buffer.alloc(100)]))).type).toBeNull();
    expect((await detectContentType(Buffer.from([0, 1, 2, 3, 0, 255, 254, 0]))).type).toBeNull();
  });

  it("tells inline HTML and mail from markdown that mentions them", async () => {
    expect((await detectContentType(Buffer.from("<html><body><p>Hi</p></body></html>"))).type).toBe(
      "webpage",
    );
    expect((await detectContentType(Buffer.from("From: a@b.c\nTo: d@e.f\nSubject: Hi\n\nBody"))).type).toBe(
      "email",
    );
    expect((await detectContentType(Buffer.from("# Notes\n\nUse `<body>` in HTML."))).type).toBe("text");
  });
});
