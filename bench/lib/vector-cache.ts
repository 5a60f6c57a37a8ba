// Embedding 10,000 texts takes minutes on a small machine, so the vectors of the search corpus are
// computed once and kept under <cache>/bench/, keyed by model name and count. A cache entry is only
// reused when the texts it was made from are exactly the texts wanted now (sha256 of all of them).

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { cacheDir } from "../../runtime/paths.ts";
import { progress } from "./progress.ts";

export interface CachedVectors {
  file: string;
  /** True when the vectors were read from the cache rather than computed in this run. */
  hit: boolean;
  vectors: Float32Array[];
  /** Wall time spent computing them in this run (0 on a cache hit). */
  computeMs: number;
}

interface Meta {
  model: string;
  dimension: number;
  count: number;
  textsSha256: string;
  createdAt: string;
  computeMs: number;
  threads: number;
}

export function benchCacheDir(): string {
  return path.join(cacheDir(), "bench");
}

export function textsDigest(texts: readonly string[]): string {
  const hash = createHash("sha256");
  for (const t of texts) hash.update(t).update("\u0000");
  return hash.digest("hex");
}

export async function cachedVectors(opts: {
  model: string;
  dimension: number;
  texts: readonly string[];
  /** Creates an embedder only when the cache misses. */
  embed: () => { embed(texts: string[]): Promise<number[][]>; close(): Promise<void>; threads: number };
  batch?: number;
}): Promise<CachedVectors> {
  const { model, dimension, texts } = opts;
  const dir = benchCacheDir();
  const base = path.join(dir, `${model.replace(/[^\w.-]/g, "_")}-${texts.length}`);
  const metaFile = `${base}.json`;
  const dataFile = `${base}.f32`;
  const digest = textsDigest(texts);
  if (existsSync(metaFile) && existsSync(dataFile)) {
    const meta = JSON.parse(readFileSync(metaFile, "utf8")) as Meta;
    const data = readFileSync(dataFile);
    const ok =
      meta.model === model &&
      meta.dimension === dimension &&
      meta.count === texts.length &&
      meta.textsSha256 === digest &&
      data.byteLength === texts.length * dimension * 4;
    if (ok) {
      const all = new Float32Array(data.buffer, data.byteOffset, data.byteLength / 4);
      const vectors = texts.map((_, i) => all.slice(i * dimension, (i + 1) * dimension));
      return { file: dataFile, hit: true, vectors, computeMs: 0 };
    }
  }

  const embedder = opts.embed();
  const started = performance.now();
  const all = new Float32Array(texts.length * dimension);
  try {
    const batch = opts.batch ?? 64;
    const bar = progress(`embedding ${texts.length} search chunks (once, then cached)`, texts.length, 15_000);
    for (let i = 0; i < texts.length; i += batch) {
      const vectors = await embedder.embed(texts.slice(i, i + batch));
      vectors.forEach((v, j) => {
        if (v.length !== dimension) throw new Error(`vector of dimension ${v.length}, expected ${dimension}`);
        all.set(v, (i + j) * dimension);
      });
      bar.update(Math.min(texts.length, i + batch));
    }
    bar.finish();
  } finally {
    await embedder.close();
  }
  const computeMs = performance.now() - started;
  mkdirSync(dir, { recursive: true });
  // Data first, metadata last (each via rename): an interrupted write leaves no entry that looks valid.
  writeFileSync(`${dataFile}.tmp`, Buffer.from(all.buffer));
  renameSync(`${dataFile}.tmp`, dataFile);
  const meta: Meta = {
    model,
    dimension,
    count: texts.length,
    textsSha256: digest,
    createdAt: new Date().toISOString(),
    computeMs: Math.round(computeMs),
    threads: embedder.threads,
  };
  writeFileSync(`${metaFile}.tmp`, `${JSON.stringify(meta, null, 2)}\n`);
  renameSync(`${metaFile}.tmp`, metaFile);
  const vectors = texts.map((_, i) => all.slice(i * dimension, (i + 1) * dimension));
  return { file: dataFile, hit: false, vectors, computeMs };
}
