import { extractDocx } from "./docx.ts";
import { extractEmail } from "./email.ts";
import { extractHtml } from "./html.ts";
import { extractImage } from "./image.ts";
import { sharedOcr } from "./ocr.ts";
import { extractPdf } from "./pdf.ts";
import { extractPptx } from "./pptx.ts";
import { extractText } from "./text.ts";
import type { ContentType, Extractor } from "./types.ts";

/** Audio and video run ffmpeg and a transcriber as subprocesses; everything else is parsing in a CPU thread. */
export type ThreadContentType = Exclude<ContentType, "audio" | "video">;

const extractors: Record<ThreadContentType, Extractor> = {
  text: extractText,
  webpage: extractHtml,
  email: extractEmail,
  docx: extractDocx,
  pptx: extractPptx,
  pdf: extractPdf,
  image: extractImage,
};

/** The extractors a CPU worker thread runs, plus plain OCR for video keyframes. */
export function threadExtractors(): Partial<Record<ContentType, Extractor>> & {
  ocrText(image: Buffer): Promise<string>;
} {
  return { ...extractors, ocrText: async (image) => (await sharedOcr().recognize(image)).text };
}
