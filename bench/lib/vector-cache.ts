// Embedding 100,000 texts takes a long time on a small machine, so the search benchmark's vectors are
// computed once and kept under <cache>/bench/vectors/<model>/, keyed by the sha256 of each text: any
// set of texts reuses whatever vectors an earlier run (of any size) already computed. Two append-only
// files hold the entries, `vectors.f32` (dimension floats per row) and `keys.bin` (32-byte sha256 per
// row); vectors are written before their keys, so an interrupted run loses at most its last batch and
// the next run carries on from there.

import { createHash } from "node:crypto";
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import { cacheDir } from "../../config/paths.ts";
import { log } from "./progress.ts";

interface CachedVectors {
  /** The cache directory of the model. */
  file: string;
  /** True when every vector was read from the cache rather than computed in this run. */
  hit: boolean;
  /** How many of the texts were embedded in this run. */
  computed: number;
  vectors: Float32Array[];
  /** Wall time spent computing vectors in this run (0 on a full hit). */
  computeMs: number;
  /** Texts per second while computing (NaN when nothing was computed). */
  textsPerSecond: number;
}

export interface VectorSource {
  embed(texts: string[]): Promise<number[][]>;
  close(): Promise<void>;
  threads: number;
}

function benchCacheDir(): string {
  return path.join(cacheDir(), "bench");
}

function textKey(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

interface Meta {
  model: string;
  dimension: number;
}

/** The per-model store: a map from text key to vector, read fully into memory (100k × 384 floats ≈ 150 MB). */
class ModelCache {
  readonly dir: string;
  private readonly vectorsFile: string;
  private readonly keysFile: string;
  private readonly index = new Map<string, number>();
  private data = new Float32Array(0);
  private rows = 0;

  constructor(
    readonly model: string,
    readonly dimension: number,
  ) {
    this.dir = path.join(benchCacheDir(), "vectors", model.replace(/[^\w.-]/g, "_"));
    this.vectorsFile = path.join(this.dir, "vectors.f32");
    this.keysFile = path.join(this.dir, "keys.bin");
    mkdirSync(this.dir, { recursive: true });
    const metaFile = path.join(this.dir, "meta.json");
    if (existsSync(metaFile)) {
      const meta = JSON.parse(readFileSync(metaFile, "utf8")) as Meta;
      if (meta.model !== model || meta.dimension !== dimension)
        throw new Error(`${metaFile} is for ${meta.model}/${meta.dimension}, not ${model}/${dimension}`);
    } else writeFileSync(metaFile, `${JSON.stringify({ model, dimension }, null, 2)}\n`);
    this.load();
  }

  private load() {
    const rowBytes = this.dimension * 4;
    const keyBytes = existsSync(this.keysFile) ? statSync(this.keysFile).size : 0;
    const vecBytes = existsSync(this.vectorsFile) ? statSync(this.vectorsFile).size : 0;
    const rows = Math.min(Math.floor(keyBytes / 32), Math.floor(vecBytes / rowBytes));
    // Drop a torn tail (a batch whose write was interrupted).
    if (keyBytes !== rows * 32) truncateSync(this.keysFile, rows * 32);
    if (vecBytes !== rows * rowBytes) truncateSync(this.vectorsFile, rows * rowBytes);
    if (!rows) return;
    const keys = readFileSync(this.keysFile);
    const raw = readFileSync(this.vectorsFile);
    this.data = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    for (let i = 0; i < rows; i++) this.index.set(keys.toString("hex", i * 32, i * 32 + 32), i);
    this.rows = rows;
  }

  get size() {
    return this.index.size;
  }

  has(key: string): boolean {
    return this.index.has(key);
  }

  get(key: string): Float32Array | undefined {
    const row = this.index.get(key);
    if (row === undefined) return undefined;
    return this.data.slice(row * this.dimension, (row + 1) * this.dimension);
  }

  /** Appends a batch (vectors first, then keys, each fsynced) and remembers it. */
  append(entries: { key: string; vector: ArrayLike<number> }[]) {
    const fresh = entries.filter((e) => !this.index.has(e.key));
    if (!fresh.length) return;
    const vectors = new Float32Array(fresh.length * this.dimension);
    fresh.forEach((e, i) => {
      if (e.vector.length !== this.dimension)
        throw new Error(`vector of dimension ${e.vector.length}, expected ${this.dimension}`);
      vectors.set(e.vector, i * this.dimension);
    });
    const keys = Buffer.concat(fresh.map((e) => Buffer.from(e.key, "hex")));
    for (const [file, bytes] of [
      [this.vectorsFile, Buffer.from(vectors.buffer)],
      [this.keysFile, keys],
    ] as const) {
      const fd = openSync(file, "a");
      try {
        writeSync(fd, bytes);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
    const needed = (this.rows + fresh.length) * this.dimension;
    if (needed > this.data.length) {
      // Doubling capacity: appending batch by batch stays linear overall.
      const grown = new Float32Array(Math.max(needed, this.data.length * 2));
      grown.set(this.data.subarray(0, this.rows * this.dimension));
      this.data = grown;
    }
    this.data.set(vectors, this.rows * this.dimension);
    fresh.forEach((e, i) => {
      this.index.set(e.key, this.rows + i);
    });
    this.rows += fresh.length;
  }

  /** One writer at a time: a lock file holding the writer's pid (taken over when that process is gone). */
  lock(): () => void {
    const file = path.join(this.dir, "lock");
    if (existsSync(file)) {
      const pid = Number(readFileSync(file, "utf8"));
      let alive = false;
      try {
        process.kill(pid, 0);
        alive = pid !== process.pid;
      } catch {}
      if (alive) throw new Error(`process ${pid} is filling ${this.dir}; wait for it (or stop it) first`);
    }
    writeFileSync(file, String(process.pid));
    return () => rmSync(file, { force: true });
  }
}

const fmtDuration = (s: number) =>
  s >= 3600
    ? `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`
    : s >= 60
      ? `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`
      : `${s.toFixed(0)} s`;

/**
 * The vectors of `texts` (document purpose), from the cache where present; the missing ones are
 * embedded in batches (appended to the cache as they come, so an interrupted run keeps its work),
 * with the rate measured on the first `probe` texts and an ETA logged.
 */
export async function cachedVectors(opts: {
  model: string;
  dimension: number;
  texts: readonly string[];
  /** Creates an embedder only when some vectors are missing. */
  embed: () => VectorSource;
  batch?: number;
  probe?: number;
}): Promise<CachedVectors> {
  const { model, dimension, texts } = opts;
  const cache = new ModelCache(model, dimension);
  const keys = texts.map(textKey);
  const missing: number[] = [];
  const seen = new Set<string>();
  keys.forEach((k, i) => {
    if (!cache.has(k) && !seen.has(k)) {
      seen.add(k);
      missing.push(i);
    }
  });
  // Similar lengths together: the model pads every inference batch to its longest text.
  missing.sort((a, b) => (texts[a] as string).length - (texts[b] as string).length);
  let computeMs = 0;
  if (missing.length) {
    const unlock = cache.lock();
    const embedder = opts.embed();
    log(
      `vectors: ${texts.length - missing.length} of ${texts.length} cached in ${cache.dir}; embedding ${missing.length} with ${model} (${embedder.threads} thread${embedder.threads > 1 ? "s" : ""})`,
    );
    const started = performance.now();
    try {
      const batch = opts.batch ?? 64;
      const probe = Math.min(missing.length, opts.probe ?? 500);
      let done = 0;
      let lastLog = started;
      let probed = false;
      while (done < missing.length) {
        const slice = missing.slice(done, done + batch);
        const vectors = await embedder.embed(slice.map((i) => texts[i] as string));
        cache.append(slice.map((i, j) => ({ key: keys[i] as string, vector: vectors[j] as number[] })));
        done += slice.length;
        const now = performance.now();
        const perSecond = (done * 1000) / (now - started);
        const eta = (missing.length - done) / perSecond;
        if (!probed && done >= probe) {
          probed = true;
          lastLog = now;
          log(
            `vectors: rate on the first ${done} texts ${perSecond.toFixed(1)} texts/s → ETA for the remaining ${missing.length - done}: ${fmtDuration(eta)}`,
          );
        } else if (now - lastLog > 30_000 || done === missing.length) {
          lastLog = now;
          log(
            `vectors: ${done}/${missing.length} (${((100 * done) / missing.length).toFixed(1)} %), ${perSecond.toFixed(1)} texts/s, ETA ${fmtDuration(eta)}`,
          );
        }
      }
    } finally {
      await embedder.close();
      unlock();
    }
    computeMs = performance.now() - started;
  }
  const vectors = keys.map((k) => {
    const v = cache.get(k);
    if (!v) throw new Error("a vector is missing from the cache after filling it");
    return v;
  });
  return {
    file: cache.dir,
    hit: missing.length === 0,
    computed: missing.length,
    vectors,
    computeMs,
    textsPerSecond: missing.length ? (missing.length * 1000) / computeMs : Number.NaN,
  };
}
