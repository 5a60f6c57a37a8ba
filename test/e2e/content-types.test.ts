import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Supermemory, { toFile } from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

const fixtures = fileURLToPath(new URL("../fixtures/", import.meta.url));

/** Words really in each fixture (read with pdftotext, unzip, cat, or by looking at the picture). */
const expected: Record<string, { type: string; phrase: RegExp } | { failed: RegExp }> = {
  // Music without words: the transcript is empty; kept by what is known about the file.
  "audio/CantinaBand3.wav": {
    type: "audio",
    phrase: /^Audio "upload\.bin" \(WAV, 3(\.\d)? s\): no speech could be heard in it\.$/,
  },
  "audio/jfk.wav": { type: "audio", phrase: /country/i },
  "audio/jfk.mp3": { type: "audio", phrase: /country/i },
  "docx/docx-tables.docx": { type: "docx", phrase: /Header Col 1/ },
  "docx/empty.docx": { failed: /no text/i },
  "docx/fake.docx": { type: "docx", phrase: /Lorem ipsum dolor sit amet/ },
  "docx/footnotes.docx": { type: "docx", phrase: /Ouch/ },
  "docx/handbook-1p.docx": { type: "docx", phrase: /United States Trustee appoints/ },
  "docx/page-breaks.docx": { type: "docx", phrase: /First page/ },
  "docx/simple.docx": { type: "docx", phrase: /Parrots/ },
  "docx/tables.docx": { type: "docx", phrase: /Top left/ },
  "docx/utf8-bom.docx": { type: "docx", phrase: /byte order mark/ },
  "email/email-no-html-content-1.eml": { type: "email", phrase: /nf-core/ },
  "email/empty.eml": { failed: /empty|no text/i },
  "email/fake-email-attachment.eml": { type: "email", phrase: /Fake email with attachment/ },
  // Listed as bad input, but only its Content-Type line is run together with the next header: the text is intact.
  "email/fake-email-malformed-encoding.eml": { type: "email", phrase: /Roses are red/ },
  "email/fake-email.eml": { type: "email", phrase: /Test Email/ },
  "email/family-day.eml": { type: "email", phrase: /Family Day/ },
  "email/mime-different-plain-html.eml": { type: "email", phrase: /Example MIME Email/ },
  "email/mime-html-only.eml": { type: "email", phrase: /Example HTML Only MIME Email/ },
  "email/mime-word-encoded-subject.eml": { type: "email", phrase: /Unicode subject/ },
  "html/example-10k-1p.html": { type: "webpage", phrase: /TRANSITION REPORT/i },
  "html/example-with-scripts.html": { type: "webpage", phrase: /Russian/ },
  "html/fake-html-cp1252.html": { type: "webpage", phrase: /Die schöne Frau/ },
  "html/fake-html-with-footer-and-header.html": { type: "webpage", phrase: /My first paragraph/ },
  "html/fake-html.html": { type: "webpage", phrase: /worn hooves/ },
  "html/ideas-page.html": { type: "webpage", phrase: /notice anomalies/ },
  "image/DA-1p.png": { type: "image", phrase: /tracking the maleficar/ },
  "image/english-and-korean.png": { type: "image", phrase: /RULES AND INSTRUCTIONS/ },
  // A photograph of a flower: there is no text to read; kept by its size and EXIF facts.
  "image/example.jpg": {
    type: "image",
    phrase:
      /^Image "upload\.bin" \(JPEG, 480 × 360 pixels\): no text could be read in it\. Taken on 2003-12-14 12:01:44\. Camera: Canon PowerShot S40\.$/,
  },
  "image/layout-parser-paper-fast.jpg": { type: "image", phrase: /A Unified Toolkit for Deep\s+Learning/ },
  "image/table-multi-row-column-cells.png": { type: "image", phrase: /Dexterity/ },
  "pdf/DA-1p.pdf": { type: "pdf", phrase: /tracking the maleficar/ },
  "pdf/a1977-backus-p21.pdf": { type: "pdf", phrase: /functional forms/ },
  "pdf/all-number-table.pdf": { type: "pdf", phrase: /1600\.01/ },
  "pdf/copy-protected.pdf": { type: "pdf", phrase: /A Unified Toolkit for Deep\s+Learning/ },
  "pdf/embedded-images-tables.pdf": { type: "pdf", phrase: /polarization curve/ },
  "pdf/embedded-link.pdf": { type: "pdf", phrase: /This is the link/ },
  "pdf/invalid.pdf": { failed: /pdf/i },
  // Listed as bad input, but every part is well-formed XML; only a layout placeholder is missing from the master.
  "pptx/fake-power-point-malformed.pptx": { type: "pptx", phrase: /Test Slide/ },
  "pptx/fake-power-point-many-pages.pptx": { type: "pptx", phrase: /Page 1/ },
  "pptx/fake-power-point-table.pptx": { type: "pptx", phrase: /Tangerine/ },
  "pptx/fake-power-point.pptx": { type: "pptx", phrase: /Adding a Bullet Slide/ },
  "pptx/sample-presentation.pptx": { type: "pptx", phrase: /Title Slide/ },
  "text/codeblock.md": { type: "text", phrase: /HTML Example/ },
  "text/empty.txt": { failed: /empty|no text/i },
  "text/fake-text-all-whitespace.txt": { failed: /no text/i },
  "text/fake-text-utf-16.txt": { type: "text", phrase: /Hamburgers are delicious/ },
  "text/fake-text.txt": { type: "text", phrase: /Dogs are the best/ },
  "text/norwich-city.txt": { type: "text", phrase: /Iwan Roberts/ },
  "text/umlauts-utf8.md": { type: "text", phrase: /äöüß/ },
};

/** Not content to ingest: Supermemory's OpenAPI document, the contract the conformance suite checks against. */
const NOT_CONTENT = new Set(["supermemory-openapi"]);
const folders = readdirSync(fixtures, { withFileTypes: true }).filter(
  (d) => d.isDirectory() && !NOT_CONTENT.has(d.name),
);
const files = folders.flatMap((d) => readdirSync(path.join(fixtures, d.name)).map((f) => `${d.name}/${f}`));

// Every fixture, uploaded through the official SDK and processed by the real pipeline.
describe("every content type, from real files", () => {
  let service: TestService;
  let client: Supermemory;
  beforeAll(async () => {
    service = await startTestService();
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("knows what to expect of every fixture file", () => {
    expect(files.filter((f) => !(f in expected))).toEqual([]);
  });

  const finished = (id: string) => untilProcessed((i) => client.documents.get(i), id, 300_000);

  it("transcribes and reads a video built from the fixture speech and a page image", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "memory-video-"));
    try {
      const video = path.join(dir, "talk.mp4");
      execFileSync("ffmpeg", [
        ...["-nostdin", "-v", "error", "-y", "-loop", "1", "-i", path.join(fixtures, "image/DA-1p.png")],
        ...["-i", path.join(fixtures, "audio/jfk.wav"), "-vf", "scale=trunc(iw/2)*2:trunc(ih/2)*2"],
        ...[
          "-c:v",
          "libx264",
          "-tune",
          "stillimage",
          "-pix_fmt",
          "yuv420p",
          "-c:a",
          "aac",
          "-shortest",
          video,
        ],
      ]);
      const { id } = await client.documents.uploadFile({
        file: await toFile(readFileSync(video), "talk.mp4"),
      });
      const doc = await finished(id);
      expect(doc.status, (doc as { errorReason?: string }).errorReason ?? "").toBe("done");
      expect(doc.type).toBe("video");
      expect(doc.content).toMatch(/country/i);
      expect(doc.content).toMatch(/maleficar/);
      const facts = (doc as unknown as { fileMetadata: Record<string, unknown> }).fileMetadata;
      expect(Number(facts.durationSeconds)).toBeGreaterThan(10);
      expect(facts.videoCodec).toBe("h264");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("fetches a PDF given as a URL", async () => {
    const pdf = readFileSync(path.join(fixtures, "pdf/embedded-link.pdf"));
    const server = createServer((_req, res) =>
      res.writeHead(200, { "content-type": "application/pdf" }).end(pdf),
    );
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const { port } = server.address() as AddressInfo;
      const { id } = await client.documents.add({ content: `http://127.0.0.1:${port}/files/report.pdf` });
      const doc = await finished(id);
      expect(doc.status).toBe("done");
      expect(doc.type).toBe("pdf");
      expect(doc.content).toContain("This is the link");
      expect((doc as { fileName?: string }).fileName).toBe("report.pdf");
    } finally {
      server.close();
    }
  });

  it("keeps pages and slides on the chunks", async () => {
    const { id } = await client.documents.uploadFile({
      file: await toFile(readFileSync(path.join(fixtures, "pptx/fake-power-point-table.pptx")), "deck.pptx"),
      containerTag: "structure",
    });
    expect((await finished(id)).status).toBe("done");
    const found = await client.search.documents({
      q: "Tangerine",
      containerTags: ["structure"],
      onlyMatchingChunks: true,
    });
    expect(found.results[0]?.documentId).toBe(id);
    const hit = found.results[0]?.chunks[0] as { metadata?: { slide?: number } } | undefined;
    expect(hit?.metadata?.slide).toBe(1);
  });

  it("keeps a photo without text, findable by what is known about it", async () => {
    const { id } = await client.documents.uploadFile({
      file: await toFile(readFileSync(path.join(fixtures, "image/example.jpg")), "garden-flower.jpg"),
      containerTag: "photos",
    });
    const doc = await finished(id);
    expect(doc.status, (doc as { errorReason?: string }).errorReason ?? "").toBe("done");
    expect(doc.type).toBe("image");
    expect(doc.title).toBe("garden-flower.jpg");
    expect((doc as unknown as { fileMetadata: Record<string, unknown> }).fileMetadata).toMatchObject({
      width: 480,
      height: 360,
      camera: "Canon PowerShot S40",
      takenAt: "2003-12-14 12:01:44",
      note: "no text found in the file; kept with what is known about it",
    });
    const found = await client.search.documents({
      q: "photo taken with a Canon camera",
      containerTags: ["photos"],
    });
    expect(found.results[0]?.documentId).toBe(id);
    const byName = await client.search.memories({
      q: "garden flower",
      containerTag: "photos",
      searchMode: "hybrid",
    });
    expect(byName.results.some((r) => (r as { chunk?: string }).chunk?.includes("garden-flower.jpg"))).toBe(
      true,
    );
  });

  it.each(files.filter((f) => f in expected))("%s", async (file) => {
    const want = expected[file] as (typeof expected)[string];
    const bytes = readFileSync(path.join(fixtures, file));
    // The name gives nothing away: detection must work from the bytes.
    const upload = await toFile(bytes, "upload.bin");
    const { id } = await client.documents.uploadFile({ file: upload, containerTag: "fixtures" });
    const doc = await finished(id);
    const reason = (doc as { errorReason?: string | null }).errorReason ?? "";
    if ("failed" in want) {
      expect(doc.status, `${file} should fail, content: ${doc.content?.slice(0, 200)}`).toBe("failed");
      expect(reason).toMatch(want.failed);
    } else {
      expect(doc.status, `${file} failed: ${reason}`).toBe("done");
      expect(doc.type).toBe(want.type);
      expect(doc.content ?? "").toMatch(want.phrase);
    }
  });
});
