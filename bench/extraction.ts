// Extraction on the real fixtures: time per file and type, OCR accuracy against reference text, and
// transcription word accuracy on jfk.wav, for every speech engine installed here.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { detectContentType } from "../pipeline/extract/detect.ts";
import { createMediaExtractors } from "../pipeline/extract/media.ts";
import { closeSharedOcr } from "../pipeline/extract/ocr.ts";
import { threadExtractors } from "../pipeline/extract/registry.ts";
import type { ExtractResult } from "../pipeline/extract/types.ts";
import { segmentsToText } from "../pipeline/extract/types.ts";
import { createTranscriber, type TranscriberEngine } from "../pipeline/transcribe/index.ts";
import { wordAccuracy, wordRecall } from "../pipeline/word-accuracy.ts";
import {
  type ExtractionResult,
  type FileTiming,
  JFK,
  type OcrAccuracy,
  type SpeechAccuracy,
} from "./lib/extraction-report.ts";
import { log } from "./lib/progress.ts";
import { type Summary, summarize } from "./lib/stats.ts";

export type { ExtractionResult, FileTiming, OcrAccuracy, SpeechAccuracy };

export const FIXTURES_DIR =
  process.env.BENCH_FIXTURES_DIR ?? path.resolve(import.meta.dirname, "../../shared/fixtures");

/** Images whose words are known from another fixture: the same page as a PDF with a text layer. */
const OCR_REFERENCES: { image: string; pdf: string; page: number }[] = [
  { image: "image/DA-1p.png", pdf: "pdf/DA-1p.pdf", page: 1 },
  { image: "image/layout-parser-paper-fast.jpg", pdf: "pdf/copy-protected.pdf", page: 1 },
];

async function timed<T>(repeats: number, fn: () => Promise<T>): Promise<{ value: T; ms: Summary }> {
  const times: number[] = [];
  let value: T | undefined;
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    value = await fn();
    times.push(performance.now() - t0);
  }
  return { value: value as T, ms: summarize(times) };
}

export async function runExtractionBench(opts: { repeats: number }): Promise<ExtractionResult> {
  const ctx = { heartbeat: () => {}, signal: new AbortController().signal };
  const extractors = threadExtractors();
  const unavailable: string[] = [];
  const engines: TranscriberEngine[] = ["whisper", "pocketsphinx"];
  const media = createMediaExtractors({ transcriber: createTranscriber({ engine: "whisper" }) });
  // Warm the OCR worker and the PDF library so the first file does not carry their start-up.
  await extractors.ocrText(readFileSync(path.join(FIXTURES_DIR, "image/DA-1p.png")));

  const files: FileTiming[] = [];
  const folders = readdirSync(FIXTURES_DIR, { withFileTypes: true }).filter((d) => d.isDirectory());
  for (const folder of folders) {
    for (const name of readdirSync(path.join(FIXTURES_DIR, folder.name)).sort()) {
      const file = `${folder.name}/${name}`;
      const bytes = readFileSync(path.join(FIXTURES_DIR, file));
      const detected = await detectContentType(bytes, { filename: name });
      const type = detected.type;
      if (!type) {
        files.push({ file, type: "unsupported", outcome: "refused", chars: 0, ms: summarize([]) });
        continue;
      }
      const extractor =
        type === "audio" ? media.extractAudio : type === "video" ? media.extractVideo : extractors[type];
      if (!extractor) continue;
      let outcome: FileTiming["outcome"] = "text";
      let chars = 0;
      const repeats = type === "audio" || type === "video" ? 1 : opts.repeats;
      const result = await timed(repeats, async () => {
        try {
          return await extractor({ bytes, filename: name, mimeType: detected.mime }, ctx);
        } catch {
          return undefined;
        }
      });
      const extracted = result.value as ExtractResult | undefined;
      if (!extracted) outcome = "refused";
      else {
        chars = segmentsToText(extracted.segments).length;
        if (!chars) outcome = "no text";
      }
      files.push({ file, type, outcome, chars, ms: result.ms });
      log(`extraction: ${file} ${type} ${outcome} ${result.ms.p50.toFixed(0)} ms`);
    }
  }

  const byTypeMap = new Map<string, number[]>();
  for (const f of files.filter((f) => f.outcome === "text")) {
    byTypeMap.set(f.type, [...(byTypeMap.get(f.type) ?? []), f.ms.p50]);
  }
  const byType = [...byTypeMap.entries()].map(([type, times]) => ({
    type,
    files: times.length,
    ms: summarize(times),
  }));

  const ocr: OcrAccuracy[] = [];
  for (const ref of OCR_REFERENCES) {
    const pdf = await extractors.pdf?.({ bytes: readFileSync(path.join(FIXTURES_DIR, ref.pdf)) }, ctx);
    const reference = pdf?.segments.find((s) => s.page === ref.page)?.text ?? "";
    const image = await extractors.image?.({ bytes: readFileSync(path.join(FIXTURES_DIR, ref.image)) }, ctx);
    const text = image ? segmentsToText(image.segments) : "";
    ocr.push({
      image: ref.image,
      reference: `${ref.pdf} page ${ref.page} (text layer)`,
      wordRecall: wordRecall(reference, text),
      wordAccuracy: wordAccuracy(reference, text),
    });
  }

  const speech: SpeechAccuracy[] = [];
  for (const engine of engines) {
    const extract = createMediaExtractors({ transcriber: createTranscriber({ engine }) }).extractAudio;
    for (const file of ["audio/jfk.wav", "audio/jfk.mp3"]) {
      try {
        const bytes = readFileSync(path.join(FIXTURES_DIR, file));
        const run = await timed(3, () => extract({ bytes }, ctx));
        const transcript = segmentsToText(run.value.segments).replace(/\s+/g, " ");
        speech.push({
          engine,
          file,
          wordAccuracy: wordAccuracy(JFK, transcript),
          transcript,
          ms: run.ms,
          audioSeconds: Number(run.value.metadata.durationSeconds ?? 11),
        });
        log(`speech: ${engine} ${file} accuracy ${wordAccuracy(JFK, transcript).toFixed(3)}`);
      } catch (error) {
        unavailable.push(`${engine}: ${(error as Error).message.split("\n")[0]}`);
        break;
      }
    }
  }
  await closeSharedOcr();
  return { repeats: opts.repeats, files, byType, ocr, speech, unavailable };
}
