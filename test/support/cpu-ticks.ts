// CPU time in clock ticks from Linux /proc: where work ran, not how long it took, so a check built on it
// holds on a slow or busy machine as well as on a fast one.

import { readFileSync } from "node:fs";

/** utime + stime of a /proc stat line (fields 14 and 15; the name before them may contain spaces). */
function ticksOf(statFile: string): number {
  const text = readFileSync(statFile, "utf8");
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

export interface CpuTicks {
  /** The main thread's (the event loop's) CPU ticks; on Linux its thread id is the process id. */
  mainThread: number;
  /** All threads of this process. */
  process: number;
}

export function cpuTicks(): CpuTicks {
  return {
    mainThread: ticksOf(`/proc/self/task/${process.pid}/stat`),
    process: ticksOf("/proc/self/stat"),
  };
}

/** CPU ticks spent since `before`. */
export function cpuTicksSince(before: CpuTicks): CpuTicks {
  const now = cpuTicks();
  return { mainThread: now.mainThread - before.mainThread, process: now.process - before.process };
}

/**
 * Awaits `work` while counting the turns the event loop served meanwhile (a 1 ms timer re-armed each time it
 * fires): a loop blocked by the work serves none until it ends, a free one serves many.
 */
export async function withLoopTurns<T>(work: Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    turns++;
    timer = setTimeout(tick, 1);
  };
  timer = setTimeout(tick, 1);
  try {
    return { value: await work, turns };
  } finally {
    clearTimeout(timer);
  }
}
