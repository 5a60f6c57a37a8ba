/**
 * Image extraction: OCR of PNG, JPEG, TIFF (every page), BMP, WebP and GIF (first frame).
 *
 * The format is detected from the bytes, never from the declared MIME type or the file name. sharp
 * (libvips) decodes everything but BMP, which bmp-ts decodes; tesseract.js itself cannot read TIFF
 * at all, and reads the others only if they are intact (see ocr.ts).
 *
 * An image without any readable text (a photo) is not an error here: it yields one segment with empty
 * text and `ocrConfidence: 0` (with what its EXIF says: when, with what camera and where it was taken),
 * and the pipeline decides: a document that is only such an image is kept by a description of what is
 * known about it (describe.ts), an attachment without text adds nothing to its mail.
 */
import { exifFacts } from "./exif.ts";
import { inspectImage, type Ocr, sharedOcr } from "./ocr.ts";
import {
  type ExtractContext,
  type Extractor,
  type ScalarMetadata,
  type Segment,
  UnprocessableContentError,
} from "./types.ts";

/** A TIFF with more pages than this is refused (each page is decoded and read by OCR on its own). */
export const MAX_IMAGE_PAGES = 1_000;

export interface ImageExtractorOptions {
  /** The OCR engine; the process-wide shared one by default. */
  ocr?: () => Ocr;
}

function throwIfAborted(signal: AbortSignal) {
  if (signal.aborted) throw signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

export function createImageExtractor({ ocr = sharedOcr }: ImageExtractorOptions = {}): Extractor {
  return async (input, ctx: ExtractContext) => {
    throwIfAborted(ctx.signal);
    const info = await inspectImage(input.bytes);
    // Only TIFF pages are separate documents pages; GIF and WebP frames are animation.
    const pages = info.format === "tiff" ? info.pages : 1;
    if (pages > MAX_IMAGE_PAGES) {
      throw new UnprocessableContentError(
        `the TIFF image has ${pages} pages, past the cap of ${MAX_IMAGE_PAGES} pages per image`,
      );
    }
    const segments: Segment[] = [];
    let confidenceSum = 0;
    for (let page = 0; page < pages; page++) {
      throwIfAborted(ctx.signal);
      ctx.heartbeat({ page: page + 1, pages });
      const read = await ocr().recognize(input.bytes, { page, signal: ctx.signal });
      const segment: Segment = { text: read.text.trim(), source: "ocr" };
      if (pages > 1) segment.page = page + 1;
      segments.push(segment);
      confidenceSum += read.confidence;
    }
    const metadata: ScalarMetadata = {
      width: info.width,
      height: info.height,
      format: info.format,
      ocrConfidence: Math.round(confidenceSum / pages),
      ...(info.exif ? exifFacts(info.exif) : {}),
    };
    if (pages > 1) metadata.pages = pages;
    return { type: "image", title: null, segments, metadata };
  };
}

/** Reads the text of an image by OCR, with the shared OCR engine. */
export const extractImage: Extractor = createImageExtractor();
