// One benchmark run as data: bench/results/<UTC timestamp>-<commit>.json. docs/benchmarks.md is rendered from
// these files (bench/lib/page.ts), never edited by hand.

import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem, type } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { int8DotProduct } from "../../pipeline/cpu-features.ts";
import type { Revision } from "./revision.ts";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const RESULTS_DIR = path.join(ROOT, "bench", "results");
export const PAGE = path.join(ROOT, "docs", "benchmarks.md");
/** The full report rendered with the page: each scenario's set-up, every table, what the figures mean. */
export const REPORT = path.join(RESULTS_DIR, "report.md");
/** Bumped when the layout of a result file changes in a way the renderer must know about. */
export const RESULT_FORMAT = 1;

export interface Machine {
  cpu: string;
  cores: number;
  /** Total memory, GiB. */
  memoryGiB: number;
  os: string;
  node: string;
  /**
   * The CPU's int8 dot-product instructions as /proc/cpuinfo names them ("the CPU has avx512_vnni"): they decide
   * the query weights and much of the search figures. Absent in runs stored before it was recorded.
   */
  int8Dot?: string;
}

export interface RunHeader {
  /** ISO 8601 (UTC) when the run started and ended. */
  started: string;
  finished: string;
  totalMs: number;
  machine: Machine;
  /** 1-, 5- and 15-minute load averages at the start and at the end of the run. */
  load: { start: number[]; end: number[] };
  revision: Revision;
  /** The exact command line, e.g. "npm run bench -- --with bulk". */
  command: string;
  /** Scenario names in the order they ran. */
  scenarios: string[];
  /**
   * The weights the services of this run embedded search queries with (EMBEDDING_QUERY_PRECISION, or what its
   * default resolved to on this machine). Absent in runs before int8-block became the default: fp32 then.
   */
  queryWeights?: string;
}

export interface ScenarioRecord<O = unknown, R = unknown> {
  /** The options the scenario ran with (defaults filled in). */
  options: O;
  /** Its result; absent when it failed. */
  result?: R;
  /** Why it failed (first line of the error). */
  error?: string;
  ms: number;
}

export interface RunFile {
  format: number;
  header: RunHeader;
  results: Record<string, ScenarioRecord>;
}

export function liveMachine(): Machine {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model.trim() ?? "unknown",
    cores: cpu.length,
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    os: `${type()} ${release()}`,
    int8Dot: int8DotProduct().evidence,
  };
}

export const loadNow = (): number[] => loadavg().map((v) => Math.round(v * 100) / 100);

/** "20261126T101500Z-abc1234.json": sorts by time. */
export function resultFileName(header: Pick<RunHeader, "started" | "revision">): string {
  const stamp = header.started.replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  const commit = header.revision.commit.replace(/[^\w]/g, "") || "unknown";
  return `${stamp}-${commit}${header.revision.clean ? "" : "-dirty"}.json`;
}

/** JSON has no NaN or ±Infinity: they are written as strings and read back as numbers. */
const NON_FINITE = new Set(["NaN", "Infinity", "-Infinity"]);

export function toJson(run: RunFile): string {
  return `${JSON.stringify(
    run,
    (_key, value) => {
      if (typeof value === "number" && !Number.isFinite(value)) return String(value);
      if (value instanceof Map) return Object.fromEntries(value);
      return value;
    },
    2,
  )}\n`;
}

export function fromJson(text: string): RunFile {
  const run = JSON.parse(text, (_key, value) =>
    typeof value === "string" && NON_FINITE.has(value) ? Number(value) : value,
  ) as RunFile;
  if (!run || typeof run !== "object" || !run.header || !run.results)
    throw new Error("not a benchmark result file (no header or results)");
  if (run.format > RESULT_FORMAT)
    throw new Error(`result format ${run.format} is newer than this renderer (${RESULT_FORMAT})`);
  return run;
}

export function writeRunFile(run: RunFile, dir = RESULTS_DIR): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, resultFileName(run.header));
  writeFileSync(file, toJson(run));
  return file;
}

export function readRunFile(file: string): RunFile {
  return fromJson(readFileSync(file, "utf8"));
}

/** Every result file in `dir`, oldest first (by the run's start, then by name). */
function listRunFiles(dir = RESULTS_DIR): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => path.join(dir, f));
}

export function newestRunFile(dir = RESULTS_DIR): string | undefined {
  return listRunFiles(dir).at(-1);
}

/** Every readable stored run, oldest first; a file that does not parse is reported and left out. */
export function readHistory(dir = RESULTS_DIR): { file: string; run: RunFile }[] {
  return listRunFiles(dir).flatMap((file) => {
    try {
      return [{ file, run: readRunFile(file) }];
    } catch (error) {
      process.stderr.write(`skipping ${file}: ${(error as Error).message}\n`);
      return [];
    }
  });
}
