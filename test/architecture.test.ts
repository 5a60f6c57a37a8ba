import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { cruise, type IForbiddenRuleType, type IViolation } from "dependency-cruiser";
import { describe, expect, it } from "vitest";

// The layers of docs/architecture.md, checked on every `npm test`: .dependency-cruiser.cjs holds the rules
// (`npm run check:deps` prints the same report for a person).
const repoRoot = resolve(import.meta.dirname, "..");
const config = createRequire(import.meta.url)(join(repoRoot, ".dependency-cruiser.cjs")) as {
  forbidden: IForbiddenRuleType[];
  options: Record<string, unknown>;
};
const sources = [
  "main.ts",
  "bin",
  "api",
  "worker",
  "runtime",
  "services",
  "temporal",
  "store",
  "blobs",
  "pipeline",
  "connectors",
  "workflows",
  "contracts",
  "activities",
  "config",
  "cli",
  "bench",
  "scripts",
  "console",
];

/** Cruises `paths` from `cwd` (the rules' paths are relative to it) and names each violation. */
async function violationsIn(cwd: string, paths: string[], overrides: Record<string, unknown> = {}) {
  const before = process.cwd();
  process.chdir(cwd);
  try {
    const result = await cruise(paths, {
      ...config.options,
      ...overrides,
      validate: true,
      ruleSet: { forbidden: config.forbidden },
    } as never);
    const output = typeof result.output === "string" ? JSON.parse(result.output) : result.output;
    const violations = output.summary.violations as IViolation[];
    return {
      cruised: output.summary.totalCruised as number,
      violations: violations.map((v) => ({
        rule: v.rule.name,
        text: `${v.rule.name}: ${v.from} → ${v.to}${v.cycle ? ` (cycle ${v.cycle.map((c) => c.name).join(" → ")})` : ""}`,
      })),
    };
  } finally {
    process.chdir(before);
  }
}

describe("architecture", () => {
  it("has no import cycle and no import the layers forbid", async () => {
    const { cruised, violations } = await violationsIn(repoRoot, sources);
    expect(cruised).toBeGreaterThan(200);
    expect(violations.map((v) => v.text)).toEqual([]);
  });

  it("each rule fires on a deliberate breach", async () => {
    // A rule whose pattern matched nothing would pass any tree: a small tree laid out like ours breaks each one.
    const tree = mkdtempSync(join(tmpdir(), "layers-"));
    const files: Record<string, string> = {
      "workflows/flow.ts":
        'import { readFileSync } from "node:fs";\nimport { run } from "../activities/act.ts";\nexport const f = [readFileSync, run];\n',
      "activities/act.ts": 'import { start } from "../temporal/client.ts";\nexport const run = start;\n',
      "temporal/client.ts": "export const start = 1;\n",
      "api/handler.ts":
        'import { eq } from "drizzle-orm";\nimport { documents } from "../store/schema/documents.ts";\nimport { run } from "../activities/act.ts";\nexport const h = [eq, documents, run];\n',
      "store/schema/documents.ts": "export const documents = 1;\n",
      "services/one.ts": 'import { two } from "./two.ts";\nexport const one = two;\n',
      "services/two.ts": 'import { one } from "./one.ts";\nexport const two = () => one;\n',
      "store/up.ts": 'import { one } from "../services/one.ts";\nexport const up = one;\n',
      "pipeline/work.ts": 'import { up } from "../store/up.ts";\nexport const work = up;\n',
      "connectors/source.ts": 'import { one } from "../services/one.ts";\nexport const source = one;\n',
      "config/env.ts": 'import { work } from "../pipeline/work.ts";\nexport const env = work;\n',
      "contracts/workflows.ts": 'import { up } from "../store/up.ts";\nexport const c = up;\n',
      "services/reach-up.ts": 'import { h } from "../api/handler.ts";\nexport const r = h;\n',
      "runtime/wiring.ts": "export const wiring = 1;\n",
      "bin/api.ts": 'import { wiring } from "../runtime/wiring.ts";\nexport const entry = wiring;\n',
      "store/reach-entry.ts": 'import { entry } from "../bin/api.ts";\nexport const e = entry;\n',
      "console/src/page.ts": 'import { one } from "../../services/one.ts";\nexport const page = one;\n',
      "worker/create.ts": "export const create = 1;\n",
      "activities/reach-worker.ts":
        'import { create } from "../worker/create.ts";\nexport const a = create;\n',
      "blobs/files.ts": 'import { up } from "../store/up.ts";\nexport const files = up;\n',
      "temporal/reach-up.ts": 'import { one } from "../services/one.ts";\nexport const t = one;\n',
    };
    try {
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(join(tree, dirname(file)), { recursive: true });
        writeFileSync(join(tree, file), text);
      }
      symlinkSync(join(repoRoot, "node_modules"), join(tree, "node_modules"));
      const { violations } = await violationsIn(tree, Object.keys(files), { tsConfig: undefined });
      expect([...new Set(violations.map((v) => v.rule))].sort()).toEqual(
        config.forbidden.map((r) => r.name).sort(),
      );
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });
});
