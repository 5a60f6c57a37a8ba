import { type ChildProcess, spawn } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { pgBinDir } from "../../config/paths.ts";
import { findFreePort, guardChildProcess } from "../../runtime/temporal-dev-server.ts";

export interface NativePostgres {
  /** postgres://postgres@127.0.0.1:PORT/memory_test, with pgvector created. */
  url: string;
  /** The dir holding the cluster and its unix socket; removed by stop() unless it was `keepIn`. */
  dir: string;
  /** The cluster was already there (`keepIn` of an earlier run): its databases are as that run left them. */
  reused: boolean;
  /** Stops the server and keeps its data (a database outage, for durability tests). */
  pause(): Promise<void>;
  /** Starts it again on the same port, with the same data. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

const DATABASE = "memory_test";

/**
 * PostgreSQL refuses to run as root. Under root (CI) the server runs as `nobody`; scripts/setup.mjs made the
 * binaries reachable for it.
 */
function unprivilegedIds(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const entry = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .map((line) => line.split(":"))
    .find((fields) => fields[0] === "nobody");
  if (!entry) throw new Error("running as root, but there is no `nobody` user to run PostgreSQL as");
  return { uid: Number(entry[2]), gid: Number(entry[3]) };
}

function runToEnd(cmd: string, args: string[], ids: { uid: number; gid: number } | undefined, cwd: string) {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"], ...ids });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} failed (${code}):\n${output}`)),
    );
  });
}

export interface NativePostgresOptions {
  /** Server settings (`-c name=value`), e.g. `{ shared_buffers: "6GB" }` for a store bigger than the default's 128MB. */
  settings?: Record<string, string>;
  /**
   * Keep the cluster in this dir and reuse it next time (benchmark experiments on a seeded store): stop() then
   * leaves it in place. Without it, a new temp cluster that stop() removes.
   */
  keepIn?: string;
}

export async function startNativePostgres(opts: NativePostgresOptions = {}): Promise<NativePostgres> {
  const bin = pgBinDir();
  const ids = unprivilegedIds();
  const dir = opts.keepIn ?? mkdtempSync(join(tmpdir(), "memory-pg-"));
  mkdirSync(dir, { recursive: true });
  if (ids) chownSync(dir, ids.uid, ids.gid);
  const dataDir = join(dir, "data");
  const reused = opts.keepIn !== undefined && existsSync(join(dataDir, "PG_VERSION"));
  let server: ChildProcess | undefined;
  let guard: { release(): void } | undefined;
  let output = "";

  let port = 0;
  const halt = async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server?.once("exit", resolve));
      server.kill("SIGINT"); // "fast" shutdown: roll back open transactions, no waiting for clients
      if (!(await Promise.race([exited.then(() => true), sleep(10_000, false, { ref: false })]))) {
        server.kill("SIGKILL");
        await exited;
      }
    }
    guard?.release();
  };
  const stop = async () => {
    await halt();
    if (!opts.keepIn) rmSync(dir, { recursive: true, force: true });
  };
  const launch = async () => {
    const args = ["-D", dataDir, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-k", dir];
    // fsync=off: test data need not survive a power cut, and it saves seconds.
    args.push("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off");
    for (const [name, value] of Object.entries(opts.settings ?? {})) args.push("-c", `${name}=${value}`);
    // Spawned directly rather than through pg_ctl, so that this process owns it and the guard can end it.
    const child = spawn(join(bin, "postgres"), args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"], ...ids });
    server = child;
    child.stdout.on("data", (d) => (output = (output + d).slice(-4000)));
    child.stderr.on("data", (d) => (output = (output + d).slice(-4000)));
    if (child.pid) guard = guardChildProcess(child.pid, "SIGINT");
    await waitForConnection(
      `postgres://postgres@127.0.0.1:${port}/postgres`,
      () => child.exitCode === null && child.signalCode === null,
    );
  };

  try {
    // --no-sync: test data need not survive a power cut.
    if (!reused)
      await runToEnd(
        join(bin, "initdb"),
        ["-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"],
        ids,
        dir,
      );
    port = await findFreePort();
    await launch();
    const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const url = `postgres://postgres@127.0.0.1:${port}/${DATABASE}`;
    if (!reused) {
      await query(adminUrl, `CREATE DATABASE ${DATABASE}`);
      await query(url, "CREATE EXTENSION vector");
    }
    return { url, dir, reused, stop, pause: halt, resume: launch };
  } catch (err) {
    await stop();
    throw new Error(
      `native PostgreSQL failed to start: ${(err as Error).message}\n--- server output ---\n${output}`,
    );
  }
}

async function query(url: string, sql: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function waitForConnection(url: string, running: () => boolean, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await query(url, "SELECT 1");
      return;
    } catch (err) {
      if (!running()) throw new Error("postgres exited during startup");
      if (Date.now() > deadline)
        throw new Error(`no connection within ${timeoutMs} ms: ${(err as Error).message}`);
      await sleep(100);
    }
  }
}
