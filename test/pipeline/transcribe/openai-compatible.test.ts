import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTranscriber, TranscriberUnavailableError } from "../../../pipeline/transcribe/index.ts";
import { languageCode } from "../../../pipeline/transcribe/openai-compatible.ts";
import { parseWav } from "../../../pipeline/transcribe/support.ts";
import type { TranscribeContext } from "../../../pipeline/transcribe/types.ts";
import { FIXTURES_DIR } from "../../support/fixtures.ts";

const JFK = readFileSync(`${FIXTURES_DIR}/audio/jfk.wav`);
const ctx = (signal = new AbortController().signal): TranscribeContext => ({ heartbeat() {}, signal });

interface Received {
  method: string | undefined;
  url: string | undefined;
  authorization: string | undefined;
  fields: Record<string, string>;
  file: Buffer;
  fileName: string;
  fileType: string;
}

/**
 * A stand-in for OpenAI's endpoint: parses the multipart body like the real one and answers verbose_json,
 * describing the audio it actually received (its length in seconds) so the client's handling is checked.
 */
type Mode = "verbose" | "text-only" | "unauthorized" | "server-error" | "slow";

describe("OpenAI-compatible transcriber", () => {
  let server: Server;
  let baseUrl: string;
  let mode: Mode = "verbose";
  const received: Received[] = [];

  async function readForm(req: IncomingMessage): Promise<FormData> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return new Response(Buffer.concat(chunks), {
      headers: { "content-type": String(req.headers["content-type"]) },
    }).formData();
  }

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      const form = await readForm(req);
      const file = form.get("file") as File;
      const fields: Record<string, string> = {};
      for (const [k, v] of form.entries()) if (typeof v === "string") fields[k] = v;
      const bytes = Buffer.from(await file.arrayBuffer());
      received.push({
        method: req.method,
        url: req.url,
        authorization: req.headers.authorization,
        fields,
        file: bytes,
        fileName: file.name,
        fileType: file.type,
      });
      const wav = parseWav(bytes);
      const seconds = wav ? wav.data.length / (wav.sampleRate * wav.blockAlign) : 0;
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (mode === "unauthorized") {
        json(401, { error: { message: "Incorrect API key provided", type: "invalid_request_error" } });
      } else if (mode === "server-error") {
        json(503, { error: { message: "The server is overloaded" } });
      } else if (mode === "slow") {
        setTimeout(() => json(200, { text: "too late" }), 5_000).unref();
      } else if (mode === "text-only") {
        json(200, { text: "whole piece" });
      } else {
        json(200, {
          task: "transcribe",
          language: "english",
          duration: seconds,
          text: `first half second half`,
          segments: [
            { id: 0, start: 0, end: seconds / 2, text: " first half" },
            { id: 1, start: seconds / 2, end: seconds, text: " second half" },
          ],
        });
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  beforeEach(() => {
    mode = "verbose";
    received.length = 0;
  });

  it("posts the WAV as multipart with the model, verbose_json and the key, and maps segments", async () => {
    const t = createTranscriber({
      engine: "openai",
      openai: { baseUrl, apiKey: "sk-test", model: "whisper-1" },
    });
    expect(t.name).toBe("openai:whisper-1");
    const result = await t.transcribe(JFK, ctx());

    expect(received).toHaveLength(1);
    const [req] = received as [Received];
    expect(req.method).toBe("POST");
    expect(req.url).toBe("/v1/audio/transcriptions");
    expect(req.authorization).toBe("Bearer sk-test");
    expect(req.fields).toMatchObject({ model: "whisper-1", response_format: "verbose_json" });
    expect(req.fileName).toBe("audio.wav");
    expect(req.fileType).toBe("audio/wav");
    expect(req.file.equals(JFK)).toBe(true);

    expect(result).toEqual({
      language: "en",
      segments: [
        { text: "first half", startSeconds: 0, endSeconds: 5.5 },
        { text: "second half", startSeconds: 5.5, endSeconds: 11 },
      ],
    });
  });

  it("reads a WAV path and sends long audio in pieces with their time offsets", async () => {
    const t = createTranscriber({
      engine: "openai",
      openai: { baseUrl, apiKey: "k", model: "whisper-1", maxSecondsPerRequest: 4 },
    });
    const result = await t.transcribe(`${FIXTURES_DIR}/audio/jfk.wav`, ctx());
    // 11 s in pieces of 4 s: 4 + 4 + 3; every piece is itself a valid WAV.
    expect(received.map((r) => parseWav(r.file)?.data.length)).toEqual([128_000, 128_000, 96_000]);
    const original = parseWav(JFK)?.data as Buffer;
    expect(Buffer.concat(received.map((r) => parseWav(r.file)?.data as Buffer)).equals(original)).toBe(true);
    expect(result.segments.map((s) => [s.startSeconds, s.endSeconds])).toEqual([
      [0, 2],
      [2, 4],
      [4, 6],
      [6, 8],
      [8, 9.5],
      [9.5, 11],
    ]);
  });

  it("accepts a server that answers only { text }", async () => {
    mode = "text-only";
    const t = createTranscriber({ engine: "openai", openai: { baseUrl, apiKey: "k", model: "local" } });
    const result = await t.transcribe(JFK, ctx());
    expect(result).toEqual({ segments: [{ text: "whole piece", startSeconds: 0, endSeconds: 11 }] });
  });

  it("reports a refused key as unavailable and a server error as retryable", async () => {
    const t = createTranscriber({ engine: "openai", openai: { baseUrl, apiKey: "bad", model: "whisper-1" } });
    mode = "unauthorized";
    const refused = await t.transcribe(JFK, ctx()).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TranscriberUnavailableError);
    expect((refused as Error).message).toMatch(/401: Incorrect API key provided/);
    mode = "server-error";
    const overloaded = await t.transcribe(JFK, ctx()).catch((e: unknown) => e);
    expect(overloaded).not.toBeInstanceOf(TranscriberUnavailableError);
    expect((overloaded as Error).message).toMatch(/503: The server is overloaded/);
  });

  it("stops waiting when aborted", async () => {
    mode = "slow";
    const t = createTranscriber({ engine: "openai", openai: { baseUrl, apiKey: "k", model: "whisper-1" } });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("cancelled")), 200);
    // The server answers "too late" after 5 s: a transcriber that kept waiting would resolve with it instead.
    await expect(t.transcribe(JFK, ctx(controller.signal))).rejects.toThrow("cancelled");
  });

  it("needs a base URL and model, and normalises language names", () => {
    expect(() => createTranscriber({ engine: "openai" })).toThrow(/baseUrl/);
    expect(createTranscriber({ engine: "pocketsphinx" }).name).toBe("pocketsphinx:en-us");
    expect(languageCode("english")).toBe("en");
    expect(languageCode("German")).toBe("de");
    expect(languageCode("fr")).toBe("fr");
  });
});
