// The "Extraction" section of docs/benchmarks.md (bench/extraction.ts measures it).

import type { ContentType } from "../../pipeline/extract/types.ts";
import type { Summary } from "./stats.ts";

/** What bench/extraction.ts measures, and this section renders. */
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

export const EXTRACTION_HEADING = "## Extraction";

/** What jfk.wav says (fixtures README): the reference bench/extraction.ts scores transcripts against. */
export const JFK =
  "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.";

const pct = (v: number) => `${(v * 100).toFixed(1)} %`;
const msText = (v: number) =>
  v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(v >= 100 ? 0 : 1)} ms`;

/** The "Extraction" section of docs/benchmarks.md. */
export function renderExtraction(r: ExtractionResult): string[] {
  const lines = [
    EXTRACTION_HEADING,
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
