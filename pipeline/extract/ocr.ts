/**
 * OCR with tesseract.js, fully offline.
 *
 * - The worker script and the WASM core are loaded by tesseract.js from node_modules (in Node it never
 *   uses `corePath`/`workerPath` URLs); the English model comes from `@tesseract.js-data/eng`
 *   (`langPath` is that folder, `gzip: true`, `cacheMethod: "none"`), so nothing is fetched and
 *   nothing is written to a cache. Without `langPath` tesseract.js would fetch from a CDN.
 * - Every image is first decoded and normalised with sharp (libvips, in native threads): corrupt or
 *   unsupported bytes fail there with an `UnprocessableContentError`, and tesseract only ever sees a
 *   PNG that sharp wrote. BMP, which libvips cannot read, is decoded with bmp-ts after its header is
 *   checked. tesseract.js without an `errorHandler` rethrows a worker's failure inside a message
 *   listener, which no caller can catch and which kills the process; we always pass one, and also
 *   listen for the worker thread's own `error`/`exit` so a dead worker rejects its job and is
 *   replaced instead of hanging or crashing.
 * - Workers are created lazily (~0.3–0.4 s each) and reused; recognition runs in tesseract.js's own
 *   worker thread, off the event loop.
 */
import { createRequire } from "node:module";
import path from "node:path";
import type { Worker as ThreadWorker } from "node:worker_threads";
import { decode as decodeBmp } from "bmp-ts";
import sharp, { type Metadata, type Sharp } from "sharp";
import Tesseract from "tesseract.js";
import { UnprocessableContentError } from "./types.ts";

export interface OcrResult {
  text: string;
  /** Tesseract's mean word confidence, 0–100 (0 when no word was found). */
  confidence: number;
}

export interface RecognizeOptions {
  /** Multi-page images (TIFF): which page, 0-based. */
  page?: number;
  /** Aborting rejects the call; a recognition in progress is stopped by ending its worker. */
  signal?: AbortSignal;
}

export interface Ocr {
  recognize(image: Buffer, opts?: RecognizeOptions): Promise<OcrResult>;
  close(): Promise<void>;
}

export type ImageFormat = "png" | "jpeg" | "tiff" | "bmp" | "webp" | "gif";

export interface ImageInfo {
  format: ImageFormat;
  width: number;
  height: number;
  /** Pages (TIFF) or frames (GIF); 1 for the others. */
  pages: number;
  /** The raw EXIF block, when the file has one (photos). */
  exif?: Buffer;
}

/** Larger images are refused: decoding and OCR would take minutes and gigabytes. */
export const MAX_IMAGE_PIXELS = 60_000_000;
/** Images whose longer side is below this are upscaled before OCR (see `prepareForOcr`). */
const SMALL_IMAGE_SIDE = 1200;
const UPSCALE_TARGET_SIDE = 2000;
const MAX_UPSCALE = 3;
/** Larger images are downscaled to this many pixels: OCR time grows with pixels, legibility does not. */
const OCR_MAX_PIXELS = 16_000_000;

const require = createRequire(import.meta.url);
/**
 * `4.0.0_best_int` is the LSTM-only model, the one tesseract.js itself picks for its default
 * LSTM-only engine (the `4.0.0` folder adds the legacy engine's data, unused here, and loads slower).
 */
const LANG_PATH = path.join(
  path.dirname(require.resolve("@tesseract.js-data/eng/package.json")),
  "4.0.0_best_int",
);

/** Detects the image format from its first bytes (the declared MIME type is only a hint). */
export function sniffImageFormat(bytes: Buffer): ImageFormat | null {
  if (bytes.length < 12) return null;
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return "png";
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "jpeg";
  const head4 = bytes.toString("latin1", 0, 4);
  if (head4 === "II*\0" || head4 === "MM\0*") return "tiff";
  if (head4 === "RIFF" && bytes.toString("latin1", 8, 12) === "WEBP") return "webp";
  if (head4 === "GIF8") return "gif";
  if (bytes[0] === 0x42 && bytes[1] === 0x4d) return "bmp";
  return null;
}

const FORMAT_NAMES: Record<ImageFormat, string> = {
  png: "PNG",
  jpeg: "JPEG",
  tiff: "TIFF",
  bmp: "BMP",
  webp: "WebP",
  gif: "GIF",
};

function tooLarge(width: number, height: number): UnprocessableContentError {
  return new UnprocessableContentError(
    `the image is too large to read (${width}×${height} pixels; at most ${MAX_IMAGE_PIXELS / 1e6} megapixels)`,
  );
}

function undecodable(format: ImageFormat, err: unknown): UnprocessableContentError {
  const reason = err instanceof Error ? err.message.split("\n")[0]?.trim() : "";
  return new UnprocessableContentError(
    `the ${FORMAT_NAMES[format]} image is corrupt or truncated and cannot be decoded${reason ? ` (${reason})` : ""}`,
  );
}

/** Header facts of an uncompressed-or-not BMP; throws when they cannot describe a real bitmap. */
function readBmpHeader(bytes: Buffer): { width: number; height: number } {
  const bad = (why: string) => new UnprocessableContentError(`the BMP image is corrupt (${why})`);
  if (bytes.length < 54) throw bad("file too short");
  const dataOffset = bytes.readUInt32LE(10);
  const dibSize = bytes.readUInt32LE(14);
  if (![40, 52, 56, 108, 124].includes(dibSize)) throw bad(`unsupported header size ${dibSize}`);
  const width = bytes.readInt32LE(18);
  const height = Math.abs(bytes.readInt32LE(22));
  const bpp = bytes.readUInt16LE(28);
  const compression = bytes.readUInt32LE(30);
  if (width <= 0 || height === 0) throw bad(`invalid size ${width}×${height}`);
  if (![1, 4, 8, 16, 24, 32].includes(bpp)) throw bad(`unsupported ${bpp} bits per pixel`);
  if (width * height > MAX_IMAGE_PIXELS) throw tooLarge(width, height);
  // Uncompressed (0) and bit-field (3, 6) bitmaps have a known size: the pixels must all be there.
  if ([0, 3, 6].includes(compression)) {
    const rowBytes = Math.floor((bpp * width + 31) / 32) * 4;
    if (dataOffset + rowBytes * height > bytes.length) throw bad("pixel data truncated");
  } else if (compression !== 1 && compression !== 2) {
    throw bad(`unsupported compression ${compression}`);
  }
  return { width, height };
}

/** Format, size and page count, read from the headers; throws `UnprocessableContentError` for bad bytes. */
export async function inspectImage(bytes: Buffer): Promise<ImageInfo> {
  const format = sniffImageFormat(bytes);
  if (!format) {
    throw new UnprocessableContentError(
      "the file is not an image in a supported format (PNG, JPEG, TIFF, BMP, WebP or GIF)",
    );
  }
  if (format === "bmp") return { format, ...readBmpHeader(bytes), pages: 1 };
  let meta: Metadata;
  try {
    // Only the header is read here: sharp's own pixel limit would refuse a huge image as "corrupt"
    // before the size check below could say what is wrong with it.
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (err) {
    throw undecodable(format, err);
  }
  const width = meta.autoOrient?.width ?? meta.width;
  const height = meta.autoOrient?.height ?? meta.height;
  if (!width || !height) throw undecodable(format, new Error("no image size in the header"));
  if (width * height > MAX_IMAGE_PIXELS) throw tooLarge(width, height);
  return { format, width, height, pages: meta.pages ?? 1, ...(meta.exif ? { exif: meta.exif } : {}) };
}

/**
 * Decodes any supported image fully (so truncated or corrupt pixel data fails here, not in tesseract)
 * and writes the PNG that tesseract reads: EXIF orientation applied, transparency flattened onto
 * white (text drawn on a transparent background would otherwise vanish), greyscale, small images
 * upscaled and very large ones downscaled to 16 megapixels. Measured on the fixtures, tesseract's
 * LSTM misreads text whose letters are under ~20 px high: a 595×842 page scan went from 93 % to 99 %
 * word accuracy when upscaled to ~2000 px, a 612×792 one from 21 % to 83 %; images that are already
 * large are left alone (upscaling a 1377-px-wide table made it worse).
 */
export async function prepareForOcr(bytes: Buffer, page = 0): Promise<Buffer> {
  const info = await inspectImage(bytes);
  if (page < 0 || page >= info.pages) {
    throw new UnprocessableContentError(`the image has no page ${page + 1} (it has ${info.pages})`);
  }
  try {
    let img: Sharp;
    if (info.format === "bmp") {
      // bmp-ts's default layout is ABGR for every bit depth (its `toRGBA` flag is ignored by the
      // palette decoders) and its alpha is 0 for most bitmaps: keep the colours, drop the alpha.
      const decoded = decodeBmp(bytes);
      const pixels = decoded.width * decoded.height;
      const rgb = Buffer.alloc(pixels * 3);
      for (let i = 0; i < pixels; i++) {
        rgb[i * 3] = decoded.data[i * 4 + 3] ?? 0;
        rgb[i * 3 + 1] = decoded.data[i * 4 + 2] ?? 0;
        rgb[i * 3 + 2] = decoded.data[i * 4 + 1] ?? 0;
      }
      img = sharp(rgb, { raw: { width: decoded.width, height: decoded.height, channels: 3 } });
    } else {
      img = sharp(bytes, { page, failOn: "error", limitInputPixels: MAX_IMAGE_PIXELS }).rotate();
    }
    img = img.flatten({ background: "#ffffff" }).grayscale();
    const longSide = Math.max(info.width, info.height);
    if (longSide < SMALL_IMAGE_SIDE) {
      const scale = Math.min(MAX_UPSCALE, UPSCALE_TARGET_SIDE / longSide);
      img = img.resize({ width: Math.round(info.width * scale), kernel: "lanczos3" });
    } else if (info.width * info.height > OCR_MAX_PIXELS) {
      const scale = Math.sqrt(OCR_MAX_PIXELS / (info.width * info.height));
      img = img.resize({ width: Math.floor(info.width * scale) });
    }
    return await img.png({ compressionLevel: 1 }).toBuffer();
  } catch (err) {
    if (err instanceof UnprocessableContentError) throw err;
    throw undecodable(info.format, err);
  }
}

interface Slot {
  worker: Promise<Tesseract.Worker> | null;
}

/** tesseract.js keeps the Node worker thread on the object it returns, without declaring it. */
function threadOf(worker: Tesseract.Worker): ThreadWorker | undefined {
  return (worker as unknown as { worker?: ThreadWorker }).worker;
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

export function createOcr({ workers = 1 }: { workers?: number } = {}): Ocr {
  if (!Number.isInteger(workers) || workers < 1)
    throw new Error(`workers must be a positive integer, not ${workers}`);
  const idle: Slot[] = Array.from({ length: workers }, () => ({ worker: null }));
  const waiting: Array<(slot: Slot) => void> = [];
  const started = new Set<Promise<Tesseract.Worker>>();
  let closed = false;

  function release(slot: Slot) {
    const next = waiting.shift();
    if (next) next(slot);
    else idle.push(slot);
  }

  function acquire(signal?: AbortSignal): Promise<Slot> {
    const slot = idle.pop();
    if (slot) return Promise.resolve(slot);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = waiting.indexOf(take);
        if (i >= 0) waiting.splice(i, 1);
        reject(abortError(signal as AbortSignal));
      };
      const take = (s: Slot) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(s);
      };
      waiting.push(take);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  async function startWorker(): Promise<Tesseract.Worker> {
    const worker = await Tesseract.createWorker("eng", Tesseract.OEM.LSTM_ONLY, {
      langPath: LANG_PATH,
      gzip: true,
      cacheMethod: "none",
      // Without it, a failed job is rethrown from a message listener and crashes the process.
      errorHandler: () => {},
      logger: () => {},
    });
    await worker.setParameters({
      // tesseract.js defaults to SINGLE_BLOCK, which reads two columns as one; AUTO finds columns.
      tessedit_pageseg_mode: Tesseract.PSM.AUTO,
      // Sauvola (local) binarisation: text on coloured table cells survives (Otsu turned them into
      // black blocks: 55 % vs 93 % of the words of the table fixture).
      thresholding_method: "2",
      // Tesseract's diagnostics ("Detected N diacritics") would otherwise go to stdout.
      debug_file: "/dev/null",
    });
    return worker;
  }

  /** The slot's worker, started on first use; a worker whose thread dies is forgotten (and replaced next time). */
  function workerFor(slot: Slot): Promise<Tesseract.Worker> {
    if (slot.worker) return slot.worker;
    const starting = startWorker().then(
      (worker) => {
        const thread = threadOf(worker);
        const forget = () => {
          if (slot.worker === starting) slot.worker = null;
          started.delete(starting);
        };
        // Always listened to: an 'error' event with no listener would be rethrown and end the process.
        thread?.on("error", () => {
          forget();
          void worker.terminate().catch(() => {});
        });
        thread?.once("exit", forget);
        // An idle worker must not keep the process alive; `runOn` refs it while it works.
        thread?.unref();
        return worker;
      },
      (err: unknown) => {
        if (slot.worker === starting) slot.worker = null;
        started.delete(starting);
        throw new Error(
          `the OCR engine could not start: ${err instanceof Error ? err.message : String(err)}`,
        );
      },
    );
    started.add(starting);
    slot.worker = starting;
    return starting;
  }

  /** Runs one recognition on a slot's worker; a worker that dies or is aborted is dropped from the slot. */
  async function runOn(slot: Slot, png: Buffer, signal?: AbortSignal): Promise<OcrResult> {
    const current = workerFor(slot);
    const worker = await current;
    if (signal?.aborted) throw abortError(signal);
    const thread = threadOf(worker);
    const drop = () => {
      if (slot.worker === current) slot.worker = null;
      started.delete(current);
      void worker.terminate().catch(() => {});
    };
    return new Promise<OcrResult>((resolve, reject) => {
      const cleanup = () => {
        thread?.unref();
        thread?.off("error", onError);
        thread?.off("exit", onExit);
        signal?.removeEventListener("abort", onAbort);
      };
      const onError = (err: Error) => {
        cleanup();
        drop();
        reject(new Error(`the OCR worker failed: ${err.message}`));
      };
      const onExit = (code: number) => {
        cleanup();
        drop();
        reject(new Error(`the OCR worker stopped unexpectedly (exit code ${code})`));
      };
      const onAbort = () => {
        cleanup();
        drop();
        reject(abortError(signal as AbortSignal));
      };
      thread?.ref();
      thread?.on("error", onError);
      thread?.on("exit", onExit);
      signal?.addEventListener("abort", onAbort, { once: true });
      worker.recognize(png).then(
        (result) => {
          cleanup();
          resolve({ text: result.data.text, confidence: result.data.confidence });
        },
        (err: unknown) => {
          cleanup();
          // Only PNGs written by sharp reach tesseract, so a failure here is the engine's, not the file's.
          reject(new Error(`OCR failed: ${String(err)}`));
        },
      );
    });
  }

  return {
    async recognize(image, opts = {}) {
      if (closed) throw new Error("the OCR engine is closed");
      const { signal, page = 0 } = opts;
      if (signal?.aborted) throw abortError(signal);
      const png = await prepareForOcr(image, page);
      const slot = await acquire(signal);
      try {
        if (closed) throw new Error("the OCR engine is closed");
        return await runOn(slot, png, signal);
      } finally {
        release(slot);
      }
    },
    async close() {
      closed = true;
      const all = [...started];
      started.clear();
      await Promise.all(all.map((p) => p.then((w) => w.terminate()).catch(() => {})));
    },
  };
}

let shared: Ocr | null = null;

/** The process-wide OCR engine (one worker, created on first use) that the extractors share. */
export function sharedOcr(): Ocr {
  shared ??= createOcr({ workers: 1 });
  return shared;
}

/** Ends the shared engine's worker (at shutdown; a later `sharedOcr()` starts a new one). */
export async function closeSharedOcr(): Promise<void> {
  const engine = shared;
  shared = null;
  await engine?.close();
}
