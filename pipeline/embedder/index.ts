// Registry of embedders by name, so configuration can pick one without importing its module.

import type { Embedder } from "./types.ts";
import { UseLiteEmbedder, type UseLiteOptions } from "./use-lite.ts";

export type { Embedder } from "./types.ts";
export { USE_LITE_DIMENSION, USE_LITE_MODEL, UseLiteEmbedder, type UseLiteOptions } from "./use-lite.ts";

export interface EmbedderOptions {
  /** Worker threads for embedders that use them. */
  threads?: number;
}

const registry: Record<string, (options: EmbedderOptions) => Embedder> = {
  "use-lite": (options: UseLiteOptions) => new UseLiteEmbedder(options),
};

export const EMBEDDER_NAMES: readonly string[] = Object.keys(registry);

export function createEmbedder(name = "use-lite", options: EmbedderOptions = {}): Embedder {
  const factory = registry[name];
  if (!factory) throw new Error(`unknown embedder "${name}"; available: ${EMBEDDER_NAMES.join(", ")}`);
  return factory(options);
}
