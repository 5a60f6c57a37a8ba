import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

export interface Spawned {
  child: ChildProcess;
  output(): string;
  /** Resolves with the first match of `pattern` in stdout+stderr, or rejects on exit/timeout. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Runs one of the service's entry points as a real child process, the way a user would. */
export function spawnEntry(entry: string, env: Record<string, string>): Spawned {
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const listeners = new Set<() => void>();
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const l of listeners) l();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    output: () => out,
    exited,
    waitFor(pattern, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(pattern);
          if (m) {
            cleanup();
            resolve(m);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${pattern}; output:\n${out.slice(-3000)}`));
        }, timeoutMs);
        const onExit = () => {
          cleanup();
          reject(new Error(`process exited before ${pattern}; output:\n${out.slice(-3000)}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off("exit", onExit);
        };
        listeners.add(check);
        child.once("exit", onExit);
        check();
      });
    },
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** The commands of a process's running children (from `ps`), e.g. the ffmpeg or Whisper a worker started. */
export function subprocessesOf(pid: number): string[] {
  const out = spawnSync("ps", ["-o", "comm=", "--ppid", String(pid)], { encoding: "utf8" });
  return out.stdout
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
}
