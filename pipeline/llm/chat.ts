// A client for any OpenAI-compatible chat endpoint (OpenAI, Ollama, vLLM, llama.cpp server). Used
// for optional steps (query rewriting, memory extraction, photo captions); the service works without one.

import { z } from "zod";

/** A part of a multimodal message (OpenAI's shape): text, or an image as a URL or a data: URL. */
export type ChatContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } };

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string | ChatContentPart[];
}

export interface ChatOptions {
  temperature?: number;
  maxTokens?: number;
  /** Ask for a JSON object (response_format json_object); servers that ignore it still get the prompt. */
  json?: boolean;
  signal?: AbortSignal;
}

export interface ChatModel {
  /** The configured model name, reported to callers. */
  readonly model: string;
  complete(messages: ChatMessage[], options?: ChatOptions): Promise<string>;
}

export interface ChatModelConfig {
  baseUrl: string;
  model: string;
  apiKey?: string;
  timeoutMs?: number;
}

export class ChatModelError extends Error {}

const Completion = z.object({
  choices: z.array(z.object({ message: z.object({ content: z.string().nullable().optional() }) })).min(1),
});

export function createChatModel(config: ChatModelConfig): ChatModel {
  const endpoint = `${config.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  return {
    model: config.model,
    async complete(messages, options = {}) {
      const timeout = AbortSignal.timeout(config.timeoutMs ?? 30_000);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      const response = await fetch(endpoint, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(config.apiKey ? { authorization: `Bearer ${config.apiKey}` } : {}),
        },
        body: JSON.stringify({
          model: config.model,
          messages,
          temperature: options.temperature ?? 0,
          ...(options.maxTokens ? { max_tokens: options.maxTokens } : {}),
          ...(options.json ? { response_format: { type: "json_object" } } : {}),
        }),
        signal,
      }).catch((error: unknown) => {
        throw new ChatModelError(`LLM endpoint unreachable: ${(error as Error).message}`);
      });
      if (!response.ok) {
        const detail = (await response.text().catch(() => "")).slice(0, 300);
        throw new ChatModelError(`LLM endpoint answered ${response.status}: ${detail}`);
      }
      const parsed = Completion.safeParse(await response.json().catch(() => undefined));
      if (!parsed.success) throw new ChatModelError("LLM endpoint answered in an unexpected shape");
      const content = parsed.data.choices[0]?.message.content?.trim();
      if (!content) throw new ChatModelError("LLM endpoint answered with an empty message");
      return content;
    },
  };
}
