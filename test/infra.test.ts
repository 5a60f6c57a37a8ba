import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Client, Connection } from "@temporalio/client";
import pg from "pg";
import { describe, expect, inject, it } from "vitest";
import { temporalCliPath } from "../config/paths.ts";
import { findFreePort, startTemporalDevServer } from "../runtime/temporal-dev-server.ts";
import { startNativePostgres } from "./support/postgres.ts";

const repoRoot = resolve(import.meta.dirname, "..");

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A stand-in for the Temporal CLI that panics like the real one did in CI (a port taken between choosing and
 * binding it) for its first `failures` starts, then runs the real CLI. It records each start's arguments.
 */
function flakyCli(dir: string, failures: number): { path: string; starts: () => string[] } {
  const path = join(dir, "temporal");
  const startsFile = join(dir, "starts");
  const script = `#!/bin/sh
echo "$*" >> '${startsFile}'
if [ "$(wc -l < '${startsFile}')" -le ${failures} ]; then
  echo 'time=now level=ERROR msg="Failed to start gRPC listener" error="bind: address already in use"' >&2
  echo 'panic: runtime error: invalid memory address or nil pointer dereference' >&2
  i=0; while [ $i -lt 100 ]; do echo "	go.temporal.io/server/frame$i()" >&2; i=$((i+1)); done
  exit 2
fi
exec '${temporalCliPath()}' "$@"
`;
  writeFileSync(path, script);
  chmodSync(path, 0o755);
  return {
    path,
    starts: () => (existsSync(startsFile) ? readFileSync(startsFile, "utf8").trim().split("\n") : []),
  };
}

async function withCli<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const before = process.env.TEMPORAL_CLI_PATH;
  process.env.TEMPORAL_CLI_PATH = path;
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env.TEMPORAL_CLI_PATH;
    else process.env.TEMPORAL_CLI_PATH = before;
  }
}

async function withClient<T>(address: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const connection = await Connection.connect({ address });
  try {
    return await fn(new Client({ connection }));
  } finally {
    await connection.close();
  }
}

describe("Temporal dev server", () => {
  it("is shared with the tests through inject() and process.env, and serves the default namespace", async () => {
    const address = inject("TEST_TEMPORAL_ADDRESS");
    expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(process.env.TEST_TEMPORAL_ADDRESS).toBe(address);
    const namespace = await withClient(address, (client) =>
      client.workflowService.describeNamespace({ namespace: "default" }),
    );
    expect(namespace.namespaceInfo?.name).toBe("default");
  });

  it("keeps a workflow and its history across a restart with the same data dir", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "memory-temporal-restart-"));
    const workflowId = `persistence-probe-${Date.now()}`;
    let server = await startTemporalDevServer({ dataDir });
    try {
      // No worker polls this queue, so the workflow stays RUNNING with only its start events in history.
      await withClient(server.address, (client) =>
        client.workflow.start("persistenceProbe", { taskQueue: "no-worker", workflowId, args: ["kept"] }),
      );
      await server.stop();
      expect(isAlive(server.pid)).toBe(false);

      server = await startTemporalDevServer({ dataDir });
      await expect(startTemporalDevServer({ dataDir })).rejects.toThrow(/in use by a Temporal dev server/);
      const { description, history } = await withClient(server.address, async (client) => {
        const handle = client.workflow.getHandle(workflowId);
        return { description: await handle.describe(), history: await handle.fetchHistory() };
      });
      expect(description.status.name).toBe("RUNNING");
      expect(description.type).toBe("persistenceProbe");
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      const input = started?.input?.payloads?.[0]?.data;
      expect(input && Buffer.from(input).toString()).toBe('"kept"');
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("hands out ports the kernel never gives to outgoing connections or listen(0)", async () => {
    const [ephemeralLow] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    const ports = await Promise.all(Array.from({ length: 20 }, () => findFreePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(ephemeralLow ?? 0);
    }
    // Each one can be listened on right away.
    const server = createServer();
    await new Promise<void>((r) => server.listen(ports[0], "127.0.0.1", r));
    expect((server.address() as { port: number }).port).toBe(ports[0]);
    await new Promise((r) => server.close(r));
  });

  it("reports the server's own output when it cannot start", async () => {
    // Something else owns the port. It drops connections at once, so probes against it end quickly.
    const blocker = createServer((socket) => socket.destroy());
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const address = blocker.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const dataDir = mkdtempSync(join(tmpdir(), "memory-temporal-busy-"));
    try {
      const attempt = startTemporalDevServer({ dataDir, port, startTimeoutMs: 20_000 });
      await expect(attempt).rejects.toThrow(/failed to start[\s\S]*--- output of /);
    } finally {
      blocker.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("starts again on fresh ports when the server panics during startup on ports it chose", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "memory-temporal-retry-"));
    const cli = flakyCli(dataDir, 1);
    const log: string[] = [];
    const server = await withCli(cli.path, () =>
      startTemporalDevServer({ dataDir, log: (line) => log.push(line) }),
    );
    try {
      const namespace = await withClient(server.address, (client) =>
        client.workflowService.describeNamespace({ namespace: "default" }),
      );
      expect(namespace.namespaceInfo?.name).toBe("default");
      const starts = cli.starts();
      expect(starts).toHaveLength(2);
      const ports = starts.map((args) => /--port (\d+)/.exec(args)?.[1]);
      expect(ports[1]).toBe(server.address.split(":")[1]);
      expect(ports[0]).not.toBe(ports[1]);
      expect(log).toContain("panic: runtime error: invalid memory address or nil pointer dereference");
      expect(log.some((line) => /exited early \(code 2\); starting again on fresh ports/.test(line))).toBe(
        true,
      );
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("keeps the panic's reason above a long stack, and tries once when the caller named the port", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "memory-temporal-panic-"));
    const cli = flakyCli(dataDir, 1000);
    try {
      const port = await findFreePort();
      const attempt = withCli(cli.path, () => startTemporalDevServer({ dataDir, port }));
      await expect(attempt).rejects.toThrow(
        /exited early \(code 2\)[\s\S]*panic: runtime error[\s\S]*lines left out[\s\S]*frame99/,
      );
      expect(cli.starts()).toHaveLength(1);
      // The lock on the data dir is released, so a later start is not refused.
      expect(existsSync(join(dataDir, "temporal-dev-server.pid"))).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("does not outlive a parent that is killed with SIGKILL", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "memory-temporal-orphan-"));
    const script = [
      'import { startTemporalDevServer } from "./runtime/temporal-dev-server.ts";',
      `const server = await startTemporalDevServer({ dataDir: ${JSON.stringify(dataDir)} });`,
      "console.log(JSON.stringify({ pid: server.pid }));",
      "setInterval(() => {}, 1000);",
    ].join("\n");
    const parent = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const firstLine = await new Promise<string>((resolveLine, reject) => {
        let out = "";
        parent.stdout.on("data", (d) => {
          out += d;
          if (out.includes("\n")) resolveLine(out.split("\n")[0] ?? "");
        });
        parent.once("exit", (code) => reject(new Error(`parent exited early (${code})`)));
      });
      const { pid } = JSON.parse(firstLine) as { pid: number };
      expect(isAlive(pid)).toBe(true);
      parent.kill("SIGKILL");
      const deadline = Date.now() + 15_000;
      while (isAlive(pid) && Date.now() < deadline) await sleep(100);
      expect(isAlive(pid)).toBe(false);
    } finally {
      parent.kill("SIGKILL");
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("native PostgreSQL", () => {
  it("runs pgvector: cosine distance orders the rows", async () => {
    const url = inject("TEST_DATABASE_URL");
    expect(process.env.TEST_DATABASE_URL).toBe(url);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query("CREATE TABLE infra_vectors (id int PRIMARY KEY, embedding vector(3))");
      await client.query(
        "INSERT INTO infra_vectors VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0.9,0.1,0]'), (4, '[-1,0,0]')",
      );
      const { rows } = await client.query<{ id: number; distance: number }>(
        "SELECT id, embedding <=> '[1,0,0]' AS distance FROM infra_vectors ORDER BY embedding <=> '[1,0,0]'",
      );
      expect(rows.map((r) => r.id)).toEqual([1, 3, 2, 4]);
      expect(rows[0]?.distance).toBeCloseTo(0);
      expect(rows[3]?.distance).toBeCloseTo(2);
    } finally {
      await client.query("DROP TABLE IF EXISTS infra_vectors");
      await client.end();
    }
  });

  it("stop() shuts the server down and removes its directory", async () => {
    const postgres = await startNativePostgres();
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    const { rows } = await client.query<{ v: string }>(
      "SELECT extversion AS v FROM pg_extension WHERE extname = 'vector'",
    );
    await client.end();
    expect(rows[0]?.v).toMatch(/^0\.8\./);
    expect(existsSync(postgres.dir)).toBe(true);

    await postgres.stop();
    expect(existsSync(postgres.dir)).toBe(false);
    const after = new pg.Client({ connectionString: postgres.url, connectionTimeoutMillis: 2000 });
    await expect(after.connect()).rejects.toThrow();
  });
});

describe("docker-compose.yml", () => {
  // `docker compose` (the v2 plugin) where installed; otherwise Debian's docker-compose, which .ci/run installs.
  function compose(args: string[], env: NodeJS.ProcessEnv) {
    const variants: [string, string[]][] = [
      ["docker", ["compose"]],
      ["docker-compose", []],
    ];
    for (const [cmd, prefix] of variants) {
      const probe = spawnSync(cmd, [...prefix, "version"], { encoding: "utf8" });
      if (probe.status !== 0) continue;
      return spawnSync(cmd, [...prefix, "-f", "docker-compose.yml", ...args], {
        cwd: repoRoot,
        encoding: "utf8",
        env: { ...process.env, ...env },
      });
    }
    throw new Error(
      "neither `docker compose` nor `docker-compose` is installed: install one (apt-get install docker-compose)",
    );
  }

  it("is valid and defines the five services", () => {
    const check = compose(["config", "-q"], { MEMORY_ADMIN_KEY: "test-key" });
    expect(check.stderr).toBe("");
    expect(check.status).toBe(0);
    const services = compose(["config", "--services"], { MEMORY_ADMIN_KEY: "test-key" });
    expect(services.stdout.trim().split("\n").sort()).toEqual([
      "api",
      "postgres",
      "temporal",
      "temporal-ui",
      "worker",
    ]);
  });

  it("gives the API and the worker one data volume, where uploads and the generated key live", () => {
    const rendered = compose(["config"], { MEMORY_ADMIN_KEY: "test-key" });
    expect(rendered.status).toBe(0);
    // The rendered file lists each service as a block indented by two spaces.
    const block = (service: string) => {
      const lines = rendered.stdout.split("\n");
      const start = lines.indexOf(`  ${service}:`);
      const end = lines.findIndex((l, i) => i > start && /^ {0,2}\S/.test(l));
      return lines.slice(start, end === -1 ? undefined : end).join("\n");
    };
    for (const service of ["api", "worker"]) expect(block(service)).toMatch(/- memory-data:\/app\/data/);
    expect(readFileSync(join(repoRoot, "Dockerfile"), "utf8")).toMatch(/^ENV DATA_DIR=\/app\/data$/m);
  });

  it("makes the image's query models with the packages and sha256 setup pins", () => {
    const setup = readFileSync(join(repoRoot, "scripts", "setup.mjs"), "utf8");
    const docker = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
    const packages = [
      ...(setup.match(/const QUANTISER_PACKAGES = \[([^\]]*)\]/)?.[1] ?? "").matchAll(/"([^"]+)"/g),
    ].map((m) => m[1]);
    expect(packages.length).toBeGreaterThan(5);
    const stage = docker.slice(docker.indexOf("AS query-model"), docker.indexOf("FROM node:"));
    const pip = stage.slice(stage.indexOf("pip install"), stage.indexOf("&& mkdir"));
    expect(new Set(pip.match(/[\w.-]+==[\w.]+/g))).toEqual(new Set(packages));
    for (const [id, script] of [
      ["bge-small-en-v1.5-int8-block", "quantize-query-model.py"],
      ["bge-small-en-v1.5-int8-smooth", "quantize-query-model-smooth.py"],
    ]) {
      const entry = setup.slice(setup.indexOf(`id: "${id}"`));
      expect(entry).toContain(`script: "scripts/${script}"`);
      const sha256 = entry.match(/sha256: "([0-9a-f]{64})"/)?.[1];
      expect(sha256).toBeDefined();
      expect(stage).toContain(`${sha256} model.onnx`);
      expect(stage).toContain(`/scripts/${script} /fp32/model.onnx /models/${id}/model.onnx`);
    }
    expect(stage).toContain("scripts/query-smoothing.json");
  });

  it("refuses to render without MEMORY_ADMIN_KEY", () => {
    const env: NodeJS.ProcessEnv = { MEMORY_ADMIN_KEY: "" };
    const check = compose(["config", "-q"], env);
    expect(check.status).not.toBe(0);
    expect(check.stderr).toMatch(/MEMORY_ADMIN_KEY/);
  });
});
