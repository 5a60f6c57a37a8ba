// Chooses the reranker: a pinned, installed and verified cross-encoder, or none with the reason, so the API can
// refuse `rerank: true` honestly instead of pretending to rerank.

import { type CrossEncoderOptions, CrossEncoderReranker } from "./cross-encoder.ts";
import { CROSS_ENCODERS, type CrossEncoderSpec, checkCrossEncoderFiles, crossEncoderDir } from "./files.ts";
import type { Reranker } from "./types.ts";

export { type CrossEncoderOptions, CrossEncoderReranker, sigmoid } from "./cross-encoder.ts";
export { CROSS_ENCODERS, type CrossEncoderSpec, checkCrossEncoderFiles, crossEncoderDir } from "./files.ts";
export type { Reranker } from "./types.ts";

export type RerankerResolution =
  | { available: true; spec: CrossEncoderSpec; reason: string }
  | { available: false; reason: string };

/** The first pinned cross-encoder whose files are installed and verified, or why there is none. */
export function resolveReranker(specs: readonly CrossEncoderSpec[] = CROSS_ENCODERS): RerankerResolution {
  if (specs.length === 0) {
    return {
      available: false,
      reason:
        "no cross-encoder reranker is installed: none could be obtained offline from the package registries " +
        "this service installs from (see docs/models.md)",
    };
  }
  const problems: string[] = [];
  for (const spec of specs) {
    const check = checkCrossEncoderFiles(spec);
    if (check.ok) return { available: true, spec, reason: `${spec.id} verified in ${crossEncoderDir(spec)}` };
    problems.push(`${spec.id}: ${check.reason}`);
  }
  return { available: false, reason: `no cross-encoder reranker is installed (${problems.join("; ")})` };
}

/** A reranker over the installed cross-encoder, or undefined (resolveReranker() says why). */
export function createReranker(options: CrossEncoderOptions = {}): Reranker | undefined {
  const resolved = resolveReranker();
  return resolved.available ? new CrossEncoderReranker(resolved.spec, options) : undefined;
}
