// Benchmark of the embedded default (PGlite in a temp DATA_DIR, a Temporal dev server started here,
// the real worker and API in this process): ingestion throughput and search latency. Prints the
// figures and writes docs/benchmarks.md. Usage: npm run bench -- [--docs N] [--chunks N] [--searches N]
// [--threads N] [--skip-ingest] [--skip-search] [--skip-bulk | --bulk-only] [--out FILE] (--help lists all)

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { loadConfig } from "../config/env.ts";
import { resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import { BULK_SCENARIOS, type BulkResult, type BulkScenario, runBulk } from "./bulk.ts";
import { type ExtractionResult, runExtractionBench } from "./extraction.ts";
import { type IngestResult, runIngest } from "./ingest.ts";
import { BULK_HEADING, bulkSummaryLines, renderBulkSection } from "./lib/bulk-report.ts";
import { readCorpus, readQueries, SCIFACT_DIR } from "./lib/corpus.ts";
import { log } from "./lib/progress.ts";
import { renderReport, summaryLines } from "./lib/report.ts";
import { revision } from "./lib/revision.ts";
import { SCIFACT_HEADING } from "./lib/scifact.ts";
import { SCORES_HEADING } from "./lib/score-distribution.ts";
import { CONNECTIONS_HEADING, findSection, replaceSection } from "./lib/sections.ts";
import { Cleanup, startTemporal } from "./lib/service.ts";
import { runSearch, type SearchResult } from "./search.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function positive(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${value}"`);
  return n;
}

function nonNegative(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number ≥ 0, got "${value}"`);
  return n;
}

/** Sections of the report that other commands write: kept when this run does not produce them. */
const SCALE_HEADING = "## At scale: separate processes, concurrent load, daemon memory";

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
      "skip-bulk": { type: "boolean", default: false },
      "bulk-only": { type: "boolean", default: false },
      "bulk-sizes": { type: "string" },
      "bulk-scenarios": { type: "string" },
      "bulk-load-size": { type: "string" },
      "bulk-load-every": { type: "string" },
      "bulk-tenant-docs": { type: "string" },
      "bulk-tenant-after": { type: "string" },
      "bulk-backlog": { type: "string" },
      "bulk-backlog-watch": { type: "string" },
      "bulk-drain": { type: "string" },
      "bulk-embedder-docs": { type: "string" },
      "bulk-in-flight": { type: "string" },
      "bulk-singles-size": { type: "string" },
      "bulk-singles-in-flight": { type: "string" },
      "bulk-timeout": { type: "string" },
      "bulk-stall": { type: "string" },
      "bulk-log-level": { type: "string" },
      "bulk-env": { type: "string", multiple: true },
      out: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(
      "npm run bench -- [--docs 200] [--chunks 10000[,100000]] [--searches 200] [--threads <EMBEDDING_THREADS default>]\n" +
        "                 [--embedder bge-small|use-lite (default: the service's default)]\n" +
        "                 [--skip-ingest] [--skip-search] [--skip-extraction] [--out docs/benchmarks.md]\n" +
        "                 [--skip-bulk | --bulk-only] [bulk options below]\n" +
        "\n" +
        'Bulk imports (the section "## Bulk imports"; part of every run unless --skip-bulk; --bulk-only runs only it and\n' +
        "rewrites only that section of the report). The service runs as a child process (main.ts) with its own Temporal\n" +
        "dev server, a fresh pair per import:\n" +
        "  --bulk-scenarios rates,load,tenant,backlog   which parts (default: all)\n" +
        "       rates   : one import per --bulk-sizes, timed to the last done, next to the embedder alone\n" +
        "       singles : --bulk-singles-size documents, each its own POST /v3/documents, --bulk-singles-in-flight at once\n" +
        "                 (default 1000 and 4: what `npm run cli -- add <folder>` and an SDK loop send)\n" +
        "       load    : /v3/search, /v4/search and a memory add every --bulk-load-every s during the --bulk-load-size import\n" +
        "       tenant  : a --bulk-tenant-docs import by another tag --bulk-tenant-after s into that import\n" +
        "       backlog : --bulk-backlog documents submitted at once, RSS watched --bulk-backlog-watch s, then deleted\n" +
        "  --bulk-sizes 200,2000,5000      import sizes (20000 works too: the corpus repeats with a suffix)\n" +
        "  --bulk-load-size N              the import with interactive load and the tenant (default 2000 if in the sizes, else the largest)\n" +
        "  --bulk-load-every 2             seconds between requests of each interactive kind\n" +
        "  --bulk-tenant-docs 20  --bulk-tenant-after 30 (s)\n" +
        "  --bulk-backlog 20000  --bulk-backlog-watch 180 (s)  --bulk-drain 300 (s to wait for workflows to end after the delete)\n" +
        "  --bulk-embedder-docs 2000       the embedder alone is timed on the chunks of the first N documents\n" +
        "  --bulk-in-flight 3              batch requests (500 documents each) in flight\n" +
        "  --bulk-timeout 180 (min per import)  --bulk-stall 5 (min without a finished document ends an import, marked)\n" +
        "  --bulk-log-level warn           the service's LOG_LEVEL\n" +
        "  --bulk-env KEY=VALUE            more service settings (repeatable), e.g. --bulk-env WORKER_CONCURRENCY=8\n" +
        '  BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (environment): node flags for the service\n' +
        "                                  process, e.g. to profile its threads (NODE_OPTIONS refuses --cpu-prof)\n",
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
  const bulkOnly = values["bulk-only"];
  const runBulkPart = bulkOnly || !values["skip-bulk"];
  const bulkSizes = (values["bulk-sizes"] ?? "200,2000,5000")
    .split(",")
    .map((v) => positive("bulk-sizes", v.trim(), 200));
  const scenarios = (values["bulk-scenarios"] ?? BULK_SCENARIOS.join(","))
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);
  for (const sc of scenarios)
    if (!(BULK_SCENARIOS as readonly string[]).includes(sc))
      throw new Error(`--bulk-scenarios: unknown "${sc}" (known: ${BULK_SCENARIOS.join(", ")})`);
  const backlog = nonNegative("bulk-backlog", values["bulk-backlog"], 20_000);
  const extraEnv: Record<string, string> = {};
  for (const kv of values["bulk-env"] ?? []) {
    const eq = kv.indexOf("=");
    if (eq < 1) throw new Error(`--bulk-env takes KEY=VALUE, got "${kv}"`);
    extraEnv[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const bulkOptions = {
    scenarios: scenarios.filter((sc) => sc !== "backlog" || backlog > 0) as BulkScenario[],
    sizes: bulkSizes,
    loadSize: positive(
      "bulk-load-size",
      values["bulk-load-size"],
      bulkSizes.includes(2000) ? 2000 : Math.max(...bulkSizes),
    ),
    loadEveryMs: 1000 * nonNegative("bulk-load-every", values["bulk-load-every"], 2),
    tenantDocs: positive("bulk-tenant-docs", values["bulk-tenant-docs"], 20),
    tenantAfterMs: 1000 * nonNegative("bulk-tenant-after", values["bulk-tenant-after"], 30),
    backlog,
    backlogWatchMs: 1000 * nonNegative("bulk-backlog-watch", values["bulk-backlog-watch"], 180),
    drainMs: 1000 * nonNegative("bulk-drain", values["bulk-drain"], 300),
    embedderDocs: positive("bulk-embedder-docs", values["bulk-embedder-docs"], 2000),
    batch: 500,
    inFlight: positive("bulk-in-flight", values["bulk-in-flight"], 3),
    singlesSize: positive("bulk-singles-size", values["bulk-singles-size"], 1000),
    singlesInFlight: positive("bulk-singles-in-flight", values["bulk-singles-in-flight"], 4),
    timeoutMs: 60_000 * nonNegative("bulk-timeout", values["bulk-timeout"], 180),
    stallMs: 60_000 * nonNegative("bulk-stall", values["bulk-stall"], 5),
    threads: options.threads,
    logLevel: values["bulk-log-level"] ?? "warn",
    extraEnv,
  };
  if (bulkOptions.loadEveryMs <= 0) throw new Error("--bulk-load-every must be above 0");
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
  let bulk: BulkResult | undefined;
  let failure: unknown;
  try {
    log(`reading ${SCIFACT_DIR}`);
    const corpus = readCorpus();
    const queries = readQueries();
    const { address: temporalAddress, pid: temporalPid } = bulkOnly
      ? { address: "", pid: undefined }
      : await (async () => {
          log("starting a Temporal dev server on free ports");
          const started = await startTemporal(cleanup);
          log(`Temporal dev server at ${started.address}`);
          return started;
        })();
    if (!bulkOnly && !values["skip-ingest"]) {
      ingest = await runIngest({
        cleanup,
        temporalAddress,
        temporalPid,
        corpus,
        docs: options.docs,
        threads: options.threads,
      });
    }
    if (!bulkOnly && !values["skip-search"]) {
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
    if (!bulkOnly && !values["skip-extraction"]) {
      log("extraction: every fixture file");
      extraction = await runExtractionBench({ repeats: 3 });
    }
    if (runBulkPart) {
      const embeddingModel = values.embedder ?? resolveDefaultEmbedder().name;
      bulk = await runBulk(cleanup, { ...bulkOptions, embeddingModel, temporalPid }, corpus, queries);
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
  const summary = [...(bulkOnly ? [] : summaryLines(report)), ...(bulk ? bulkSummaryLines(bulk) : [])];
  process.stdout.write(`\n${summary.join("\n")}\n\n`);
  if (failure) {
    // The figures of the phases that finished are printed above; the report on disk is left as it was.
    log(`not writing ${path.relative(process.cwd(), out) || out}: a phase failed`);
    throw failure;
  }
  const previous = existsSync(out) ? readFileSync(out, "utf8") : undefined;
  const bulkSection = bulk ? renderBulkSection(bulk, { started, command, revision: rev }) : undefined;
  if (bulkOnly) {
    // Only the bulk section changes; every other section stays as the last full run wrote it.
    writeFileSync(out, replaceSection(previous ?? "# Benchmarks\n", BULK_HEADING, bulkSection as string));
    log(`wrote the "${BULK_HEADING.slice(3)}" section of ${path.relative(process.cwd(), out) || out}`);
    return 0;
  }
  // Sections written by other commands (npm run eval, npm run bench:scale), and the bulk section when
  // this run skipped it, are carried over, not dropped.
  let rendered = renderReport(report);
  for (const heading of [SCIFACT_HEADING, SCORES_HEADING, SCALE_HEADING, BULK_HEADING, CONNECTIONS_HEADING]) {
    const section =
      heading === BULK_HEADING && bulkSection ? bulkSection : previous && findSection(previous, heading);
    if (section) rendered = replaceSection(rendered, heading, section);
  }
  writeFileSync(out, rendered);
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
