// The search-latency section of docs/benchmarks.md (scenario `search`) and its terminal summary (one table per store size).

import type { SearchResult, SearchSizeResult } from "../search.ts";
import { CANDIDATES } from "../search.ts";
import { ms, ratio, type Summary } from "./stats.ts";

const row = (label: string, s: Summary) =>
  `| ${label} | ${ms(s.p50)} | ${ms(s.p95)} | ${ms(s.mean)} | ${ms(s.max)} | ${s.n} |`;
const seconds = (v: number) => `${(v / 1000).toFixed(1)} s`;
const pct = (a: number, b: number) => (Number.isFinite(a / b) ? `${((100 * a) / b).toFixed(0)} %` : "n/a");
const n = (v: number) => v.toLocaleString("en-US");

export const SEARCH_HEADING = "## Search latency";

export function searchSummaryLines(r: SearchResult): string[] {
  const lines = [
    `Search with ${r.embedder.name} (${r.embedder.model}, ${r.embedder.dimension}-d), ${r.searches} queries, p50 / p95:`,
  ];
  for (const s of r.sizes) {
    const line = (label: string, x: Summary) => `    ${label.padEnd(22)} ${ms(x.p50)} / ${ms(x.p95)}`;
    lines.push(
      `  at ${n(s.chunks)} chunks:`,
      line("query embedding", s.queryEmbedding),
      line("hybrid SQL", s.hybridSql),
      line("vector-only SQL", s.vectorSql),
      line("keyword-only SQL", s.keywordSql),
      line("HTTP POST /v3/search", s.http),
      line("  API `timing`", s.httpServerTiming),
      `    query embedding = ${pct(s.queryEmbedding.p50, s.http.p50)} of HTTP p50; HNSW ${s.vectorIndex} used: vector-only ${s.vectorIndexUsed.vector ? "yes" : "NO"}, hybrid ${s.vectorIndexUsed.hybrid ? "yes" : "NO"}`,
    );
  }
  return lines;
}

function sizeSection(s: SearchSizeResult): string[] {
  const scans = (x: Record<string, number>) =>
    Object.entries(x)
      .map(([k, v]) => `\`${k}\` ${v}`)
      .join(", ") || "none recorded";
  return [
    `### ${n(s.chunks)} chunks`,
    "",
    `${n(s.chunks)} distinct chunks (windows of 1–3 consecutive sentences, ${s.meanChunkWords.toFixed(0)} words on average) of ${n(s.documents)} SciFact abstracts, one document per abstract, bulk-loaded as the rows the worker leaves behind (documents \`done\`, chunks with vector, model and dimension; multi-row INSERTs in transactions of ~5,000 chunks, see \`bench/lib/search-load.ts\`) in ${seconds(s.loadMs)} with the other indexes of \`chunks\` dropped and then rebuilt (${seconds(s.secondaryIndexMs ?? Number.NaN)}); then the HNSW index \`${s.vectorIndex}\` was built by \`ensureVectorIndexes\` over the loaded rows in ${seconds(s.indexMs)}, then \`ANALYZE\` (${ms(s.analyzeMs)}). Table \`chunks\` with its indexes: ${s.tableSize}.`,
    "",
    "| Measurement | p50 | p95 | mean | max | n |",
    "|---|---|---|---|---|---|",
    row("(a) Query embedding alone (1 text per call, purpose `query`)", s.queryEmbedding),
    row(`(b) Hybrid SQL \`hybridChunkSearch\` (retrieval \`hybrid\`, ${CANDIDATES} candidates)`, s.hybridSql),
    row("(c) Vector-only SQL (same function, retrieval `vector`)", s.vectorSql),
    row("(d) Keyword-only SQL (same function, retrieval `keyword`)", s.keywordSql),
    row("(e) HTTP `POST /v3/search` through the SDK (client side)", s.http),
    row("… the API's own `timing` field (server side)", s.httpServerTiming),
    "",
    "| Ratio (p50) | Value |",
    "|---|---|",
    `| **Query embedding share of HTTP** | **${pct(s.queryEmbedding.p50, s.http.p50)}** |`,
    `| Hybrid SQL share of HTTP | ${pct(s.hybridSql.p50, s.http.p50)} |`,
    `| Hybrid SQL / vector-only | ${ratio(s.hybridSql.p50, s.vectorSql.p50)} |`,
    `| Hybrid SQL / keyword-only | ${ratio(s.hybridSql.p50, s.keywordSql.p50)} |`,
    "",
    `HNSW index \`${s.vectorIndex}\` in the plan: vector-only ${s.vectorIndexUsed.vector ? "yes" : "**no**"}, hybrid ${s.vectorIndexUsed.hybrid ? "yes" : "**no**"}. Index scans during the measured statements (\`pg_stat_user_indexes\`): hybrid ${scans(s.indexScans.hybrid)}; vector-only ${scans(s.indexScans.vector)}; keyword-only ${scans(s.indexScans.keyword)}.`,
    "",
    `Keyword side (very common terms left out, as the search does): a query matched ${s.keywordMatches.p50.toFixed(0)} chunks at the median (p95 ${s.keywordMatches.p95.toFixed(0)}, max ${s.keywordMatches.max.toFixed(0)}) of ${n(s.chunks)}; every match is ranked. Slowest keyword-only queries: ${s.slowKeyword
      .map((q) => `${ms(q.ms)} for "${q.query}" (${q.terms} terms, ${q.matches} matches)`)
      .join("; ")}.`,
    "",
    // The plans are long and change with every run; the result file keeps them for whoever reads a plan.
    "The plans (`EXPLAIN ANALYZE`) of the three searches for the first measured query are in the result file, under the scenario's `plans`.",
    "",
  ];
}

export function renderSearchSection(
  r: SearchResult,
  run: { started: Date; command: string; revision: string },
): string[] {
  const c = r.cache;
  return [
    SEARCH_HEADING,
    "",
    `Measured ${run.started.toISOString()} with \`${run.command}\` (${run.revision}). Embedder: \`${r.embedder.name}\` (${r.embedder.model}, ${r.embedder.dimension}-d; ${r.embedder.reason}), for the stored chunk vectors (purpose \`document\`) and the query vectors (purpose \`query\`), EMBEDDING_THREADS=${r.threads} for queries and the service.`,
    "",
    `Chunk vectors come from a per-text cache (\`${c.dir}\`, keyed by model and sha256 of the text)${c.computed ? `: ${n(c.computed)} were computed in this run at ${c.textsPerSecond.toFixed(1)} texts/s (${seconds(c.computeMs)})` : "; all were cached"}. Each size gets a fresh PGlite store in a temporary directory. ${r.searches} SciFact queries per measurement, after ${r.warmup} warm-up queries, one at a time. (a)–(d) ran in the benchmark's process on the store before the service opened it; (e) is the real service (API + worker, started by the benchmark) over the same directory, \`client.search.documents({ q, containerTags, limit: 10 })\`, so its time includes the query embedding, the hybrid SQL, grouping and neighbouring chunks.`,
    "",
    ...r.sizes.flatMap((s) => sizeSection(s)),
  ];
}
