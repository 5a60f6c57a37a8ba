// PowerPoint presentations: read the package with ZipArchive (zip.ts: parts inflated within caps) and
// the slide XML with fast-xml-parser.
// Slides come in presentation order (ppt/presentation.xml's slide list, resolved through its
// relationships), each slide's text in reading order, and speaker notes as segments of their own.

import { posix } from "node:path";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { openOfficeZip, readCoreProperties } from "./docx.ts";
import type {
  ExtractContext,
  ExtractInput,
  Extractor,
  ExtractResult,
  ScalarMetadata,
  Segment,
} from "./types.ts";
import { UnprocessableContentError } from "./types.ts";
import type { ZipArchive } from "./zip.ts";

/** A parsed XML element in fast-xml-parser's ordered form: `{ [tag]: children, ":@"?: attributes }`. */
type XNode = Record<string, unknown>;

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: "",
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false, // runs carry their own spaces: "This is kinda " + "backwards"
  htmlEntities: true, // also decodes numeric references (&#x2019;), which it otherwise leaves as written
});

const REL_SLIDE = "/relationships/slide";
const REL_NOTES = "/relationships/notesSlide";
const REL_LAYOUT = "/relationships/slideLayout";
const REL_MASTER = "/relationships/slideMaster";
const REL_OFFICE_DOCUMENT = "/relationships/officeDocument";
const REL_DIAGRAM_DATA = "/relationships/diagramData";

function tagOf(node: XNode): string | undefined {
  for (const key of Object.keys(node)) if (key !== ":@") return key;
  return undefined;
}

function kids(node: XNode | undefined): XNode[] {
  if (!node) return [];
  const tag = tagOf(node);
  const value = tag ? node[tag] : undefined;
  return Array.isArray(value) ? (value as XNode[]) : [];
}

function attr(node: XNode | undefined, name: string): string | undefined {
  const attrs = node?.[":@"] as Record<string, unknown> | undefined;
  const value = attrs?.[name];
  return typeof value === "string" ? value : undefined;
}

function child(node: XNode | undefined, tag: string): XNode | undefined {
  return kids(node).find((n) => tagOf(n) === tag);
}

function path(node: XNode | undefined, ...tags: string[]): XNode | undefined {
  let current = node;
  for (const tag of tags) current = child(current, tag);
  return current;
}

/** Every descendant with the given tag, in document order. */
function descendants(node: XNode, tag: string, out: XNode[] = []): XNode[] {
  for (const n of kids(node)) {
    if (tagOf(n) === tag) out.push(n);
    descendants(n, tag, out);
  }
  return out;
}

function textContent(node: XNode): string {
  if (typeof node["#text"] === "string") return node["#text"];
  return kids(node).map(textContent).join("");
}

/** A package part, parsed. Missing or malformed parts are UnprocessableContentError naming the part. */
async function readXml(zip: ZipArchive, part: string, what: string): Promise<XNode> {
  const xml = await zip.file(part)?.async("string");
  if (xml === undefined)
    throw new UnprocessableContentError(`the presentation is damaged: ${what} (${part}) is missing`);
  const valid = XMLValidator.validate(xml);
  if (valid !== true) {
    throw new UnprocessableContentError(
      `the presentation is damaged: ${what} (${part}) is not well-formed XML (line ${valid.err.line}: ${valid.err.msg})`,
    );
  }
  const root = (parser.parse(xml) as XNode[]).find((n) => {
    const tag = tagOf(n);
    return tag !== undefined && !tag.startsWith("?") && tag !== "#text";
  });
  if (!root) throw new UnprocessableContentError(`the presentation is damaged: ${what} (${part}) is empty`);
  return root;
}

interface Relationship {
  type: string;
  target: string;
}

/** The relationships of `part`, keyed by id, with targets resolved to package paths. */
async function readRels(zip: ZipArchive, part: string): Promise<Map<string, Relationship>> {
  const relsPath = posix.join(posix.dirname(part), "_rels", `${posix.basename(part)}.rels`);
  const rels = new Map<string, Relationship>();
  if (!zip.file(relsPath)) return rels;
  const root = await readXml(zip, relsPath, "a relationships part");
  for (const rel of kids(root)) {
    const id = attr(rel, "Id");
    const target = attr(rel, "Target");
    if (!id || !target || attr(rel, "TargetMode") === "External") continue;
    const resolved = target.startsWith("/")
      ? posix.normalize(target.slice(1))
      : posix.normalize(posix.join(posix.dirname(part), target));
    rels.set(id, { type: attr(rel, "Type") ?? "", target: resolved });
  }
  return rels;
}

function relOfType(rels: Map<string, Relationship>, suffix: string): Relationship | undefined {
  for (const rel of rels.values()) if (rel.type.endsWith(suffix)) return rel;
  return undefined;
}

// --- Placeholders and positions ---

interface Position {
  x: number;
  y: number;
}

interface Placeholder {
  type: string;
  idx: string | undefined;
}

/** A placeholder's own type; an untyped placeholder is a content ("obj") placeholder. */
function placeholderOf(sp: XNode): Placeholder | undefined {
  const nvPr = kids(sp)
    .map((n) => child(n, "p:nvPr"))
    .find(Boolean);
  const ph = child(nvPr, "p:ph");
  if (!ph) return undefined;
  return { type: attr(ph, "type") ?? "obj", idx: attr(ph, "idx") };
}

const TITLE_TYPES = new Set(["title", "ctrTitle"]);
const FOOTER_TYPES = new Set(["dt", "ftr", "hdr", "sldNum"]);

/** Where an xfrm places its shape, if it says. */
function offsetOf(xfrm: XNode | undefined): Position | undefined {
  const off = child(xfrm, "a:off");
  const x = Number(attr(off, "x"));
  const y = Number(attr(off, "y"));
  return Number.isFinite(x) && Number.isFinite(y) && off ? { x, y } : undefined;
}

function shapeOffset(node: XNode): Position | undefined {
  const tag = tagOf(node);
  if (tag === "p:graphicFrame") return offsetOf(child(node, "p:xfrm"));
  if (tag === "p:grpSp") return offsetOf(path(node, "p:grpSpPr", "a:xfrm"));
  return offsetOf(path(node, "p:spPr", "a:xfrm"));
}

/** Positions of a layout's or master's placeholders, for slide placeholders that inherit theirs. */
interface PlaceholderPositions {
  byIdx: Map<string, Position>;
  byType: Map<string, Position>;
}

function placeholderPositions(root: XNode): PlaceholderPositions {
  const positions: PlaceholderPositions = { byIdx: new Map(), byType: new Map() };
  for (const sp of descendants(root, "p:sp")) {
    const ph = placeholderOf(sp);
    const pos = shapeOffset(sp);
    if (!ph || !pos) continue;
    if (ph.idx !== undefined && !positions.byIdx.has(ph.idx)) positions.byIdx.set(ph.idx, pos);
    if (!positions.byType.has(ph.type)) positions.byType.set(ph.type, pos);
  }
  return positions;
}

/** The master's placeholder a slide or layout placeholder of this type inherits from. */
function masterType(type: string): string {
  if (TITLE_TYPES.has(type)) return "title";
  if (FOOTER_TYPES.has(type)) return type;
  return "body";
}

function inheritedPosition(ph: Placeholder, layout?: PlaceholderPositions, master?: PlaceholderPositions) {
  const sameType = (positions?: PlaceholderPositions) =>
    positions?.byType.get(ph.type) ??
    (TITLE_TYPES.has(ph.type)
      ? (positions?.byType.get("title") ?? positions?.byType.get("ctrTitle"))
      : undefined);
  return (
    (ph.idx !== undefined ? layout?.byIdx.get(ph.idx) : undefined) ??
    sameType(layout) ??
    master?.byType.get(masterType(ph.type))
  );
}

// --- Text ---

/**
 * The paragraphs of a text body as lines: list levels indented by two spaces, bulleted paragraphs
 * prefixed "- ", auto-numbered ones "1. ". Paragraphs with no bullet property of their own are
 * bulleted when `bulletByDefault` (content placeholders, whose master styles bullet them).
 */
function paragraphLines(txBody: XNode | undefined, bulletByDefault: boolean): string[] {
  const lines: string[] = [];
  const counters: (number | undefined)[] = [];
  for (const p of kids(txBody)) {
    if (tagOf(p) !== "a:p") continue;
    const pPr = child(p, "a:pPr");
    const level = Math.min(Math.max(Number(attr(pPr, "lvl") ?? 0) || 0, 0), 8);
    let text = "";
    for (const run of kids(p)) {
      const tag = tagOf(run);
      if (tag === "a:r" || tag === "a:fld") text += textContent(child(run, "a:t") ?? {});
      else if (tag === "a:br") text += "\n";
    }
    const parts = text
      .replace(/\v/g, "\n")
      .split("\n")
      .map((l) => l.replace(/\s+/g, " ").trim())
      .filter(Boolean);
    counters.length = level + 1;
    if (parts.length === 0) continue;
    const autoNum = child(pPr, "a:buAutoNum");
    let marker = "";
    if (autoNum) {
      const start = Number(attr(autoNum, "startAt") ?? 1) || 1;
      counters[level] = (counters[level] ?? start - 1) + 1;
      marker = `${counters[level]}. `;
    } else {
      counters[level] = undefined;
      if (child(pPr, "a:buChar") || (bulletByDefault && !child(pPr, "a:buNone"))) marker = "- ";
    }
    const indent = "  ".repeat(level);
    lines.push(`${indent}${marker}${parts[0]}`);
    for (const more of parts.slice(1)) lines.push(`${indent}${" ".repeat(marker.length)}${more}`);
  }
  return lines;
}

/** Table rows as lines of " | "-separated cells; cells covered by a merge are skipped. */
function tableLines(tbl: XNode): string[] {
  const lines: string[] = [];
  for (const tr of kids(tbl)) {
    if (tagOf(tr) !== "a:tr") continue;
    const cells: string[] = [];
    for (const tc of kids(tr)) {
      if (tagOf(tc) !== "a:tc" || attr(tc, "hMerge") === "1" || attr(tc, "vMerge") === "1") continue;
      cells.push(paragraphLines(child(tc, "a:txBody"), false).join(" "));
    }
    if (cells.some(Boolean)) lines.push(cells.join(" | "));
  }
  return lines;
}

interface Block {
  kind: "title" | "content" | "footer";
  position: Position | undefined;
  text: string;
}

interface SlideContext {
  zip: ZipArchive;
  rels: Map<string, Relationship>;
  layout?: PlaceholderPositions;
  master?: PlaceholderPositions;
  /** Rows of shapes whose tops are closer than this (EMU) are read left to right. */
  rowTolerance: number;
}

/** SmartArt keeps its text in a separate data part: each node's text as a "- " line. */
async function diagramLines(frame: XNode, ctx: SlideContext): Promise<string[]> {
  const relIds = descendants(frame, "dgm:relIds")[0];
  const dataRel = ctx.rels.get(attr(relIds, "r:dm") ?? "");
  if (!dataRel?.type.endsWith(REL_DIAGRAM_DATA) || !ctx.zip.file(dataRel.target)) return [];
  const data = await readXml(ctx.zip, dataRel.target, "a SmartArt diagram");
  const lines: string[] = [];
  for (const pt of descendants(data, "dgm:pt")) {
    const type = attr(pt, "type") ?? "node";
    if (type !== "node") continue;
    const text = paragraphLines(child(pt, "dgm:t"), false).join(" ");
    if (text) lines.push(`- ${text}`);
  }
  return lines;
}

/** The text blocks of a shape tree (a slide's, or a group's), in reading order. */
async function treeBlocks(tree: XNode, ctx: SlideContext): Promise<Block[]> {
  const blocks: Block[] = [];
  const visit = async (nodes: XNode[]) => {
    for (const node of nodes) {
      const tag = tagOf(node);
      if (tag === "mc:AlternateContent") {
        const choice = child(node, "mc:Choice");
        const before = blocks.length;
        await visit(kids(choice));
        if (blocks.length === before) await visit(kids(child(node, "mc:Fallback")));
      } else if (tag === "p:sp") {
        const ph = placeholderOf(node);
        const kind =
          ph && TITLE_TYPES.has(ph.type) ? "title" : ph && FOOTER_TYPES.has(ph.type) ? "footer" : "content";
        if (ph?.type === "sldNum") continue; // just the slide's number
        const bulleted = kind === "content" && ph !== undefined && ph.type !== "subTitle";
        const text = paragraphLines(child(node, "p:txBody"), bulleted).join("\n");
        const position =
          shapeOffset(node) ?? (ph ? inheritedPosition(ph, ctx.layout, ctx.master) : undefined);
        if (text) blocks.push({ kind, position, text });
      } else if (tag === "p:graphicFrame") {
        const data = path(node, "a:graphic", "a:graphicData");
        const tbl = child(data, "a:tbl");
        const lines = tbl ? tableLines(tbl) : await diagramLines(node, ctx);
        if (lines.length)
          blocks.push({ kind: "content", position: shapeOffset(node), text: lines.join("\n") });
      } else if (tag === "p:grpSp") {
        const inner = await treeBlocks(node, ctx);
        const text = inner.map((b) => b.text).join("\n\n");
        if (text) blocks.push({ kind: "content", position: shapeOffset(node), text });
      }
    }
  };
  await visit(kids(tree));
  return readingOrder(blocks, ctx.rowTolerance);
}

/**
 * Titles first, footers (date, footer text) last; everything else top to bottom in rows, each row
 * left to right. Shapes whose position is unknown keep their document order after the placed ones.
 */
function readingOrder(blocks: Block[], tolerance: number): Block[] {
  const placed = blocks
    .filter((b) => b.kind === "content" && b.position)
    .sort((a, b) => (a.position?.y ?? 0) - (b.position?.y ?? 0));
  const rows: Block[][] = [];
  for (const block of placed) {
    const row = rows[rows.length - 1];
    const top = row?.[0]?.position?.y;
    if (row && top !== undefined && (block.position?.y ?? 0) - top < tolerance) row.push(block);
    else rows.push([block]);
  }
  const content = rows.flatMap((row) => row.sort((a, b) => (a.position?.x ?? 0) - (b.position?.x ?? 0)));
  return [
    ...blocks.filter((b) => b.kind === "title"),
    ...content,
    ...blocks.filter((b) => b.kind === "content" && !b.position),
    ...blocks.filter((b) => b.kind === "footer"),
  ];
}

/** The speaker notes' text: the notes page's body placeholder (not the slide image, number or header). */
function notesText(root: XNode): string {
  const tree = path(root, "p:cSld", "p:spTree");
  const lines: string[] = [];
  for (const sp of tree ? descendants(tree, "p:sp") : []) {
    const ph = placeholderOf(sp);
    if (ph && ph.type !== "body" && ph.type !== "obj") continue;
    lines.push(...paragraphLines(child(sp, "p:txBody"), false));
  }
  return lines.join("\n");
}

/** The slide parts in presentation order, via p:sldIdLst and the presentation's relationships. */
async function slideParts(zip: ZipArchive, presentationPart: string, presentation: XNode): Promise<string[]> {
  const rels = await readRels(zip, presentationPart);
  const parts: string[] = [];
  for (const sldId of kids(child(presentation, "p:sldIdLst"))) {
    if (tagOf(sldId) !== "p:sldId") continue;
    const rel = rels.get(attr(sldId, "r:id") ?? "");
    if (!rel?.type.endsWith(REL_SLIDE)) {
      throw new UnprocessableContentError(
        `the presentation is damaged: slide ${parts.length + 1} points to a missing relationship (${attr(sldId, "r:id")})`,
      );
    }
    parts.push(rel.target);
  }
  return parts;
}

async function presentationPartOf(zip: ZipArchive): Promise<string> {
  const rels = await readRels(zip, "");
  const target = relOfType(rels, REL_OFFICE_DOCUMENT)?.target;
  if (target && zip.file(target)) return target;
  if (zip.file("ppt/presentation.xml")) return "ppt/presentation.xml";
  throw new UnprocessableContentError(
    "the file is a zip archive but not a .pptx presentation (no ppt/presentation.xml)",
  );
}

/**
 * A .pptx file: one segment per slide (`slide` 1-based in presentation order; slides with no text are
 * left out), and one per slide with speaker notes (`source: "notes"`). A slide's text starts with its
 * title, then its text boxes and tables top to bottom, left to right; table rows are lines of
 * " | "-separated cells. A presentation with no text yields no segments; a file that is not a readable
 * .pptx (not a zip, no presentation part, a missing or malformed slide) is UnprocessableContentError.
 */
export const extractPptx: Extractor = async (
  input: ExtractInput,
  ctx: ExtractContext,
): Promise<ExtractResult> => {
  ctx.signal.throwIfAborted();
  const zip = await openOfficeZip(input.bytes, ".pptx");
  const presentationPart = await presentationPartOf(zip);
  const presentation = await readXml(zip, presentationPart, "the presentation part");
  const slides = await slideParts(zip, presentationPart, presentation);
  const slideHeight = Number(attr(child(presentation, "p:sldSz"), "cy")) || 6858000;
  const core = await readCoreProperties(zip);

  const layouts = new Map<string, Promise<PlaceholderPositions>>();
  const positionsOf = (part: string | undefined, what: string) => {
    if (!part || !zip.file(part)) return Promise.resolve(undefined);
    let cached = layouts.get(part);
    if (!cached) {
      cached = readXml(zip, part, what).then(placeholderPositions);
      layouts.set(part, cached);
    }
    return cached;
  };

  const segments: Segment[] = [];
  let title: string | null = null;
  let hidden = 0;
  let chars = 0;
  let truncated = false;
  for (const [i, part] of slides.entries()) {
    // The document's budget is spent: the slides after this would be read for nothing.
    if (ctx.maxChars !== undefined && chars >= ctx.maxChars) {
      truncated = true;
      break;
    }
    ctx.signal.throwIfAborted();
    ctx.heartbeat({ slide: i + 1, of: slides.length });
    const number = i + 1;
    const slide = await readXml(zip, part, `slide ${number}`);
    if (attr(slide, "show") === "0") hidden++;
    const rels = await readRels(zip, part);
    const layoutPart = relOfType(rels, REL_LAYOUT)?.target;
    const masterPart = layoutPart
      ? relOfType(await readRels(zip, layoutPart), REL_MASTER)?.target
      : undefined;
    const tree = path(slide, "p:cSld", "p:spTree");
    const blocks = tree
      ? await treeBlocks(tree, {
          zip,
          rels,
          layout: await positionsOf(layoutPart, "a slide layout"),
          master: await positionsOf(masterPart, "a slide master"),
          rowTolerance: slideHeight / 20,
        })
      : [];
    if (number === 1) {
      const titleBlock = blocks.find((b) => b.kind === "title");
      if (titleBlock) title = titleBlock.text.replace(/\s*\n\s*/g, " ");
    }
    const text = blocks.map((b) => b.text).join("\n\n");
    if (text) segments.push({ text, slide: number });
    chars += text.length;

    const notesPart = relOfType(rels, REL_NOTES)?.target;
    if (notesPart && zip.file(notesPart)) {
      const notes = notesText(await readXml(zip, notesPart, `the notes of slide ${number}`));
      if (notes) segments.push({ text: notes, slide: number, source: "notes" });
      chars += notes.length;
    }
  }

  const metadata: ScalarMetadata = { ...core, slides: slides.length };
  if (hidden) metadata.hiddenSlides = hidden;
  const coreTitle = typeof core.title === "string" ? core.title : null;
  return { type: "pptx", title: title ?? coreTitle, segments, metadata, ...(truncated ? { truncated } : {}) };
};
