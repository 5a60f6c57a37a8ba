import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createTranscriber, TranscriberUnavailableError } from "../../../pipeline/transcribe/index.ts";
import {
  createPocketsphinxTranscriber,
  parsePocketsphinxOutput,
} from "../../../pipeline/transcribe/pocketsphinx.ts";
import type { TranscribeContext } from "../../../pipeline/transcribe/types.ts";
import { FIXTURES_DIR } from "../../support/fixtures.ts";

// Needs Debian's pocketsphinx and pocketsphinx-en-us (scripts/setup-speech.sh).
const AUDIO = `${FIXTURES_DIR}/audio`;
const ctx = (signal = new AbortController().signal): TranscribeContext => ({ heartbeat() {}, signal });
const words = (text: string) => text.toLowerCase().split(/\s+/).filter(Boolean);

describe("pocketsphinx transcriber", () => {
  const sphinx = createTranscriber({ engine: "pocketsphinx" });

  it("gets some of the words of jfk.wav, in timed utterances", async () => {
    const result = await sphinx.transcribe(join(AUDIO, "jfk.wav"), ctx());
    // PocketSphinx is weak (about a third of the words right here); these are the ones it does get.
    const got = words(result.segments.map((s) => s.text).join(" "));
    expect(got).toEqual(expect.arrayContaining(["and", "not", "your", "country"]));
    expect(result.segments.length).toBeGreaterThanOrEqual(2);
    let last = 0;
    for (const s of result.segments) {
      expect(s.startSeconds).toBeGreaterThanOrEqual(last);
      expect(s.endSeconds).toBeGreaterThan(s.startSeconds);
      expect(s.endSeconds).toBeLessThanOrEqual(11);
      last = s.endSeconds;
    }
    expect(result.language).toBe("en");
  });

  it("reads WAV bytes the same as the file (extra header chunks are not fed in as sound)", async () => {
    const fromFile = await sphinx.transcribe(join(AUDIO, "jfk.wav"), ctx());
    const fromBytes = await sphinx.transcribe(readFileSync(join(AUDIO, "jfk.wav")), ctx());
    expect(fromBytes).toEqual(fromFile);
  });

  it("invents little for music", async () => {
    // CantinaBand3.wav is 22.05 kHz: the engine wants 16 kHz and says so.
    await expect(sphinx.transcribe(join(AUDIO, "CantinaBand3.wav"), ctx())).rejects.toThrow(/16 kHz/);
    const wav = execFileSync("ffmpeg", [
      ...["-nostdin", "-v", "error", "-i", join(AUDIO, "CantinaBand3.wav")],
      ...["-ac", "1", "-ar", "16000", "-f", "wav", "-"],
    ]);
    const result = await sphinx.transcribe(wav, ctx());
    expect(words(result.segments.map((s) => s.text).join(" ")).length).toBeLessThanOrEqual(6);
  });

  it("parses the CLI's timed output into utterances without fillers", () => {
    const out = [
      "hello world",
      "<s> 0.000 0.040 0.998900",
      "hello 0.050 0.400 0.900000",
      "<sil> 0.410 0.500 0.800000",
      "world(2) 0.510 0.900 0.700000",
      "</s> 0.910 1.000 1.000000",
      "",
      "<s> 2.000 2.050 1.000000",
      "[NOISE] 2.060 2.500 0.500000",
      "</s> 2.510 2.600 1.000000",
    ].join("\n");
    expect(parsePocketsphinxOutput(out)).toEqual([
      { text: "hello world", startSeconds: 0.05, endSeconds: 0.9 },
    ]);
  });

  it("reports a missing binary as unavailable", async () => {
    const broken = createPocketsphinxTranscriber({ binary: "/nonexistent/pocketsphinx_continuous" });
    await expect(broken.transcribe(join(AUDIO, "jfk.wav"), ctx())).rejects.toBeInstanceOf(
      TranscriberUnavailableError,
    );
  });
});
