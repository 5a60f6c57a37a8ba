import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createTranscriber, TranscriberUnavailableError } from "../../../pipeline/transcribe/index.ts";
import type { TranscribeContext } from "../../../pipeline/transcribe/types.ts";
import { createWhisperTranscriber } from "../../../pipeline/transcribe/whisper.ts";
import { wordAccuracy, words } from "../../../pipeline/word-accuracy.ts";
import { FIXTURES_DIR } from "../../support/fixtures.ts";

// Needs scripts/setup-speech.sh (the faster-whisper venv and the Whisper base model).
const AUDIO = `${FIXTURES_DIR}/audio`;
const REFERENCE =
  "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country";

const ctx = (signal = new AbortController().signal): TranscribeContext => ({ heartbeat() {}, signal });

/** 16 kHz mono WAV bytes of any audio file, made with ffmpeg. */
const toWav = (path: string) =>
  execFileSync("ffmpeg", [
    "-nostdin",
    "-v",
    "error",
    "-i",
    path,
    "-ac",
    "1",
    "-ar",
    "16000",
    "-f",
    "wav",
    "-",
  ]);

const pythonChildren = () =>
  spawnSync("ps", ["-o", "comm=", "--ppid", String(process.pid)], { encoding: "utf8" })
    .stdout.split("\n")
    .filter((c) => /python/.test(c));

describe("whisper transcriber (faster-whisper, base)", () => {
  const whisper = createTranscriber({ engine: "whisper" });

  it("transcribes jfk.wav word for word, with times and language", async () => {
    const beats: unknown[] = [];
    const result = await whisper.transcribe(join(AUDIO, "jfk.wav"), {
      heartbeat: (d) => beats.push(d),
      signal: new AbortController().signal,
    });
    const text = result.segments.map((s) => s.text).join(" ");
    expect(wordAccuracy(REFERENCE, text)).toBeGreaterThanOrEqual(0.9);
    expect(result.language).toBe("en");
    expect(whisper.name).toBe("whisper:faster-whisper-base");
    let last = 0;
    for (const s of result.segments) {
      expect(s.text).toBe(s.text.trim());
      expect(s.startSeconds).toBeGreaterThanOrEqual(last);
      expect(s.endSeconds).toBeGreaterThan(s.startSeconds);
      expect(s.endSeconds).toBeLessThanOrEqual(11);
      last = s.startSeconds;
    }
    expect(beats.length).toBeGreaterThan(0);
  });

  it("takes WAV bytes (here decoded from jfk.mp3)", async () => {
    const result = await whisper.transcribe(toWav(join(AUDIO, "jfk.mp3")), ctx());
    const got = words(result.segments.map((s) => s.text).join(" "));
    expect(got).toEqual(expect.arrayContaining(["fellow", "americans", "ask", "not", "country"]));
  });

  it("returns (almost) nothing for music", async () => {
    const result = await whisper.transcribe(toWav(join(AUDIO, "CantinaBand3.wav")), ctx());
    expect(words(result.segments.map((s) => s.text).join(" ")).length).toBeLessThanOrEqual(3);
  });

  it("kills the Python process when aborted", async () => {
    const controller = new AbortController();
    const pending = whisper.transcribe(join(AUDIO, "jfk.wav"), ctx(controller.signal));
    setTimeout(() => controller.abort(new Error("stop")), 800);
    await expect(pending).rejects.toThrow("stop");
    expect(pythonChildren()).toEqual([]);
  });

  it("says what to run when the model is not installed", async () => {
    const missing = createWhisperTranscriber({ modelDir: "/nonexistent/faster-whisper-base" });
    const err = await missing
      .transcribe(readFileSync(join(AUDIO, "jfk.wav")), ctx())
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TranscriberUnavailableError);
    expect((err as Error).message).toMatch(/setup-speech\.sh/);
  });
});
