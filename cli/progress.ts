import cliProgress from "cli-progress";

export interface Bar {
  increment(detail?: string): void;
  update(value: number, detail?: string): void;
  stop(): void;
}

/**
 * A progress bar on stderr. cli-progress draws nothing when stderr is not a terminal, so piped runs
 * and --json output stay clean.
 */
export function progressBar(label: string, total: number): Bar {
  const bar = new cliProgress.SingleBar(
    {
      format: `${label.padEnd(10)} [{bar}] {value}/{total} {detail}`,
      hideCursor: true,
      clearOnComplete: false,
      stream: process.stderr,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0, { detail: "" });
  return {
    increment: (detail = "") => bar.increment(1, { detail }),
    update: (value, detail = "") => bar.update(value, { detail }),
    stop: () => bar.stop(),
  };
}
