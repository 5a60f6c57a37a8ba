// The section of docs/benchmarks.md that the scenario `churn` (bench/churn.ts) fills: the embedded store after
// months of adds, deletes and updates with the maintenance schedule's passes, against a fresh load.

import type { ChurnOptions, ChurnResult, ChurnSnapshot } from "../churn.ts";
import type { TableSizes } from "./churn.ts";
import { ms, ratio } from "./stats.ts";

export const CHURN_HEADING = "## Search over months on the embedded store (issue #25 point 2)";

/** Issue #25's bound: sizes and search p95 after the churn within this factor of a fresh load. */
const CHURN_RATIO_GOAL = 1.2;

const n = (v: number) => v.toLocaleString("en-US");
const mb = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`;
const TABLES = ["chunks", "documents", "memories"] as const;

/** One compared figure: a table's heap or one index, or a search percentile. */
interface ChurnComparison {
  what: string;
  fresh: number;
  after: number;
  unit: "bytes" | "ms";
}

export function churnComparisons(r: ChurnResult): ChurnComparison[] {
  const rows: ChurnComparison[] = [];
  for (const table of TABLES) {
    const fresh: TableSizes = r.fresh[table];
    const after: TableSizes = r.afterChurn[table];
    rows.push({
      what: `${table} heap`,
      fresh: fresh.heap + fresh.toast,
      after: after.heap + after.toast,
      unit: "bytes",
    });
    for (const index of Object.keys(fresh.indexes))
      rows.push({
        what: `${table}: ${index}`,
        fresh: fresh.indexes[index] ?? 0,
        after: after.indexes[index] ?? 0,
        unit: "bytes",
      });
  }
  rows.push({ what: "search p50", fresh: r.fresh.search.p50, after: r.afterChurn.search.p50, unit: "ms" });
  rows.push({ what: "search p95", fresh: r.fresh.search.p95, after: r.afterChurn.search.p95, unit: "ms" });
  return rows;
}

/** Within the goal when the churned figure is at most 1.2× the fresh one (an empty index on both sides too). */
export function withinGoal(c: ChurnComparison): boolean {
  if (c.fresh === 0) return c.after === 0;
  return c.after / c.fresh <= CHURN_RATIO_GOAL;
}

/** The ratio the issue bounds, for the goal's line: only sizes of a page or more and the search p95 count. */
function bounded(c: ChurnComparison): boolean {
  return c.what === "search p95" || (c.unit === "bytes" && c.fresh >= 8192);
}

const value = (c: ChurnComparison, v: number) => (c.unit === "ms" ? ms(v) : mb(v));

function stateRow(s: ChurnSnapshot): string {
  const hnsw = (t: TableSizes) =>
    Object.entries(t.indexes)
      .filter(([name]) => name.includes("hnsw"))
      .reduce((sum, [, size]) => sum + size, 0);
  return `| ${s.label} | ${mb(s.chunks.heap)} | ${mb(hnsw(s.chunks))} | ${mb(s.chunks.indexes.chunks_tsv_gin ?? 0)} | ${mb(s.documents.heap)} | ${mb(s.memories.heap)} | ${mb(hnsw(s.memories))} | ${ms(s.search.p50)} / ${ms(s.search.p95)} |`;
}

export function renderChurnSection(r: ChurnResult, o: ChurnOptions): string[] {
  const rows = churnComparisons(r);
  const goalRows = rows.filter(bounded);
  const over = goalRows.filter((c) => !withinGoal(c));
  const steps = r.passes.flatMap((p) => p.pass.steps.map((s) => ({ ...s, round: p.round })));
  const longestPass = r.passes.reduce(
    (a, b) => (b.ms > a.ms ? b : a),
    r.passes[0] as ChurnResult["passes"][0],
  );
  const longestStep = steps.reduce((a, b) => (b.ms > a.ms ? b : a), steps[0] as (typeof steps)[0]);
  const count = (kind: string) => steps.filter((s) => s.step === kind).length;
  const deferred = r.passes.reduce((sum, p) => sum + p.pass.deferred.length, 0);
  const lines = [
    CHURN_HEADING,
    "",
    `PGlite runs no autovacuum. ${n(o.adds)} documents of ${o.chunksPerDoc} chunk(s) added, ${n(o.deletes)} deleted and ${n(o.updates)} updated with new content (re-chunked, new vectors), over ${o.tags === 1 ? "one container tag" : `${n(o.tags)} container tags`}, in ${o.rounds} rounds through the service's store path (\`bench/lib/churn.ts\`; each round its share of adds, then deletes, then updates; no model: vectors from the search benchmark's cache), ${o.maintain === "rounds" ? "with the maintenance schedule's own pass (`runMaintenance`, what the `maintain-tables` schedule runs) after each round" : "with the maintenance schedule's pass only after the last round"} and the statistics refresh before it. Each pass ran every step it chose, as the service's pass does in a quiet hour (\`MAINTENANCE_QUIET_AFTER\`); outside one, a step estimated over \`MAINTENANCE_MAX_HOLD\` waits for it (docs/operations.md#table-maintenance). ${n(r.liveDocuments)} documents live at the end (${n(r.afterChurn.chunks.live)} chunks, ${n(r.afterChurn.memories.live)} memories). "Fresh" is a new store loaded with the same final rows through the same path (${r.freshLoadSeconds.toFixed(0)} s). Search: ${r.afterChurn.search.n} hybrid searches through the store (\`hybridChunkSearch\`, each a live chunk's vector and its first six words, in that document's tag) after 20 warm-up ones.`,
    "",
    `The churn took ${(r.churnSeconds / 60).toFixed(1)} min. ${r.passes.length} passes: ${count("vacuum")} VACUUMs, ${count("reindex")} HNSW rebuilds, ${count("compact")} compactions (VACUUM FULL)${deferred ? `, ${deferred} steps deferred` : ""}; the longest pass ${longestPass ? `${ms(longestPass.ms)} (round ${longestPass.round})` : "n/a"}, the longest single statement ${longestStep ? `${ms(longestStep.ms)} (${longestStep.step} ${longestStep.target}, round ${longestStep.round})` : "n/a"}; that statement is how long the embedded process held its one connection.`,
    "",
    `| figure | fresh load | after the churn | ratio | vs ${CHURN_RATIO_GOAL}× |`,
    "|---|---|---|---|---|",
    ...rows.map(
      (c) =>
        `| ${c.what} | ${value(c, c.fresh)} | ${value(c, c.after)} | ${ratio(c.after, c.fresh)} | ${bounded(c) ? (withinGoal(c) ? "within" : "over") : c.unit === "ms" ? "—" : "(under a page)"} |`,
    ),
    "",
    over.length === 0
      ? `Every size of a page or more and the search p95 are within ${CHURN_RATIO_GOAL}× of the fresh load.`
      : `Over ${CHURN_RATIO_GOAL}× of the fresh load: ${over.map((c) => `${c.what} ${ratio(c.after, c.fresh)}`).join(", ")}.`,
    "",
  ];
  if (r.diagnostics) {
    lines.push(
      "Then each step by hand on the churned store (diagnostics), with how long each held the connection:",
      "",
      "| state | chunks heap | chunks HNSW | chunks GIN | documents heap | memories heap | memories HNSW | search p50 / p95 |",
      "|---|---|---|---|---|---|---|---|",
      stateRow({ ...r.fresh, label: "fresh load" }),
      stateRow({ ...r.afterChurn, label: "after the churn" }),
      ...r.diagnostics.snapshots.map(stateRow),
      "",
      r.diagnostics.steps.map((s) => `\`${s.step}\` ${ms(s.ms)}`).join(", "),
      "",
    );
  }
  return lines;
}
