import { cpus, release, totalmem, type } from "node:os";
import { type ExtractionResult, renderExtraction } from "../extraction.ts";
import type { IngestResult } from "../ingest.ts";
import type { SearchResult } from "../search.ts";
import type { CpuShares } from "./cpu.ts";
import { ms, rate, ratio, type Summary } from "./stats.ts";

export interface Report {
  started: Date;
  totalMs: number;
  command: string;
  revision: string;
  threads: number;
  ingest?: IngestResult;
  search?: SearchResult;
  extraction?: ExtractionResult;
}

export function machine() {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model.trim() ?? "unknown",
    cores: cpu.length,
    memory: `${(totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    node: process.version,
    os: `${type()} ${release()}`,
  };
}

const row = (label: string, s: Summary) =>
  `| ${label} | ${ms(s.p50)} | ${ms(s.p95)} | ${ms(s.mean)} | ${ms(s.max)} | ${s.n} |`;
const seconds = (v: number) => `${(v / 1000).toFixed(1)} s`;
const cores = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : "n/a");

function cpuRow(label: string, c: CpuShares | undefined): string {
  if (!c) return `| ${label} | n/a | n/a | n/a | n/a | n/a | n/a |`;
  const total =
    c.mainThread +
    c.busiestOtherThreads +
    c.otherThreads +
    (Number.isFinite(c.temporalServer) ? c.temporalServer : 0);
  return `| ${label} | ${cores(c.mainThread)} (event loop busy ${(100 * c.mainEventLoop).toFixed(0)} %) | ${cores(c.busiestOtherThreads)} | ${cores(c.otherThreads)} | ${cores(c.temporalServer)} | ${cores(total)} |`;
}

/** The phases that ran in this report, each with the CPU it measured. */
function measuredPhases(r: Report): [string, CpuShares][] {
  const phases: [string, CpuShares | undefined][] = [
    ["Embedder alone, whole documents", r.ingest?.embedderOnDocs.cpu],
    ["Embedder alone, chunks", r.ingest?.embedderOnChunks.cpu],
    ["Ingestion pipeline", r.ingest?.cpu],
    ["Query embedding", r.search?.cpu.queryEmbedding],
    ["SQL timings", r.search?.cpu.sql],
    ["HTTP searches", r.search?.cpu.http],
  ];
  return phases.filter((x): x is [string, CpuShares] => Boolean(x[1]));
}

function machineLoad(r: Report) {
  const measured = measuredPhases(r);
  const busy = measured.filter(
    ([, c]) => c.otherProcesses > OTHER_LOAD_WARNING || c.steal > OTHER_LOAD_WARNING,
  );
  return { measured, busy };
}

/** The headline figures, for the terminal. */
export function summaryLines(r: Report): string[] {
  const lines = [`Benchmark finished in ${seconds(r.totalMs)} (${r.command})`];
  const i = r.ingest;
  if (i) {
    lines.push(
      `Ingestion: ${i.docs} docs × ${i.wordsPerDoc} words in ${seconds(i.wallMs)} → ${rate(i.docsPerSecond)} docs/s ` +
        `(${rate(i.chunksPerSecond)} chunks/s, ${i.embeddedChunks} chunks), ${i.failed} failed`,
      `  embedder alone (${i.threads} thread${i.threads > 1 ? "s" : ""}): ${rate(i.embedderOnDocs.perSecond)} docs/s, ` +
        `${rate(i.embedderOnChunks.perSecond)} chunks/s → pipeline keeps ${ratio(i.docsPerSecond, i.embedderOnDocs.perSecond)} ` +
        `of it per document, ${ratio(i.chunksPerSecond, i.embedderOnChunks.perSecond)} per chunk`,
      `  per document queued→done: p50 ${ms(i.latency.p50)}, p95 ${ms(i.latency.p95)}; ` +
        `in embedding p50 ${ms(i.stages.embedding.p50)}; waiting in queue p50 ${ms(i.stages.queued.p50)}; ` +
        `no document in embedding during ${(100 * i.embedderIdleShare).toFixed(0)} % of the run`,
    );
    if (i.cpu) {
      lines.push(
        `  CPU in cores while ingesting: main thread ${cores(i.cpu.mainThread)} (event loop ${(100 * i.cpu.mainEventLoop).toFixed(0)} % busy), ` +
          `embedding thread(s) ${cores(i.cpu.busiestOtherThreads)}, other threads ${cores(i.cpu.otherThreads)}, Temporal server ${cores(i.cpu.temporalServer)}`,
      );
    }
  }
  const s = r.search;
  if (s) {
    lines.push(
      `Search at ${s.chunks} chunks (${s.searches} queries, p50 / p95 / mean):`,
      `  HTTP (SDK)           ${ms(s.http.p50)} / ${ms(s.http.p95)} / ${ms(s.http.mean)}`,
      `  query embedding      ${ms(s.queryEmbedding.p50)} / ${ms(s.queryEmbedding.p95)} / ${ms(s.queryEmbedding.mean)}`,
      `  hybrid SQL           ${ms(s.hybridSql.p50)} / ${ms(s.hybridSql.p95)} / ${ms(s.hybridSql.mean)}`,
      `  vector-only top-10   ${ms(s.vectorSql.p50)} / ${ms(s.vectorSql.p95)} / ${ms(s.vectorSql.mean)}`,
      `  keyword-only top-10  ${ms(s.keywordSql.p50)} / ${ms(s.keywordSql.p95)} / ${ms(s.keywordSql.mean)}`,
      `  hybrid/vector p50 ${ratio(s.hybridSql.p50, s.vectorSql.p50)}, hybrid/keyword p50 ${ratio(s.hybridSql.p50, s.keywordSql.p50)}, ` +
        `query embedding = ${((100 * s.queryEmbedding.p50) / s.http.p50).toFixed(0)} % of HTTP p50`,
    );
  }
  const { busy } = machineLoad(r);
  if (busy.length) {
    lines.push(
      `WARNING: other work used the CPU during ${busy.map(([label, c]) => `${label.toLowerCase()} (${cores(c.otherProcesses)} cores, steal ${cores(c.steal)})`).join(", ")}: those figures are pessimistic.`,
    );
  }
  return lines;
}

export function renderReport(r: Report): string {
  const m = machine();
  const out: string[] = [];
  const p = (...lines: string[]) => out.push(...lines);
  p(
    "# Benchmarks",
    "",
    "Generated by `bench/main.ts`; every figure below was measured in the run described here (rerun to refresh).",
    "",
    `- Date: ${r.started.toISOString()}`,
    `- Machine: ${m.cpu}, ${m.cores} cores, ${m.memory} memory, ${m.os}`,
    `- Node: ${m.node}`,
    `- Command: \`${r.command}\``,
    `- Code measured: ${r.revision}`,
    `- Total run time: ${seconds(r.totalMs)}`,
    `- Set-up: the embedded default, i.e. PGlite in a temporary DATA_DIR, a Temporal dev server started by the benchmark on free ports, the real worker and API in the benchmark's process, EMBEDDING_THREADS=${r.threads}, the \`use-lite\` embedder; the SDK \`supermemory\` talks to the API over HTTP on 127.0.0.1.`,
    "",
  );

  const i = r.ingest;
  p("## Ingestion throughput", "");
  if (!i) p("Skipped in this run (`--skip-ingest`).", "");
  else {
    p(
      `${i.docs} documents of ${i.wordsPerDoc} words (SciFact abstracts, trimmed or padded with the next abstract's words), added through \`client.documents.batchAdd\` in batches of 50 with 4 requests in flight, timed from just before the first add until the last document reached \`done\` (the latest \`done\` in the documents' \`statusHistory\`). One warm-up document went through the pipeline before the clock started.`,
      "",
      "| Measure | Value |",
      "|---|---|",
      `| Documents done / failed | ${i.docs - i.failed} / ${i.failed} |`,
      `| Chunks stored (embedded) / expected from the chunker at CHUNK_MAX_CHARS=${i.chunkMaxChars} | ${i.storedChunks} (${i.embeddedChunks}) / ${i.expectedChunks} |`,
      `| All add requests answered after | ${seconds(i.acceptMs)} |`,
      `| First add → last \`done\` | ${seconds(i.wallMs)} |`,
      `| **Pipeline throughput** | **${rate(i.docsPerSecond)} documents/s** (${rate(i.chunksPerSecond)} chunks/s) |`,
      `| Embedder alone, same ${i.embedderOnDocs.texts} documents as whole texts (${i.threads} thread${i.threads > 1 ? "s" : ""}) | ${rate(i.embedderOnDocs.perSecond)} texts/s (${seconds(i.embedderOnDocs.ms)}) |`,
      `| Embedder alone, the ${i.embedderOnChunks.texts} chunks the pipeline embeds | ${rate(i.embedderOnChunks.perSecond)} chunks/s (${seconds(i.embedderOnChunks.ms)}) |`,
      `| **Ingestion / embedder**, per document (documents/s ÷ texts/s) | **${ratio(i.docsPerSecond, i.embedderOnDocs.perSecond)}** |`,
      `| Ingestion / embedder, per chunk (chunks/s ÷ chunks/s) | ${ratio(i.chunksPerSecond, i.embedderOnChunks.perSecond)} |`,
      `| Service start (store, worker, API) / warm-up document | ${seconds(i.serviceStartMs)} / ${seconds(i.warmupDocMs)} |`,
      "",
      "Per-document latency from `statusHistory` (all documents were submitted at once, so queueing dominates). Each stage row spans from one status to the next, so it includes the wait for a free activity slot and Temporal's hand-over between activities, not only the work of that stage:",
      "",
      "| Span | p50 | p95 | mean | max | n |",
      "|---|---|---|---|---|---|",
      row("queued → done (add to done)", i.latency),
      row("`queued` → `extracting`", i.stages.queued),
      row("`extracting` → `chunking`", i.stages.extracting),
      row("`chunking` → `embedding`", i.stages.chunking),
      row("`embedding` → `done` (embedding, then indexing)", i.stages.embedding),
      "",
      "When the documents reached each status (seconds after the first add; first, median and last document):",
      "",
      "| Status | first | median | last |",
      "|---|---|---|---|",
      ...i.milestones.map(
        (m) => `| \`${m.status}\` | ${seconds(m.first)} | ${seconds(m.p50)} | ${seconds(m.last)} |`,
      ),
      "",
      `No document was in the \`embedding\` stage during ${(100 * i.embedderIdleShare).toFixed(0)} % of the run, so the model was certainly idle at least that long.`,
      "",
      `CPU used, in cores (1.00 = one core busy for the whole phase; this machine has ${m.cores}), from Linux \`/proc\` per thread. "Embedding threads" are the ${i.threads} busiest threads besides the main one, which during these phases are the model's worker threads:`,
      "",
      "| Phase | main thread | embedding thread(s) | other threads | Temporal server | total |",
      "|---|---|---|---|---|---|",
      cpuRow("Embedder alone, the pipeline's chunks", i.embedderOnChunks.cpu),
      cpuRow("Pipeline (first add → all done)", i.cpu),
      "",
    );
  }

  const s = r.search;
  p(`## Search latency${s ? ` at ${s.chunks.toLocaleString("en-US")} chunks` : ""}`, "");
  if (!s) p("Skipped in this run (`--skip-search`).", "");
  else {
    p(
      `${s.chunks} distinct sentence-sized pieces (25+ words) of ${s.documents} SciFact abstracts, one document per abstract, loaded through the worker's own store functions (\`saveDocument\` → \`saveExtraction\` → \`replaceChunks\` → \`saveEmbeddings\` → \`markDone\`) with real \`use-lite\` vectors ${s.cache.hit ? "read from the cache" : `computed in this run (${seconds(s.cache.computeMs)}) and cached`} (\`${s.cache.file}\`), then \`ANALYZE\`. Load took ${seconds(s.loadMs)} (${rate((s.chunks * 1000) / s.loadMs)} chunks/s), ANALYZE ${ms(s.analyzeMs)}; table \`chunks\` with indexes: ${s.tableSize}.`,
      "",
      `${s.searches} SciFact queries per measurement, after ${s.warmup} warm-up queries, one at a time; HTTP searches use \`client.search.documents({ q, containerTags, limit: 10 })\` (${s.meanResults.toFixed(1)} documents returned on average). The SQL measurements ran in the benchmark's process on the same PGlite directory before the service opened it.`,
      "",
      "| Measurement | p50 | p95 | mean | max | n |",
      "|---|---|---|---|---|---|",
      row("HTTP search through the SDK (client-side)", s.http),
      row("… the API's own `timing` field", s.httpServerTiming),
      row("Query embedding alone (1 text per call)", s.queryEmbedding),
      row(`Hybrid SQL \`hybridChunkSearch\`, pre-computed vectors (${CANDIDATES_NOTE})`, s.hybridSql),
      row("Baseline: vector-only top-10 (`ORDER BY embedding <=> $1 LIMIT 10`)", s.vectorSql),
      row("Baseline: keyword-only top-10 (`ts_rank_cd`, same OR query)", s.keywordSql),
      "",
      "| Ratio (p50) | Value |",
      "|---|---|",
      `| Hybrid SQL / vector-only | ${ratio(s.hybridSql.p50, s.vectorSql.p50)} |`,
      `| Hybrid SQL / keyword-only | ${ratio(s.hybridSql.p50, s.keywordSql.p50)} |`,
      `| HTTP / hybrid SQL | ${ratio(s.http.p50, s.hybridSql.p50)} |`,
      `| Query embedding share of HTTP | ${((100 * s.queryEmbedding.p50) / s.http.p50).toFixed(0)} % |`,
      `| Hybrid SQL share of HTTP | ${((100 * s.hybridSql.p50) / s.http.p50).toFixed(0)} % |`,
      "",
      `Keyword side: the OR query of a SciFact query matched ${s.meanKeywordMatches.toFixed(0)} of ${s.chunks} chunks on average (each is ranked).`,
      "",
      `Index scans caused by the ${s.hybridQueries} hybrid statements (\`pg_stat_user_indexes\`): ${
        Object.entries(s.hybridIndexScans)
          .map(([k, v]) => `\`${k}\` ${v}`)
          .join(", ") || "none recorded"
      }.`,
      "",
      "Plans of the baselines for one query (`EXPLAIN`):",
      "",
      "```text",
      "-- vector-only",
      ...s.plans.vector,
      "-- keyword-only",
      ...s.plans.keyword,
      "```",
      "",
    );
  }

  const measured = measuredPhases(r);
  if (measured.length) {
    const busy = measured.filter(
      ([, c]) => c.otherProcesses > OTHER_LOAD_WARNING || c.steal > OTHER_LOAD_WARNING,
    );
    p(
      "## Machine load during the measurements",
      "",
      "CPU used by everything outside the benchmark (other processes, the kernel) and CPU time stolen by the hypervisor, in cores, while each measurement ran. Figures taken next to a busy machine are slower than the code is.",
      "",
      "| Phase | other processes | steal |",
      "|---|---|---|",
      ...measured.map(([label, c]) => `| ${label} | ${cores(c.otherProcesses)} | ${cores(c.steal)} |`),
      "",
      busy.length
        ? `**Warning:** the machine was busy during ${busy.map(([l]) => l.toLowerCase()).join(", ")} (more than ${OTHER_LOAD_WARNING} cores used elsewhere or stolen); those figures are pessimistic. Rerun on an idle machine.`
        : `The machine was otherwise idle (at most ${OTHER_LOAD_WARNING} cores used elsewhere or stolen in every phase).`,
      "",
    );
  }

  p(
    ...renderExtraction(r.extraction),
    "## How to run",
    "",
    "```sh",
    "npm run bench                      # defaults: --docs 200 --chunks 10000 --searches 200",
    "npm run bench -- --docs 500        # more documents for the ingestion run",
    "npm run bench -- --skip-ingest     # search only (or --skip-search)",
    "npm run bench -- --threads 2       # EMBEDDING_THREADS for the service and the embedder baseline",
    "```",
    "",
    "- Needs the Temporal CLI (`node scripts/setup.mjs` caches it) and the SciFact files at `../shared/data/scifact` beside the repository (or `BENCH_SCIFACT_DIR`); they are read in place, never copied.",
    "- The first run embeds the search corpus (10,000 texts: several minutes on 2 cores) and caches the vectors under `~/.cache/memory-service/bench/` (`<model>-<count>.f32` + `.json`, reused only if the texts are identical); later runs take a few minutes.",
    "- Everything it starts (temporary directories, the Temporal dev server, the service) is stopped and removed at the end, on errors and on Ctrl-C. The command overwrites this file; `--out FILE` writes elsewhere.",
    "- Run it on an otherwise idle machine: the figures are wall-clock times.",
    "",
    "## What the figures mean",
    "",
    "- **Pipeline throughput** is end-to-end: the API saving documents and starting one Temporal workflow each, the worker running extract → chunk → embed → index as activities, every status change written to the store. It is measured from the first add to the last `done`, so it includes queueing but not service start-up.",
    "- **Embedder alone** is the speed limit set by the model on this machine: the same texts through a fresh `createEmbedder` with the same thread count, after a warm-up, in calls of 32 texts. **Ingestion / embedder** is how much of that speed the pipeline keeps. The pipeline embeds chunks, not whole documents (a 200-word document is split into overlapping chunks by CHUNK_MAX_CHARS and CHUNK_OVERLAP_SENTENCES), so it does more model work per document than the whole-text figure assumes; the per-chunk ratio compares like with like.",
    "- **Per-document latency** comes from `statusHistory` timestamps (written by the worker). With all documents submitted at once, `queued → done` mostly measures the time spent waiting behind other documents; the stage rows show the work itself.",
    "- **Search** figures are latencies of single requests one after another (no concurrency), percentiles over all measured queries (linear interpolation), never a best run. HTTP latency = query embedding + hybrid SQL + fetching documents and neighbouring chunks + HTTP and validation; the rows above let you see each share. The baselines run a single method on the same table: they show what the fusion of both costs on top.",
    "- **CPU in cores** (ingestion) shows where the machine's capacity went: if the embedding thread is far below 1.00 per thread while the pipeline runs, the model is waiting for the rest of the pipeline (Temporal hand-overs, store writes on the main thread) rather than the other way round.",
    "- **Machine load** shows CPU used outside the benchmark during each phase. The benchmark cannot make a busy machine idle; it only says when its figures were taken next to other work.",
    "- Figures depend on the machine, the model and the data, and vary between runs even on an idle virtual machine: compare several runs from the same machine before drawing conclusions.",
    "",
  );
  return out.join("\n");
}

export const OTHER_LOAD_WARNING = 0.1;

const CANDIDATES_NOTE = "100 candidates per side, as the API asks for with limit 10";
