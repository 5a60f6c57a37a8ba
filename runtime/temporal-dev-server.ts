import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Connection } from "@temporalio/client";
import { temporalCliPath } from "../config/paths.ts";

export interface TemporalDevServerOptions {
  /** Holds temporal.db; workflow state survives restarts with the same dir. */
  dataDir: string;
  /** gRPC port; 0 or absent picks a free one. */
  port?: number;
  /** Web UI port; 0 or absent picks a free one. */
  uiPort?: number;
  /** Created at launch in addition to "default" (which the dev server always creates). */
  namespace?: string;
  /** Receives every output line of the server. */
  log?: (line: string) => void;
  startTimeoutMs?: number;
}

export interface TemporalDevServer {
  address: string;
  uiUrl: string;
  /** Process id of the server, e.g. to check that it is gone. */
  pid: number;
  stop(): Promise<void>;
}

/**
 * Ports the kernel never hands out on its own (for outgoing connections or `listen(0)`): those outside its
 * ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range; elsewhere IANA's 49152-65535). Below the
 * range when there is room, else above it; when the range covers nearly every port, there is no such range.
 */
function portsOutsideEphemeralRange(): { low: number; high: number } {
  let [first, last] = [49_152, 65_535];
  try {
    const [a, b] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(a) && Number.isInteger(b)) [first, last] = [a as number, b as number];
  } catch {
    // Not Linux: the IANA range above.
  }
  if (first > 12_000) return { low: 10_000, high: first - 1 };
  if (last < 63_535) return { low: last + 1, high: 65_535 };
  return { low: 10_000, high: 65_535 };
}

function canListen(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * A port that was free a moment ago on 127.0.0.1, for a process that will listen on it later.
 * It is drawn from outside the kernel's ephemeral range: a port the kernel picked (`listen(0)`) would be
 * free again at once for the kernel to give to the next outgoing connection or to another server's
 * `listen(0)` (the Temporal dev server picks its internal ports that way), and the later `listen`
 * would then fail with EADDRINUSE. CI lost a run to exactly that.
 */
export async function findFreePort(): Promise<number> {
  const { low, high } = portsOutsideEphemeralRange();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (await canListen(port)) return port;
  }
  throw new Error(`could not find a free port between ${low} and ${high} on 127.0.0.1`);
}

// Runs detached from our process group and waits for EOF on stdin, which happens however the parent dies
// (even SIGKILL, when no exit handler runs). It then signals the child, escalating to SIGKILL after 10 s.
// A line on stdin means the parent stopped the child itself, so the watchdog exits without signalling.
const WATCHDOG = `
const pid = Number(process.argv[1]);
const signal = process.argv[2];
let released = false;
process.stdin.on("data", () => { released = true; });
process.stdin.on("end", () => {
  if (released) process.exit(0);
  const alive = () => { try { process.kill(pid, 0); return true; } catch { return false; } };
  try { process.kill(pid, signal); } catch {}
  const t0 = Date.now();
  setInterval(() => {
    if (!alive()) process.exit(0);
    if (Date.now() - t0 > 10000) { try { process.kill(pid, "SIGKILL"); } catch {} process.exit(0); }
  }, 100);
});
`;

/** Ensures the process `pid` does not outlive this one; call release() once it has been stopped normally. */
export function guardChildProcess(pid: number, signal: NodeJS.Signals): { release(): void } {
  const watchdog = spawn(process.execPath, ["-e", WATCHDOG, String(pid), signal], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
  });
  watchdog.unref();
  const stdin = watchdog.stdin as unknown as Socket;
  stdin.unref();
  stdin.on("error", () => {}); // the watchdog may already be gone when we write to it
  return {
    release() {
      if (!stdin.writable) return;
      stdin.write("released\n");
      stdin.end();
    },
  };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Two servers on one SQLite file would corrupt it: a pid file refuses a second one while the first lives. */
function lockDataDir(dataDir: string): () => void {
  const lockFile = join(dataDir, "temporal-dev-server.pid");
  try {
    writeFileSync(lockFile, String(process.pid), { flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    const owner = Number(readFileSync(lockFile, "utf8"));
    if (owner && isAlive(owner)) {
      throw new Error(`${dataDir} is in use by a Temporal dev server of process ${owner} (${lockFile})`);
    }
    writeFileSync(lockFile, String(process.pid)); // its owner died: take over
  }
  return () => rmSync(lockFile, { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * How often a start is tried when the server exits during startup on ports we chose. The dev server picks
 * further ports of its own (HTTP API, metrics, internal services) by asking the OS for a free one and binding
 * it later; another process can take one in between, and the server then panics on start (seen in CI: exit
 * code 2 from inside fx.New). A second start with fresh ports gets past that; ports the caller named are not
 * changed, so such a failure is reported at once.
 */
const START_ATTEMPTS = 2;

/** The server process ended before it served: worth another try when the ports were ours to choose. */
class ExitedDuringStartup extends Error {}

export async function startTemporalDevServer(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const cli = temporalCliPath();
  mkdirSync(options.dataDir, { recursive: true });
  const unlock = lockDataDir(options.dataDir);
  const portsNamed = Boolean(options.port || options.uiPort);
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        return await launch(cli, options, unlock);
      } catch (err) {
        if (!(err instanceof ExitedDuringStartup) || portsNamed || attempt >= START_ATTEMPTS) throw err;
        options.log?.(
          `[temporal-dev-server] ${(err as Error).message.split("\n")[0]}; starting again on fresh ports`,
        );
      }
    }
  } catch (err) {
    unlock();
    throw err;
  }
}

/** One start of the server; `unlock` is called when a started server stops, not when this start fails. */
async function launch(
  cli: string,
  options: TemporalDevServerOptions,
  unlock: () => void,
): Promise<TemporalDevServer> {
  const { dataDir, namespace = "default", log, startTimeoutMs = 30_000 } = options;
  const port = options.port || (await findFreePort());
  const uiPort = options.uiPort || (await findFreePort());
  // "default" is always created; naming it again is accepted, so pass the namespace unconditionally.
  const args = [
    "server",
    "start-dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--ui-port",
    String(uiPort),
  ];
  args.push("--namespace", namespace, "--db-filename", join(dataDir, "temporal.db"), "--log-level", "warn");
  // Write-ahead log with normal syncing: each commit no longer waits for an fsync (a third less of the
  // server's CPU per document, measured). A power loss may lose the last commits, never corrupt the file; the
  // embedded store (PGlite) runs with fsync off too, so this is the same durability for the whole daemon.
  args.push("--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal");
  const child = spawn(cli, args, { stdio: ["ignore", "pipe", "pipe"] });
  const output = captureOutput(child, log);
  const running = () => child.pid !== undefined && child.exitCode === null && child.signalCode === null;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const failedEarly = new Promise<never>((_, reject) => {
    child.once("exit", (code, signal) =>
      reject(new ExitedDuringStartup(`exited early (${signal ?? `code ${code}`})`)),
    );
    child.once("error", (err) => reject(new Error(`could not be spawned: ${err.message}`)));
  });
  failedEarly.catch(() => {}); // once started, an exit is the business of stop(), not of this promise
  const guard = child.pid ? guardChildProcess(child.pid, "SIGTERM") : undefined;

  const stopChild = async () => {
    if (running()) {
      child.kill("SIGTERM");
      const exitedInTime = await Promise.race([
        exited.then(() => true),
        sleep(10_000, false, { ref: false }),
      ]);
      if (!exitedInTime) {
        child.kill("SIGKILL");
        await exited;
      }
    }
    guard?.release();
  };

  const address = `127.0.0.1:${port}`;
  try {
    await Promise.race([waitUntilServing(address, port, namespace, startTimeoutMs, running), failedEarly]);
  } catch (err) {
    await stopChild();
    const message =
      `Temporal dev server on ${address} failed to start: ${(err as Error).message}\n` +
      `--- output of ${cli} ${args.join(" ")} ---\n${output().join("\n")}`;
    // waitUntilServing also notices an exit ("exited during startup") when it polls before the exit event.
    const exitedEarly = err instanceof ExitedDuringStartup || !running();
    throw exitedEarly ? new ExitedDuringStartup(message) : new Error(message);
  }
  if (child.pid === undefined) throw new Error("unreachable: a started server has a pid");
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= stopChild().then(unlock);
    return stopped;
  };
  return { address, uiUrl: `http://127.0.0.1:${uiPort}`, pid: child.pid, stop };
}

/**
 * Keeps the server's output for error messages and forwards each line to `log`. A Go panic prints its
 * reason first and then a long stack, so the first lines are kept as well as the last ones.
 */
function captureOutput(child: ChildProcess, log?: (line: string) => void): () => string[] {
  const HEAD = 20;
  const TAIL = 40;
  const head: string[] = [];
  const tail: string[] = [];
  let dropped = 0;
  for (const stream of [child.stdout, child.stderr]) {
    let partial = "";
    stream?.setEncoding("utf8");
    stream?.on("data", (chunk: string) => {
      const parts = (partial + chunk).split("\n");
      partial = parts.pop() ?? "";
      for (const line of parts) {
        if (head.length < HEAD) head.push(line);
        else {
          tail.push(line);
          if (tail.length > TAIL) {
            tail.shift();
            dropped++;
          }
        }
        log?.(line);
      }
    });
  }
  return () => (dropped > 0 ? [...head, `[… ${dropped} lines left out …]`, ...tail] : [...head, ...tail]);
}

/**
 * The gRPC port opens before the dev server has registered its namespaces, so after the port accepts
 * connections we also wait until the namespace can be described. Connection.lazy plus close() in `finally`:
 * Connection.connect() leaks its channel when it fails (e.g. when something else answers on the port).
 */
async function waitUntilServing(
  address: string,
  port: number,
  namespace: string,
  timeoutMs: number,
  running: () => boolean,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await canConnect(port))) {
    if (!running()) throw new Error("exited during startup");
    if (Date.now() > deadline) {
      throw new Error(`port ${port} did not accept connections within ${timeoutMs} ms`);
    }
    await sleep(100);
  }
  const connection = Connection.lazy({ address });
  try {
    for (;;) {
      try {
        const attemptDeadline = Math.min(deadline, Date.now() + 2000);
        await connection.withDeadline(attemptDeadline, () =>
          connection.workflowService.describeNamespace({ namespace }),
        );
        return;
      } catch (err) {
        if (!running()) throw new Error("exited during startup");
        if (Date.now() > deadline) {
          throw new Error(`namespace ${namespace} not ready: ${(err as Error).message}`);
        }
        await sleep(200);
      }
    }
  } finally {
    await connection.close();
  }
}
