// No progress-bar library is installed (node_modules has none), so progress is plain periodic lines,
// which also read well when the output goes to a file.

export interface Progress {
  /** Sets the absolute count done; prints at most every `everyMs`. */
  update(done: number, extra?: string): void;
  /** Prints the final line. */
  finish(extra?: string): void;
}

export function log(line: string): void {
  const t = new Date().toISOString().slice(11, 19);
  process.stdout.write(`[${t}] ${line}\n`);
}

export function progress(label: string, total: number, everyMs = 5_000): Progress {
  const started = performance.now();
  let lastPrint = started;
  let current = 0;
  const line = (extra?: string) => {
    const elapsed = (performance.now() - started) / 1000;
    const speed = elapsed > 0 ? current / elapsed : 0;
    const eta = speed > 0 && current < total ? ` eta ${Math.ceil((total - current) / speed)} s` : "";
    const pct = total ? ((100 * current) / total).toFixed(0) : "100";
    log(
      `${label}: ${current}/${total} (${pct}%) ${elapsed.toFixed(1)} s, ${speed.toFixed(1)}/s${eta}${extra ? `, ${extra}` : ""}`,
    );
  };
  return {
    update(done, extra) {
      current = done;
      const now = performance.now();
      if (now - lastPrint >= everyMs) {
        lastPrint = now;
        line(extra);
      }
    },
    finish(extra) {
      line(extra);
    },
  };
}
