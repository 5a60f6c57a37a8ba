// Cross-encoder models this service knows how to install and verify (scripts/setup.mjs fetches them; see
// docs/models.md). A model is used only when its files are present and match the pinned sha256 values.

import { join } from "node:path";
import { cacheDir } from "../../config/paths.ts";
import { checkModelFiles, type FilesCheck, type PinnedFile } from "../embedder/bge-small-files.ts";

export interface CrossEncoderSpec {
  /** Directory name under <cacheDir>/models/ and the name reported as Reranker.model. */
  id: string;
  /** Files pinned by size and sha256; must match the model's entry in MODELS in scripts/setup.mjs. */
  files: readonly PinnedFile[];
  modelFile: string;
  tokenizerFile: string;
  /** Most tokens per query+passage pair (BERT's position table). */
  maxTokens: number;
}

/**
 * Empty on purpose: no registry this service may install from (npm, PyPI, Maven Central, crates.io, the Go
 * module proxy, Debian) was found to ship a cross-encoder's weights (docs/models.md lists what was checked).
 * Adding one needs its files here and in scripts/setup.mjs, both pinned by sha256.
 */
export const CROSS_ENCODERS: readonly CrossEncoderSpec[] = [];

export function crossEncoderDir(spec: CrossEncoderSpec): string {
  return join(cacheDir(), "models", spec.id);
}

export function checkCrossEncoderFiles(spec: CrossEncoderSpec, dir = crossEncoderDir(spec)): FilesCheck {
  return checkModelFiles(dir, spec.files, "run `node scripts/setup.mjs` to install the reranker model");
}
