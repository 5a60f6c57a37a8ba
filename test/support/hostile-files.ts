// Hostile files, built in code (nothing big is committed): zip bombs with truthful and lying headers,
// a pixel bomb, deeply nested mail, PDF stream bombs. Used by test/pipeline/hostile-files.test.ts and
// test/e2e/hostile-files.test.ts.

import { constants, crc32, deflateRawSync, deflateSync } from "node:zlib";
import { ZipArchive } from "../../pipeline/extract/zip.ts";

export const MiB = 1024 * 1024;

/**
 * Raw deflate data that inflates to `mib` MiB of zeros from about a thousandth of that: one MiB of
 * zeros compressed and flushed (so the piece is byte-aligned and needs nothing before it), repeated,
 * then an empty final block.
 */
export function deflateBomb(mib: number): Buffer {
  const piece = deflateRawSync(Buffer.alloc(MiB), { finishFlush: constants.Z_FULL_FLUSH });
  return Buffer.concat([...Array.from({ length: mib }, () => piece), Buffer.from([0x03, 0x00])]);
}

/** The same as zlib data (a header, the deflate data, a checksum nobody reaches). */
export function zlibBomb(mib: number): Buffer {
  return Buffer.concat([Buffer.from([0x78, 0x9c]), deflateBomb(mib), Buffer.alloc(4)]);
}

export interface ZipPart {
  name: string;
  /** Deflated (method 8) or stored (0) bytes. */
  data: Buffer;
  method: 0 | 8;
  crc: number;
  /** The uncompressed size the headers declare: the truth, or a lie. */
  size: number;
}

export const part = (name: string, text: string): ZipPart => {
  const data = Buffer.from(text);
  return { name, method: 8, data: deflateRawSync(data), crc: crc32(data), size: data.length };
};

/** A zip archive written by hand, so its headers can say whatever a test wants. */
export function zipOf(parts: ZipPart[]): Buffer {
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
export function docxWith(document: ZipPart): Buffer {
  return zipOf([part("[Content_Types].xml", CONTENT_TYPES), part("_rels/.rels", ROOT_RELS), document]);
}

/** A .docx of `paragraphs` one-letter paragraphs: small on disk and within the zip caps, huge as a parsed tree. */
export function manyParagraphsDocx(paragraphs: number): Buffer {
  const body = "<w:p><w:r><w:t>x</w:t></w:r></w:p>".repeat(paragraphs);
  return docxWith(
    part(
      "word/document.xml",
      `<?xml version="1.0"?><w:document xmlns:w="${W}"><w:body>${body}</w:body></w:document>`,
    ),
  );
}

/** A PNG whose header claims `width`×`height` pixels, with one row of them actually there. */
export function pixelBomb(width: number, height: number): Buffer {
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
export function pdfWith(stream: Buffer, filter = "/FlateDecode"): Buffer {
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
  add("xref\n0 5\n0000000000 65535 f \n");
  for (let n = 1; n <= 4; n++) add(`${String(offsets[n]).padStart(10, "0")} 00000 n \n`);
  add(`trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`);
  return Buffer.concat(parts);
}

const MAIL_HEAD = "From: a@example.com\r\nTo: b@example.com\r\nMIME-Version: 1.0\r\n";

/** A message inside a message, `levels` deep (each attached inline as message/rfc822). */
export function nestedMail(levels: number): Buffer {
  let mail = `${MAIL_HEAD}Subject: the innermost\r\n\r\nHello from the bottom.\r\n`;
  for (let i = levels; i > 0; i--) {
    mail = `${MAIL_HEAD}Subject: level ${i}\r\nContent-Type: message/rfc822\r\n\r\n${mail}`;
  }
  return Buffer.from(mail);
}

/** Multiparts inside multiparts, each holding the next as an attached message. */
export function nestedMultipartMail(levels: number): Buffer {
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
export function manyPartsMail(parts: number): Buffer {
  const body = Array.from(
    { length: parts },
    (_, i) => `--b\r\nContent-Type: text/plain\r\n\r\npart ${i}\r\n`,
  );
  return Buffer.from(
    `${MAIL_HEAD}Subject: many parts\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n${body.join("")}--b--\r\n`,
  );
}

/** The parts of a real .docx (fixtures/docx/simple.docx) that a reader needs: no styles, theme or thumbnail. */
const DOCX_PARTS = [
  "[Content_Types].xml",
  "_rels/.rels",
  "docProps/core.xml",
  "word/document.xml",
  "word/_rels/document.xml.rels",
];

/**
 * A real .docx (simple.docx) whose body is its own paragraphs, each run's text said `repeat` times,
 * the whole written out `copies` times: 600 copies of 40 repeats is 4.1 million characters of text.
 */
export function repetitiveDocx(fixture: Buffer, copies: number, repeat = 40): Buffer {
  const zip = new ZipArchive(fixture, ".docx");
  const xml = zip.readText("word/document.xml") ?? "";
  const body = xml.match(/<w:body>([\s\S]*?)<w:sectPr/)?.[1];
  if (!body) throw new Error("the fixture has no body to repeat");
  const said = body.replace(
    /<w:t( [^>]*)?>([^<]*)<\/w:t>/g,
    (_all, attributes: string | undefined, text: string) =>
      `<w:t${attributes ?? ""}>${`${text} `.repeat(repeat)}</w:t>`,
  );
  const document = xml.replace(body, said.repeat(copies));
  return zipOf(
    DOCX_PARTS.filter((name) => zip.has(name)).map((name) => {
      const data = name === "word/document.xml" ? Buffer.from(document) : (zip.read(name) as Buffer);
      return {
        name,
        method: 8,
        data: deflateRawSync(data, { level: 9 }),
        crc: crc32(data),
        size: data.length,
      };
    }),
  );
}

export interface MailAttachment {
  filename: string;
  contentType: string;
  bytes: Buffer;
}

let boundaries = 0;

/** A multipart mail with a text body and the given attachments (base64, or an attached message as is). */
export function mailWith(subject: string, body: string, attachments: MailAttachment[]): Buffer {
  // A boundary of its own, so a mail attached inside another does not end its parent's parts.
  const mixed = `mixed-${++boundaries}`;
  const parts = attachments.map((a) => {
    const head = `--${mixed}\r\nContent-Type: ${a.contentType}; name="${a.filename}"\r\nContent-Disposition: attachment; filename="${a.filename}"\r\n`;
    if (a.contentType === "message/rfc822") return `${head}\r\n${a.bytes.toString("utf8")}\r\n`;
    const base64 = a.bytes.toString("base64").replace(/.{76}/g, "$&\r\n");
    return `${head}Content-Transfer-Encoding: base64\r\n\r\n${base64}\r\n`;
  });
  return Buffer.from(
    `${MAIL_HEAD}Subject: ${subject}\r\nContent-Type: multipart/mixed; boundary="${mixed}"\r\n\r\n` +
      `--${mixed}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body}\r\n${parts.join("")}--${mixed}--\r\n`,
  );
}

export const DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

/**
 * The hostile mail of "each document has a budget": `count` copies of a repetitive .docx attached
 * (300 of 600 copies of simple.docx's body: a 10 MB .eml whose attachments hold 1.2 billion characters).
 */
export function manyDocxMail(fixture: Buffer, count: number, copies = 600): Buffer {
  const docx = repetitiveDocx(fixture, copies);
  return mailWith(
    "Quarterly reports",
    "All the reports are attached.",
    Array.from({ length: count }, (_, i) => ({
      filename: `report-${i + 1}.docx`,
      contentType: DOCX_MIME,
      bytes: docx,
    })),
  );
}
