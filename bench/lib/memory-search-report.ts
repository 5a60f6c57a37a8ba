// The section of docs/benchmarks.md that the scenario `search-memories` (bench/search-memories.ts) fills.

import { autoPoolRule } from "../../store/pglite-pool.ts";
import type { MemorySearchOptions, MemorySearchResult } from "../search-memories.ts";
import { CONCURRENT_P95_GOAL_MS, SEQUENTIAL_P95_GOAL_MS, verdict } from "./imported-report.ts";
import { ms } from "./stats.ts";

export const MEMORY_SEARCH_HEADING = "## Memory search at scale (issue #25)";

const n = (v: number) => v.toLocaleString("en-US");

export function renderMemorySearchSection(r: MemorySearchResult, o: MemorySearchOptions): string[] {
  const storeOf = (scope: string) => r.store.find((s) => s.scope === scope);
  return [
    MEMORY_SEARCH_HEADING,
    "",
    `\`POST /v4/search\` in its default mode (memories), what the SDK's \`client.search.memories\` sends. A store filled through the store path of the API's memory add (\`insertMemories\`: one row at a time with its HNSW and GIN index updates, ${n(100)} a call), with the statistics refresh the service's schedule runs as the table grows: ${n(r.memories)} memories in one container (\`all\`) and the same ${n(r.memories)} again spread over ${n(o.tags)} small containers (about ${n(Math.round(r.memories / o.tags))} each), added a batch of each in turn, at ${r.fillRate.toFixed(0)} memories/s (no model: SciFact sentences and their vectors from the search benchmark's cache; each memory has one of 200 projects in its metadata; the \`ignoreCase\` row asks for each project spelt in capitals with \`ignoreCase: true\`, matched by the index on the memories' folded metadata, migration 0020). ${n(r.sizes.live)} live memories; heap ${r.sizes.heapMb} MB, ${r.sizes.indexes.map((i) => `${i.name} ${i.mb} MB`).join(", ")}.${r.reusedStore ? ` **This run reused a store kept in ${r.reusedStore} (\`--memories-store\`)**: the fill figures are those of the run that filled it.` : ""}`,
    "",
    `${o.searches} SciFact queries per row, one at a time after 10 warm-up requests, \`limit: 10\`. "Store alone" is the same search through \`store/memories.ts\` in the benchmark's process before the service opened the store, with the query vectors embedded beforehand: what the SQL costs. Client is the whole HTTP request (query embedding included); server is the response's own \`timing\`.${r.servicePool ? ` The service's store started with a ${r.servicePool} buffer pool (\`PGLITE_SHARED_BUFFERS\`; the default \`auto\` sizes it from the store: ${autoPoolRule()}).` : ""} The goal column compares the client p95 with issue #25's ${SEQUENTIAL_P95_GOAL_MS} ms.`,
    "",
    "| scope | store alone p50 | store alone p95 | client p50 | client p95 | server p50 | server p95 | errors | results | p95 vs 50 ms |",
    "|---|---|---|---|---|---|---|---|---|---|",
    ...r.sequential.map((s) => {
      const alone = storeOf(s.scope);
      return `| ${s.scope} | ${alone ? ms(alone.latency.p50) : "n/a"} | ${alone ? ms(alone.latency.p95) : "n/a"} | ${ms(s.client.p50)} | ${ms(s.client.p95)} | ${ms(s.server.p50)} | ${ms(s.server.p95)} | ${s.errors} | ${s.meanResults.toFixed(1)} | ${verdict(s.client.p95, SEQUENTIAL_P95_GOAL_MS)} |`;
    }),
    "",
    `Concurrency: ${r.concurrent[0]?.clients ?? o.clients} clients, each sending its next request when the last one is answered, ${n(r.concurrent[0]?.requests ?? 0)} requests per row. The goal column compares p95 with issue #25's ${CONCURRENT_P95_GOAL_MS} ms.${r.concurrent.some((c) => c.cpuPerRequest?.clientsMs !== undefined) ? " The clients run on a worker thread of the benchmark's process, not in the service's event loop." : ""}`,
    "",
    "| scope | clients | p50 | p95 | max | requests/s | errors | p95 vs 150 ms |",
    "|---|---|---|---|---|---|---|---|",
    ...r.concurrent.map(
      (c) =>
        `| ${c.scope} | ${c.clients} | ${ms(c.latency.p50)} | ${ms(c.latency.p95)} | ${ms(c.latency.max)} | ${c.throughput.toFixed(1)} | ${c.errors} | ${verdict(c.latency.p95, CONCURRENT_P95_GOAL_MS)} |`,
    ),
    "",
  ];
}
