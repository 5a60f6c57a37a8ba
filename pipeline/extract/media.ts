/**
 * Audio and video extraction with Debian's ffmpeg/ffprobe as subprocesses:
 * probe (duration, codecs) → decode the first audio track to 16 kHz mono WAV → transcribe;
 * for video also a few evenly spaced frames → PNG → the injected OCR function.
 * Work happens in a private temp dir that is always removed; subprocesses die when `ctx.signal` aborts.
 */
import { existsSync } from "node:fs";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { lastLines, runProcess, SpawnError, withTempDir } from "../transcribe/support.ts";
import type { Transcriber } from "../transcribe/types.ts";
import {
  type ContentType,
  type ExtractContext,
  type ExtractInput,
  type Extractor,
  type ExtractResult,
  type ScalarMetadata,
  type Segment,
  UnprocessableContentError,
} from "./types.ts";

export interface MediaExtractorOptions {
  transcriber: Transcriber;
  /** Reads the text in a PNG image; without it video frames are not looked at. */
  ocr?: (png: Buffer) => Promise<string>;
  /** How many evenly spaced video frames to OCR. Default 3. */
  keyframes?: number;
  /** Default "ffmpeg" / "ffprobe" on PATH. */
  ffmpeg?: string;
  ffprobe?: string;
}

export interface MediaExtractors {
  extractAudio: Extractor;
  extractVideo: Extractor;
}

interface ProbeStream {
  index: number;
  codec_type?: string;
  codec_name?: string;
  sample_rate?: string;
  channels?: number;
  width?: number;
  height?: number;
  avg_frame_rate?: string;
  duration?: string;
  disposition?: { attached_pic?: number };
}

interface Probe {
  streams?: ProbeStream[];
  format?: { format_name?: string; duration?: string; bit_rate?: string; tags?: Record<string, string> };
}

/** 16 kHz, mono, 16-bit: 32,000 bytes a second after the 44-byte header (written with +bitexact). */
const WAV_BYTES_PER_SECOND = 32_000;
const WAV_HEADER = 44;
/** Demuxers that "succeed" on arbitrary text or bytes but are not media. */
const NOT_MEDIA_FORMATS = new Set(["tty", "txt", "data", "bin"]);

const round3 = (n: number) => Math.round(n * 1000) / 1000;

function positive(value: string | number | undefined): number | undefined {
  const n = typeof value === "number" ? value : Number.parseFloat(value ?? "");
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

function frameRate(value: string | undefined): number | undefined {
  const [num, den] = (value ?? "").split("/").map(Number);
  if (num === undefined || !Number.isFinite(num)) return undefined;
  const rate = den ? num / den : num;
  return Number.isFinite(rate) && rate > 0 ? Math.round(rate * 100) / 100 : undefined;
}

/** A safe extension from the declared filename: helps ffmpeg with formats that are hard to sniff. */
function extensionOf(filename: string | undefined): string {
  const m = /\.([a-z0-9]{1,8})$/i.exec(filename ?? "");
  return m?.[1] ? `.${m[1].toLowerCase()}` : "";
}

/** Evenly spaced frame times: the middles of `count` equal slices of the video. */
export function keyframeTimes(durationSeconds: number | undefined, count: number): number[] {
  if (count <= 0) return [];
  if (!durationSeconds) return [0];
  return Array.from({ length: count }, (_, i) => round3((durationSeconds * (i + 0.5)) / count));
}

export function createMediaExtractors(options: MediaExtractorOptions): MediaExtractors {
  const ffmpeg = options.ffmpeg ?? "ffmpeg";
  const ffprobe = options.ffprobe ?? "ffprobe";
  const keyframeCount = options.keyframes ?? 3;
  const { transcriber, ocr } = options;

  /** Runs an ffmpeg tool; a missing binary is an installation problem, not the file's. */
  async function tool(command: string, args: string[], ctx: ExtractContext, step: string) {
    try {
      return await runProcess(command, args, {
        signal: ctx.signal,
        heartbeat: ctx.heartbeat,
        heartbeatDetails: { step },
      });
    } catch (err) {
      if (err instanceof SpawnError) {
        throw new Error(`${command} is not installed (run scripts/setup-speech.sh): ${err.message}`);
      }
      throw err;
    }
  }

  /** ffmpeg's words, without our temp paths. */
  function reason(stderr: string, inputPath: string, displayName: string): string {
    // Drop ffmpeg's "[mp3 @ 0x55ad3c8ff180] " context prefixes: addresses mean nothing to a user.
    const cleaned = stderr
      .split(`${inputPath}: `)
      .join("")
      .split(inputPath)
      .join(displayName)
      .replace(/\[[^\]\n]* @ 0x[0-9a-f]+\] ?/g, "");
    const text = lastLines(cleaned).replace(/\s+/g, " ");
    return text.length > 300 ? `${text.slice(0, 297)}...` : text || "unknown error";
  }

  async function extract(kind: "audio" | "video", input: ExtractInput, ctx: ExtractContext) {
    const what = kind === "audio" ? "audio" : "video";
    if (input.bytes.length === 0) throw new UnprocessableContentError(`The ${what} file is empty.`);
    ctx.signal.throwIfAborted();

    return withTempDir("memory-media-", async (dir): Promise<ExtractResult> => {
      const inputPath = join(dir, `input${extensionOf(input.filename)}`);
      const displayName = input.filename ?? `the ${what} file`;
      await writeFile(inputPath, input.bytes);

      // 1. Probe.
      ctx.heartbeat({ step: "probe" });
      const probed = await tool(
        ffprobe,
        ["-v", "error", "-print_format", "json", "-show_format", "-show_streams", inputPath],
        ctx,
        "probe",
      );
      if (probed.code !== 0) {
        throw new UnprocessableContentError(
          `Cannot read this ${what} file: ${reason(probed.stderr, inputPath, displayName)}`,
        );
      }
      const probe = JSON.parse(probed.stdout || "{}") as Probe;
      const streams = probe.streams ?? [];
      const format = probe.format ?? {};
      const audio = streams.find((s) => s.codec_type === "audio");
      const video = streams.find((s) => s.codec_type === "video" && !s.disposition?.attached_pic);
      if (NOT_MEDIA_FORMATS.has(format.format_name ?? "") || (!audio && !video)) {
        throw new UnprocessableContentError(`This is not an audio or video file (no audio or video stream).`);
      }
      if (kind === "audio" && !audio) {
        throw new UnprocessableContentError("The file has no audio track to transcribe.");
      }

      const longestStream = Math.max(0, ...streams.map((s) => positive(s.duration) ?? 0));
      let duration = positive(format.duration) ?? positive(longestStream);

      const metadata: ScalarMetadata = {};
      if (format.format_name) metadata.container = format.format_name;
      const bitRate = positive(format.bit_rate);
      if (bitRate) metadata.bitRate = Math.round(bitRate);
      if (audio) {
        if (audio.codec_name) metadata.audioCodec = audio.codec_name;
        const rate = positive(audio.sample_rate);
        if (rate) metadata.sampleRate = rate;
        if (audio.channels) metadata.channels = audio.channels;
      }
      if (kind === "video" && video) {
        if (video.codec_name) metadata.videoCodec = video.codec_name;
        if (video.width) metadata.width = video.width;
        if (video.height) metadata.height = video.height;
        const fps = frameRate(video.avg_frame_rate);
        if (fps) metadata.frameRate = fps;
      }

      const segments: Segment[] = [];

      // 2. Audio track → 16 kHz mono WAV → transcript.
      if (audio) {
        const wavPath = join(dir, "audio.wav");
        ctx.heartbeat({ step: "decode" });
        const converted = await tool(
          ffmpeg,
          [
            ...["-nostdin", "-v", "error", "-i", inputPath, "-map", `0:${audio.index}`],
            ...["-vn", "-sn", "-dn", "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le"],
            ...["-map_metadata", "-1", "-fflags", "+bitexact", "-flags:a", "+bitexact", "-y", wavPath],
          ],
          ctx,
          "decode",
        );
        if (converted.code !== 0 || !existsSync(wavPath)) {
          throw new UnprocessableContentError(
            `Cannot decode the audio of this ${what} file: ${reason(converted.stderr, inputPath, displayName)}`,
          );
        }
        const pcmBytes = (await stat(wavPath)).size - WAV_HEADER;
        const decodedSeconds = Math.max(0, pcmBytes) / WAV_BYTES_PER_SECOND;
        duration ??= decodedSeconds > 0 ? decodedSeconds : undefined;
        if (pcmBytes > 0) {
          ctx.heartbeat({ step: "transcribe" });
          const transcript = await transcriber.transcribe(wavPath, ctx);
          for (const s of transcript.segments) {
            segments.push({ text: s.text, startSeconds: s.startSeconds, endSeconds: s.endSeconds });
          }
          if (transcript.language) metadata.language = transcript.language;
        }
        metadata.transcriber = transcriber.name;
      }

      // 3. Video frames → OCR.
      if (kind === "video" && video && ocr) {
        let previous: Segment | undefined;
        let read = 0;
        for (const [i, at] of keyframeTimes(duration, keyframeCount).entries()) {
          ctx.signal.throwIfAborted();
          ctx.heartbeat({ step: "keyframe", frame: i + 1 });
          const framePath = join(dir, `frame-${i}.png`);
          const grabbed = await tool(
            ffmpeg,
            [
              ...["-nostdin", "-v", "error", "-ss", String(at), "-i", inputPath, "-map", `0:${video.index}`],
              ...["-frames:v", "1", "-an", "-sn", "-dn", "-c:v", "png", "-f", "image2", "-y", framePath],
            ],
            ctx,
            "keyframe",
          );
          // Seeking to the very end of some streams yields no frame: skip it rather than fail the video.
          if (grabbed.code !== 0 || !existsSync(framePath)) continue;
          const text = (await ocr(await readFile(framePath))).replace(/[ \t]+/g, " ").trim();
          read++;
          ctx.signal.throwIfAborted();
          if (!/[\p{L}\p{N}]/u.test(text)) continue;
          // A slide that stays on screen is read once, spanning the frames that showed it.
          if (previous && previous.text === text) {
            previous.endSeconds = at;
            continue;
          }
          previous = { text, startSeconds: at, endSeconds: at, source: "ocr" };
          segments.push(previous);
        }
        metadata.keyframes = read;
      }

      if (duration !== undefined) metadata.durationSeconds = round3(duration);
      segments.sort((a, b) => (a.startSeconds ?? 0) - (b.startSeconds ?? 0));
      const type: ContentType = kind;
      const title = format.tags?.title ?? format.tags?.TITLE ?? null;
      return { type, title: title?.trim() || null, segments, metadata };
    });
  }

  return {
    extractAudio: (input, ctx) => extract("audio", input, ctx),
    extractVideo: (input, ctx) => extract("video", input, ctx),
  };
}
