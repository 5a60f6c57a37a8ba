/**
 * Speech-to-text behind one interface: an offline engine (Whisper via faster-whisper, or pocketsphinx) or a
 * remote OpenAI-compatible endpoint. Transcribers are pure libraries like the extractors; they take 16 kHz
 * mono WAV, which `pipeline/extract/media.ts` produces with ffmpeg from any audio or video file.
 */

export interface TranscriptSegment {
  text: string;
  /** Seconds from the start of the audio. */
  startSeconds: number;
  endSeconds: number;
}

export interface Transcript {
  /** In time order; never contains empty-text segments. */
  segments: TranscriptSegment[];
  /** ISO 639-1 code when the engine detects or reports it (e.g. "en"). */
  language?: string;
}

export interface TranscribeContext {
  /** Called during long work so the activity's heartbeat shows progress. */
  heartbeat(details?: unknown): void;
  /** Aborted when the work is cancelled; the engine's subprocess or request is stopped. */
  signal: AbortSignal;
}

export interface Transcriber {
  /** Engine and model, e.g. "whisper:faster-whisper-base"; kept in document metadata. */
  readonly name: string;
  /** `wav16kMono` is the WAV bytes or a path to a WAV file (16 kHz, mono, 16-bit PCM). */
  transcribe(wav16kMono: Buffer | string, ctx: TranscribeContext): Promise<Transcript>;
}

/** The engine cannot run here (not installed, misconfigured, remote refused): not the file's fault. */
export class TranscriberUnavailableError extends Error {
  override readonly name = "TranscriberUnavailableError";
}
