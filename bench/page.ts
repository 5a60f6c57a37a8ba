// Renders docs/benchmarks.md and bench/results/report.md from a stored run without running anything:
//   npm run bench:page -- [bench/results/<file>.json] [--out FILE]
// Default: the newest file in bench/results/. The History table comes from every file there.

import path from "node:path";
import { parseArgs } from "node:util";
import { writePageAndReport } from "./lib/page.ts";
import { newestRunFile, PAGE, RESULTS_DIR, ROOT, readHistory, readRunFile } from "./lib/results.ts";

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    options: { out: { type: "string" }, help: { type: "boolean", short: "h" } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    process.stdout.write(
      "npm run bench:page -- [bench/results/<file>.json] [--out docs/benchmarks.md]\n" +
        "Renders the page from one stored run (default: the newest in bench/results/), with the History of all of them.\n",
    );
    return 0;
  }
  if (positionals.length > 1) throw new Error("one result file at most");
  const file = positionals[0] ? path.resolve(positionals[0]) : newestRunFile();
  if (!file)
    throw new Error(`no result file in ${path.relative(ROOT, RESULTS_DIR)}/: run \`npm run bench\` first`);
  const run = readRunFile(file);
  const out = path.resolve(values.out ?? PAGE);
  const history = readHistory();
  // A file from elsewhere still appears in its own History.
  if (!history.some((h) => path.resolve(h.file) === file)) history.push({ file, run });
  const written = await writePageAndReport(run, { file: path.relative(ROOT, file), history, out });
  process.stdout.write(
    `rendered ${written.map((f) => path.relative(process.cwd(), f)).join(" and ")} from ${path.relative(process.cwd(), file)}\n`,
  );
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`bench:page failed: ${(error as Error).message}\n`);
    process.exit(1);
  },
);
