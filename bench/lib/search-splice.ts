// Puts the search-latency section of one or more benchmark outputs (e.g. a 10k run and a 100k run
// written with --out) into docs/benchmarks.md, leaving every other section as it is:
//   npx tsx bench/lib/search-splice.ts /tmp/bench-10k.md /tmp/bench-100k.md [--into docs/benchmarks.md]
// The first file's introduction is kept; each later file adds its own introduction (its run and
// command) and its per-size tables.

import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { pathToFileURL } from "node:url";
import { OTHER_LOAD_WARNING } from "./report.ts";
import { SEARCH_HEADING } from "./search-report.ts";
import { findSection, replaceSection } from "./sections.ts";

const LOAD_HEADING = "## Machine load during the measurements";
const cores = () => cpus().length;

export function spliceSearchSections(target: string, sources: string[]): string {
  const parts = sources.map((markdown, i) => {
    const section = findSection(markdown, SEARCH_HEADING);
    if (!section) throw new Error(`source ${i + 1} has no "${SEARCH_HEADING}" section`);
    const body = i === 0 ? section.trimEnd() : section.replace(SEARCH_HEADING, "").trim();
    // The run's machine-load table travels with its figures (the target's own one is about another run).
    const load = findSection(markdown, LOAD_HEADING)
      ?.split("\n")
      .filter((l) => l.startsWith("|"));
    if (!load?.length) return body;
    const busiest = Math.max(
      0,
      ...load.map((l) => Number(l.split("|")[2]?.trim())).filter((v) => Number.isFinite(v)),
    );
    const warning =
      busiest > OTHER_LOAD_WARNING
        ? `\n\n**Warning:** other processes used up to ${busiest.toFixed(2)} of the machine's ${cores()} cores while these figures were taken, so they are pessimistic (slower than the code is); rerun on an idle machine before comparing them with other runs.`
        : "";
    return `${body}\n\nCPU used outside the benchmark during the run above, in cores (this machine has ${cores()}):\n\n${load.join("\n")}${warning}`;
  });
  const merged = `${parts.join("\n\n")}\n`;
  // An older report may title the section with its size ("## Search latency at 10,000 chunks").
  const heading = target.split("\n").find((l) => l.startsWith(SEARCH_HEADING)) ?? SEARCH_HEADING;
  return replaceSection(target, heading.trimEnd(), merged);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const at = args.indexOf("--into");
  const into = at === -1 ? "docs/benchmarks.md" : (args[at + 1] as string);
  const sources = args.filter((_, i) => at === -1 || (i !== at && i !== at + 1));
  const out = spliceSearchSections(
    readFileSync(into, "utf8"),
    sources.map((f) => readFileSync(f, "utf8")),
  );
  writeFileSync(into, out);
  process.stdout.write(`wrote the search section of ${into} from ${sources.join(", ")}\n`);
}
