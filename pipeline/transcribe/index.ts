/**
 * Picks the speech-to-text engine from configuration. "whisper" (faster-whisper, offline, needs
 * scripts/setup-speech.sh) is the one to use; "pocketsphinx" is the lightweight offline fallback; "openai"
 * sends audio to an OpenAI-compatible endpoint.
 */
import { createOpenAICompatibleTranscriber, type OpenAICompatibleOptions } from "./openai-compatible.ts";
import { createPocketsphinxTranscriber, type PocketsphinxOptions } from "./pocketsphinx.ts";
import type { Transcriber } from "./types.ts";
import { createWhisperTranscriber, type WhisperOptions } from "./whisper.ts";

export type { OpenAICompatibleOptions } from "./openai-compatible.ts";
export type { PocketsphinxOptions } from "./pocketsphinx.ts";
export {
  type TranscribeContext,
  type Transcriber,
  TranscriberUnavailableError,
  type Transcript,
  type TranscriptSegment,
} from "./types.ts";
export { speechPaths, type WhisperOptions } from "./whisper.ts";

export type TranscriberEngine = "pocketsphinx" | "whisper" | "openai";

export interface TranscriberConfig {
  engine: TranscriberEngine;
  /** Required when engine is "openai". */
  openai?: OpenAICompatibleOptions;
  whisper?: WhisperOptions;
  pocketsphinx?: PocketsphinxOptions;
}

export function createTranscriber(config: TranscriberConfig): Transcriber {
  switch (config.engine) {
    case "whisper":
      return createWhisperTranscriber(config.whisper);
    case "pocketsphinx":
      return createPocketsphinxTranscriber(config.pocketsphinx);
    case "openai":
      if (!config.openai?.baseUrl || !config.openai.model) {
        throw new Error('transcriber engine "openai" needs openai.baseUrl and openai.model');
      }
      return createOpenAICompatibleTranscriber(config.openai);
    default: {
      const engine: never = config.engine;
      throw new Error(`unknown transcriber engine ${String(engine)}`);
    }
  }
}
