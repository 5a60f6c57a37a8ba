// A PDF's compressed streams, checked before pdf.js sees the file. pdf.js inflates a stream into one
// growing typed array, whose memory is outside the V8 heap and so outside the extraction thread's
// memory limit: a 1 MB stream that inflates to gigabytes would take them. Every stream whose data
// starts with a zlib header (pdf.js's FlateDecode refuses any other start) is inflated here first,
// in small pieces that are counted and dropped, and the file is refused when one passes the cap.
// A stream compressed twice (a FlateDecode whose output is zlib again) is followed through its layers.

import { Readable } from "node:stream";
import { constants, createInflate, inflateSync } from "node:zlib";

const STREAM = Buffer.from("stream");
const END = Buffer.from("end");
const MAX_LAYERS = 4;
const PIECE = 64 * 1024;
/** Streams that inflate to less than this in one go (nearly all) are done without the piecewise check. */
const PROBE = 4 * 1024 * 1024;

/** Whether two bytes are a zlib header pdf.js accepts: deflate, a valid check value, no preset dictionary. */
function isZlibHeader(cmf: number | undefined, flg: number | undefined): boolean {
  if (cmf === undefined || flg === undefined) return false;
  return (cmf & 0x0f) === 8 && cmf >> 4 <= 7 && ((cmf << 8) + flg) % 31 === 0 && (flg & 0x20) === 0;
}

/** The inflated bytes of a zlib source, piece by piece; damaged data just ends it (as in pdf.js). */
async function* inflate(source: Iterable<Buffer> | AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const inflater = createInflate({ chunkSize: PIECE });
  inflater.on("error", () => {}); // seen by the loop below; never an uncaught 'error' after it
  const input = Readable.from(source, { objectMode: false });
  input.on("error", (error) => inflater.destroy(error));
  input.pipe(inflater);
  try {
    for await (const piece of inflater) yield piece as Buffer;
  } catch {
    // Truncated or corrupt: pdf.js keeps what came out before the damage, and so do we.
  } finally {
    input.destroy();
    inflater.destroy();
  }
}

/** `source`, counted: stops (and sets `state.over`) once more than `cap` bytes came through. */
async function* counted(source: AsyncIterable<Buffer>, cap: number, state: { over: boolean }) {
  let total = 0;
  for await (const piece of source) {
    total += piece.length;
    if (total > cap) {
      state.over = true;
      return;
    }
    yield piece;
  }
}

async function* prepend(first: Buffer, rest: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  try {
    yield first;
    for (;;) {
      const next = await rest.next();
      if (next.done) return;
      yield next.value;
    }
  } finally {
    await rest.return?.();
  }
}

/** Whether the zlib data at the start of `data` inflates, through any zlib layers inside, past `cap` bytes. */
export async function inflatesPast(data: Buffer, cap: number): Promise<boolean> {
  const state = { over: false };
  let stream: AsyncIterable<Buffer> = counted(inflate([data]), cap, state);
  for (let layer = 1; layer < MAX_LAYERS; layer++) {
    const it = stream[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done || state.over) return state.over;
    stream = prepend(first.value, it);
    if (!isZlibHeader(first.value[0], first.value[1])) break;
    stream = counted(inflate(stream), cap, state);
  }
  for await (const _ of stream) if (state.over) break;
  return state.over;
}

/**
 * The byte offset of the first compressed stream in `bytes` that inflates past `cap`, or null. The
 * data of a stream starts after the keyword `stream` and its end of line; it is read up to its own
 * end (zlib knows where it stops), so a stream's declared /Length is not trusted either.
 */
export async function findStreamBomb(
  bytes: Buffer,
  cap: number,
  signal?: AbortSignal,
): Promise<number | null> {
  for (let at = bytes.indexOf(STREAM); at >= 0; at = bytes.indexOf(STREAM, at + STREAM.length)) {
    if (at >= 3 && bytes.subarray(at - 3, at).equals(END)) continue; // "endstream"
    // Like pdf.js, the data starts after the end of the keyword's line (CR, LF or CR LF).
    let start = at + STREAM.length;
    while (start < bytes.length && start - at < 256 && bytes[start] !== 0x0d && bytes[start] !== 0x0a)
      start++;
    if (bytes[start] === 0x0d) start++;
    if (bytes[start] === 0x0a) start++;
    if (!isZlibHeader(bytes[start], bytes[start + 1])) continue;
    signal?.throwIfAborted();
    const data = bytes.subarray(start);
    try {
      const probe = inflateSync(data, { maxOutputLength: PROBE, finishFlush: constants.Z_SYNC_FLUSH });
      // Small, and not zlib inside: pdf.js gets no more out of it than this.
      if (!isZlibHeader(probe[0], probe[1])) continue;
    } catch (error) {
      // Corrupt before PROBE bytes came out: pdf.js stops at the damage too.
      if ((error as NodeJS.ErrnoException).code !== "ERR_BUFFER_TOO_LARGE") continue;
    }
    if (await inflatesPast(data, cap)) return at;
  }
  return null;
}
