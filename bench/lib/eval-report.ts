// What bench/eval.ts measures on SciFact, as a JSON-serialisable result, and the markdown of its section.
// Every figure is reported per half of the committed dev / test split (bench/lib/split.ts): the search
// defaults are tuned on dev, so test is the held-out estimate.

import type { SearchTuning } from "../../store/search/tuning.ts";
import { mean, ndcgAt, recallAt, reciprocalRankAt } from "./metrics.ts";
import { SCIFACT_HEADING } from "./scifact.ts";

export const MODES = ["keyword", "vector", "hybrid", "rrf", "rerank"] as const;
export type Mode = (typeof MODES)[number];
export const MODE_LABELS: Record<Mode, string> = {
  keyword: "keyword only (full text, `retrieval: keyword`)",
  vector: "vector only (`retrieval: vector`)",
  hybrid: "hybrid, the default fusion (field left out)",
  rrf: "hybrid, reciprocal rank fusion (`fusion: rrf`)",
  rerank: "hybrid + `rerank` (second stage: bm25-dense-rescorer unless a cross-encoder is installed)",
};

export const PUBLISHED = "BM25 0.679, all-MiniLM-L6-v2 0.645, bge-small-en-v1.5 0.713";

/** One query's scores for one ranking. */
export interface QueryScore {
  id: string;
  ndcg10: number;
  recall100: number;
  /** Reciprocal rank of the first relevant result within 10 (MRR@10 once averaged). */
  rr10: number;
  /** The search returned nothing (every score 0). */
  empty: boolean;
}

/** Means over a set of queries; null when the set is empty. */
export interface Figures {
  queries: number;
  ndcg10: number | null;
  recall100: number | null;
  mrr10: number | null;
  empty: number;
}

export interface SplitFigures {
  /** The half the defaults are tuned on. */
  dev: Figures;
  /** The held-out half. */
  test: Figures;
  /** Both halves together (the 300 judged queries). */
  all: Figures;
}

export type Half = "dev" | "test";

export function scoreRanking(
  id: string,
  ranked: readonly string[],
  qrels: ReadonlyMap<string, number>,
): QueryScore {
  return {
    id,
    ndcg10: ndcgAt(ranked, qrels, 10),
    recall100: recallAt(ranked, qrels, 100),
    rr10: reciprocalRankAt(ranked, qrels, 10),
    empty: ranked.length === 0,
  };
}

function figuresOf(scores: readonly QueryScore[]): Figures {
  const avg = (pick: (s: QueryScore) => number) => (scores.length ? mean(scores.map(pick)) : null);
  return {
    queries: scores.length,
    ndcg10: avg((s) => s.ndcg10),
    recall100: avg((s) => s.recall100),
    mrr10: avg((s) => s.rr10),
    empty: scores.filter((s) => s.empty).length,
  };
}

/** Means per half of the split (and over all), each query counted in its own half only. */
export function splitFigures(scores: readonly QueryScore[], halfOf: (queryId: string) => Half): SplitFigures {
  return {
    dev: figuresOf(scores.filter((s) => halfOf(s.id) === "dev")),
    test: figuresOf(scores.filter((s) => halfOf(s.id) === "test")),
    all: figuresOf(scores),
  };
}

export interface ModeResult {
  mode: Mode;
  label: string;
  /** Why the server refused this mode (400); no figures then. */
  unavailable?: string;
  figures: SplitFigures | null;
  /** Client-side latency of one HTTP search, ms (informational). */
  p50: number | null;
  p95: number | null;
}

type TunedParameter = keyof SearchTuning;

/** One setting of the sweep: the defaults with one parameter changed (or none: the baseline). */
export interface SweepCandidate {
  parameter: TunedParameter;
  value: string | number;
  /** This value is today's default (the baseline run stands for every parameter's default). */
  isDefault: boolean;
  tuning: SearchTuning;
  figures: SplitFigures;
}

export interface SweepResult {
  /** Which retrieval the candidates were measured with (the product default, hybrid). */
  mode: "hybrid";
  /** Candidates are chosen by this figure, on this half only. */
  chosenBy: "dev nDCG@10";
  defaults: SearchTuning;
  candidates: SweepCandidate[];
  /** Per parameter, the value with the best dev nDCG@10 (ties keep the default). */
  chosen: SearchTuning;
  /** The chosen values together, when they differ from the defaults (measured once more). */
  combined?: { tuning: SearchTuning; figures: SplitFigures };
}

export interface EvalResult {
  kind: "scifact-eval";
  started: string;
  command: string;
  revision: string;
  machine: string;
  model: string;
  threads: number;
  corpus: number;
  split: {
    file: string;
    method: string;
    /** The half the defaults were tuned on. */
    tuning: Half;
    dev: number;
    test: number;
    note: string;
  };
  /** Queries run (all judged ones unless --queries cut them). */
  queries: { dev: number; test: number };
  /** The tuning the service ran with for `modes` (store/search/tuning.ts). */
  tuning: SearchTuning;
  ingestion: string;
  modes: ModeResult[];
  sweep?: SweepResult;
  published: string;
}

/** Per parameter, the candidate with the best dev nDCG@10; a tie (or no candidate) keeps the default. */
export function chooseOnDev(defaults: SearchTuning, candidates: readonly SweepCandidate[]): SearchTuning {
  const chosen = { ...defaults } as Record<TunedParameter, string | number>;
  for (const parameter of Object.keys(defaults) as TunedParameter[]) {
    let best: { value: string | number; dev: number } | undefined;
    for (const c of candidates.filter((x) => x.parameter === parameter)) {
      const dev = c.figures.dev.ndcg10 ?? Number.NEGATIVE_INFINITY;
      if (!best || dev > best.dev || (dev === best.dev && c.isDefault)) best = { value: c.value, dev };
    }
    if (best) chosen[parameter] = best.value;
  }
  return chosen as unknown as SearchTuning;
}

export function sameTuning(a: SearchTuning, b: SearchTuning): boolean {
  return (Object.keys(a) as TunedParameter[]).every((k) => a[k] === b[k]);
}

// ---------------------------------------------------------------------------------------------
// Markdown

export const fixed = (v: number | null | undefined) =>
  v === null || v === undefined || !Number.isFinite(v) ? "n/a" : v.toFixed(3);
const msCell = (v: number | null) => (v === null || !Number.isFinite(v) ? "n/a" : v.toFixed(0));

/** The per-mode table: nDCG@10, recall@100 and MRR@10 on dev (tuning) and test (held out). */
export function modeTableLines(r: EvalResult): string[] {
  return [
    "| Mode | nDCG@10 dev | nDCG@10 **test** | recall@100 dev | recall@100 test | MRR@10 dev | MRR@10 test | nDCG@10 all | p50 ms | p95 ms |",
    "|---|---|---|---|---|---|---|---|---|---|",
    ...r.modes
      .filter((m) => m.figures)
      .map((m) => {
        const f = m.figures as SplitFigures;
        return `| ${m.label} | ${fixed(f.dev.ndcg10)} | **${fixed(f.test.ndcg10)}** | ${fixed(f.dev.recall100)} | ${fixed(f.test.recall100)} | ${fixed(f.dev.mrr10)} | ${fixed(f.test.mrr10)} | ${fixed(f.all.ndcg10)} | ${msCell(m.p50)} | ${msCell(m.p95)} |`;
      }),
  ];
}

const valueCell = (v: string | number) => (typeof v === "number" ? String(v) : `\`${v}\``);

/** The sweep: every candidate's dev and test nDCG@10 (test shown, never used to choose). */
export function sweepTableLines(s: SweepResult): string[] {
  const lines = [
    "| Parameter | Value | nDCG@10 dev (chooses) | nDCG@10 test | recall@100 dev | recall@100 test | |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const c of s.candidates) {
    const marks = [c.isDefault ? "default" : "", s.chosen[c.parameter] === c.value ? "chosen on dev" : ""]
      .filter(Boolean)
      .join(", ");
    lines.push(
      `| ${c.parameter} | ${valueCell(c.value)} | ${fixed(c.figures.dev.ndcg10)} | ${fixed(c.figures.test.ndcg10)} | ${fixed(c.figures.dev.recall100)} | ${fixed(c.figures.test.recall100)} | ${marks} |`,
    );
  }
  if (s.combined)
    lines.push(
      `| all chosen values together | ${(Object.keys(s.combined.tuning) as TunedParameter[]).map((k) => `${k} ${valueCell(s.combined?.tuning[k] ?? "")}`).join(", ")} | ${fixed(s.combined.figures.dev.ndcg10)} | ${fixed(s.combined.figures.test.ndcg10)} | ${fixed(s.combined.figures.dev.recall100)} | ${fixed(s.combined.figures.test.recall100)} | |`,
    );
  return lines;
}

function sweepConclusion(s: SweepResult): string {
  const changed = (Object.keys(s.defaults) as TunedParameter[]).filter((k) => s.chosen[k] !== s.defaults[k]);
  if (!changed.length) return "The dev split chooses every default as it is in `store/search/tuning.ts`.";
  return `The dev split chooses other values than \`store/search/tuning.ts\` for ${changed
    .map((k) => `${k} (${valueCell(s.chosen[k])}, default ${valueCell(s.defaults[k])})`)
    .join(", ")}.`;
}

/** The markdown of the SciFact section (heading included), from the result object alone. */
export function renderEvalSection(r: EvalResult): string {
  const lines = [
    SCIFACT_HEADING,
    "",
    "Generated by `bench/eval.ts` (`npm run eval`): the SciFact corpus ingested through the HTTP API and the real pipeline (embedded default: PGlite, Temporal dev server, worker), then the judged queries sent to `POST /v3/search` over HTTP, one at a time.",
    "",
    `- Date: ${r.started}`,
    `- Machine: ${r.machine}`,
    `- Commit: ${r.revision}`,
    `- Embedding model: \`${r.model}\` (EMBEDDING_THREADS=${r.threads})`,
    `- Command: \`${r.command}\``,
    `- Corpus: ${r.ingestion}. Each document is title + blank line + abstract, metadata \`{ scifactId }\`.`,
    `- **Split**: ${r.split.note} \`${r.split.file}\`: ${r.split.dev} dev and ${r.split.test} test queries (${r.split.method}). **The search defaults were tuned on the ${r.split.tuning} split only; the test columns are the held-out figures.** This run: ${r.queries.dev} dev and ${r.queries.test} test queries.`,
    `- Each search \`{ limit: 100, onlyMatchingChunks: true }\` with the mode's \`retrieval\`; a result's rank is its position, mapped to SciFact through \`metadata.scifactId\`.`,
    "",
    ...modeTableLines(r),
    "",
  ];
  for (const u of r.modes.filter((x) => x.unavailable))
    lines.push(`- ${u.mode}: not available (${u.unavailable})`);
  const empties = r.modes.filter((x) => x.figures?.all.empty);
  for (const e of empties)
    lines.push(`- ${e.mode}: ${e.figures?.all.empty} queries got no result (scored 0)`);
  if (r.modes.some((x) => x.unavailable) || empties.length) lines.push("");
  if (r.sweep) {
    lines.push(
      "### Tuning sweep (hybrid search, dev split chooses)",
      "",
      `Each candidate is the defaults (\`store/search/tuning.ts\`) with one parameter changed, measured on both halves; the value with the best **dev** nDCG@10 is chosen, the test figures are shown but never used to choose. ${sweepConclusion(r.sweep)}`,
      "",
      ...sweepTableLines(r.sweep),
      "",
    );
  }
  lines.push(
    `Published nDCG@10 on all 300 test queries, for orientation (BEIR): ${r.published}. BM25 there is Elasticsearch's; \`keyword\` here is Postgres full-text search, a different ranking. Compare them with the *all* column.`,
    "",
    "- **nDCG@10** as BEIR / trec_eval compute it: gain = the qrels grade, discount log2(rank + 1), ideal DCG from the query's qrels; **recall@100** = share of the query's relevant abstracts among the first 100 results; **MRR@10** = mean reciprocal rank of the first relevant result within 10. Averaged over the queries of each half; a query with no result scores 0.",
    "- **p50 / p95** are client-side latencies of single HTTP requests (query embedding, SQL, response), informational; the first request of each mode is a warm-up and not counted.",
    "- The store is kept per embedding model under `<cacheDir>/eval/scifact-<model>`: later runs reuse it and skip ingestion (`--reset` starts over). Options: `--embedder NAME`, `--queries N`, `--modes keyword,vector,hybrid,rrf,rerank`, `--sweep`, `--threads N`, `--data-dir DIR`, `--reset`, `--result-json FILE`.",
    "",
  );
  return lines.join("\n");
}
