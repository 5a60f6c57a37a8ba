// Word documents: mammoth turns the .docx into simple semantic HTML (headings, paragraphs, lists,
// tables, footnotes), and a small walker writes that as readable text, cut into one segment per
// top-level section so chunks can carry the section's heading.

import { XMLParser } from "fast-xml-parser";
import { parseHTML } from "linkedom";
import mammoth from "mammoth";
import { sectionLevel } from "./text.ts";
import type {
  ExtractContext,
  ExtractInput,
  Extractor,
  ExtractResult,
  ScalarMetadata,
  Segment,
} from "./types.ts";
import { UnprocessableContentError } from "./types.ts";
import { ZipArchive, type ZipLimits } from "./zip.ts";

/** Compound File Binary: legacy .doc/.ppt, and also any password-protected (encrypted) .docx/.pptx. */
const CFB_MAGIC = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);

/**
 * Opens an Office Open XML package. Anything that is not a readable zip is UnprocessableContentError
 * with a reason a person can act on; `kind` names the format in that reason (".docx", ".pptx").
 * Parts are inflated when read, within the caps of `ZIP_LIMITS` (per part and for the whole
 * archive, counted on the bytes really produced, whatever sizes the archive declares).
 */
export async function openOfficeZip(bytes: Buffer, kind: string, limits?: ZipLimits): Promise<ZipArchive> {
  if (bytes.length === 0) throw new UnprocessableContentError(`the file is empty, not a ${kind} document`);
  if (bytes.subarray(0, 8).equals(CFB_MAGIC)) {
    throw new UnprocessableContentError(
      `the file is password-protected or in the old binary Office format, not a ${kind} document`,
    );
  }
  try {
    return new ZipArchive(bytes, kind, limits);
  } catch (error) {
    if (error instanceof UnprocessableContentError) throw error;
    throw new UnprocessableContentError(
      `the file is not a valid ${kind} document: it is not a readable zip archive (${messageOf(error)})`,
    );
  }
}

/**
 * The package as mammoth's own zip interface (`{ file }` input), so mammoth reads parts through the
 * caps instead of opening the bytes again with JSZip.
 */
function mammothFile(zip: ZipArchive) {
  const written = new Map<string, string | Uint8Array>();
  return {
    exists: (name: string) => written.has(name) || zip.has(name),
    read: async (name: string, encoding?: string) => {
      const own = written.get(name);
      const bytes = typeof own === "string" ? Buffer.from(own) : (own ?? zip.read(name));
      if (bytes === undefined) throw new Error(`the part ${name} is not in the package`);
      if (encoding === "base64") return Buffer.from(bytes).toString("base64");
      if (encoding) return new TextDecoder(encoding).decode(bytes);
      return bytes;
    },
    write: (name: string, contents: string | Uint8Array) => {
      written.set(name, contents);
    },
    toArrayBuffer: async () => {
      throw new Error("the package is read-only here");
    },
  };
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const coreParser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  trimValues: true,
  htmlEntities: true, // also decodes numeric references (&#x2019;), which it otherwise leaves as written
});

/** docProps/core.xml: the title, author and dates Office keeps about the file (non-empty ones only). */
export async function readCoreProperties(zip: ZipArchive): Promise<ScalarMetadata> {
  const xml = await zip.file("docProps/core.xml")?.async("string");
  if (!xml) return {};
  let props: Record<string, unknown>;
  try {
    props = (coreParser.parse(xml) as { coreProperties?: Record<string, unknown> }).coreProperties ?? {};
  } catch {
    return {}; // broken metadata is no reason to lose the document
  }
  const text = (key: string): string | null => {
    const value = props[key];
    // An element may repeat (an array) or carry attributes ({ "#text": ... }); the first non-empty value wins.
    for (const item of Array.isArray(value) ? value : [value]) {
      const raw =
        typeof item === "string" || typeof item === "number"
          ? String(item)
          : item && typeof item === "object" && "#text" in item
            ? String((item as { "#text": unknown })["#text"])
            : "";
      const cleaned = raw.replace(/\s+/g, " ").trim();
      if (cleaned) return cleaned;
    }
    return null;
  };
  const metadata: ScalarMetadata = {};
  const fields: [string, string][] = [
    ["title", "title"],
    ["author", "creator"],
    ["subject", "subject"],
    ["description", "description"],
    ["keywords", "keywords"],
    ["lastModifiedBy", "lastModifiedBy"],
    ["created", "created"],
    ["modified", "modified"],
  ];
  for (const [key, source] of fields) {
    const value = text(source);
    if (value) metadata[key] = value;
  }
  return metadata;
}

/** Headings mammoth does not map by default; Word's own "Title" style is the document's heading. */
const STYLE_MAP = ["p[style-name='Title'] => h1:fresh", "p[style-name='Subtitle'] => h2:fresh"];

type Block = { kind: "heading"; level: number; text: string } | { kind: "text"; text: string };

interface Note {
  kind: "footnote" | "endnote";
  text: string;
}

const HEADING = /^h([1-6])$/;
const NOTE_ID = /^(footnote|endnote)-(.+)$/;
/** mammoth's back-link from a note to where it is referenced ("↑"). */
const NOTE_BACKLINK = /^#(footnote|endnote)-ref-/;

/** Inline text of an element: whitespace collapsed, <br> kept as a line break, images and back-links dropped. */
function inlineText(node: Node): string {
  const parts: string[] = [];
  const walk = (n: Node) => {
    if (n.nodeType === 3) {
      parts.push(n.nodeValue ?? "");
      return;
    }
    if (n.nodeType !== 1) return;
    const el = n as Element;
    const tag = el.localName;
    if (tag === "br") {
      parts.push("\n");
      return;
    }
    if (tag === "img") return;
    if (tag === "a" && NOTE_BACKLINK.test(el.getAttribute("href") ?? "")) return;
    for (const child of Array.from(el.childNodes)) walk(child);
  };
  walk(node);
  return parts
    .join("")
    .split("\n")
    .map((line) => line.replace(/\s+/g, " ").trim())
    .filter(Boolean)
    .join("\n");
}

function children(el: Element): Element[] {
  return Array.from(el.children) as Element[];
}

/** A table cell on one line: its paragraphs joined by spaces, a nested table as "a, b; c, d". */
function cellText(cell: Element): string {
  const parts: string[] = [];
  for (const child of Array.from(cell.childNodes)) {
    if (child.nodeType === 1 && (child as Element).localName === "table") {
      parts.push(
        tableRows(child as Element)
          .map((row) => row.join(", "))
          .join("; "),
      );
    } else if (child.nodeType === 1 && ["ul", "ol"].includes((child as Element).localName)) {
      parts.push(listLines(child as Element, 0).join("; "));
    } else {
      parts.push(inlineText(child).replace(/\n/g, " "));
    }
  }
  return parts.filter(Boolean).join(" ");
}

/** The rows of this table (not of tables nested in its cells), each a list of cell texts. */
function tableRows(table: Element): string[][] {
  const rows: string[][] = [];
  const visit = (el: Element) => {
    for (const child of children(el)) {
      if (child.localName === "tr") {
        const cells = children(child)
          .filter((c) => c.localName === "td" || c.localName === "th")
          .map(cellText);
        if (cells.some(Boolean)) rows.push(cells);
      } else if (["thead", "tbody", "tfoot"].includes(child.localName)) visit(child);
    }
  };
  visit(table);
  return rows;
}

/** List items as "- item" / "1. item" lines, nested lists indented by two spaces per level. */
function listLines(list: Element, depth: number): string[] {
  const lines: string[] = [];
  const ordered = list.localName === "ol";
  let n = 0;
  for (const item of children(list)) {
    if (item.localName !== "li") continue;
    n++;
    const own: string[] = [];
    const nested: string[] = [];
    for (const child of Array.from(item.childNodes)) {
      const tag = child.nodeType === 1 ? (child as Element).localName : "";
      if (tag === "ul" || tag === "ol") nested.push(...listLines(child as Element, depth + 1));
      else if (tag === "table")
        nested.push(...tableRows(child as Element).map((r) => `${"  ".repeat(depth + 1)}${r.join(" | ")}`));
      else own.push(inlineText(child).replace(/\n/g, " "));
    }
    const text = own.filter(Boolean).join(" ");
    if (text) lines.push(`${"  ".repeat(depth)}${ordered ? `${n}.` : "-"} ${text}`);
    lines.push(...nested);
  }
  return lines;
}

/** Whether a list is mammoth's footnote or endnote list (every item has id "footnote-N" / "endnote-N"). */
function noteList(list: Element): boolean {
  const items = children(list).filter((c) => c.localName === "li");
  return items.length > 0 && items.every((li) => NOTE_ID.test(li.getAttribute("id") ?? ""));
}

function collectBlocks(root: Element, blocks: Block[], notes: Note[]): void {
  for (const node of Array.from(root.childNodes)) {
    if (node.nodeType === 3) {
      const text = inlineText(node);
      if (text) blocks.push({ kind: "text", text });
      continue;
    }
    if (node.nodeType !== 1) continue;
    const el = node as Element;
    const tag = el.localName;
    const heading = tag.match(HEADING);
    if (heading?.[1]) {
      const text = inlineText(el).replace(/\n/g, " ");
      if (text) blocks.push({ kind: "heading", level: Number(heading[1]), text });
    } else if (tag === "p") {
      const text = inlineText(el);
      if (text) blocks.push({ kind: "text", text });
    } else if ((tag === "ol" || tag === "ul") && noteList(el)) {
      for (const li of children(el)) {
        const [, kind, id] = (li.getAttribute("id") ?? "").match(NOTE_ID) ?? [];
        const text = cellText(li);
        if (text) notes.push({ kind: kind === "endnote" ? "endnote" : "footnote", text: `[${id}] ${text}` });
      }
    } else if (tag === "ol" || tag === "ul") {
      const lines = listLines(el, 0);
      if (lines.length) blocks.push({ kind: "text", text: lines.join("\n") });
    } else if (tag === "table") {
      const rows = tableRows(el);
      if (rows.length) blocks.push({ kind: "text", text: rows.map((r) => r.join(" | ")).join("\n") });
    } else {
      collectBlocks(el, blocks, notes);
    }
  }
}

/** Cuts blocks into sections at the headings of the top level (see `sectionLevel`). */
function sections(blocks: Block[]): Segment[] {
  const levels = blocks.flatMap((b) => (b.kind === "heading" ? [b.level] : []));
  const cutLevel = levels.length ? sectionLevel(levels) : 0;
  const segments: Segment[] = [];
  let current: { section?: string; parts: string[] } = { parts: [] };
  const flush = () => {
    if (current.parts.length) {
      const segment: Segment = { text: current.parts.join("\n\n") };
      if (current.section !== undefined) segment.section = current.section;
      segments.push(segment);
    }
  };
  for (const block of blocks) {
    if (block.kind === "heading") {
      if (block.level <= cutLevel) {
        flush();
        current = { section: block.text, parts: [] };
      }
      current.parts.push(`${"#".repeat(block.level)} ${block.text}`);
    } else current.parts.push(block.text);
  }
  flush();
  return segments;
}

/**
 * A .docx file: one segment per top-level section (`section` = its heading), headings as "#" lines,
 * list items as "- " / "1. " lines, table rows as lines of " | "-separated cells, footnotes and endnotes
 * as "[n] text" lines in segments of their own. A document with no text (e.g. a blank page) yields no
 * segments rather than an error: the pipeline fails documents without text. A file that is not a
 * readable .docx is UnprocessableContentError.
 */
export const extractDocx: Extractor = async (
  input: ExtractInput,
  ctx: ExtractContext,
): Promise<ExtractResult> => {
  ctx.signal.throwIfAborted();
  const zip = await openOfficeZip(input.bytes, ".docx");
  if (!zip.file("word/document.xml") && !zip.file("_rels/.rels")) {
    throw new UnprocessableContentError(
      "the file is a zip archive but not a .docx document (no word/document.xml)",
    );
  }
  const core = await readCoreProperties(zip);
  ctx.signal.throwIfAborted();
  ctx.heartbeat({ step: "convert" });

  let html: string;
  try {
    const result = await mammoth.convertToHtml(
      // mammoth also takes `{ file }`, an opened package (lib/unzip.js); its typings only list buffer and path.
      { file: mammothFile(zip) } as unknown as { buffer: Buffer },
      {
        styleMap: STYLE_MAP,
        // Images are not text; the default would inline every one of them as a base64 data URI.
        convertImage: mammoth.images.imgElement(async () => ({ src: "" })),
      },
    );
    html = result.value;
  } catch (error) {
    if (error instanceof UnprocessableContentError) throw error;
    throw (
      zip.breach ??
      new UnprocessableContentError(`the file is not a readable .docx document: ${messageOf(error)}`)
    );
  }
  // A cap hit inside mammoth fails the document even if mammoth carried on without that part.
  if (zip.breach) throw zip.breach;
  ctx.signal.throwIfAborted();
  ctx.heartbeat({ step: "text" });

  const { document } = parseHTML(`<!doctype html><html><head></head><body>${html}</body></html>`);
  const blocks: Block[] = [];
  const notes: Note[] = [];
  collectBlocks(document.body as unknown as Element, blocks, notes);

  const segments = sections(blocks);
  for (const kind of ["footnote", "endnote"] as const) {
    const lines = notes.filter((n) => n.kind === kind).map((n) => n.text);
    if (lines.length) {
      segments.push({
        text: lines.join("\n"),
        section: kind === "footnote" ? "Footnotes" : "Endnotes",
        source: `${kind}s`,
      });
    }
  }

  const firstHeading = blocks.find((b) => b.kind === "heading")?.text ?? null;
  const coreTitle = typeof core.title === "string" ? core.title : null;
  return { type: "docx", title: firstHeading ?? coreTitle, segments, metadata: core };
};
