/**
 * A remote engine for deployments that configure one: any server that implements OpenAI's
 * `POST /audio/transcriptions` (OpenAI itself, Groq, a local whisper.cpp or faster-whisper server, ...).
 * `response_format=verbose_json` asks for timed segments; a server that only returns `{ text }` still works
 * (one segment for the whole piece). Long audio is sent in pieces of at most `maxSecondsPerRequest`, since
 * OpenAI refuses uploads over 25 MB (16 kHz 16-bit mono WAV is 1.9 MB a minute).
 */
import { readFile } from "node:fs/promises";
import { parseWav, tidySegments, wavFile } from "./support.ts";
import {
  type TranscribeContext,
  type Transcriber,
  TranscriberUnavailableError,
  type Transcript,
  type TranscriptSegment,
} from "./types.ts";

export interface OpenAICompatibleOptions {
  /** e.g. "https://api.openai.com/v1" or "http://127.0.0.1:8080/v1"; `/audio/transcriptions` is appended. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` when set. */
  apiKey?: string;
  /** e.g. "whisper-1". */
  model: string;
  /** ISO 639-1 hint sent as `language`. */
  language?: string;
  /** Default 600 s (19 MB of 16 kHz mono WAV a request). */
  maxSecondsPerRequest?: number;
  /** Per request; default 10 minutes. */
  requestTimeoutMs?: number;
  fetch?: typeof fetch;
}

interface Piece {
  wav: Buffer;
  offsetSeconds: number;
  durationSeconds: number | undefined;
}

function split(wav: Buffer, maxSeconds: number): Piece[] {
  const layout = parseWav(wav);
  if (!layout) return [{ wav, offsetSeconds: 0, durationSeconds: undefined }];
  const bytesPerSecond = layout.sampleRate * layout.blockAlign;
  const totalSeconds = layout.data.length / bytesPerSecond;
  if (totalSeconds <= maxSeconds) return [{ wav, offsetSeconds: 0, durationSeconds: totalSeconds }];
  const step = Math.max(1, Math.floor(maxSeconds * layout.sampleRate)) * layout.blockAlign;
  const pieces: Piece[] = [];
  for (let at = 0; at < layout.data.length; at += step) {
    const pcm = layout.data.subarray(at, Math.min(layout.data.length, at + step));
    pieces.push({
      wav: wavFile(layout, pcm),
      offsetSeconds: at / bytesPerSecond,
      durationSeconds: pcm.length / bytesPerSecond,
    });
  }
  return pieces;
}

let languageCodes: Map<string, string> | undefined;

/** OpenAI's verbose_json reports "english"; Whisper servers often report "en". Returns ISO 639-1 when known. */
export function languageCode(reported: string): string {
  const value = reported.trim().toLowerCase();
  if (/^[a-z]{2}$/.test(value)) return value;
  if (!languageCodes) {
    languageCodes = new Map();
    const names = new Intl.DisplayNames(["en"], { type: "language" });
    const letters = "abcdefghijklmnopqrstuvwxyz";
    for (const a of letters) {
      for (const b of letters) {
        const code = a + b;
        const name = names.of(code);
        if (name && name !== code) languageCodes.set(name.toLowerCase(), code);
      }
    }
  }
  return languageCodes.get(value) ?? value;
}

interface VerboseJson {
  text?: string;
  language?: string;
  duration?: number;
  segments?: { start?: number; end?: number; text?: string }[];
}

async function errorText(res: Response): Promise<string> {
  const body = await res.text().catch(() => "");
  try {
    const parsed = JSON.parse(body) as { error?: { message?: string } | string; message?: string };
    const msg = typeof parsed.error === "string" ? parsed.error : (parsed.error?.message ?? parsed.message);
    if (msg) return msg;
  } catch {
    // not JSON
  }
  return body.slice(0, 300) || res.statusText;
}

export function createOpenAICompatibleTranscriber(options: OpenAICompatibleOptions): Transcriber {
  const url = `${options.baseUrl.replace(/\/+$/, "")}/audio/transcriptions`;
  const doFetch = options.fetch ?? fetch;
  const maxSeconds = options.maxSecondsPerRequest ?? 600;
  const timeoutMs = options.requestTimeoutMs ?? 600_000;

  async function send(piece: Piece, ctx: TranscribeContext): Promise<Transcript> {
    const form = new FormData();
    form.append("file", new Blob([new Uint8Array(piece.wav)], { type: "audio/wav" }), "audio.wav");
    form.append("model", options.model);
    form.append("response_format", "verbose_json");
    form.append("timestamp_granularities[]", "segment");
    if (options.language) form.append("language", options.language);
    const headers: Record<string, string> = { accept: "application/json" };
    if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;

    let res: Response;
    try {
      res = await doFetch(url, {
        method: "POST",
        headers,
        body: form,
        signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]),
      });
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      throw new Error(`transcription request to ${url} failed: ${(err as Error).message}`);
    }
    if (!res.ok) {
      const reason = `${url} answered ${res.status}: ${await errorText(res)}`;
      // Credentials, a wrong URL or model: configuration, not the file, and not worth retrying.
      if (res.status === 401 || res.status === 403 || res.status === 404) {
        throw new TranscriberUnavailableError(reason);
      }
      throw new Error(reason);
    }
    const body = (await res.json()) as VerboseJson;
    const segments: TranscriptSegment[] = [];
    if (Array.isArray(body.segments) && body.segments.length > 0) {
      for (const s of body.segments) {
        const start = Number(s.start ?? 0);
        segments.push({
          text: String(s.text ?? ""),
          startSeconds: piece.offsetSeconds + start,
          endSeconds: piece.offsetSeconds + Number(s.end ?? start),
        });
      }
    } else if (body.text) {
      const duration = piece.durationSeconds ?? body.duration ?? 0;
      segments.push({
        text: body.text,
        startSeconds: piece.offsetSeconds,
        endSeconds: piece.offsetSeconds + duration,
      });
    }
    const out: Transcript = { segments };
    if (body.language) out.language = languageCode(body.language);
    return out;
  }

  return {
    name: `openai:${options.model}`,
    async transcribe(wav: Buffer | string, ctx: TranscribeContext): Promise<Transcript> {
      const bytes = typeof wav === "string" ? await readFile(wav) : wav;
      const pieces = split(bytes, maxSeconds);
      const segments: TranscriptSegment[] = [];
      let language: string | undefined;
      for (const [i, piece] of pieces.entries()) {
        ctx.heartbeat({ step: "transcribe", engine: "openai", piece: i + 1, of: pieces.length });
        const part = await send(piece, ctx);
        segments.push(...part.segments);
        language ??= part.language;
      }
      const end = pieces.at(-1);
      const total = end?.durationSeconds !== undefined ? end.offsetSeconds + end.durationSeconds : undefined;
      const out: Transcript = { segments: tidySegments(segments, total) };
      if (language && out.segments.length > 0) out.language = language;
      return out;
    },
  };
}
