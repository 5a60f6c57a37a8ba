// The machine as the renderers name it, the terminal summary of the in-process scenarios, and the threshold above
// which the machine counts as busy.

import type { IngestResult } from "../ingest.ts";
import type { SearchResult } from "../search.ts";
import type { CpuShares } from "./cpu.ts";
import { liveMachine, type Machine } from "./results.ts";
import { searchSummaryLines } from "./search-report.ts";
import { ms, rate, ratio } from "./stats.ts";

export interface Report {
  totalMs?: number;
  command?: string;
  ingest?: IngestResult;
  search?: SearchResult;
}

let rendering: Machine | undefined;

/**
 * The machine the figures come from: while a stored run is rendered (withMachine), the run's machine, not the one
 * rendering it; otherwise this one.
 */
export function machine() {
  const m = rendering ?? liveMachine();
  return { cpu: m.cpu, cores: m.cores, memory: `${m.memoryGiB.toFixed(1)} GiB`, node: m.node, os: m.os };
}

/**
 * Runs `fn` with machine() answering `m`. Rendering is sequential (one scenario at a time, awaited), so nothing
 * else runs while the override holds.
 */
export async function withMachine<T>(m: Machine, fn: () => T | Promise<T>): Promise<T> {
  const before = rendering;
  rendering = m;
  try {
    return await fn();
  } finally {
    rendering = before;
  }
}

const seconds = (v: number) => `${(v / 1000).toFixed(1)} s`;
export const cores = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : "n/a");

/** The phases that ran in this report, each with the CPU it measured. */
export function measuredPhases(r: Pick<Report, "ingest" | "search">): [string, CpuShares][] {
  const phases: [string, CpuShares | undefined][] = [
    ["Embedder alone, whole documents", r.ingest?.embedderOnDocs.cpu],
    ["Embedder alone, chunks", r.ingest?.embedderOnChunks.cpu],
    ["Ingestion pipeline", r.ingest?.cpu],
    ...(r.search?.sizes ?? []).flatMap((s): [string, CpuShares | undefined][] => [
      [`Query embedding (${s.chunks} chunks run)`, s.cpu.queryEmbedding],
      [`SQL timings at ${s.chunks} chunks`, s.cpu.sql],
      [`HTTP searches at ${s.chunks} chunks`, s.cpu.http],
    ]),
  ];
  return phases.filter((x): x is [string, CpuShares] => Boolean(x[1]));
}

function machineLoad(r: Pick<Report, "ingest" | "search">) {
  const measured = measuredPhases(r);
  const busy = measured.filter(
    ([, c]) => c.otherProcesses > OTHER_LOAD_WARNING || c.steal > OTHER_LOAD_WARNING,
  );
  return { measured, busy };
}

/** The headline figures, for the terminal. */
export function summaryLines(r: Report): string[] {
  const lines = r.totalMs === undefined ? [] : [`Benchmark finished in ${seconds(r.totalMs)} (${r.command})`];
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
  if (r.search) lines.push(...searchSummaryLines(r.search));
  const { busy } = machineLoad(r);
  if (busy.length) {
    lines.push(
      `WARNING: other work used the CPU during ${busy.map(([label, c]) => `${label.toLowerCase()} (${cores(c.otherProcesses)} cores, steal ${cores(c.steal)})`).join(", ")}: those figures are pessimistic.`,
    );
  }
  return lines;
}

export const OTHER_LOAD_WARNING = 0.1;
