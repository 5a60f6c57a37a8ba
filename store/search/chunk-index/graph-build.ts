import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import usearch from "usearch";

const { Index, MetricKind, ScalarKind } = usearch;
export type Graph = InstanceType<typeof Index>;
type GraphConfig = ConstructorParameters<typeof Index>[0] & object;

/** How far below the API and the store the build's threads run (as the bulk embedding threads do). */
const BUILD_NICENESS = 10;

function graphConfig(dimensions: number): GraphConfig {
  // f16 halves the graph's memory; its recall against an exact top 100 was 0.90 at 100,000 chunks, as pgvector's
  // HNSW with the same connectivity (docs/decisions/README.md#0002-in-memory-search-index).
  return {
    dimensions,
    metric: MetricKind.Cos,
    quantization: ScalarKind.F16,
    connectivity: 16,
    expansion_add: 64,
    expansion_search: 100,
    multi: false,
  };
}

/** An empty graph, for rows added one at a time (the changes after the build, or an index never built). */
export function newGraph(dimensions: number): Graph {
  return new Index(graphConfig(dimensions));
}

/** A graph being built on a thread of its own; `stop()` ends the thread (the build then rejects). */
export interface GraphBuild {
  graph: Promise<Graph>;
  stop(): void;
}

/**
 * Builds a graph of `keys` (one per row of `vectors`, `dimensions` floats each) on a worker thread at a low OS
 * priority, all cores given to the batch, and loads it here. Why: inserted one at a time on the service's main
 * thread, 100,000 rows took most of a minute of it at start-up; the thread only copies the vectors out and the
 * finished graph back in (a file in a private temporary directory, removed once loaded).
 */
export function buildGraph(dimensions: number, keys: BigUint64Array, vectors: Float32Array): GraphBuild {
  // In a directory of its own (mode 0700): the graph holds the chunks' vectors, which are tenants' data too.
  const dir = mkdtempSync(path.join(tmpdir(), "chunk-graph-"));
  const file = path.join(dir, "graph.usearch");
  const worker = new Worker(new URL("./graph-build.worker.mjs", import.meta.url), {
    workerData: {
      config: graphConfig(dimensions),
      keys,
      vectors,
      file,
      threads: availableParallelism(),
      niceness: BUILD_NICENESS,
    },
    transferList: [keys.buffer as ArrayBuffer, vectors.buffer as ArrayBuffer],
  });
  let stopped = false;
  const graph = new Promise<Graph>((resolve, reject) => {
    worker.once("message", () => {
      try {
        const graph = newGraph(dimensions);
        graph.load(file);
        resolve(graph);
      } catch (error) {
        reject(error);
      }
    });
    worker.once("error", reject);
    worker.once("exit", (code) => {
      reject(
        new Error(stopped ? "the graph build was stopped" : `the graph build's thread exited (${code})`),
      );
    });
  }).finally(() => rmSync(dir, { recursive: true, force: true }));
  return {
    graph,
    stop: () => {
      stopped = true;
      void worker.terminate();
    },
  };
}
