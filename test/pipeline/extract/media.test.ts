import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createMediaExtractors, keyframeTimes } from "../../../pipeline/extract/media.ts";
import { type ExtractContext, UnprocessableContentError } from "../../../pipeline/extract/types.ts";
import { createTranscriber } from "../../../pipeline/transcribe/index.ts";
import { wordAccuracy, words } from "../../../pipeline/word-accuracy.ts";
import { FIXTURES_DIR } from "../../support/fixtures.ts";

// Needs scripts/setup-speech.sh (ffmpeg, ffprobe, the Whisper venv and model).
const AUDIO = `${FIXTURES_DIR}/audio`;
const REFERENCE =
  "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country";

function context(signal = new AbortController().signal) {
  const beats: unknown[] = [];
  const ctx: ExtractContext = { heartbeat: (d) => beats.push(d), signal };
  return { ctx, beats };
}

const ffmpeg = (...args: string[]) => execFileSync("ffmpeg", ["-nostdin", "-v", "error", "-y", ...args]);

/**
 * Test double for the OCR module: reads the frame's average colour with ffmpeg (scale to one pixel) and names
 * it, so the assertions prove which frames were taken, from where, and that they were real PNGs.
 */
const ocrCalls: Buffer[] = [];
async function colourOcr(png: Buffer): Promise<string> {
  ocrCalls.push(png);
  const out = spawnSync(
    "ffmpeg",
    [
      "-v",
      "error",
      "-f",
      "png_pipe",
      "-i",
      "pipe:0",
      "-vf",
      "scale=1:1",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "-",
    ],
    { input: png },
  );
  if (out.status !== 0 || out.stdout.length !== 3) throw new Error(`not a PNG: ${out.stderr}`);
  const [r = 0, g = 0, b = 0] = out.stdout;
  const name = r > g && r > b ? "red" : g > r && g > b ? "green" : "blue";
  return `${name} slide`;
}

/** Child processes of this test process still alive (ffmpeg, python...). */
function children(): string[] {
  const out = spawnSync("ps", ["-o", "pid=,comm=", "--ppid", String(process.pid)], { encoding: "utf8" });
  return out.stdout
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !/\bps$/.test(l));
}

// The extractors' temp dirs go to a private TMPDIR, so other processes' files cannot disturb the counts.
const privateTmp = mkdtempSync(join(tmpdir(), "media-tmp-"));
const mediaTempDirs = () => readdirSync(privateTmp).filter((n) => n.startsWith("memory-media-")).length;

describe("media extractors (ffmpeg + Whisper)", () => {
  const transcriber = createTranscriber({ engine: "whisper" });
  const { extractAudio, extractVideo } = createMediaExtractors({ transcriber, ocr: colourOcr });
  const noOcr = createMediaExtractors({ transcriber });
  let dir: string;
  let talk: Buffer;
  let silent: Buffer;

  const savedTmp = process.env.TMPDIR;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "media-test-"));
    process.env.TMPDIR = privateTmp;
    // Still images, then an 11 s video: red slide for 5 s, blue slide for 6 s, JFK's speech as the sound track.
    for (const colour of ["red", "blue", "green"]) {
      ffmpeg(
        "-f",
        "lavfi",
        "-i",
        `color=c=${colour}:s=320x240`,
        "-frames:v",
        "1",
        join(dir, `${colour}.png`),
      );
    }
    ffmpeg(
      ...["-loop", "1", "-framerate", "5", "-t", "5", "-i", join(dir, "red.png")],
      ...["-loop", "1", "-framerate", "5", "-t", "6", "-i", join(dir, "blue.png")],
      ...["-i", join(AUDIO, "jfk.wav")],
      ...["-filter_complex", "[0:v][1:v]concat=n=2:v=1:a=0[v]", "-map", "[v]", "-map", "2:a"],
      ...["-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", join(dir, "talk.mp4")],
    );
    // No sound track at all.
    ffmpeg(
      ...["-loop", "1", "-framerate", "5", "-t", "3", "-i", join(dir, "green.png")],
      ...["-c:v", "libx264", "-pix_fmt", "yuv420p", join(dir, "silent.mp4")],
    );
    talk = readFileSync(join(dir, "talk.mp4"));
    silent = readFileSync(join(dir, "silent.mp4"));
  });

  afterAll(() => {
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
    rmSync(dir, { recursive: true, force: true });
    rmSync(privateTmp, { recursive: true, force: true });
  });

  it("transcribes a WAV with times, duration and codec", async () => {
    const before = mediaTempDirs();
    const { ctx, beats } = context();
    const result = await extractAudio(
      { bytes: readFileSync(join(AUDIO, "jfk.wav")), filename: "jfk.wav" },
      ctx,
    );
    expect(result.type).toBe("audio");
    const text = result.segments.map((s) => s.text).join(" ");
    expect(wordAccuracy(REFERENCE, text)).toBeGreaterThanOrEqual(0.9);
    expect(words(text)).toEqual(expect.arrayContaining(["fellow", "americans", "ask", "country"]));
    for (const s of result.segments) {
      expect(s.startSeconds).toBeGreaterThanOrEqual(0);
      expect(s.endSeconds).toBeGreaterThanOrEqual(s.startSeconds as number);
      expect(s.endSeconds).toBeLessThanOrEqual(11.01);
    }
    expect(result.metadata).toMatchObject({
      durationSeconds: 11,
      audioCodec: "pcm_s16le",
      sampleRate: 16000,
      channels: 1,
      container: "wav",
      language: "en",
      transcriber: "whisper:faster-whisper-base",
    });
    expect(beats.length).toBeGreaterThan(0);
    expect(mediaTempDirs()).toBe(before);
  });

  it("transcribes an MP3", async () => {
    const { ctx } = context();
    const result = await extractAudio(
      { bytes: readFileSync(join(AUDIO, "jfk.mp3")), filename: "jfk.mp3" },
      ctx,
    );
    const text = result.segments.map((s) => s.text).join(" ");
    expect(wordAccuracy(REFERENCE, text)).toBeGreaterThanOrEqual(0.9);
    expect(result.metadata.audioCodec).toBe("mp3");
    expect(result.metadata.durationSeconds).toBeCloseTo(11, 0);
  });

  it("does not invent a transcript for music", async () => {
    const { ctx } = context();
    const bytes = readFileSync(join(AUDIO, "CantinaBand3.wav"));
    const result = await extractAudio({ bytes, filename: "CantinaBand3.wav" }, ctx);
    expect(words(result.segments.map((s) => s.text).join(" ")).length).toBeLessThanOrEqual(3);
    expect(result.metadata).toMatchObject({ durationSeconds: 3, sampleRate: 22050 });
  });

  it("reads a video's sound track and OCRs evenly spaced frames", async () => {
    ocrCalls.length = 0;
    const { ctx } = context();
    const result = await extractVideo({ bytes: talk, filename: "talk.mp4", mimeType: "video/mp4" }, ctx);
    expect(result.type).toBe("video");
    expect(result.metadata).toMatchObject({
      videoCodec: "h264",
      audioCodec: "aac",
      width: 320,
      height: 240,
      keyframes: 3,
      transcriber: "whisper:faster-whisper-base",
    });
    expect(result.metadata.durationSeconds as number).toBeGreaterThan(10.8);
    expect(result.metadata.durationSeconds as number).toBeLessThan(11.3);

    const speech = result.segments.filter((s) => s.source !== "ocr");
    expect(wordAccuracy(REFERENCE, speech.map((s) => s.text).join(" "))).toBeGreaterThanOrEqual(0.9);

    // Frames at 1/6, 3/6 and 5/6 of ~11 s: red, blue, blue; the repeated blue slide is kept once.
    expect(ocrCalls).toHaveLength(3);
    for (const png of ocrCalls) expect(png.subarray(1, 4).toString("ascii")).toBe("PNG");
    const ocr = result.segments.filter((s) => s.source === "ocr");
    expect(ocr.map((s) => s.text)).toEqual(["red slide", "blue slide"]);
    expect(ocr[0]?.startSeconds).toBeCloseTo(1.8, 0);
    expect(ocr[1]?.startSeconds).toBeCloseTo(5.5, 0);
    expect(ocr[1]?.endSeconds).toBeCloseTo(9.2, 0);

    const starts = result.segments.map((s) => s.startSeconds as number);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
  });

  it("takes only frame text from a video without sound, and nothing when there is nothing", async () => {
    const { ctx } = context();
    const withOcr = await extractVideo({ bytes: silent, filename: "silent.mp4" }, ctx);
    expect(withOcr.segments.map((s) => [s.text, s.source])).toEqual([["green slide", "ocr"]]);
    expect(withOcr.metadata.transcriber).toBeUndefined();
    expect(withOcr.metadata.durationSeconds).toBeCloseTo(3, 0);

    const bare = await noOcr.extractVideo({ bytes: silent, filename: "silent.mp4" }, ctx);
    expect(bare.segments).toEqual([]);
    expect(bare.metadata).toMatchObject({ videoCodec: "h264", width: 320 });
  });

  it("rejects corrupt, empty and non-media files with ffmpeg's reason", async () => {
    const { ctx } = context();
    const before = mediaTempDirs();
    const cases: [Buffer, string, RegExp][] = [
      // The index (moov atom) of an MP4 written by ffmpeg is at the end: a cut file has none.
      [talk.subarray(0, Math.floor(talk.length / 3)), "cut.mp4", /moov atom not found/],
      [Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 251)), "noise.mp3", /: \S+/],
      [Buffer.alloc(0), "empty.wav", /empty/],
      [
        Buffer.from("Just a note, not a recording.\n".repeat(20)),
        "note.wav",
        /not an audio or video|Invalid data/,
      ],
    ];
    for (const [bytes, filename, reason] of cases) {
      for (const extract of [extractAudio, extractVideo]) {
        const err = await extract({ bytes, filename }, ctx).catch((e: unknown) => e);
        expect(err, filename).toBeInstanceOf(UnprocessableContentError);
        expect((err as Error).message, filename).toMatch(reason);
        expect((err as Error).message, filename).not.toContain(privateTmp);
        expect((err as Error).message, filename).not.toMatch(/0x[0-9a-f]{6}/);
      }
    }
    const noSound = await extractAudio({ bytes: silent, filename: "silent.mp4" }, ctx).catch(
      (e: unknown) => e,
    );
    expect(noSound).toBeInstanceOf(UnprocessableContentError);
    expect((noSound as Error).message).toMatch(/no audio track/);
    expect(mediaTempDirs()).toBe(before);
  });

  it("stops its subprocesses and removes its files when aborted", async () => {
    const before = mediaTempDirs();
    const controller = new AbortController();
    const { ctx } = context(controller.signal);
    const pending = extractVideo({ bytes: talk, filename: "talk.mp4" }, ctx).catch((e: unknown) => e);
    // Aborted while ffmpeg or Whisper runs (seen in the process table), so the abort has a subprocess to stop.
    const running = await vi.waitFor(
      () => {
        const now = children();
        if (!now.length) throw new Error("no subprocess yet");
        return now;
      },
      { timeout: 60_000, interval: 50 },
    );
    controller.abort(new Error("cancelled by test"));
    const err = await pending;
    expect(running.length).toBeGreaterThan(0);
    expect((err as Error).message).toBe("cancelled by test");
    expect(children()).toEqual([]);
    expect(mediaTempDirs()).toBe(before);

    const already = AbortSignal.abort(new Error("already cancelled"));
    await expect(extractAudio({ bytes: talk }, { heartbeat() {}, signal: already })).rejects.toThrow(
      "already cancelled",
    );
  });

  it("spaces keyframes evenly", () => {
    expect(keyframeTimes(12, 3)).toEqual([2, 6, 10]);
    expect(keyframeTimes(undefined, 3)).toEqual([0]);
    expect(keyframeTimes(10, 0)).toEqual([]);
  });
});
