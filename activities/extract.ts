import { FetchFailedError, FetchRefusedError, fetchUrl } from "../pipeline/safe-fetch.ts";
import type { DocumentRow } from "../store/schema/index.ts";
import type { CpuPool } from "./cpu-pool.ts";

/** The content can never be processed as it is: retrying would not help. */
export class UnprocessableContentError extends Error {
  override readonly name = "UnprocessableContentError";
}

export interface Extracted {
  content: string;
  title: string | null;
  type: string;
}

interface ExtractDeps {
  cpu: CpuPool;
  fetching: { allowPrivateNetwork: boolean; timeoutMs: number; maxBytes: number };
}

/** Turns what the caller sent (text, or a URL to fetch) into plain text with a title and a type. */
export async function extractFromSource(
  doc: Pick<DocumentRow, "source" | "url">,
  deps: ExtractDeps,
  heartbeat: () => void,
): Promise<Extracted> {
  if (!doc.url) {
    return { content: doc.source, title: titleFromText(doc.source), type: "text" };
  }
  const response = await fetchSource(doc.url, deps);
  heartbeat();
  const mime = (response.contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  const charset = /charset=([\w-]+)/i.exec(response.contentType ?? "")?.[1];
  const text = decode(response.body, charset);
  if (
    mime === "text/html" ||
    mime === "application/xhtml+xml" ||
    (!mime && /^\s*<(!doctype|html)/i.test(text))
  ) {
    const page = await deps.cpu.htmlToText(text, response.finalUrl);
    return { content: page.text, title: page.title ?? titleFromText(page.text), type: "webpage" };
  }
  if (mime.startsWith("text/") || mime === "application/json" || mime === "application/xml" || !mime) {
    return { content: text, title: titleFromText(text), type: "text" };
  }
  throw new UnprocessableContentError(
    `content type ${mime} at ${doc.url} is not supported yet (text and web pages are; file types come with file extraction)`,
  );
}

async function fetchSource(url: string, deps: ExtractDeps) {
  try {
    return await fetchUrl(url, deps.fetching);
  } catch (error) {
    if (error instanceof FetchRefusedError) throw new UnprocessableContentError(error.message);
    // A 4xx will answer the same next time (except for throttling); 5xx and network errors may not.
    if (
      error instanceof FetchFailedError &&
      error.status &&
      error.status < 500 &&
      ![408, 429].includes(error.status)
    ) {
      throw new UnprocessableContentError(error.message);
    }
    throw error;
  }
}

function decode(body: Buffer, charset: string | undefined): string {
  try {
    return new TextDecoder(charset ?? "utf-8").decode(body);
  } catch {
    return new TextDecoder("utf-8").decode(body);
  }
}

/** First meaningful line, without markdown heading marks, as a readable title. */
export function titleFromText(text: string): string | null {
  const line = text
    .split(/\r?\n/)
    .map((l) => l.replace(/^#+\s*/, "").trim())
    .find((l) => l.length > 0);
  if (!line) return null;
  return line.length > 100 ? `${line.slice(0, 97).trimEnd()}...` : line;
}
