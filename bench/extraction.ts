// Extraction on the real fixtures: time per file and type, OCR accuracy against reference text, and
// transcription word accuracy on jfk.wav, for every speech engine installed here.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { detectContentType } from "../pipeline/extract/detect.ts";
import { createMediaExtractors } from "../pipeline/extract/media.ts";
import { closeSharedOcr } from "../pipeline/extract/ocr.ts";
import { threadExtractors } from "../pipeline/extract/registry.ts";
import type { ContentType, ExtractResult } from "../pipeline/extract/types.ts";
import { segmentsToText } from "../pipeline/extract/types.ts";
import { createTranscriber, type TranscriberEngine } from "../pipeline/transcribe/index.ts";
import { wordAccuracy, wordRecall } from "../pipeline/word-accuracy.ts";
import { log } from "./lib/progress.ts";
import { type Summary, summarize } from "./lib/stats.ts";

export const FIXTURES_DIR =
  process.env.BENCH_FIXTURES_DIR ?? path.resolve(import.meta.dirname, "../../shared/fixtures");

/** What jfk.wav says (fixtures README). */
const JFK =
  "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.";

/** Images whose words are known from another fixture: the same page as a PDF with a text layer. */
const OCR_REFERENCES: { image: string; pdf: string; page: number }[] = [
  { image: "image/DA-1p.png", pdf: "pdf/DA-1p.pdf", page: 1 },
  { image: "image/layout-parser-paper-fast.jpg", pdf: "pdf/copy-protected.pdf", page: 1 },
];

export interface FileTiming {
  file: string;
  type: ContentType | "unsupported";
  outcome: "text" | "no text" | "refused";
  chars: number;
  ms: Summary;
}

export interface OcrAccuracy {
  image: string;
  reference: string;
  wordRecall: number;
  wordAccuracy: number;
}

export interface SpeechAccuracy {
  engine: string;
  file: string;
  wordAccuracy: number;
  transcript: string;
  ms: Summary;
  audioSeconds: number;
}

export interface ExtractionResult {
  repeats: number;
  files: FileTiming[];
  byType: { type: string; files: number; ms: Summary }[];
  ocr: OcrAccuracy[];
  speech: SpeechAccuracy[];
  unavailable: string[];
}

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

const pct = (v: number) => `${(v * 100).toFixed(1)} %`;
const msText = (v: number) =>
  v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(v >= 100 ? 0 : 1)} ms`;

/** The "Extraction" section of docs/benchmarks.md. */
export function renderExtraction(r: ExtractionResult | undefined): string[] {
  if (!r) return ["## Extraction", "", "Skipped in this run (`--skip-extraction`).", ""];
  const lines = [
    "## Extraction",
    "",
    `Every file of \`shared/fixtures\`, detected from its bytes and run through its extractor directly (no queue, no store), ${r.repeats} runs each (audio and video once), median wall time. OCR runs in tesseract.js's worker thread, transcription in a subprocess; the OCR worker was warmed up first.`,
    "",
    "| Type | Files with text | Median of per-file medians | p95 | Slowest |",
    "|---|---|---|---|---|",
    ...r.byType.map(
      (t) => `| ${t.type} | ${t.files} | ${msText(t.ms.p50)} | ${msText(t.ms.p95)} | ${msText(t.ms.max)} |`,
    ),
    "",
    "<details><summary>Per file</summary>",
    "",
    "| File | Type | Outcome | Characters | Median |",
    "|---|---|---|---|---|",
    ...r.files.map(
      (f) =>
        `| ${f.file} | ${f.type} | ${f.outcome} | ${f.chars} | ${Number.isFinite(f.ms.p50) ? msText(f.ms.p50) : "n/a"} |`,
    ),
    "",
    "</details>",
    "",
    "### OCR accuracy",
    "",
    "The image fixtures below show the same page as a PDF fixture with a text layer; that text layer is the reference. Word accuracy is 1 − word error rate (order matters, so multi-column layouts read in a different order lose points); word recall is the share of the reference's distinct words found anywhere.",
    "",
    "| Image | Reference | Word accuracy | Word recall |",
    "|---|---|---|---|",
    ...r.ocr.map((o) => `| ${o.image} | ${o.reference} | ${pct(o.wordAccuracy)} | ${pct(o.wordRecall)} |`),
    "",
    "### Transcription accuracy",
    "",
    `Reference: "${JFK}" (fixtures README). Word accuracy = 1 − WER after lower-casing and removing punctuation; time is the whole \`extractAudio\` (ffprobe, ffmpeg to 16 kHz WAV, transcription), median of 3.`,
    "",
    "| Engine | File | Word accuracy | Time | Audio | Transcript |",
    "|---|---|---|---|---|---|",
    ...r.speech.map(
      (s) =>
        `| ${s.engine} | ${s.file} | ${pct(s.wordAccuracy)} | ${msText(s.ms.p50)} | ${s.audioSeconds.toFixed(1)} s | ${s.transcript.replace(/\|/g, "\\|")} |`,
    ),
    "",
    ...(r.unavailable.length ? [`Not measured: ${r.unavailable.join("; ")}`, ""] : []),
  ];
  return lines;
}
