// Issue 23, "a hostile file fails alone": a corpus of hostile files, generated here (nothing big is
// committed), goes through the real extraction path (the CPU thread pool) while normal documents are
// extracted beside it. Each hostile file must fail on the first try with UnprocessableContentError and
// a reason, each normal one must succeed, and the process's resident memory must not rise by more than
// 256 MB on the way.

import { readFileSync } from "node:fs";
import { deflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CpuPool, createCpuPool } from "../../pipeline/cpu-pool.ts";
import { checkMailDepth } from "../../pipeline/extract/email.ts";
import { type ContentType, UnprocessableContentError } from "../../pipeline/extract/types.ts";
import { ZipArchive } from "../../pipeline/extract/zip.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";
import {
  deflateBomb,
  docxWith,
  MiB,
  manyParagraphsDocx,
  manyPartsMail,
  nestedMail,
  nestedMultipartMail,
  part,
  pdfWith,
  pixelBomb,
  zipOf,
  zlibBomb,
} from "../support/hostile-files.ts";
import { sampleRss } from "../support/memory.ts";

const RSS_BUDGET = 256 * MiB;
const fixture = (path: string) => readFileSync(`${FIXTURES_DIR}/${path}`);
const half = (bytes: Buffer) => Buffer.from(bytes.subarray(0, Math.floor(bytes.length / 2)));

interface Hostile {
  name: string;
  type: ContentType;
  bytes: Buffer;
  reason: RegExp;
}

function hostileCorpus(): Hostile[] {
  const bomb = deflateBomb(400); // 400 MiB of zeros from about 400 KB
  const perPart = /inflates past the 64 MiB cap per part/;
  return [
    {
      name: "zip bomb, truthful headers (.docx)",
      type: "docx",
      bytes: docxWith({ name: "word/document.xml", method: 8, data: bomb, crc: 0, size: 400 * MiB }),
      reason: perPart,
    },
    {
      name: "zip bomb, lying headers (.docx)",
      type: "docx",
      bytes: docxWith({ name: "word/document.xml", method: 8, data: bomb, crc: 0, size: 2048 }),
      reason: perPart,
    },
    {
      name: "zip bomb, lying headers (.pptx)",
      type: "pptx",
      bytes: zipOf([{ name: "ppt/presentation.xml", method: 8, data: bomb, crc: 0, size: 2048 }]),
      reason: perPart,
    },
    {
      name: "pixel bomb (PNG claiming 50000×50000)",
      type: "image",
      bytes: pixelBomb(50_000, 50_000),
      reason: /the image is too large to read \(50000×50000 pixels/,
    },
    {
      name: "mail nested 100 levels deep (message/rfc822)",
      type: "email",
      bytes: nestedMail(100),
      reason: /nests parts and attached messages past the cap of 50 levels/,
    },
    {
      name: "mail nested 100 levels deep (multipart holding message/rfc822)",
      type: "email",
      bytes: nestedMultipartMail(100),
      reason: /nests parts and attached messages past the cap of 50 levels/,
    },
    {
      name: "mail with 3,000 parts",
      type: "email",
      bytes: manyPartsMail(3_000),
      reason: /the e-mail message cannot be parsed/,
    },
    {
      name: "PDF FlateDecode stream bomb (1 GiB)",
      type: "pdf",
      bytes: pdfWith(zlibBomb(1024)),
      reason: /the PDF has a compressed stream \(at byte \d+\) that inflates past the 256 MiB cap per stream/,
    },
    {
      name: "PDF stream compressed twice (FlateDecode of a FlateDecode bomb)",
      type: "pdf",
      bytes: pdfWith(deflateSync(zlibBomb(1024)), "[/FlateDecode /FlateDecode]"),
      reason: /inflates past the 256 MiB cap per stream/,
    },
    {
      name: "truncated .docx",
      type: "docx",
      bytes: half(fixture("docx/simple.docx")),
      reason: /^the file is not a valid \.docx document: it is not a readable zip archive/,
    },
    {
      name: "truncated .pptx",
      type: "pptx",
      bytes: half(fixture("pptx/fake-power-point.pptx")),
      reason: /^the file is not a valid \.pptx document: it is not a readable zip archive/,
    },
    {
      name: "truncated PDF",
      type: "pdf",
      bytes: half(fixture("pdf/all-number-table.pdf")),
      reason: /PDF/,
    },
    {
      name: "truncated PNG",
      type: "image",
      bytes: half(fixture("image/DA-1p.png")),
      reason: /the PNG image is corrupt or truncated/,
    },
  ];
}

interface Normal {
  name: string;
  type: ContentType;
  bytes: Buffer;
  /** A phrase its text must contain. */
  text: string;
}

function normalDocuments(): Normal[] {
  const mail = fixture("email/fake-email.eml");
  return [
    { name: "simple.docx", type: "docx", bytes: fixture("docx/simple.docx"), text: "favorite things" },
    {
      name: "all-number-table.pdf",
      type: "pdf",
      bytes: fixture("pdf/all-number-table.pdf"),
      text: "1200.01",
    },
    { name: "fake-power-point.pptx", type: "pptx", bytes: fixture("pptx/fake-power-point.pptx"), text: "" },
    { name: "fake-email.eml", type: "email", bytes: mail, text: "" },
    // A mail cut short is still a mail: it is read as far as it goes.
    { name: "truncated fake-email.eml", type: "email", bytes: half(mail), text: "" },
  ];
}

const text = (segments: { text: string }[]) => segments.map((s) => s.text).join("\n");

describe("a hostile file fails alone (CPU pool, default limits)", () => {
  let pool: CpuPool;

  beforeAll(async () => {
    pool = createCpuPool(2);
    // Both threads up, every extractor loaded, before the memory baseline is taken.
    await Promise.all([
      pool.extract("docx", { bytes: fixture("docx/simple.docx") }),
      pool.extract("pdf", { bytes: fixture("pdf/all-number-table.pdf") }),
      pool.extract("email", { bytes: fixture("email/fake-email.eml") }),
    ]);
  });

  afterAll(async () => {
    await pool?.close();
  });

  it("each hostile file fails on the first try with its reason while normal documents beside it succeed, within +256 MB of RSS", async () => {
    const corpus = hostileCorpus();
    const normals = normalDocuments();
    const before = process.memoryUsage.rss();
    const rss = sampleRss();
    // Interleaved, so normal documents are in the threads while hostile ones are.
    const hostileRuns: Promise<unknown>[] = [];
    const normalRuns: Promise<unknown>[] = [];
    for (let i = 0; i < Math.max(corpus.length, normals.length); i++) {
      const h = corpus[i];
      if (h)
        hostileRuns.push(
          pool.extract(h.type, { bytes: h.bytes, filename: h.name }).then(
            () => null,
            (e: unknown) => e,
          ),
        );
      const n = normals[i % normals.length];
      if (n)
        normalRuns.push(
          pool.extract(n.type, { bytes: n.bytes, filename: n.name }).then(
            (r) => r,
            (e: unknown) => e,
          ),
        );
    }
    const [errors, results] = await Promise.all([Promise.all(hostileRuns), Promise.all(normalRuns)]);
    const peak = rss.stop();

    const outcomes = corpus.map((h, i) => {
      const error = errors[i];
      return {
        name: h.name,
        unprocessable: error instanceof UnprocessableContentError,
        reason: error instanceof Error ? error.message : String(error),
      };
    });
    console.log(outcomes.map((o) => `${o.name}: ${o.reason}`).join("\n"));
    for (const [i, h] of corpus.entries()) {
      expect(outcomes[i]?.unprocessable, `${h.name}: ${outcomes[i]?.reason}`).toBe(true);
      expect(outcomes[i]?.reason, h.name).toMatch(h.reason);
    }
    for (const [i, result] of results.entries()) {
      const n = normals[i % normals.length];
      expect(result, n?.name).not.toBeInstanceOf(Error);
      const segments = (result as { segments: { text: string }[] }).segments;
      expect(text(segments).length, n?.name).toBeGreaterThan(0);
      expect(text(segments), n?.name).toContain(n?.text ?? "");
    }
    const rise = peak - before;
    console.log(
      `RSS ${Math.round(before / MiB)} MiB before, peak ${Math.round(peak / MiB)} MiB (+${Math.round(rise / MiB)} MiB)`,
    );
    expect(rise).toBeLessThan(RSS_BUDGET);

    // And the pool goes on serving.
    const after = await pool.extract("docx", { bytes: fixture("docx/simple.docx") });
    expect(text(after.segments)).toContain("favorite things");
  });
});

describe("the CPU thread's heap limit", () => {
  it("a parse that outgrows it ends only its thread: the file fails with a reason, the document beside it and the next one succeed", async () => {
    const heapBomb = manyParagraphsDocx(1_000_000); // 35 MB of XML: within the zip caps, far past 128 MB as a tree
    const pool = createCpuPool(1, { memoryMb: 128 });
    try {
      await pool.extract("docx", { bytes: fixture("docx/simple.docx") });
      const before = process.memoryUsage.rss();
      const rss = sampleRss();
      const [failed, beside] = await Promise.all([
        pool.extract("docx", { bytes: heapBomb }).then(
          () => null,
          (e: unknown) => e,
        ),
        pool.extract("pdf", { bytes: fixture("pdf/all-number-table.pdf") }),
      ]);
      const peak = rss.stop();
      console.log(`heap bomb: ${(failed as Error)?.message}; RSS +${Math.round((peak - before) / MiB)} MiB`);
      expect(failed).toBeInstanceOf(UnprocessableContentError);
      expect((failed as Error).message).toBe(
        "the docx file needs more memory to parse than the extraction thread's limit of 128 MB",
      );
      expect(text(beside.segments)).toContain("1200.01");
      expect(peak - before).toBeLessThan(RSS_BUDGET);
      const next = await pool.extract("docx", { bytes: fixture("docx/simple.docx") });
      expect(text(next.segments)).toContain("favorite things");
    } finally {
      await pool.close();
    }
  });
});

describe("caps, one by one", () => {
  it("ZipArchive counts what entries really inflate to against the per-part and whole-archive caps", () => {
    const kib = (n: number) => "x".repeat(n * 1024);
    const bytes = zipOf([part("a.xml", kib(300)), part("b.xml", kib(300)), part("c.xml", kib(300))]);
    const limits = { maxEntryBytes: 400 * 1024, maxTotalBytes: 700 * 1024, maxEntries: 10 };
    const zip = new ZipArchive(bytes, ".docx", limits);
    expect(zip.readText("a.xml")).toHaveLength(300 * 1024);
    expect(zip.readText("b.xml")).toHaveLength(300 * 1024);
    expect(() => zip.read("c.xml")).toThrow(
      new UnprocessableContentError("the .docx file inflates past the 700 KiB cap for a whole archive"),
    );
    // The declared size is a lie (10 bytes): the real output still stops at the cap.
    const liar = zipOf([{ ...part("a.xml", kib(500)), size: 10 }]);
    expect(() => new ZipArchive(liar, ".pptx", limits).read("a.xml")).toThrow(
      /^the \.pptx file's part a\.xml inflates past the 400 KiB cap per part$/,
    );
    expect(() => new ZipArchive(bytes, ".docx", { ...limits, maxEntries: 2 })).toThrow(
      new UnprocessableContentError("the .docx file lists 3 zip entries, more than the cap of 2"),
    );
  });

  it("reads a real mail's depth without complaint, and refuses one past the cap at the first level too deep", () => {
    expect(() => checkMailDepth(fixture("email/fake-email-attachment.eml"))).not.toThrow();
    expect(() => checkMailDepth(nestedMultipartMail(10))).not.toThrow();
    expect(() => checkMailDepth(nestedMail(50))).not.toThrow();
    expect(() => checkMailDepth(nestedMail(51))).toThrow(/past the cap of 50 levels/);
  });
});
