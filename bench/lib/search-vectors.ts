// Fills the search benchmark's vector cache ahead of a run (it can take long at 100,000 chunks), e.g.
//   npx tsx bench/lib/search-vectors.ts --chunks 100000 [--embedder bge-small] [--threads 2]
// The benchmark itself fills whatever is still missing; this only lets the slow part run on its own.

import { cpus } from "node:os";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { createEmbedder, resolveDefaultEmbedder } from "../../pipeline/embedder/index.ts";
import { readCorpus } from "./corpus.ts";
import { log } from "./progress.ts";
import { searchChunkDocuments } from "./search-corpus.ts";
import { cachedVectors, type VectorSource } from "./vector-cache.ts";

/** A document-purpose embedder for the cache, with as many threads as asked (default: every core). */
export function vectorSource(name: string, threads = Math.max(1, cpus().length)): () => VectorSource {
  return () => {
    const e = createEmbedder(name, { threads });
    return { embed: (t) => e.embed(t, "document"), close: () => e.close(), threads };
  };
}

/** Model name and dimension of an embedder, without keeping it open. */
export async function embedderSpace(name: string): Promise<{ model: string; dimension: number }> {
  const e = createEmbedder(name, { threads: 1 });
  try {
    return { model: e.model, dimension: e.dimension };
  } finally {
    await e.close();
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      chunks: { type: "string", default: "100000" },
      embedder: { type: "string" },
      threads: { type: "string" },
    },
  });
  const name = values.embedder ?? resolveDefaultEmbedder().name;
  const sizes = String(values.chunks)
    .split(",")
    .map((s) => Number(s.trim()));
  const corpus = readCorpus();
  const space = await embedderSpace(name);
  log(`search vectors: sizes ${sizes.join(", ")}, embedder ${name} (${space.model}, ${space.dimension}-d)`);
  // The smaller sizes first (each is contained in the larger ones), so the 10k store is ready early.
  const started = performance.now();
  for (const n of [...new Set(sizes)].sort((a, b) => a - b)) {
    const r = await cachedVectors({
      ...space,
      texts: searchChunkDocuments(corpus, n).flatMap((d) => d.pieces),
      embed: vectorSource(name, values.threads ? Number(values.threads) : undefined),
    });
    log(`search vectors: ${n} ready (${r.computed} computed now, ${r.file})`);
  }
  log(`search vectors: done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    () => process.exit(0),
    (error) => {
      process.stderr.write(`${(error as Error).stack ?? error}\n`);
      process.exit(1);
    },
  );
}
