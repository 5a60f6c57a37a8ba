import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";

export interface EncodedForm {
  contentType: string;
  /** Known before a byte is sent, so the service can refuse an upload by its Content-Length alone. */
  length: number;
  body: Readable;
}

/** Quotes a name or file name the way browsers do in multipart/form-data (WHATWG HTML). */
const quote = (value: string) => value.replace(/\r/g, "%0D").replace(/\n/g, "%0A").replace(/"/g, "%22");

/**
 * multipart/form-data for a FormData whose files are Blobs (openAsBlob: read from disk as sent).
 * fetch encodes forms as a stream of unknown length; this gives the same bytes with their length.
 */
export function encodeMultipart(form: FormData): EncodedForm {
  const boundary = `----memory-cli-${randomBytes(12).toString("hex")}`;
  const parts: (Buffer | Blob)[] = [];
  for (const [name, value] of form.entries()) {
    if (typeof value === "string") {
      parts.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"\r\n\r\n${value}\r\n`,
        ),
      );
      continue;
    }
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"; filename="${quote(value.name)}"\r\n` +
          `Content-Type: ${value.type || "application/octet-stream"}\r\n\r\n`,
      ),
      value,
      Buffer.from("\r\n"),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  const length = parts.reduce((sum, part) => sum + (part instanceof Blob ? part.size : part.length), 0);
  async function* bytes() {
    for (const part of parts) {
      if (!(part instanceof Blob)) {
        yield part;
        continue;
      }
      for await (const chunk of part.stream()) yield chunk;
    }
  }
  return { contentType: `multipart/form-data; boundary=${boundary}`, length, body: Readable.from(bytes()) };
}
