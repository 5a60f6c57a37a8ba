/**
 * PDF extraction with pdf.js (`pdfjs-dist` legacy build, pinned to 5.6.x: the last line that runs on
 * Node 20; 5.7+ needs Node 22). One segment per page, from the page's text layer; a page whose text
 * layer is (nearly) empty is rendered and read by OCR instead.
 *
 * Rendering uses pdf.js's own Node canvas, `@napi-rs/canvas` (Skia, prebuilt binaries shipped inside
 * its npm package: installs offline, no system libraries, no subprocess). Chosen over Debian's
 * `pdftoppm`: one engine parses, extracts and renders (a page that pdf.js can read, it can draw),
 * nothing to install outside npm, and no per-page process to spawn and clean up.
 *
 * Offline: fonts, CMaps, ICC profiles and the JPX/colour WASM decoders are read from pdfjs-dist's own
 * folders on disk; pdf.js in Node runs its parser in-process (no worker script to load). Note that
 * parsing and rendering therefore run on the calling thread; OCR runs in tesseract's worker thread.
 *
 * Caps, so a hostile PDF fails with a reason instead of taking the machine's memory: every compressed
 * stream is checked before pdf.js opens the file (pdf-streams.ts, MAX_PDF_STREAM_BYTES), images past
 * MAX_IMAGE_PIXELS are not decoded, and a document past MAX_PDF_PAGES pages or MAX_PDF_TEXT_CHARS
 * characters of text is refused.
 */
import { createRequire } from "node:module";
import path from "node:path";
import { getDocument, type PDFDocumentProxy, type PDFPageProxy } from "pdfjs-dist/legacy/build/pdf.mjs";
import { MAX_IMAGE_PIXELS, type Ocr, sharedOcr } from "./ocr.ts";
import { findStreamBomb } from "./pdf-streams.ts";
import {
  type ExtractContext,
  type Extractor,
  type ScalarMetadata,
  type Segment,
  UnprocessableContentError,
} from "./types.ts";

const require = createRequire(import.meta.url);
const PDFJS_DIR = path.dirname(require.resolve("pdfjs-dist/package.json"));
const asset = (dir: string) => `${path.join(PDFJS_DIR, dir)}${path.sep}`;

/** A page whose text layer has fewer non-blank characters than this is also read by OCR. */
export const MIN_TEXT_LAYER_CHARS = 50;
/** OCR renders at 300 dpi by default (tesseract's sweet spot), fewer if the page is huge. */
const OCR_DPI = 300;
const MAX_RENDER_PIXELS = 16_000_000;
const MiB = 1024 * 1024;
/** Most bytes one compressed stream may inflate to (a 60-megapixel CMYK image fits). */
export const MAX_PDF_STREAM_BYTES = 256 * MiB;
/** More pages than this is refused (each page is read, and OCR'd when it has no text layer). */
export const MAX_PDF_PAGES = 10_000;
/** Most characters of text taken from one PDF, all pages together. */
export const MAX_PDF_TEXT_CHARS = 50_000_000;

/** pdf.js error classes that mean the file itself is at fault (they cross the worker boundary by name). */
const PDF_FILE_ERRORS = new Set([
  "InvalidPDFException",
  "FormatError",
  "UnknownErrorException",
  "MissingPDFException",
]);

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : "";
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function toUnprocessable(err: unknown): UnprocessableContentError | null {
  const name = errorName(err);
  if (name === "PasswordException") {
    return new UnprocessableContentError(
      "the PDF is password-protected (encrypted); it cannot be read without the password",
    );
  }
  if (PDF_FILE_ERRORS.has(name)) {
    return new UnprocessableContentError(
      `the PDF is damaged or not a valid PDF (${errorMessage(err).replace(/\.$/, "")})`,
    );
  }
  return null;
}

function throwIfAborted(signal: AbortSignal) {
  if (signal.aborted) throw signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

function nonBlankLength(text: string): number {
  return text.replace(/\s+/g, "").length;
}

/** The page's text layer in content order, one line per text line. */
async function pageText(page: PDFPageProxy): Promise<string> {
  const content = await page.getTextContent();
  let text = "";
  for (const item of content.items) {
    if (!("str" in item)) continue;
    text += item.str;
    if (item.hasEOL) text += "\n";
  }
  return text
    .split("\n")
    .map((line) => line.replace(/[ \t\u00a0]+/g, " ").trim())
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

interface NodeCanvas {
  width: number;
  height: number;
  encode(format: "png"): Promise<Buffer>;
}

interface CanvasFactory {
  create(width: number, height: number): { canvas: NodeCanvas; context: CanvasRenderingContext2D };
}

/** Renders a page on a white background and returns it as PNG. */
async function renderPage(doc: PDFDocumentProxy, page: PDFPageProxy, dpi: number): Promise<Buffer> {
  const base = page.getViewport({ scale: 1 });
  const fit = Math.sqrt(MAX_RENDER_PIXELS / (base.width * base.height));
  const viewport = page.getViewport({ scale: Math.min(dpi / 72, fit) });
  const factory = doc.canvasFactory as CanvasFactory;
  const { canvas, context } = factory.create(Math.ceil(viewport.width), Math.ceil(viewport.height));
  try {
    context.fillStyle = "#ffffff";
    context.fillRect(0, 0, canvas.width, canvas.height);
    await page.render({ canvas: canvas as unknown as HTMLCanvasElement, canvasContext: context, viewport })
      .promise;
    return await canvas.encode("png");
  } finally {
    // Release the pixel buffer now rather than at the next GC.
    canvas.width = 0;
    canvas.height = 0;
  }
}

async function openPdf(bytes: Buffer, signal: AbortSignal): Promise<PDFDocumentProxy> {
  if (bytes.length === 0) throw new UnprocessableContentError("the PDF file is empty");
  const bomb = await findStreamBomb(bytes, MAX_PDF_STREAM_BYTES, signal);
  if (bomb !== null) {
    throw new UnprocessableContentError(
      `the PDF has a compressed stream (at byte ${bomb}) that inflates past the ${MAX_PDF_STREAM_BYTES / MiB} MiB cap per stream`,
    );
  }
  const task = getDocument({
    // pdf.js may take over the buffer it is given: hand it a copy.
    data: new Uint8Array(bytes),
    standardFontDataUrl: asset("standard_fonts"),
    cMapUrl: asset("cmaps"),
    cMapPacked: true,
    iccUrl: asset("iccs"),
    wasmUrl: asset("wasm"),
    useWorkerFetch: false,
    isEvalSupported: false,
    useSystemFonts: false,
    enableXfa: false,
    // Larger images are not decoded (a page that needs one for OCR renders without it).
    maxImageSize: MAX_IMAGE_PIXELS,
    verbosity: 0,
  });
  try {
    return await task.promise;
  } catch (err) {
    await task.destroy().catch(() => {});
    throw toUnprocessable(err) ?? err;
  }
}

function infoString(info: unknown, key: string): string | null {
  const value = (info as Record<string, unknown> | null)?.[key];
  if (typeof value !== "string") return null;
  const trimmed = value.replace(/\s+/g, " ").trim();
  return trimmed || null;
}

async function readTitleAndAuthor(
  doc: PDFDocumentProxy,
): Promise<{ title: string | null; author: string | null }> {
  try {
    const { info, metadata } = await doc.getMetadata();
    const xmpTitle = metadata?.get("dc:title");
    const title =
      infoString(info, "Title") ?? (typeof xmpTitle === "string" && xmpTitle.trim() ? xmpTitle.trim() : null);
    return { title, author: infoString(info, "Author") };
  } catch {
    // A broken info dictionary is no reason to lose the text.
    return { title: null, author: null };
  }
}

export interface PdfExtractorOptions {
  /** The OCR engine for pages without a text layer; the process-wide shared one by default. */
  ocr?: () => Ocr;
  /**
   * OCR every page and keep the OCR text, even where a text layer exists: for PDFs whose text layer
   * is garbage (broken font encodings, a poor OCR layer from the scanner).
   */
  forceOcr?: boolean;
  /** Resolution pages are rendered at for OCR (default 300). */
  ocrDpi?: number;
}

export function createPdfExtractor({
  ocr = sharedOcr,
  forceOcr = false,
  ocrDpi = OCR_DPI,
}: PdfExtractorOptions = {}): Extractor {
  return async (input, ctx: ExtractContext) => {
    throwIfAborted(ctx.signal);
    const doc = await openPdf(input.bytes, ctx.signal);
    try {
      const { title, author } = await readTitleAndAuthor(doc);
      const pages = doc.numPages;
      if (pages > MAX_PDF_PAGES) {
        throw new UnprocessableContentError(
          `the PDF has ${pages} pages, past the cap of ${MAX_PDF_PAGES} pages per document`,
        );
      }
      const segments: Segment[] = [];
      let chars = 0;
      const keep = (segment: Segment) => {
        chars += segment.text.length;
        if (chars > MAX_PDF_TEXT_CHARS) {
          throw new UnprocessableContentError(
            `the PDF's text runs past the cap of ${MAX_PDF_TEXT_CHARS.toLocaleString("en-US")} characters per document (at page ${segment.page})`,
          );
        }
        segments.push(segment);
      };
      let ocrPages = 0;
      let failedPages = 0;
      let firstFailure: unknown = null;
      let truncated = false;
      for (let n = 1; n <= pages; n++) {
        // The document's budget is spent: the pages after this would be read (and OCR'd) for nothing.
        if (ctx.maxChars !== undefined && chars >= ctx.maxChars) {
          truncated = true;
          break;
        }
        throwIfAborted(ctx.signal);
        ctx.heartbeat({ page: n, pages });
        let page: PDFPageProxy | null = null;
        try {
          page = await doc.getPage(n);
          const text = await pageText(page);
          if (!forceOcr && nonBlankLength(text) >= MIN_TEXT_LAYER_CHARS) {
            keep({ page: n, text });
            continue;
          }
          throwIfAborted(ctx.signal);
          const png = await renderPage(doc, page, ocrDpi);
          throwIfAborted(ctx.signal);
          const read = await ocr().recognize(png, { signal: ctx.signal });
          const ocrText = read.text.trim();
          // Keep whichever has more text: a scan with a stray text stamp gets its OCR, while a short
          // page of real text keeps its exact text layer when OCR finds nothing more.
          if (forceOcr || nonBlankLength(ocrText) > nonBlankLength(text)) {
            keep({ page: n, source: "ocr", text: ocrText });
            ocrPages++;
          } else {
            keep({ page: n, text });
          }
        } catch (err) {
          // A damaged page loses its own text only; anything else (abort, OCR engine) stops the document.
          if (!toUnprocessable(err)) throw err;
          firstFailure ??= err;
          failedPages++;
          keep({ page: n, text: "" });
        } finally {
          page?.cleanup();
        }
      }
      if (pages > 0 && failedPages === pages) {
        throw (
          toUnprocessable(firstFailure) ?? new UnprocessableContentError("no page of the PDF could be read")
        );
      }
      const metadata: ScalarMetadata = { pages };
      if (author) metadata.author = author;
      if (ocrPages) metadata.ocrPages = ocrPages;
      if (failedPages) metadata.failedPages = failedPages;
      return { type: "pdf", title, segments, metadata, ...(truncated ? { truncated } : {}) };
    } finally {
      await doc.destroy().catch(() => {});
    }
  };
}

/** Extracts a PDF's text page by page (OCR for scanned pages, with the shared OCR engine). */
export const extractPdf: Extractor = createPdfExtractor();
