// Builds the chunk index's HNSW graph on a thread of its own (store/search/chunk-index/graph-build.ts starts it): at
// start-up the graph's inserts were most of the index's build, ~0.4 ms each on the service's main thread. Plain
// JavaScript, so the thread needs no TypeScript loader. It gets the graph's settings, the keys and the vectors,
// adds them in one batch and saves the graph to `file`, which the main thread loads.

import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";
import { parentPort, workerData } from "node:worker_threads";
import usearch from "usearch";

const { config, keys, vectors, file, threads, niceness } = workerData;

// Yield the cores to the API and the store while building: on Linux a thread has its own nice value, and the
// threads usearch starts for the batch inherit it. Best effort: elsewhere the build runs at normal priority.
if (niceness > 0 && process.platform === "linux") {
  try {
    setPriority(Number(readlinkSync("/proc/thread-self").split("/").pop()), niceness);
  } catch {}
}

const graph = new usearch.Index(config);
graph.add(keys, vectors, threads);
graph.save(file);
parentPort.postMessage({ size: graph.size() });
