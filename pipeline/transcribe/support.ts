/**
 * Helpers shared by the speech engines and the media extractor: running a tool as a subprocess that dies with
 * the work's AbortSignal, temp files that are always removed, and tidy transcript segments.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import type { TranscriptSegment } from "./types.ts";

export interface RunOptions {
  signal: AbortSignal;
  /** Called every `heartbeatEveryMs` while the process runs, and on every stdout line. */
  heartbeat?: (details?: unknown) => void;
  heartbeatEveryMs?: number;
  /** What the heartbeat reports, e.g. `{ step: "transcribe" }`. */
  heartbeatDetails?: Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
  /** Each complete stdout line as it arrives (for progress reporting and streaming parsers). */
  onStdoutLine?: (line: string) => void;
  /** Stdout beyond this is an error (the process is killed). Default 64 MiB. */
  maxStdoutBytes?: number;
}

export interface RunResult {
  /** Exit code, or null when killed by a signal. */
  code: number | null;
  stdout: string;
  /** The last 64 KiB of stderr. */
  stderr: string;
}

/** The executable could not be started (ENOENT, EACCES). */
export class SpawnError extends Error {
  override readonly name = "SpawnError";
  constructor(
    readonly command: string,
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

const STDERR_KEEP = 64 * 1024;

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const err = new Error(typeof reason === "string" ? reason : "The operation was aborted");
  err.name = "AbortError";
  return err;
}

/**
 * Runs `command args` without a shell. Resolves with the exit code and output whatever the code (callers decide
 * what a failure means); rejects when the process cannot be started, when `signal` aborts (the process is
 * killed with SIGKILL first and the promise settles only once it has exited, so its files can be removed), or
 * when stdout outgrows the limit.
 */
export function runProcess(command: string, args: string[], opts: RunOptions): Promise<RunResult> {
  const { signal } = opts;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  const maxStdout = opts.maxStdoutBytes ?? 64 * 1024 * 1024;

  return new Promise<RunResult>((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: opts.env ?? process.env,
    });
    const stdoutChunks: Buffer[] = [];
    let stdoutBytes = 0;
    let pendingLine = "";
    const decoder = new StringDecoder("utf8");
    let stderr = "";
    let failure: Error | undefined;

    const kill = (why: Error) => {
      failure ??= why;
      child.kill("SIGKILL");
    };
    const onAbort = () => kill(abortReason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    const timer = opts.heartbeat
      ? setInterval(() => opts.heartbeat?.({ ...opts.heartbeatDetails }), opts.heartbeatEveryMs ?? 5_000)
      : undefined;

    child.stdout.on("data", (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxStdout) {
        kill(new Error(`${command} wrote more than ${maxStdout} bytes to stdout`));
        return;
      }
      stdoutChunks.push(chunk);
      if (opts.onStdoutLine) {
        pendingLine += decoder.write(chunk);
        const lines = pendingLine.split("\n");
        pendingLine = lines.pop() ?? "";
        for (const line of lines) {
          opts.heartbeat?.({ ...opts.heartbeatDetails });
          try {
            opts.onStdoutLine(line);
          } catch (err) {
            kill(err instanceof Error ? err : new Error(String(err)));
            return;
          }
        }
      }
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
      if (stderr.length > STDERR_KEEP * 2) stderr = stderr.slice(-STDERR_KEEP);
    });

    const finish = () => {
      signal.removeEventListener("abort", onAbort);
      if (timer) clearInterval(timer);
    };
    child.on("error", (err: NodeJS.ErrnoException) => {
      // Spawn failures: 'close' may not follow, so settle here.
      if (child.pid === undefined) {
        finish();
        reject(new SpawnError(command, err.code, `cannot run ${command}: ${err.message}`));
      } else {
        failure ??= err;
      }
    });
    child.on("close", (code) => {
      finish();
      if (failure) {
        reject(failure);
        return;
      }
      pendingLine += decoder.end();
      if (opts.onStdoutLine && pendingLine) {
        try {
          opts.onStdoutLine(pendingLine);
        } catch (err) {
          reject(err);
          return;
        }
      }
      resolve({
        code,
        stdout: Buffer.concat(stdoutChunks).toString("utf8"),
        stderr: stderr.slice(-STDERR_KEEP),
      });
    });
  });
}

/** Makes a private temp dir, runs `fn` in it, and removes it afterwards whatever happens. */
export async function withTempDir<T>(prefix: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Gives `fn` a path to the WAV: the path itself, or the bytes written to a temp file (removed afterwards). */
export async function withWavPath<T>(wav: Buffer | string, fn: (path: string) => Promise<T>): Promise<T> {
  if (typeof wav === "string") return fn(wav);
  return withTempDir("memory-speech-", async (dir) => {
    const path = join(dir, "audio.wav");
    await writeFile(path, wav);
    return fn(path);
  });
}

/** Text worth keeping: at least one letter or digit (engines emit "." or "[NOISE]" for non-speech). */
const HAS_WORD = /[\p{L}\p{N}]/u;

/**
 * Trims texts, drops segments without words, orders by start, keeps times finite, non-negative, ordered and
 * (when `durationSeconds` is known) within the audio.
 */
export function tidySegments(segments: TranscriptSegment[], durationSeconds?: number): TranscriptSegment[] {
  const limit =
    durationSeconds !== undefined && Number.isFinite(durationSeconds) && durationSeconds > 0
      ? durationSeconds
      : Number.POSITIVE_INFINITY;
  const round = (n: number) => Math.round(n * 1000) / 1000;
  const out: TranscriptSegment[] = [];
  for (const s of segments) {
    const text = s.text.replace(/\s+/g, " ").trim();
    if (!HAS_WORD.test(text)) continue;
    // Starting clearly after the audio ends: a decoder artefact, not speech.
    if (s.startSeconds > limit + 0.5) continue;
    const start = Number.isFinite(s.startSeconds) ? Math.min(Math.max(0, s.startSeconds), limit) : 0;
    const rawEnd = Number.isFinite(s.endSeconds) ? s.endSeconds : start;
    const end = Math.min(Math.max(start, rawEnd), limit);
    out.push({ text, startSeconds: round(start), endSeconds: round(end) });
  }
  return out.sort((a, b) => a.startSeconds - b.startSeconds);
}

/** The last meaningful lines of a tool's stderr, for error messages. */
export function lastLines(stderr: string, count = 3): string {
  return stderr
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-count)
    .join("; ");
}

export interface WavLayout {
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  blockAlign: number;
  /** The PCM bytes (a view into the input). */
  data: Buffer;
  /** Where the PCM starts in the file (44 for a canonical header). */
  dataOffset: number;
}

/** Reads a PCM WAV's format and data chunk; undefined when it is not one. */
export function parseWav(buf: Buffer): WavLayout | undefined {
  if (buf.length < 12 || buf.toString("ascii", 0, 4) !== "RIFF" || buf.toString("ascii", 8, 12) !== "WAVE") {
    return undefined;
  }
  let offset = 12;
  let fmt: Omit<WavLayout, "data" | "dataOffset"> | undefined;
  while (offset + 8 <= buf.length) {
    const id = buf.toString("ascii", offset, offset + 4);
    const size = buf.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === "fmt " && body + 16 <= buf.length) {
      const format = buf.readUInt16LE(body);
      if (format !== 1 && format !== 0xfffe) return undefined; // PCM or WAVE_FORMAT_EXTENSIBLE only
      fmt = {
        channels: buf.readUInt16LE(body + 2),
        sampleRate: buf.readUInt32LE(body + 4),
        blockAlign: buf.readUInt16LE(body + 12),
        bitsPerSample: buf.readUInt16LE(body + 14),
      };
    } else if (id === "data") {
      if (!fmt || fmt.blockAlign === 0 || fmt.sampleRate === 0) return undefined;
      // Streams written to a pipe carry 0xFFFFFFFF or 0 as the size: the data runs to the end of the file.
      const end = size === 0 || size === 0xffffffff ? buf.length : Math.min(buf.length, body + size);
      return { ...fmt, data: buf.subarray(body, end), dataOffset: body };
    }
    offset = body + size + (size % 2);
  }
  return undefined;
}

/** A canonical WAV (44-byte header) holding `pcm` in `layout`'s format. */
export function wavFile(layout: Omit<WavLayout, "data" | "dataOffset">, pcm: Buffer): Buffer {
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "ascii");
  header.writeUInt32LE(36 + pcm.length, 4);
  header.write("WAVEfmt ", 8, "ascii");
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(layout.channels, 22);
  header.writeUInt32LE(layout.sampleRate, 24);
  header.writeUInt32LE(layout.sampleRate * layout.blockAlign, 28);
  header.writeUInt16LE(layout.blockAlign, 32);
  header.writeUInt16LE(layout.bitsPerSample, 34);
  header.write("data", 36, "ascii");
  header.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([header, pcm]);
}

/**
 * A worker killed mid-job (SIGKILL) cannot remove its temp dirs; the next worker removes those old enough
 * that no activity can still be using them (the longest media activity is 3 h).
 */
export async function sweepStaleTempDirs(prefixes: string[], olderThanMs = 4 * 3600_000): Promise<number> {
  const { readdir, stat } = await import("node:fs/promises");
  let removed = 0;
  for (const name of await readdir(tmpdir())) {
    if (!prefixes.some((p) => name.startsWith(p))) continue;
    const dir = join(tmpdir(), name);
    try {
      if (Date.now() - (await stat(dir)).mtimeMs < olderThanMs) continue;
      await rm(dir, { recursive: true, force: true });
      removed++;
    } catch {
      // Gone already, or not ours to remove: either way nothing to do.
    }
  }
  return removed;
}
