// Where the CPU went during a phase, from Linux /proc (per thread of this process, and the Temporal
// dev server process). Elsewhere the figures are simply absent.

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

/** Linux reports CPU times in clock ticks; 100 per second on every mainstream distribution. */
const TICKS_PER_SECOND = 100;

interface ThreadTimes {
  name: string;
  ticks: number;
}

function readStat(file: string): ThreadTimes | undefined {
  try {
    const text = readFileSync(file, "utf8");
    // The name is in parentheses and may contain spaces; fields after it are space-separated.
    const close = text.lastIndexOf(")");
    const name = text.slice(text.indexOf("(") + 1, close);
    const fields = text.slice(close + 2).split(" ");
    // fields[11] = utime, fields[12] = stime (fields 14 and 15 of proc(5), counted from state = 3).
    return { name, ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined;
  }
}

/** Machine-wide busy and stolen ticks (all cores) from the first line of /proc/stat. */
export function machineTicks(): { busy: number; steal: number } | undefined {
  try {
    const fields = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "")
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    // user nice system idle iowait irq softirq steal guest guest_nice (guest time is already in user)
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
    return { busy: user + nice + system + irq + softirq, steal };
  } catch {
    return undefined;
  }
}

function threads(pid: number | "self"): Map<string, ThreadTimes> {
  const out = new Map<string, ThreadTimes>();
  const dir = `/proc/${pid}/task`;
  if (!existsSync(dir)) return out;
  for (const tid of readdirSync(dir)) {
    const t = readStat(`${dir}/${tid}/stat`);
    if (t) out.set(tid, t);
  }
  return out;
}

export interface CpuShares {
  wallMs: number;
  /** Busy share of the main thread's event loop (Node's eventLoopUtilization), 0..1. */
  mainEventLoop: number;
  /** CPU used, in cores (1 = one core fully busy over the window). */
  mainThread: number;
  /** The `topThreads` busiest other threads of this process (the embedding threads while the model runs). */
  busiestOtherThreads: number;
  otherThreads: number;
  temporalServer: number;
  /** Everything else on the machine (other processes, the kernel), in cores: should be near 0. */
  otherProcesses: number;
  /** Time the hypervisor gave our virtual CPUs to someone else, in cores. */
  steal: number;
}

export function cpuMeter(opts: { temporalPid?: number; topThreads?: number } = {}) {
  const { temporalPid, topThreads = 1 } = opts;
  if (!existsSync("/proc/self/task")) return { stop: (): CpuShares | undefined => undefined };
  const main = String(process.pid);
  const before = threads("self");
  const temporalBefore = temporalPid ? readStat(`/proc/${temporalPid}/stat`) : undefined;
  const machineBefore = machineTicks();
  const elu = performance.eventLoopUtilization();
  const started = performance.now();
  return {
    stop(): CpuShares | undefined {
      const wallMs = performance.now() - started;
      const after = threads("self");
      const seconds = (ticks: number) => ticks / TICKS_PER_SECOND / (wallMs / 1000);
      const used = [...after.entries()].map(([tid, t]) => ({
        tid,
        ticks: t.ticks - (before.get(tid)?.ticks ?? 0),
      }));
      const mainTicks = used.find((u) => u.tid === main)?.ticks ?? 0;
      const others = used.filter((u) => u.tid !== main).sort((a, b) => b.ticks - a.ticks);
      const busiest = others.slice(0, topThreads).reduce((s, u) => s + u.ticks, 0);
      const rest = others.slice(topThreads).reduce((s, u) => s + u.ticks, 0);
      const temporalAfter = temporalPid ? readStat(`/proc/${temporalPid}/stat`) : undefined;
      const temporalTicks =
        temporalBefore && temporalAfter ? temporalAfter.ticks - temporalBefore.ticks : Number.NaN;
      const machineAfter = machineTicks();
      const ours = mainTicks + busiest + rest + (Number.isFinite(temporalTicks) ? temporalTicks : 0);
      return {
        wallMs,
        mainEventLoop: performance.eventLoopUtilization(elu).utilization,
        mainThread: seconds(mainTicks),
        busiestOtherThreads: seconds(busiest),
        otherThreads: seconds(rest),
        temporalServer: seconds(temporalTicks),
        otherProcesses:
          machineBefore && machineAfter
            ? Math.max(0, seconds(machineAfter.busy - machineBefore.busy - ours))
            : Number.NaN,
        steal: machineBefore && machineAfter ? seconds(machineAfter.steal - machineBefore.steal) : Number.NaN,
      };
    },
  };
}
