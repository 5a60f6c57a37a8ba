/**
 * Records event histories of the workflows as a commit had them, for test/workflows/replay.test.ts to replay
 * against the current code. A run in flight when a workflow change is deployed is replayed by the new code on
 * the next worker that picks it up; these histories stand for such runs.
 *
 *   npx tsx scripts/record-histories.ts --commit <rev> --label <name> [--workflows processDocument,...]
 *
 * The workflows/ directory of <rev> (default HEAD: committed code only, so a recording can be repeated) is
 * bundled on its own, run on a throwaway Temporal dev server with the stand-in activities of
 * scripts/history-scenarios.ts, and each run's history is written to
 * test/workflows/histories/<label>/<workflow file>-<scenario>.json. --workflows limits the recording to
 * some workflow types; by default every type the commit's workflows/index.ts exports is recorded.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Client, Connection, type WorkflowHandleWithFirstExecutionRunId } from "@temporalio/client";
import { historyToJSON } from "@temporalio/common/lib/proto-utils.js";
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from "@temporalio/worker";
import { heavyQueueOf } from "../contracts/workflows.ts";
import { startTemporalDevServer } from "../runtime/temporal-dev-server.ts";
import { type HistoryScenario, historyScenarios } from "./history-scenarios.ts";

const repoRoot = fileURLToPath(new URL("..", import.meta.url));
const historiesDir = join(repoRoot, "test", "workflows", "histories");
/** Worker and client identities are written into histories: a fixed one keeps host names and pids out. */
const identity = "history-recorder";

// A worker per scenario starts and stops: its state changes would bury the list of files written.
Runtime.install({ logger: new DefaultLogger("WARN") });

const { values } = parseArgs({
  options: {
    commit: { type: "string", default: "HEAD" },
    label: { type: "string" },
    workflows: { type: "string" },
  },
});

const commit = git("rev-parse", "--verify", `${values.commit}^{commit}`).trim();
const label = values.label ?? `at-${commit.slice(0, 7)}`;
if (!/^[a-z0-9][a-z0-9-]*$/.test(label))
  throw new Error(`--label ${label}: use lower case, digits and dashes`);

const sourceDir = mkdtempSync(join(tmpdir(), "recorded-workflows-"));
const serverDir = mkdtempSync(join(tmpdir(), "recording-temporal-"));
try {
  // Only workflows/ is taken from the commit: workflows import activity types (erased when bundled) and the
  // small constant modules inside workflows/, so the directory bundles on its own.
  execFileSync("tar", ["-x", "-C", sourceDir], {
    input: gitBuffer("archive", "--format=tar", commit, "workflows"),
  });
  const exported = exportedWorkflowTypes(readFileSync(join(sourceDir, "workflows", "index.ts"), "utf8"));
  const wanted = values.workflows?.split(",").map((type) => type.trim()) ?? [...exported];
  for (const type of wanted) {
    if (!exported.has(type))
      throw new Error(`${commit.slice(0, 7)}'s workflows/index.ts does not export ${type}`);
  }
  const scenarios = historyScenarios.filter((scenario) => wanted.includes(scenario.workflowType));
  if (scenarios.length === 0) throw new Error(`no scenario records any of ${wanted.join(", ")}`);

  const { code } = await bundleWorkflowCode({
    workflowsPath: join(sourceDir, "workflows", "index.ts"),
    // The extracted directory lies outside the repository: resolve @temporalio/workflow from its node_modules.
    webpackConfigHook: (config) => {
      const modules = config.resolve?.modules ?? ["node_modules"];
      return {
        ...config,
        resolve: { ...config.resolve, modules: [...modules, join(repoRoot, "node_modules")] },
      };
    },
  });

  const server = await startTemporalDevServer({ dataDir: serverDir });
  try {
    const workerConnection = await NativeConnection.connect({ address: server.address });
    const connection = await Connection.connect({ address: server.address });
    const client = new Client({ connection, identity });
    const outDir = join(historiesDir, label);
    mkdirSync(outDir, { recursive: true });
    try {
      for (const [index, scenario] of scenarios.entries()) {
        const files = await record(scenario, `recording-${index}`, { workerConnection, client, code });
        for (const [file, json] of files) {
          writeFileSync(join(outDir, file), `${json}\n`);
          console.log(`${label}/${file}`);
        }
      }
    } finally {
      await connection.close();
      await workerConnection.close();
    }
    writeFileSync(
      join(outDir, "source.txt"),
      `Recorded by scripts/record-histories.ts from workflows/ of commit ${commit}:\n` +
        `${git("log", "-1", "--format=%s", commit)}`,
    );
  } finally {
    await server.stop();
  }
} finally {
  rmSync(sourceDir, { recursive: true, force: true });
  rmSync(serverDir, { recursive: true, force: true });
}

/** Runs one scenario to its end and returns its histories as [file name, JSON], one per workflow run. */
async function record(
  scenario: HistoryScenario,
  taskQueue: string,
  env: { workerConnection: NativeConnection; client: Client; code: string },
): Promise<[string, string][]> {
  const worker = await Worker.create({
    connection: env.workerConnection,
    taskQueue,
    workflowBundle: { code: env.code },
    activities: scenario.activities,
    identity,
  });
  // OCR and transcription are scheduled on the heavy queue by versions that have it; nothing else is.
  const heavyWorker = await Worker.create({
    connection: env.workerConnection,
    taskQueue: heavyQueueOf(taskQueue),
    activities: scenario.activities,
    identity,
  });
  const workflowId = `${scenario.workflowFile}-${scenario.name}`;
  const { runningBefore } = scenario;
  const recorded = await worker.runUntil(
    heavyWorker.runUntil(async () => {
      const running = runningBefore
        ? await env.client.workflow.start(runningBefore.workflowType, {
            taskQueue,
            workflowId: runningBefore.workflowId,
            args: runningBefore.args,
          })
        : undefined;
      await runningBefore?.ready;
      const handle = await env.client.workflow.start(scenario.workflowType, {
        taskQueue,
        workflowId,
        args: scenario.args,
      });
      await handle.result();
      runningBefore?.release();
      await running?.result();
      for (const started of scenario.startsWorkflowIds ?? [])
        await env.client.workflow.getHandle(started).result();
      const chains = [{ file: workflowId, workflowId, runIds: await runChain(env.client, handle) }];
      if (running && runningBefore) {
        const file = `${scenario.workflowFile}-${runningBefore.name}`;
        chains.push({ file, workflowId: running.workflowId, runIds: await runChain(env.client, running) });
      }
      return chains;
    }),
  );
  const histories: [string, string][] = [];
  for (const chain of recorded) {
    for (const [position, runId] of chain.runIds.entries()) {
      const history = await env.client.workflow.getHandle(chain.workflowId, runId).fetchHistory();
      const suffix = chain.runIds.length > 1 ? `-run${position + 1}` : "";
      histories.push([`${chain.file}${suffix}.json`, historyToJSON(history)]);
    }
  }
  return histories;
}

/** The runs of a workflow from its first, following continue-as-new to the last. */
async function runChain(client: Client, started: WorkflowHandleWithFirstExecutionRunId): Promise<string[]> {
  const { workflowId } = started;
  const runIds = [started.firstExecutionRunId];
  for (;;) {
    const runId = runIds.at(-1) as string;
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const last = history.events?.at(-1);
    const next = last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
    if (!next) return runIds;
    runIds.push(next);
  }
}

/** Workflow types named in `export { a, b } from "./x.ts"` lines, the form workflows/index.ts has always had. */
function exportedWorkflowTypes(indexSource: string): Set<string> {
  const types = new Set<string>();
  for (const match of indexSource.matchAll(/export\s*\{([^}]*)\}/g)) {
    for (const name of (match[1] ?? "").split(",")) if (name.trim()) types.add(name.trim());
  }
  return types;
}

function git(...args: string[]): string {
  return gitBuffer(...args).toString("utf8");
}

function gitBuffer(...args: string[]): Buffer {
  return execFileSync("git", args, { cwd: repoRoot, maxBuffer: 64 * 1024 * 1024 });
}
