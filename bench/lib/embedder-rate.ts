// The embedding model alone on the chunks the pipeline embeds, as bench/ingest.ts measures it (a fresh
// embedder with the service's thread count and task size, a warm-up call, then calls of 32 texts in the bulk lane), with the elapsed
// time noted where the chunks of the first N documents end (no call crosses such a point), so every
// import size gets the rate on its own chunks (or on the longest prefix measured).

import { createEmbedder, type DocumentPrecision } from "../../pipeline/embedder/index.ts";
import { type CpuShares, cpuMeter } from "./cpu.ts";
import { progress } from "./progress.ts";

export interface EmbedderRate {
  model: string;
  threads: number;
  /** Documents whose chunks were embedded (a prefix of the import's documents). */
  documents: number;
  chunks: number;
  ms: number;
  chunksPerSecond: number;
  /** The rate over the chunks of the first `documents` documents, for each import size up to `documents`. */
  prefixes: { documents: number; chunks: number; ms: number; chunksPerSecond: number }[];
  cpu?: CpuShares;
}

export async function embedderRate(opts: {
  model: string;
  threads: number;
  /** Chunk texts of each document, in document order. */
  chunksPerDocument: string[][];
  /** Document counts at which to note the elapsed time. */
  prefixes: number[];
  temporalPid?: number;
  /** The document weights the service embeds with (EMBEDDING_DOCUMENT_PRECISION), so the two rates compare. */
  documentPrecision?: DocumentPrecision;
}): Promise<EmbedderRate> {
  const texts = opts.chunksPerDocument.flat();
  const ends = new Map<number, number>(); // chunk count → document count
  let acc = 0;
  opts.chunksPerDocument.forEach((chunks, i) => {
    acc += chunks.length;
    if (opts.prefixes.includes(i + 1)) ends.set(acc, i + 1);
  });
  const embedder = createEmbedder(opts.model, {
    threads: opts.threads,
    ...(opts.documentPrecision ? { documentPrecision: opts.documentPrecision } : {}),
  });
  try {
    // The bulk lane, as an import's chunks: the model's own threads only (the query thread serves interactive work).
    await embedder.embed(texts.slice(0, Math.min(texts.length, 8 * opts.threads)), "document", {
      priority: "bulk",
    });
    const bar = progress(`embedder alone (${opts.model}), the pipeline's chunks`, texts.length);
    const meter = cpuMeter({ temporalPid: opts.temporalPid, topThreads: opts.threads });
    const started = performance.now();
    const prefixes: EmbedderRate["prefixes"] = [];
    const boundaries = [...ends.keys()].sort((a, b) => a - b);
    let done = 0;
    while (done < texts.length) {
      // Calls of 32 texts, cut short where a prefix ends so its time is exact.
      const next = boundaries.find((b) => b > done) ?? texts.length;
      const slice = texts.slice(done, Math.min(done + 32, next));
      await embedder.embed(slice, "document", { priority: "bulk" });
      done += slice.length;
      const documents = ends.get(done);
      if (documents !== undefined) {
        const ms = performance.now() - started;
        prefixes.push({ documents, chunks: done, ms, chunksPerSecond: (done * 1000) / ms });
      }
      bar.update(done);
    }
    const ms = performance.now() - started;
    const cpu = meter.stop();
    bar.finish();
    return {
      model: embedder.model,
      threads: opts.threads,
      documents: opts.chunksPerDocument.length,
      chunks: texts.length,
      ms,
      chunksPerSecond: (texts.length * 1000) / ms,
      prefixes: prefixes.sort((a, b) => a.documents - b.documents),
      cpu,
    };
  } finally {
    await embedder.close();
  }
}
