/**
 * CMU PocketSphinx, the fallback offline engine: Debian's `pocketsphinx` (pocketsphinx_continuous) with the
 * `pocketsphinx-en-us` acoustic model, language model and dictionary. English only and far less accurate than
 * Whisper, but it needs nothing beyond two apt packages.
 */
import { existsSync } from "node:fs";
import { open, readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  lastLines,
  parseWav,
  runProcess,
  SpawnError,
  tidySegments,
  wavFile,
  withWavPath,
} from "./support.ts";
import {
  type TranscribeContext,
  type Transcriber,
  TranscriberUnavailableError,
  type Transcript,
  type TranscriptSegment,
} from "./types.ts";

export interface PocketsphinxOptions {
  /** Default `pocketsphinx_continuous` on PATH. */
  binary?: string;
  /** Directory with the `en-us` acoustic model, `en-us.lm.bin` and `cmudict-en-us.dict`. */
  modelDir?: string;
}

export const DEBIAN_POCKETSPHINX_MODEL_DIR = "/usr/share/pocketsphinx/model/en-us";

/** `word start end posterior`, as printed with `-time yes`; alternatives carry a suffix like `can(2)`. */
const WORD_LINE = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (\S+)$/;

/** Turns `pocketsphinx_continuous -time yes` output into one segment per utterance. */
export function parsePocketsphinxOutput(stdout: string): TranscriptSegment[] {
  const segments: TranscriptSegment[] = [];
  let words: string[] = [];
  let start: number | undefined;
  let end = 0;
  const flush = () => {
    if (words.length > 0 && start !== undefined) {
      segments.push({ text: words.join(" "), startSeconds: start, endSeconds: end });
    }
    words = [];
    start = undefined;
  };
  for (const line of stdout.split("\n")) {
    const m = WORD_LINE.exec(line.trim());
    if (!m) continue;
    const [, token = "", from = "0", to = "0"] = m;
    if (token === "<s>") {
      flush();
      continue;
    }
    if (token === "</s>") {
      flush();
      continue;
    }
    // Fillers: <sil>, [NOISE], [SPEECH], ++GARBAGE++ ...
    if (/^(<.*>|\[.*\]|\+\+.*\+\+)$/.test(token)) continue;
    const word = token.replace(/\(\d+\)$/, "");
    if (start === undefined) start = Number(from);
    end = Number(to);
    words.push(word);
  }
  flush();
  return segments;
}

async function readHead(path: string, bytes: number): Promise<Buffer> {
  const file = await open(path, "r");
  try {
    const buf = Buffer.alloc(bytes);
    const { bytesRead } = await file.read(buf, 0, bytes, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/**
 * pocketsphinx_continuous skips exactly 44 bytes of header, so a WAV with extra chunks (ffmpeg's LIST/INFO)
 * would feed its metadata in as samples: such files are rewritten with a canonical header.
 */
async function canonicalWav(wav: Buffer | string): Promise<Buffer | string> {
  const head = typeof wav === "string" ? await readHead(wav, 64 * 1024) : wav;
  const layout = parseWav(head);
  if (!layout) throw new Error("PocketSphinx needs a PCM WAV file");
  if (layout.sampleRate !== 16_000 || layout.channels !== 1 || layout.bitsPerSample !== 16) {
    throw new Error(
      `PocketSphinx needs 16 kHz mono 16-bit WAV, got ${layout.sampleRate} Hz, ` +
        `${layout.channels} channel(s), ${layout.bitsPerSample}-bit`,
    );
  }
  if (layout.dataOffset === 44) return wav;
  const full = typeof wav === "string" ? await readFile(wav) : wav;
  const whole = parseWav(full) ?? layout;
  return wavFile(whole, whole.data);
}

export function createPocketsphinxTranscriber(options: PocketsphinxOptions = {}): Transcriber {
  const binary = options.binary ?? "pocketsphinx_continuous";
  const modelDir = options.modelDir ?? DEBIAN_POCKETSPHINX_MODEL_DIR;
  const hmm = join(modelDir, "en-us");
  const lm = join(modelDir, "en-us.lm.bin");
  const dict = join(modelDir, "cmudict-en-us.dict");

  return {
    name: "pocketsphinx:en-us",
    async transcribe(wav: Buffer | string, ctx: TranscribeContext): Promise<Transcript> {
      for (const file of [hmm, lm, dict]) {
        if (!existsSync(file)) {
          throw new TranscriberUnavailableError(
            `PocketSphinx model file ${file} is missing: run scripts/setup-speech.sh (apt pocketsphinx-en-us)`,
          );
        }
      }
      return withWavPath(await canonicalWav(wav), async (audio) => {
        let result: Awaited<ReturnType<typeof runProcess>>;
        try {
          result = await runProcess(
            binary,
            ["-infile", audio, "-hmm", hmm, "-lm", lm, "-dict", dict, "-time", "yes", "-logfn", "/dev/null"],
            {
              signal: ctx.signal,
              heartbeat: ctx.heartbeat,
              heartbeatDetails: { step: "transcribe", engine: "pocketsphinx" },
              onStdoutLine: () => {},
            },
          );
        } catch (err) {
          if (err instanceof SpawnError) {
            throw new TranscriberUnavailableError(`PocketSphinx cannot start: ${err.message}`);
          }
          throw err;
        }
        if (result.code !== 0) {
          throw new Error(
            `PocketSphinx failed (exit ${result.code}): ${lastLines(result.stderr) || "no output"}`,
          );
        }
        const segments = tidySegments(parsePocketsphinxOutput(result.stdout));
        return segments.length > 0 ? { segments, language: "en" } : { segments };
      });
    },
  };
}
