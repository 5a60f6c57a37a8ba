// The benchmark, one command: runs the chosen scenarios (bench/scenarios.ts), stores the run as one JSON file
// (bench/results/<UTC time>-<commit>.json: header + each scenario's options and result), then renders
// docs/benchmarks.md and bench/results/report.md from that file (bench/lib/page.ts). `npm run bench -- --help`
// lists the options.

import path from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../config/env.ts";
import { resolveDefaultEmbedder } from "../pipeline/embedder/index.ts";
import type { Abstract } from "./lib/corpus.ts";
import { readCorpus, readQueries, SCIFACT_DIR } from "./lib/corpus.ts";
import { writePageAndReport } from "./lib/page.ts";
import { log } from "./lib/progress.ts";
import {
  liveMachine,
  loadNow,
  PAGE,
  RESULT_FORMAT,
  ROOT,
  type RunFile,
  readHistory,
  writeRunFile,
} from "./lib/results.ts";
import { revisionInfo, revisionLabel } from "./lib/revision.ts";
import { Cleanup, serviceQueryPrecision, startTemporal } from "./lib/service.ts";
import {
  type ArgSpec,
  type ArgValues,
  SCENARIOS,
  type ScenarioContext,
  scenario,
  selectScenarios,
} from "./scenarios.ts";

const SHARED_ARGS: Record<string, ArgSpec> = {
  with: { type: "string" },
  only: { type: "string" },
  skip: { type: "string" },
  all: { type: "boolean" },
  threads: { type: "string" },
  out: { type: "string" },
  "no-page": { type: "boolean" },
  help: { type: "boolean", short: "h" },
};

function help(): string {
  const names = SCENARIOS.map((s) => s.name);
  const lines = [
    "npm run bench -- [--with a,b | --all | --only a,b] [--skip a,b] [--threads N] [scenario options]",
    "",
    `Scenarios (${names.join(", ")}); a plain run takes the default ones:`,
    ...SCENARIOS.map((s) => `  ${s.name.padEnd(16)}${s.inDefault ? "(default) " : ""}${s.about}`),
    "",
    "  --with a,b       add scenarios to the default set        --all        every scenario",
    "  --only a,b       exactly these scenarios                 --skip a,b   leave these out",
    "  --threads N      EMBEDDING_THREADS for the in-process service and the embedder baselines (default: the service's)",
    "  --out FILE       render the page there instead of docs/benchmarks.md   --no-page   store the result file only",
    "",
    "Each run writes bench/results/<UTC time>-<commit>[-dirty].json, then renders docs/benchmarks.md from it;",
    "`npm run bench:page -- [file]` renders the page again from a stored run (default: the newest) without running anything.",
    "",
    "Scenario options:",
  ];
  for (const s of SCENARIOS) lines.push(`  ${s.name}:`, ...s.help.map((h) => `    ${h}`));
  return `${lines.join("\n")}\n`;
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const args: Record<string, ArgSpec> = { ...SHARED_ARGS };
  for (const s of SCENARIOS) Object.assign(args, s.args);
  const { values } = parseArgs({ args: argv, options: args, strict: true, allowPositionals: false });
  const v = values as ArgValues;
  if (v.help) {
    process.stdout.write(help());
    return 0;
  }
  const threadsArg = v.threads === undefined ? undefined : Number(v.threads);
  if (threadsArg !== undefined && (!Number.isInteger(threadsArg) || threadsArg < 1))
    throw new Error(`--threads must be a positive integer, got "${v.threads}"`);
  const threads = threadsArg ?? loadConfig({}).EMBEDDING_THREADS;
  const names = selectScenarios(v);
  if (!names.length) throw new Error("no scenario selected");
  // Options are read before anything runs, so a typo fails at once.
  const options = new Map(names.map((name) => [name, scenario(name)?.options(v, { threads })]));
  const out = path.resolve(ROOT, typeof v.out === "string" ? v.out : PAGE);
  const command = `npm run bench${argv.length ? ` -- ${argv.join(" ")}` : ""}`;

  const cleanup = new Cleanup();
  cleanup.exitOnSignals(log);
  // At the start: worker threads and the workflow bundle load sources from the tree later.
  const revision = revisionInfo();
  if (!revision.clean)
    log(
      `measuring ${revisionLabel(revision)}: ${revision.dirty.slice(0, 10).join(", ")}${revision.dirty.length > 10 ? ", …" : ""}`,
    );
  const started = new Date();
  const loadStart = loadNow();
  const t0 = performance.now();
  let corpus: Abstract[] | undefined;
  let queries: string[] | undefined;
  let temporal: Promise<{ address: string; pid: number }> | undefined;
  const ctx: ScenarioContext = {
    cleanup,
    threads,
    corpus: () => {
      if (!corpus) log(`reading ${SCIFACT_DIR}`);
      corpus ??= readCorpus();
      return corpus;
    },
    queries: () => {
      queries ??= readQueries();
      return queries;
    },
    temporal: () => {
      temporal ??= (async () => {
        log("starting a Temporal dev server on free ports");
        const t = await startTemporal(cleanup);
        log(`Temporal dev server at ${t.address}`);
        return t;
      })();
      return temporal;
    },
  };

  const results: RunFile["results"] = {};
  let failures = 0;
  try {
    for (const name of names) {
      const s = scenario(name);
      if (!s) continue;
      log(`scenario ${name}: ${JSON.stringify(options.get(name))}`);
      const t = performance.now();
      try {
        const result = await s.run(options.get(name), ctx);
        results[name] = { options: options.get(name), result, ms: performance.now() - t };
      } catch (error) {
        failures++;
        const message = (error as Error).message?.split("\n")[0] ?? String(error);
        process.stderr.write(`scenario ${name} failed: ${(error as Error).stack ?? error}\n`);
        results[name] = { options: options.get(name), error: message, ms: performance.now() - t };
      }
    }
  } finally {
    await cleanup.runAll();
  }
  const run: RunFile = {
    format: RESULT_FORMAT,
    header: {
      started: started.toISOString(),
      finished: new Date().toISOString(),
      totalMs: performance.now() - t0,
      machine: liveMachine(),
      load: { start: loadStart, end: loadNow() },
      revision,
      command,
      scenarios: names,
      queryWeights: queryWeights(),
    },
    results,
  };
  const file = writeRunFile(run);
  log(`wrote ${path.relative(process.cwd(), file)}`);

  const summary: string[] = [];
  for (const name of names) {
    const rec = results[name];
    const s = scenario(name);
    if (!rec || !s) continue;
    if (rec.result === undefined) summary.push(`${name}: FAILED (${rec.error})`);
    else if (s.terminal) summary.push(...s.terminal(rec.result));
    else summary.push(`${name}: done in ${(rec.ms / 1000).toFixed(1)} s`);
  }
  process.stdout.write(`\n${summary.join("\n")}\n\n`);

  if (!v["no-page"]) {
    const history = readHistory();
    const written = await writePageAndReport(run, { file: path.relative(ROOT, file), history, out });
    log(`wrote ${written.map((f) => path.relative(process.cwd(), f) || f).join(" and ")}`);
  }
  return failures ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`bench failed: ${(error as Error).stack ?? error}\n`);
    process.exit(1);
  },
);

/** What the services started by this run embed queries with: the setting, or its default (auto) resolved here. */
function queryWeights(): string {
  return serviceQueryPrecision(resolveDefaultEmbedder().name);
}
