// Evaluation data is read in place from ../shared/data/scifact beside the repository (never copied into the repo).

import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const SCIFACT_DIR =
  process.env.BENCH_SCIFACT_DIR ?? fileURLToPath(new URL("../../../shared/data/scifact", import.meta.url));

export interface Abstract {
  id: string;
  title: string;
  text: string;
}

/** Where to get SciFact when it is not beside the repository (a public clone has no ../shared). */
export const SCIFACT_HOWTO =
  "SciFact (BEIR) is not at " +
  SCIFACT_DIR +
  ": download https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip, unzip it and " +
  "set BENCH_SCIFACT_DIR to the folder holding corpus.jsonl, queries.jsonl and qrels/test.tsv";

export function readJsonl<T>(file: string): T[] {
  if (file.startsWith(SCIFACT_DIR) && !existsSync(SCIFACT_DIR)) throw new Error(SCIFACT_HOWTO);
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as T);
}

export function readCorpus(): Abstract[] {
  return readJsonl<{ _id: string; title?: string; text?: string }>(path.join(SCIFACT_DIR, "corpus.jsonl"))
    .map((r) => ({ id: String(r._id), title: (r.title ?? "").trim(), text: (r.text ?? "").trim() }))
    .filter((a) => a.text.length > 0);
}

export function readQueries(): string[] {
  return readJsonl<{ text?: string }>(path.join(SCIFACT_DIR, "queries.jsonl"))
    .map((q) => (q.text ?? "").trim())
    .filter(Boolean);
}

const words = (text: string) => text.split(/\s+/).filter(Boolean);

/**
 * `count` documents of exactly `wordCount` words: abstract i, trimmed, or padded with the words of the
 * abstracts that follow it in the corpus when it is shorter.
 */
export function ingestDocuments(corpus: Abstract[], count: number, wordCount = 200): string[] {
  if (count > corpus.length)
    throw new Error(`--docs ${count}: the corpus has only ${corpus.length} abstracts`);
  const docs: string[] = [];
  for (let i = 0; i < count; i++) {
    const taken: string[] = [];
    for (let j = i; taken.length < wordCount; j = (j + 1) % corpus.length) {
      taken.push(...words((corpus[j] as Abstract).text));
    }
    docs.push(taken.slice(0, wordCount).join(" "));
  }
  return docs;
}
