// Zip archives (.docx, .pptx) read with caps on what their entries really inflate to. The sizes an
// archive declares are never trusted: every entry is inflated with node's zlib, whose
// `maxOutputLength` stops it as soon as the output passes the room left, so a zip bomb costs at
// most the cap in memory and time whatever its headers say.

import { inflateRawSync } from "node:zlib";
import { UnprocessableContentError } from "./types.ts";

export interface ZipLimits {
  /** Most bytes one entry may inflate to. */
  maxEntryBytes: number;
  /** Most bytes all the entries read from one archive may inflate to, together. */
  maxTotalBytes: number;
  /** Most entries the archive's directory may list. */
  maxEntries: number;
}

const MiB = 1024 * 1024;

export const ZIP_LIMITS: ZipLimits = {
  maxEntryBytes: 64 * MiB,
  maxTotalBytes: 256 * MiB,
  maxEntries: 20_000,
};

/** The bytes are not a zip archive that can be read (the caller words the reason). */
export class ZipFormatError extends Error {
  override readonly name = "ZipFormatError";
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const MAX32 = 0xffffffff;

interface Entry {
  name: string;
  flags: number;
  method: number;
  compressedSize: number;
  /** What the archive declares; only used to refuse early, never to allow. */
  declaredSize: number;
  localOffset: number;
}

const mib = (bytes: number) =>
  bytes >= MiB ? `${Number((bytes / MiB).toFixed(1))} MiB` : `${Math.round(bytes / 1024)} KiB`;

/** A JSZip-like view of one entry, so callers read `zip.file(name)?.async("string")` as before. */
export interface ZipFileRef {
  async(type: "string"): Promise<string>;
  async(type: "uint8array"): Promise<Uint8Array>;
}

/**
 * A zip archive held in memory whose entries are inflated on demand, each read counted against the
 * caps. `kind` names the format in reasons (".docx"). A cap that is hit throws
 * UnprocessableContentError and is remembered in `breach`, so a library that swallowed it can be
 * checked afterwards.
 */
export class ZipArchive {
  readonly #bytes: Buffer;
  readonly #entries: Map<string, Entry>;
  readonly #kind: string;
  readonly #limits: ZipLimits;
  #inflated = 0;
  breach: UnprocessableContentError | null = null;

  /** Throws ZipFormatError when the bytes are not a readable zip, UnprocessableContentError past `maxEntries`. */
  constructor(bytes: Buffer, kind: string, limits: ZipLimits = ZIP_LIMITS) {
    this.#bytes = bytes;
    this.#kind = kind;
    this.#limits = limits;
    this.#entries = readDirectory(bytes, kind, limits);
  }

  /** Bytes inflated so far by every read of this archive. */
  get inflatedBytes(): number {
    return this.#inflated;
  }

  names(): string[] {
    return [...this.#entries.keys()];
  }

  has(name: string): boolean {
    return this.#entries.has(name);
  }

  /** The entry's content, inflated within the caps; undefined when there is no such entry. */
  read(name: string): Buffer | undefined {
    const entry = this.#entries.get(name);
    return entry ? this.#inflate(entry) : undefined;
  }

  /** The entry as UTF-8 text (a byte-order mark dropped). */
  readText(name: string): string | undefined {
    const bytes = this.read(name);
    return bytes === undefined ? undefined : new TextDecoder("utf-8").decode(bytes);
  }

  file(name: string): ZipFileRef | null {
    if (!this.#entries.has(name)) return null;
    const read = async (type: "string" | "uint8array") =>
      type === "string" ? (this.readText(name) ?? "") : (this.read(name) ?? new Uint8Array());
    return { async: read } as unknown as ZipFileRef;
  }

  /** Every refusal of a read goes through here, so `breach` keeps the first. */
  #refuse(reason: string): UnprocessableContentError {
    const error = new UnprocessableContentError(reason);
    this.breach ??= error;
    return error;
  }

  #inflate(entry: Entry): Buffer {
    const b = this.#bytes;
    const { maxEntryBytes, maxTotalBytes } = this.#limits;
    const left = maxTotalBytes - this.#inflated;
    const perEntry = maxEntryBytes <= left;
    const room = Math.min(maxEntryBytes, left);
    const tooBig = () =>
      perEntry
        ? this.#refuse(
            `the ${this.#kind} file's part ${entry.name} inflates past the ${mib(maxEntryBytes)} cap per part`,
          )
        : this.#refuse(
            `the ${this.#kind} file inflates past the ${mib(maxTotalBytes)} cap for a whole archive`,
          );
    if (entry.flags & 1) {
      throw this.#refuse(
        `the ${this.#kind} file is encrypted (part ${entry.name}); it cannot be read without the password`,
      );
    }
    // A truthful bomb is refused before any work; a lying one is stopped by maxOutputLength below.
    if (entry.declaredSize > room) throw tooBig();
    const at = entry.localOffset;
    if (at + 30 > b.length || b.readUInt32LE(at) !== LOCAL) {
      throw this.#refuse(`the ${this.#kind} file is damaged: the zip entry ${entry.name} is missing`);
    }
    const start = at + 30 + b.readUInt16LE(at + 26) + b.readUInt16LE(at + 28);
    const data = b.subarray(Math.min(start, b.length), Math.min(b.length, start + entry.compressedSize));
    let out: Buffer;
    if (entry.method === 0) {
      out = data;
    } else if (entry.method === 8) {
      try {
        out = inflateRawSync(data, { maxOutputLength: Math.max(1, room) });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw tooBig();
        throw this.#refuse(
          `the ${this.#kind} file is damaged: the zip entry ${entry.name} cannot be inflated (${(error as Error).message})`,
        );
      }
    } else {
      throw this.#refuse(
        `the ${this.#kind} file uses a zip compression method this service cannot read (${entry.method}, part ${entry.name})`,
      );
    }
    if (out.length > room) throw tooBig();
    this.#inflated += out.length;
    return out;
  }
}

function findEndOfDirectory(b: Buffer): number {
  const lowest = Math.max(0, b.length - 22 - 0xffff);
  for (let i = b.length - 22; i >= lowest; i--) if (b.readUInt32LE(i) === EOCD) return i;
  return -1;
}

function readDirectory(b: Buffer, kind: string, limits: ZipLimits): Map<string, Entry> {
  const eocd = findEndOfDirectory(b);
  if (eocd < 0) throw new ZipFormatError("can't find the end of the central directory");
  let count = b.readUInt16LE(eocd + 10);
  let size = b.readUInt32LE(eocd + 12);
  let offset = b.readUInt32LE(eocd + 16);
  if (count === 0xffff || size === MAX32 || offset === MAX32) {
    const locator = eocd - 20;
    if (locator < 0 || b.readUInt32LE(locator) !== ZIP64_LOCATOR)
      throw new ZipFormatError("the zip64 end of central directory locator is missing");
    const at = Number(b.readBigUInt64LE(locator + 8));
    if (at + 56 > b.length || b.readUInt32LE(at) !== ZIP64_EOCD)
      throw new ZipFormatError("the zip64 end of central directory is missing");
    count = Number(b.readBigUInt64LE(at + 32));
    size = Number(b.readBigUInt64LE(at + 40));
    offset = Number(b.readBigUInt64LE(at + 48));
  }
  if (count > limits.maxEntries) {
    throw new UnprocessableContentError(
      `the ${kind} file lists ${count} zip entries, more than the cap of ${limits.maxEntries}`,
    );
  }
  // Bytes before the archive (a self-extractor's stub) shift every offset by the same amount.
  let shift = 0;
  const isCentral = (at: number) => at >= 0 && at + 46 <= b.length && b.readUInt32LE(at) === CENTRAL;
  if (count > 0 && !isCentral(offset)) {
    shift = eocd - size - offset;
    if (shift <= 0 || !isCentral(offset + shift))
      throw new ZipFormatError("the central directory is not where the archive says");
  }
  const entries = new Map<string, Entry>();
  let p = offset + shift;
  for (let i = 0; i < count; i++) {
    if (!isCentral(p)) throw new ZipFormatError(`corrupted central directory (entry ${i + 1} of ${count})`);
    const flags = b.readUInt16LE(p + 8);
    const method = b.readUInt16LE(p + 10);
    let compressedSize = b.readUInt32LE(p + 20);
    let declaredSize = b.readUInt32LE(p + 24);
    const nameLength = b.readUInt16LE(p + 28);
    const extraLength = b.readUInt16LE(p + 30);
    const commentLength = b.readUInt16LE(p + 32);
    let localOffset = b.readUInt32LE(p + 42);
    const nameStart = p + 46;
    const extraStart = nameStart + nameLength;
    const next = extraStart + extraLength + commentLength;
    if (next > b.length) throw new ZipFormatError(`corrupted central directory (entry ${i + 1} of ${count})`);
    const name = b.toString("utf8", nameStart, extraStart);
    if (declaredSize === MAX32 || compressedSize === MAX32 || localOffset === MAX32) {
      // The zip64 extra field holds, in this order, only the sizes that did not fit in 32 bits.
      let e = extraStart;
      while (e + 4 <= extraStart + extraLength) {
        const id = b.readUInt16LE(e);
        const length = b.readUInt16LE(e + 2);
        if (id === 1) {
          let q = e + 4;
          const end = q + length;
          const take = () => {
            const value = q + 8 <= end && q + 8 <= b.length ? Number(b.readBigUInt64LE(q)) : MAX32;
            q += 8;
            return value;
          };
          if (declaredSize === MAX32) declaredSize = take();
          if (compressedSize === MAX32) compressedSize = take();
          if (localOffset === MAX32) localOffset = take();
          break;
        }
        e += 4 + length;
      }
    }
    if (!name.endsWith("/")) {
      entries.set(name, {
        name,
        flags,
        method,
        compressedSize,
        declaredSize,
        localOffset: localOffset + shift,
      });
    }
    p = next;
  }
  return entries;
}
