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

export interface SearchDocument {
  abstractId: string;
  title: string;
  /** Sentence-sized pieces of the abstract, in order: they become the document's chunks. */
  pieces: string[];
}

/**
 * Sentence-sized pieces of the corpus (consecutive sentences merged until a piece has at least
 * `minWords` words), grouped by abstract, until exactly `total` distinct pieces are collected.
 */
export function searchDocuments(corpus: Abstract[], total: number, minWords = 25): SearchDocument[] {
  const segmenter = new Intl.Segmenter("en", { granularity: "sentence" });
  const seen = new Set<string>();
  const out: SearchDocument[] = [];
  let count = 0;
  for (const abstract of corpus) {
    if (count >= total) break;
    const raw: string[] = [];
    let current = "";
    for (const { segment } of segmenter.segment(abstract.text)) {
      current += segment;
      if (words(current).length >= minWords) {
        raw.push(current);
        current = "";
      }
    }
    // A short tail joins the piece before it rather than standing alone.
    if (current.trim()) {
      if (raw.length) raw[raw.length - 1] += current;
      else raw.push(current);
    }
    const pieces: string[] = [];
    for (const text of raw) {
      const piece = text.trim().replace(/\s+/g, " ");
      if (!piece || seen.has(piece) || count >= total) continue;
      seen.add(piece);
      pieces.push(piece);
      count++;
    }
    if (pieces.length) out.push({ abstractId: abstract.id, title: abstract.title, pieces });
  }
  if (count < total) throw new Error(`--chunks ${total}: the corpus yields only ${count} distinct pieces`);
  return out;
}
