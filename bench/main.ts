// Benchmark of the embedded default (PGlite in a temp DATA_DIR, a Temporal dev server started here,
// the real worker and API in this process): ingestion throughput and search latency. Prints the
// figures and writes docs/benchmarks.md. Usage: npm run bench -- [--docs N] [--chunks N] [--searches N]
// [--threads N] [--skip-ingest] [--skip-search] [--out FILE]

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { loadConfig } from "../config/env.ts";
import { type ExtractionResult, runExtractionBench } from "./extraction.ts";
import { type IngestResult, runIngest } from "./ingest.ts";
import { readCorpus, readQueries, SCIFACT_DIR } from "./lib/corpus.ts";
import { log } from "./lib/progress.ts";
import { renderReport, summaryLines } from "./lib/report.ts";
import { revision } from "./lib/revision.ts";
import { SCIFACT_HEADING } from "./lib/scifact.ts";
import { findSection, replaceSection } from "./lib/sections.ts";
import { Cleanup, startTemporal } from "./lib/service.ts";
import { runSearch, type SearchResult } from "./search.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function positive(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${value}"`);
  return n;
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const { values } = parseArgs({
    args: argv,
    options: {
      docs: { type: "string" },
      chunks: { type: "string" },
      embedder: { type: "string" },
      searches: { type: "string" },
      threads: { type: "string" },
      "skip-ingest": { type: "boolean", default: false },
      "skip-search": { type: "boolean", default: false },
      "skip-extraction": { type: "boolean", default: false },
      out: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(
      "npm run bench -- [--docs 200] [--chunks 10000[,100000]] [--searches 200] [--threads <EMBEDDING_THREADS default>]\n" +
        "                 [--embedder bge-small|use-lite (default: the service's default)]\n" +
        "                 [--skip-ingest] [--skip-search] [--skip-extraction] [--out docs/benchmarks.md]\n",
    );
    return 0;
  }
  const options = {
    docs: positive("docs", values.docs, 200),
    // One search store per size: --chunks 10000,100000
    chunks: (values.chunks ?? "10000").split(",").map((v) => positive("chunks", v.trim(), 10_000)),
    searches: positive("searches", values.searches, 200),
    threads: positive("threads", values.threads, loadConfig({}).EMBEDDING_THREADS),
  };
  const out = path.resolve(root, values.out ?? "docs/benchmarks.md");
  const command = `npm run bench${argv.length ? ` -- ${argv.join(" ")}` : ""}`;

  const cleanup = new Cleanup();
  cleanup.exitOnSignals(log);

  const rev = revision(); // at the start: worker threads and the workflow bundle load sources from the tree later
  const started = new Date();
  const t0 = performance.now();
  let ingest: IngestResult | undefined;
  let search: SearchResult | undefined;
  let extraction: ExtractionResult | undefined;
  let failure: unknown;
  try {
    log(`reading ${SCIFACT_DIR}`);
    const corpus = readCorpus();
    const queries = readQueries();
    log("starting a Temporal dev server on free ports");
    const { address: temporalAddress, pid: temporalPid } = await startTemporal(cleanup);
    log(`Temporal dev server at ${temporalAddress}`);
    if (!values["skip-ingest"]) {
      ingest = await runIngest({
        cleanup,
        temporalAddress,
        temporalPid,
        corpus,
        docs: options.docs,
        threads: options.threads,
      });
    }
    if (!values["skip-search"]) {
      search = await runSearch({
        cleanup,
        temporalAddress,
        temporalPid,
        corpus,
        queries,
        chunks: options.chunks,
        embedder: values.embedder,
        searches: options.searches,
        threads: options.threads,
      });
    }
    if (!values["skip-extraction"]) {
      log("extraction: every fixture file");
      extraction = await runExtractionBench({ repeats: 3 });
    }
  } catch (error) {
    failure = error;
  } finally {
    await cleanup.runAll();
  }
  const totalMs = performance.now() - t0;
  const report = {
    started,
    totalMs,
    command,
    revision: rev,
    ingest,
    search,
    extraction,
    threads: options.threads,
  };
  process.stdout.write(`\n${summaryLines(report).join("\n")}\n\n`);
  if (failure) {
    // The figures of the phases that finished are printed above; the report on disk is left as it was.
    log(`not writing ${path.relative(process.cwd(), out) || out}: a phase failed`);
    throw failure;
  }
  // The retrieval-quality section belongs to bench/eval.ts (npm run eval): carried over, not dropped.
  const kept = existsSync(out) ? findSection(readFileSync(out, "utf8"), SCIFACT_HEADING) : undefined;
  const rendered = renderReport(report);
  writeFileSync(out, kept ? replaceSection(rendered, SCIFACT_HEADING, kept) : rendered);
  log(`wrote ${path.relative(process.cwd(), out) || out}`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`bench failed: ${(error as Error).stack ?? error}\n`);
    process.exit(1);
  },
);
