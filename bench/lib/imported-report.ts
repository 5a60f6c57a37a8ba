// The section of docs/benchmarks.md that the scenario `search-imported` (bench/search-imported.ts) fills.

import { autoPoolRule } from "../../store/pglite-pool.ts";
import type { SearchResult } from "../search.ts";
import type { ImportedSearchOptions, ImportedSearchResult } from "../search-imported.ts";
import { INDEXED_SCOPE } from "./indexed-scope.ts";
import { ms, ratio } from "./stats.ts";

export const IMPORTED_HEADING = "## Search on imported data (issue #25)";

const n = (v: number) => v.toLocaleString("en-US");

/** The goals issue #25 sets, for the verdict column (computed, never typed); the memory search's section uses them too. */
export const SEQUENTIAL_P95_GOAL_MS = 50;
export const CONCURRENT_P95_GOAL_MS = 150;

export const verdict = (value: number, goal: number) =>
  Number.isFinite(value) && value <= goal ? "within" : "over";

export function renderImportedSection(
  r: ImportedSearchResult,
  o: ImportedSearchOptions,
  seeded?: SearchResult,
): string[] {
  const chunks = r.sizes.find((s) => s.table === "chunks");
  // Runs before the count was exact took live rows from PGlite's statistics, which a reopened store had lost
  // (0): those runs name the chunks their documents hold by construction instead of a count.
  const counted = r.liveChunks > 0;
  const liveChunks = counted ? r.liveChunks : r.documents.live * o.chunksPerDoc;
  const baseline = seeded?.sizes.find((s) => s.chunks === o.chunks);
  const lines = [
    IMPORTED_HEADING,
    "",
    `A store filled through the service's own store path (\`bench/lib/churn.ts\`: save, admission, processing of each document with its chunks, vectors and index updates, in batches of 100 as a batch import admits them), not bulk-loaded: ${n(r.documents.imported)} documents of ${o.chunksPerDoc} chunk(s) imported at ${r.fillRate.toFixed(0)} documents/s (no model: the vectors come from the search benchmark's cache), then ${n(r.documents.deleted)} deleted and ${n(r.documents.updated)} updated with new content through the API's store functions. Then what the service's schedules would have run by then: the statistics refresh (${ms(r.maintenance.statisticsMs)}) and one maintenance pass (${ms(r.maintenance.passMs)}${r.maintenance.steps.length ? `: ${r.maintenance.steps.join(", ")}` : ", nothing to do"}). Live: ${n(r.documents.live)} documents, ${counted ? `${n(liveChunks)} chunks` : `${n(liveChunks)} chunks (${o.chunksPerDoc} per document; not counted in this run)`}. Every document carries the tag \`all\` and one of ${n(o.tags)} small tags, so one store holds both layouts: a search in \`all\` covers every chunk (one big tenant), a search in a small tag covers about ${n(Math.round(liveChunks / o.tags))} chunks among everybody's.${r.reusedStore ? ` **This run reused a store kept in ${r.reusedStore} (\`--imported-store\`)**: the fill figures are those of the run that filled it, and the store may have been changed since.` : ""}`,
    "",
    `Sizes after the pass: chunks ${chunks ? `${chunks.heapMb} MB heap, ${chunks.indexes.map((i) => `${i.name} ${i.mb} MB`).join(", ")}${chunks.live > 0 ? `; ${n(chunks.live)} live, ${n(chunks.dead)} dead rows` : ""}` : "n/a"}.`,
    "",
    `Served by the real service${r.sqlNamed ? " with `SEARCH_INDEX=sql` (ranked by PGlite; the rows of the in-memory index, the embedded default, come after the concurrency table)" : ""} (\`${r.embedder.name}\`, queries embedded per request${o.queryPrecision && o.queryPrecision !== "fp32" ? ` **with ${o.queryPrecision} weights** (\`EMBEDDING_QUERY_PRECISION\` set for this run)` : ""}${o.sharedBuffers && o.sharedBuffers !== "auto" ? `; **PGlite's buffer pool set to ${o.sharedBuffers}** with \`PGLITE_SHARED_BUFFERS\`, not the default` : r.servicePool ? `; PGlite's buffer pool ${r.servicePool}, what the default \`PGLITE_SHARED_BUFFERS=auto\` chose for this store (${autoPoolRule()})` : ""}). ${o.searches} SciFact queries per row, one at a time after 10 warm-up requests; \`limit: 10\`. Client is the whole HTTP request; server is the response's own \`timing\`. The goal column compares the client p95 with issue #25's ${SEQUENTIAL_P95_GOAL_MS} ms.${r.sequential.some((s) => s.scope.includes("filtered")) ? " The filtered rows add a metadata filter (`filters: {AND: [{key, value}]}`) to the big tag's search; every document has a project and a team in its metadata, and each search filters to another one." : ""}${r.sequential.some((s) => s.scope.includes("ignoreCase")) ? " An `ignoreCase` condition is matched on the documents' metadata with every string lower-cased (`metadata_folded`, migration 0019), which has a GIN index of its own." : ""}`,
    "",
    "| route | scope | client p50 | client p95 | server p50 | server p95 | errors | results | p95 vs 50 ms |",
    "|---|---|---|---|---|---|---|---|---|",
    ...r.sequential.map(
      (s) =>
        `| ${s.route} | ${s.scope} | ${ms(s.client.p50)} | ${ms(s.client.p95)} | ${ms(s.server.p50)} | ${ms(s.server.p95)} | ${s.errors} | ${s.meanResults.toFixed(1)} | ${verdict(s.client.p95, SEQUENTIAL_P95_GOAL_MS)} |`,
    ),
    "",
  ];
  const v3All = r.sequential.find((s) => s.route === "POST /v3/search" && s.scope.startsWith('"all" (every'));
  if (baseline && v3All)
    lines.push(
      `Beside the bulk-loaded table of the \`search\` scenario in this run (${n(baseline.chunks)} chunks in one tag, its HNSW index built after the load): \`POST /v3/search\` p50 ${ms(baseline.http.p50)} / p95 ${ms(baseline.http.p95)} there, ${ms(v3All.client.p50)} / ${ms(v3All.client.p95)} on the imported store (p95 ${ratio(v3All.client.p95, baseline.http.p95)} of the bulk-loaded one).`,
      "",
    );
  else
    lines.push(
      `No bulk-loaded baseline of ${n(o.chunks)} chunks in this run: \`npm run bench -- --only search,search-imported --chunks ${o.chunks}\` measures both.`,
      "",
    );
  const withCpu = r.concurrent.some((c) => c.cpuPerRequest);
  // Runs stored since 2026-12-03 (f91f6cd) put the clients on a thread of their own; older runs put them on the
  // service's main thread, and the page says which.
  const clientsApart = r.concurrent.some((c) => c.cpuPerRequest?.clientsMs !== undefined);
  const floor = r.concurrent.find((c) => c.scope.startsWith("a tag with no documents"));
  const cpu = (v: number | undefined) =>
    v === undefined || !Number.isFinite(v) ? "n/a" : `${v.toFixed(1)} ms`;
  lines.push(
    `Concurrency: ${r.concurrent[0]?.clients ?? o.clients} clients, each sending its next request when the last one is answered, ${n(r.concurrent[0]?.requests ?? 0)} requests per row. The goal column compares p95 with issue #25's ${CONCURRENT_P95_GOAL_MS} ms.${floor ? " The row in a tag with no documents searches a tag no document carries: the store finds nothing to rank, so its figures are what the rest of a search (HTTP, the key, the query's embedding) costs on this machine, a floor no faster store could go under." : ""}${clientsApart ? " The clients run on a worker thread of the benchmark's process, not in the service's event loop (as clients on other machines would not be); their CPU is this machine's all the same, in its own column and in the machine's." : ""}${withCpu ? ` The CPU columns are per search, from the CPU time of each thread of the benchmark's process (${clientsApart ? "the service and the clients' thread" : "the service and its clients run in it"}) over the row, and the machine's busy time on all cores, whatever process spent it; two cores give 2,000 ms of CPU a second, so a row can serve at most 2,000 / (machine ms) searches a second.` : ""}`,
    "",
    withCpu
      ? `| route | scope | clients | p50 | p95 | max | requests/s | errors | p95 vs 150 ms | CPU: main thread | CPU: busiest other thread | CPU: other threads |${clientsApart ? " CPU: clients |" : ""} CPU: machine |`
      : "| route | scope | clients | p50 | p95 | max | requests/s | errors | p95 vs 150 ms |",
    withCpu
      ? `|---|---|---|---|---|---|---|---|---|---|---|---|${clientsApart ? "---|" : ""}---|`
      : "|---|---|---|---|---|---|---|---|---|",
    ...r.concurrent.map(
      (c) =>
        `| ${c.route} | ${c.scope} | ${c.clients} | ${ms(c.latency.p50)} | ${ms(c.latency.p95)} | ${ms(c.latency.max)} | ${c.throughput.toFixed(1)} | ${c.errors} | ${verdict(c.latency.p95, CONCURRENT_P95_GOAL_MS)} |${withCpu ? ` ${cpu(c.cpuPerRequest?.mainMs)} | ${cpu(c.cpuPerRequest?.busiestOtherMs)} | ${cpu(c.cpuPerRequest?.otherMs)} |${clientsApart ? ` ${cpu(c.cpuPerRequest?.clientsMs)} |` : ""} ${cpu(c.cpuPerRequest?.machineMs)} |` : ""}`,
    ),
    "",
  );
  lines.push(...indexedComparison(r));
  return lines;
}

/**
 * The rows served through the in-memory search index (a second start of the service on the same store), each set
 * beside the same row served by SQL in this run.
 */
function indexedComparison(r: ImportedSearchResult): string[] {
  const index = r.searchIndex;
  if (!index) return [];
  const sqlRow = <T extends { route: string; scope: string }>(rows: T[], indexed: T) =>
    rows.find((x) => x.route === indexed.route && x.scope === indexed.scope.slice(0, -INDEXED_SCOPE.length));
  const isIndexed = (x: { scope: string }) => x.scope.endsWith(INDEXED_SCOPE);
  const sequential = r.sequential.filter(isIndexed).flatMap((x) => {
    const base = sqlRow(r.sequential, x);
    return base
      ? [
          `${x.route} in ${base.scope}: p95 ${ms(x.client.p95)} against ${ms(base.client.p95)} (${ratio(x.client.p95, base.client.p95)})`,
        ]
      : [];
  });
  const concurrent = r.concurrent.filter(isIndexed).flatMap((x) => {
    const base = sqlRow(r.concurrent, x);
    const main = x.cpuPerRequest && base?.cpuPerRequest;
    return base
      ? [
          `${x.clients} clients in ${base.scope}: ${x.throughput.toFixed(1)} against ${base.throughput.toFixed(1)} searches/s, p95 ${ms(x.latency.p95)} against ${ms(base.latency.p95)}${main ? `, main thread ${x.cpuPerRequest?.mainMs.toFixed(1)} against ${base.cpuPerRequest?.mainMs.toFixed(1)} ms a search` : ""}`,
        ]
      : [];
  });
  return [
    `The rows whose scope ends in "in-memory index (SEARCH_INDEX=memory)" come from a second start of the service on the same store with \`SEARCH_INDEX=memory\`${r.sqlNamed ? ", the embedded store's default (the rows above were served with `SEARCH_INDEX=sql`)" : ""} (\`store/search/chunk-index/\`: the chunks' tags, lexemes and vectors held in the service's memory and ranked there, with what a hit shows, so no chunk row is read). Its index of ${n(index.chunks)} chunks was built in ${(index.buildMs / 1000).toFixed(1)} s after the service was up, and the benchmark's process (service and clients) went from ${n(index.rssBeforeMb)} to ${n(index.rssAfterMb)} MiB resident. Against the same rows served by SQL above:`,
    "",
    ...[...sequential, ...concurrent].map((line) => `- ${line}.`),
    "",
  ];
}
