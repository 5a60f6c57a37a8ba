// The SciFact evaluation split: test queries with their relevance judgements (BEIR layout).

import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { readJsonl, SCIFACT_DIR, SCIFACT_HOWTO } from "./corpus.ts";

/** The section of docs/benchmarks.md that the scenario `eval` (bench/eval.ts) fills. */
export const SCIFACT_HEADING = "## Retrieval quality (SciFact)";

export interface JudgedQuery {
  id: string;
  text: string;
  /** corpus id → grade */
  qrels: Map<string, number>;
}

/** qrels/<split>.tsv (query-id, corpus-id, score with a header line), grouped by query in file order. */
export function readQrels(split = "test"): Map<string, Map<string, number>> {
  if (!existsSync(SCIFACT_DIR)) throw new Error(SCIFACT_HOWTO);
  const lines = readFileSync(path.join(SCIFACT_DIR, "qrels", `${split}.tsv`), "utf8").split("\n");
  const out = new Map<string, Map<string, number>>();
  for (const line of lines) {
    const [q, doc, score] = line.trim().split("\t");
    if (!q || !doc || score === undefined || q === "query-id") continue;
    const grade = Number(score);
    if (!Number.isFinite(grade)) throw new Error(`qrels/${split}.tsv: bad score in "${line}"`);
    const judged = out.get(q) ?? new Map<string, number>();
    judged.set(doc, grade);
    out.set(q, judged);
  }
  return out;
}

/** The queries judged in qrels/<split>.tsv, in the order they first appear there. */
export function readJudgedQueries(split = "test"): JudgedQuery[] {
  const qrels = readQrels(split);
  const texts = new Map(
    readJsonl<{ _id: string; text?: string }>(path.join(SCIFACT_DIR, "queries.jsonl")).map((q) => [
      String(q._id),
      (q.text ?? "").trim(),
    ]),
  );
  return [...qrels.entries()].map(([id, judged]) => {
    const text = texts.get(id);
    if (!text) throw new Error(`query ${id} of qrels/${split}.tsv is not in queries.jsonl`);
    return { id, text, qrels: judged };
  });
}
