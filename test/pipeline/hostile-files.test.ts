// Issue 23, "a hostile file fails alone": a corpus of hostile files, generated here (nothing big is
// committed), goes through the real extraction path (the CPU thread pool) while normal documents are
// extracted beside it. Each hostile file must fail on the first try with UnprocessableContentError and
// a reason, each normal one must succeed, and the process's resident memory must not rise by more than
// 256 MB on the way.

import { readFileSync } from "node:fs";
import { constants, crc32, deflateRawSync, deflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CpuPool, createCpuPool } from "../../pipeline/cpu-pool.ts";
import { checkMailDepth } from "../../pipeline/extract/email.ts";
import { type ContentType, UnprocessableContentError } from "../../pipeline/extract/types.ts";
import { ZipArchive } from "../../pipeline/extract/zip.ts";
import { FIXTURES_DIR } from "../support/fixtures.ts";

const MiB = 1024 * 1024;
const RSS_BUDGET = 256 * MiB;
const fixture = (path: string) => readFileSync(`${FIXTURES_DIR}/${path}`);
const half = (bytes: Buffer) => Buffer.from(bytes.subarray(0, Math.floor(bytes.length / 2)));

// --- Building hostile files ---

/**
 * Raw deflate data that inflates to `mib` MiB of zeros from about a thousandth of that: one MiB of
 * zeros compressed and flushed (so the piece is byte-aligned and needs nothing before it), repeated,
 * then an empty final block.
 */
function deflateBomb(mib: number): Buffer {
  const piece = deflateRawSync(Buffer.alloc(MiB), { finishFlush: constants.Z_FULL_FLUSH });
  return Buffer.concat([...Array.from({ length: mib }, () => piece), Buffer.from([0x03, 0x00])]);
}

/** The same as zlib data (a header, the deflate data, a checksum nobody reaches). */
function zlibBomb(mib: number): Buffer {
  return Buffer.concat([Buffer.from([0x78, 0x9c]), deflateBomb(mib), Buffer.alloc(4)]);
}

interface ZipPart {
  name: string;
  /** Deflated (method 8) or stored (0) bytes. */
  data: Buffer;
  method: 0 | 8;
  crc: number;
  /** The uncompressed size the headers declare: the truth, or a lie. */
  size: number;
}

const part = (name: string, text: string): ZipPart => {
  const data = Buffer.from(text);
  return { name, method: 8, data: deflateRawSync(data), crc: crc32(data), size: data.length };
};

/** A zip archive written by hand, so its headers can say whatever a test wants. */
function zipOf(parts: ZipPart[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const p of parts) {
    const name = Buffer.from(p.name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(p.method, 8);
    local.writeUInt16LE(0x21, 12);
    local.writeUInt32LE(p.crc >>> 0, 14);
    local.writeUInt32LE(p.data.length, 18);
    local.writeUInt32LE(p.size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(p.method, 10);
    central.writeUInt16LE(0x21, 14);
    central.writeUInt32LE(p.crc >>> 0, 16);
    central.writeUInt32LE(p.data.length, 20);
    central.writeUInt32LE(p.size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, p.data);
    centrals.push(central, name);
    offset += 30 + name.length + p.data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(parts.length, 8);
  end.writeUInt16LE(parts.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const CONTENT_TYPES = `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`;
const ROOT_RELS = `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`;
const W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";

/** A .docx whose word/document.xml is the given part. */
function docxWith(document: ZipPart): Buffer {
  return zipOf([part("[Content_Types].xml", CONTENT_TYPES), part("_rels/.rels", ROOT_RELS), document]);
}

/** A .docx of `paragraphs` one-letter paragraphs: small on disk and within the zip caps, huge as a parsed tree. */
function manyParagraphsDocx(paragraphs: number): Buffer {
  const body = "<w:p><w:r><w:t>x</w:t></w:r></w:p>".repeat(paragraphs);
  return docxWith(
    part("word/document.xml", `<?xml version="1.0"?><w:document xmlns:w="${W}"><w:body>${body}</w:body></w:document>`),
  );
}

/** A PNG whose header claims `width`×`height` pixels, with one row of them actually there. */
function pixelBomb(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, "latin1");
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth; colour type 0 (grey), no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(Buffer.alloc(width + 1))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A one-page PDF whose content stream is `stream` (already compressed as `filter` says), with a real xref. */
function pdfWith(stream: Buffer, filter = "/FlateDecode"): Buffer {
  const parts: Buffer[] = [];
  const offsets: number[] = [];
  let length = 0;
  const add = (piece: Buffer | string) => {
    const buf = typeof piece === "string" ? Buffer.from(piece, "latin1") : piece;
    parts.push(buf);
    length += buf.length;
  };
  const object = (n: number, ...body: (Buffer | string)[]) => {
    offsets[n] = length;
    add(`${n} 0 obj\n`);
    for (const piece of body) add(piece);
    add("\nendobj\n");
  };
  add("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n");
  object(1, "<< /Type /Catalog /Pages 2 0 R >>");
  object(2, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>");
  object(3, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>");
  object(4, `<< /Length ${stream.length} /Filter ${filter} >>\nstream\n`, stream, "\nendstream");
  const xref = length;
  add(`xref\n0 5\n0000000000 65535 f \n`);
  for (let n = 1; n <= 4; n++) add(`${String(offsets[n]).padStart(10, "0")} 00000 n \n`);
  add(`trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`);
  return Buffer.concat(parts);
}

const MAIL_HEAD = "From: a@example.com\r\nTo: b@example.com\r\nMIME-Version: 1.0\r\n";

/** A message inside a message, `levels` deep (each attached inline as message/rfc822). */
function nestedMail(levels: number): Buffer {
  let mail = `${MAIL_HEAD}Subject: the innermost\r\n\r\nHello from the bottom.\r\n`;
  for (let i = levels; i > 0; i--) {
    mail = `${MAIL_HEAD}Subject: level ${i}\r\nContent-Type: message/rfc822\r\n\r\n${mail}`;
  }
  return Buffer.from(mail);
}

/** Multiparts inside multiparts, each holding the next as an attached message. */
function nestedMultipartMail(levels: number): Buffer {
  let mail = `${MAIL_HEAD}Subject: the innermost\r\n\r\nHello.\r\n`;
  for (let i = levels; i > 0; i--) {
    mail =
      `${MAIL_HEAD}Subject: level ${i}\r\nContent-Type: multipart/mixed; boundary="b${i}"\r\n\r\n` +
      `--b${i}\r\nContent-Type: text/plain\r\n\r\nLevel ${i}.\r\n` +
      `--b${i}\r\nContent-Type: message/rfc822\r\nContent-Disposition: inline\r\n\r\n${mail}\r\n--b${i}--\r\n`;
  }
  return Buffer.from(mail);
}

/** One multipart with `parts` tiny parts. */
function manyPartsMail(parts: number): Buffer {
  const body = Array.from({ length: parts }, (_, i) => `--b\r\nContent-Type: text/plain\r\n\r\npart ${i}\r\n`);
  return Buffer.from(
    `${MAIL_HEAD}Subject: many parts\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n${body.join("")}--b--\r\n`,
  );
}

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
    { name: "all-number-table.pdf", type: "pdf", bytes: fixture("pdf/all-number-table.pdf"), text: "1200.01" },
    { name: "fake-power-point.pptx", type: "pptx", bytes: fixture("pptx/fake-power-point.pptx"), text: "" },
    { name: "fake-email.eml", type: "email", bytes: mail, text: "" },
    // A mail cut short is still a mail: it is read as far as it goes.
    { name: "truncated fake-email.eml", type: "email", bytes: half(mail), text: "" },
  ];
}

/** Samples the process's resident memory every 10 ms; `stop` returns the highest value seen. */
function sampleRss() {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 10);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, process.memoryUsage.rss());
    },
  };
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
      if (h) hostileRuns.push(pool.extract(h.type, { bytes: h.bytes, filename: h.name }).then(() => null, (e: unknown) => e));
      const n = normals[i % normals.length];
      if (n) normalRuns.push(pool.extract(n.type, { bytes: n.bytes, filename: n.name }).then((r) => r, (e: unknown) => e));
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
    console.log(`RSS ${Math.round(before / MiB)} MiB before, peak ${Math.round(peak / MiB)} MiB (+${Math.round(rise / MiB)} MiB)`);
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
