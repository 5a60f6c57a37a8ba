// A caption for a picture without text, from a vision-capable chat model: one or two plain sentences of what
// it shows, so that a photo is found by its subject and not only by its file name and EXIF facts.

import type { ChatModel } from "./chat.ts";

/** Larger pictures are not sent: a data: URL of tens of megabytes is refused by most endpoints anyway. */
export const MAX_CAPTION_IMAGE_BYTES = 8 * 1024 * 1024;

const INSTRUCTION =
  "Describe this picture in one or two plain sentences for a search index: what it shows, its setting, " +
  "notable objects, colours and any visible activity. Do not guess who people are. Answer with the sentences only.";

export async function captionImage(
  llm: ChatModel,
  bytes: Buffer,
  mimeType: string,
  signal?: AbortSignal,
): Promise<string> {
  if (bytes.length > MAX_CAPTION_IMAGE_BYTES)
    throw new Error(`the picture is over ${MAX_CAPTION_IMAGE_BYTES / 1024 / 1024} MB, too large to send`);
  const caption = await llm.complete(
    [
      {
        role: "user",
        content: [
          { type: "text", text: INSTRUCTION },
          { type: "image_url", image_url: { url: `data:${mimeType};base64,${bytes.toString("base64")}` } },
        ],
      },
    ],
    { temperature: 0, maxTokens: 200, signal },
  );
  return caption.replace(/\s+/g, " ").trim();
}
