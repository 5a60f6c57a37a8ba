/**
 * Runs in flight when a workflow change is deployed are replayed by the new code: a change that issues other
 * commands than their histories recorded (an activity moved, a patched() branch removed too early) fails them
 * with a determinism violation in production. This test replays histories recorded from each version of the
 * workflows (scripts/record-histories.ts; docs/development.md says when to record) against the current code,
 * bundled as the workers bundle it. Replay needs no Temporal server.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { historyFromJSON } from "@temporalio/common/lib/proto-utils.js";
import type { temporal } from "@temporalio/proto";
import { type ReplayWorkerOptions, Worker } from "@temporalio/worker";
import { DeterminismViolationError } from "@temporalio/workflow";
import { describe, expect, it } from "vitest";
import { workflowBundleOptions } from "../../worker/workflow-bundle.ts";
import * as workflows from "../../workflows/index.ts";

type History = temporal.api.history.v1.IHistory;

const historiesDir = fileURLToPath(new URL("./histories", import.meta.url));
const workflowsDir = fileURLToPath(new URL("../../workflows", import.meta.url));

interface RecordedHistory {
  /** `<label>/<file>`: the version it was recorded from and the run. */
  name: string;
  label: string;
  workflowType: string;
  history: History;
}

function loadHistories(): RecordedHistory[] {
  return readdirSync(historiesDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((dir) =>
      readdirSync(join(historiesDir, dir.name))
        .filter((file) => file.endsWith(".json"))
        .map((file) => {
          const history = historyFromJSON(
            JSON.parse(readFileSync(join(historiesDir, dir.name, file), "utf8")),
          );
          const workflowType =
            history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;
          if (!workflowType) throw new Error(`${dir.name}/${file} does not begin with a workflow start`);
          return { name: `${dir.name}/${file}`, label: dir.name, workflowType, history };
        }),
    );
}

/** Each history's replay error, by name: none means the code replays it as it ran. */
async function replay(options: ReplayWorkerOptions, recorded: RecordedHistory[]) {
  const errors = new Map<string, Error | undefined>();
  const histories = recorded.map(({ name, history }) => ({ workflowId: name, history }));
  for await (const result of Worker.runReplayHistories(options, histories)) {
    errors.set(result.workflowId, result.error);
  }
  return errors;
}

/** Every patched() call of the workflows, and the id it names (undefined if it is not a string literal). */
function patchedCalls(): (string | undefined)[] {
  return readdirSync(workflowsDir)
    .filter((file) => file.endsWith(".ts"))
    .flatMap((file) => [
      ...readFileSync(join(workflowsDir, file), "utf8").matchAll(/\bpatched\((?:"([^"]+)")?/g),
    ])
    .map((match) => match[1]);
}

const recorded = loadHistories();

describe("recorded workflow histories", () => {
  it("cover every workflow type the worker runs", () => {
    const recordedTypes = new Set(recorded.map((history) => history.workflowType));
    expect([...recordedTypes].sort()).toEqual(Object.keys(workflows).sort());
  });

  // A patched() branch exists for runs started before it; histories from before it are what shows the branch
  // still replays them. (deprecatePatch() calls need none: they are only written once no such run is open.)
  it("include runs from before each patch of the workflows", () => {
    const ids = patchedCalls();
    expect(
      ids.filter((id) => id === undefined),
      "patched( not followed by a string literal id",
    ).toEqual([]);
    const labels = new Set(recorded.map((history) => history.label));
    expect(ids.filter((id) => !labels.has(`before-${id}`))).toEqual([]);
  });

  it("replay against the current workflows without a determinism violation", async () => {
    const errors = await replay(workflowBundleOptions, recorded);
    expect(errors.size).toBe(recorded.length);
    const failed = [...errors].flatMap(([name, error]) => (error ? [`${name}: ${error.message}`] : []));
    expect(failed).toEqual([]);
  });

  it("catch a change that breaks runs started before a patch", async () => {
    const shortText = (label: string) => {
      const found = recorded.find(
        (history) => history.name === `${label}/process-document-short-text-done.json`,
      );
      if (!found) throw new Error(`no short-text history recorded as ${label}`);
      return found;
    };
    const beforePatch = shortText("before-compact-pipeline");
    const afterPatch = recorded.find(
      (history) =>
        history.name.endsWith("/process-document-short-text-done.json") &&
        !history.label.startsWith("before-"),
    );
    if (!afterPatch) throw new Error("no short-text history recorded from code with the compact pipeline");
    const altered = fileURLToPath(new URL("./altered/process-document-patch-deprecated.ts", import.meta.url));
    const errors = await replay({ workflowsPath: altered }, [beforePatch, afterPatch]);
    expect(errors.get(afterPatch.name)).toBeUndefined();
    expect(errors.get(beforePatch.name)).toBeInstanceOf(DeterminismViolationError);
  });
});
