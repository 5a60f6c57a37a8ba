// Resident memory and CPU of other processes (the service child, the Temporal dev server) from Linux
// /proc. Elsewhere the figures are absent (0 / undefined).

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { machineTicks } from "./cpu.ts";

const TICKS_PER_SECOND = 100;

/** Resident memory (VmRSS) of a process in bytes, 0 when it cannot be read. */
export function rssOf(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb ? Number(kb) * 1024 : 0;
  } catch {
    return 0;
  }
}

function ticksOf(file: string): number | undefined {
  try {
    const text = readFileSync(file, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/** CPU ticks per thread of a process (thread id → ticks). */
function threadTicks(pid: number | "self"): Map<string, number> {
  const out = new Map<string, number>();
  const dir = `/proc/${pid}/task`;
  if (!existsSync(dir)) return out;
  let tids: string[] = [];
  try {
    tids = readdirSync(dir);
  } catch {
    return out;
  }
  for (const tid of tids) {
    const t = ticksOf(`${dir}/${tid}/stat`);
    if (t !== undefined) out.set(tid, t);
  }
  return out;
}

/** The ticks each thread of `pid` used since `before`: its main thread's, and the others' busiest first. */
function ticksSince(before: Map<string, number>, pid: number) {
  const main = String(pid);
  // A thread that ended in the window is lost (its ticks are not in /proc any more); a new one counts from 0.
  const used = [...threadTicks(pid).entries()].map(([tid, t]) => ({
    tid,
    ticks: t - (before.get(tid) ?? 0),
  }));
  return {
    mainTicks: used.find((u) => u.tid === main)?.ticks ?? 0,
    others: used.filter((u) => u.tid !== main).sort((a, b) => b.ticks - a.ticks),
  };
}

/** CPU in cores (1 = one core busy for the whole window) of the service child and what ran beside it. */
export interface ProcessCpu {
  wallMs: number;
  /** The service's main thread (event loop: HTTP, Temporal worker, store calls). */
  serviceMain: number;
  /** The service's `topThreads` busiest other threads (the embedding model's threads while it runs). */
  serviceBusiest: number;
  /** The rest of the service's threads (PGlite runs on the main thread; this is libuv, V8, Temporal core…). */
  serviceOther: number;
  temporalServer: number;
  /** This benchmark process (the load generator and pollers). */
  bench: number;
  /** Everything else on the machine, in cores: should be near 0. */
  otherProcesses: number;
  steal: number;
}

export function processCpuMeter(opts: { servicePid: number; temporalPid?: number; topThreads: number }) {
  if (!existsSync("/proc/self/task")) return { stop: (): ProcessCpu | undefined => undefined };
  const sum = (m: Map<string, number>) => [...m.values()].reduce((s, v) => s + v, 0);
  const before = threadTicks(opts.servicePid);
  const temporalBefore = opts.temporalPid ? ticksOf(`/proc/${opts.temporalPid}/stat`) : undefined;
  const benchBefore = sum(threadTicks("self"));
  const machineBefore = machineTicks();
  const started = performance.now();
  return {
    stop(): ProcessCpu | undefined {
      const wallMs = performance.now() - started;
      const cores = (ticks: number) => ticks / TICKS_PER_SECOND / (wallMs / 1000);
      const { mainTicks, others } = ticksSince(before, opts.servicePid);
      const busiest = others.slice(0, opts.topThreads).reduce((s, u) => s + u.ticks, 0);
      const rest = others.slice(opts.topThreads).reduce((s, u) => s + u.ticks, 0);
      const temporalAfter = opts.temporalPid ? ticksOf(`/proc/${opts.temporalPid}/stat`) : undefined;
      const temporal =
        temporalBefore !== undefined && temporalAfter !== undefined
          ? temporalAfter - temporalBefore
          : Number.NaN;
      const bench = sum(threadTicks("self")) - benchBefore;
      const machineAfter = machineTicks();
      const ours = mainTicks + busiest + rest + bench + (Number.isFinite(temporal) ? temporal : 0);
      return {
        wallMs,
        serviceMain: cores(mainTicks),
        serviceBusiest: cores(busiest),
        serviceOther: cores(rest),
        temporalServer: cores(temporal),
        bench: cores(bench),
        otherProcesses:
          machineBefore && machineAfter
            ? Math.max(0, cores(machineAfter.busy - machineBefore.busy - ours))
            : Number.NaN,
        steal: machineBefore && machineAfter ? cores(machineAfter.steal - machineBefore.steal) : Number.NaN,
      };
    },
  };
}

/** CPU time this process's threads spent in a window, in milliseconds (the bench service runs in this process). */
interface ThreadCpu {
  /** The main thread: the event loop, where PGlite, the API and the benchmark's HTTP client run. */
  mainMs: number;
  /** The busiest other thread (the query-embedding thread while searches run). */
  busiestOtherMs: number;
  /** Every other thread together (the model's other threads, V8's and libuv's helpers). */
  otherMs: number;
  /** Machine-wide busy time over the window, all cores, any process. */
  machineMs: number;
  /** The thread stop() was told to leave out of the others (the benchmark's load clients), when it was found. */
  excludedMs?: number;
}

/** Measures ThreadCpu from now to stop(); undefined where /proc is missing. */
export function threadCpuMeter() {
  if (!existsSync("/proc/self/task")) return { stop: (): ThreadCpu | undefined => undefined };
  const before = threadTicks(process.pid);
  const machineBefore = machineTicks();
  return {
    /** `exclude`: a thread id whose ticks are reported as excludedMs, not among the others. */
    stop(exclude?: string): ThreadCpu | undefined {
      const ms = (ticks: number) => (ticks * 1000) / TICKS_PER_SECOND;
      const { mainTicks, others: all } = ticksSince(before, process.pid);
      const excluded = all.find((u) => u.tid === exclude);
      const others = all.filter((u) => u !== excluded);
      const machineAfter = machineTicks();
      return {
        ...(excluded ? { excludedMs: ms(excluded.ticks) } : {}),
        mainMs: ms(mainTicks),
        busiestOtherMs: ms(others[0]?.ticks ?? 0),
        otherMs: ms(others.slice(1).reduce((s, u) => s + u.ticks, 0)),
        machineMs: machineBefore && machineAfter ? ms(machineAfter.busy - machineBefore.busy) : Number.NaN,
      };
    },
  };
}

/** Samples the resident memory of the service and the Temporal dev server every `everyMs`. */
export function rssSampler(pids: { service: number; temporal?: number }, everyMs = 1000) {
  const samples: { atMs: number; service: number; temporal: number }[] = [];
  const started = performance.now();
  const sample = () => {
    samples.push({
      atMs: performance.now() - started,
      service: rssOf(pids.service),
      temporal: rssOf(pids.temporal),
    });
  };
  sample();
  const timer = setInterval(sample, everyMs);
  timer.unref();
  const peak = (key: "service" | "temporal") => samples.reduce((m, s) => Math.max(m, s[key]), 0);
  return {
    samples,
    last: () => samples[samples.length - 1] ?? { atMs: 0, service: 0, temporal: 0 },
    peak: () => ({ service: peak("service"), temporal: peak("temporal"), samples: samples.length }),
    stop() {
      clearInterval(timer);
      sample();
      return { service: peak("service"), temporal: peak("temporal"), samples: samples.length };
    },
  };
}
