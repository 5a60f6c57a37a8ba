// What a `similarity` means to a client that filters on it: how the scores of relevant and irrelevant
// results spread, on SciFact (judged abstracts) through /v3/search and /v4/search, and on short saved facts
// asked for in other words through /v4/search. Written by `npm run eval -- --scores`.

import { MEMORY_PAIRS } from "./memory-pairs.ts";
import type { JudgedQuery } from "./scifact.ts";
import { percentile } from "./stats.ts";

export const SCORES_HEADING = "## What a score means (similarity of relevant and irrelevant results)";

/** The part of the eval's HTTP client used here. */
interface JsonApi {
  ok<T>(method: "GET" | "POST", route: string, body?: unknown): Promise<T>;
}

export interface Spread {
  label: string;
  route: string;
  relevant: number[];
  irrelevant: number[];
  /** Questions whose best result was the relevant one (memories only). */
  top1?: { hits: number; of: number };
}

interface V3Page {
  results: { score: number; metadata?: Record<string, unknown> | null }[];
}
interface V4Page {
  results: {
    similarity: number;
    memory?: string;
    chunk?: string;
    metadata?: Record<string, unknown> | null;
  }[];
}

/** Top-10 results of every judged query on both routes, each score marked relevant or not by the qrels. */
export async function scifactSpreads(api: JsonApi, tag: string, queries: JudgedQuery[]): Promise<Spread[]> {
  const v3: Spread = { label: "SciFact abstracts", route: "/v3/search", relevant: [], irrelevant: [] };
  const v4: Spread = {
    label: "SciFact abstracts",
    route: "/v4/search (hybrid)",
    relevant: [],
    irrelevant: [],
  };
  for (const query of queries) {
    const page3 = await api.ok<V3Page>("POST", "/v3/search", {
      q: query.text,
      containerTag: tag,
      limit: 10,
      onlyMatchingChunks: true,
    });
    for (const r of page3.results) {
      const id = r.metadata?.scifactId;
      (typeof id === "string" && query.qrels.has(id) ? v3.relevant : v3.irrelevant).push(r.score);
    }
    const page4 = await api.ok<V4Page>("POST", "/v4/search", {
      q: query.text,
      containerTag: tag,
      searchMode: "hybrid",
      limit: 10,
      threshold: 0,
    });
    for (const r of page4.results) {
      const id = r.metadata?.scifactId;
      (typeof id === "string" && query.qrels.has(id) ? v4.relevant : v4.irrelevant).push(r.similarity);
    }
  }
  return [v3, v4];
}

/**
 * Saves every fact as a client would (`POST /v3/documents`, a short text: kept as a memory too), waits
 * until all are done, then asks each question: the result holding its own fact is relevant, the others not.
 */
export async function memorySpread(
  api: JsonApi,
  tag: string,
  untilDone: (ids: string[]) => Promise<void>,
): Promise<Spread> {
  const ids: string[] = [];
  for (const pair of MEMORY_PAIRS)
    ids.push(
      (await api.ok<{ id: string }>("POST", "/v3/documents", { content: pair.fact, containerTag: tag })).id,
    );
  await untilDone(ids);
  const spread: Spread = {
    label: `${MEMORY_PAIRS.length} short saved facts, asked in other words`,
    route: "/v4/search (hybrid)",
    relevant: [],
    irrelevant: [],
    top1: { hits: 0, of: MEMORY_PAIRS.length },
  };
  for (const pair of MEMORY_PAIRS) {
    const page = await api.ok<V4Page>("POST", "/v4/search", {
      q: pair.question,
      containerTag: tag,
      searchMode: "hybrid",
      limit: 10,
      threshold: 0,
    });
    page.results.forEach((r, i) => {
      const text = r.memory ?? r.chunk ?? "";
      const relevant = text.trim() === pair.fact;
      (relevant ? spread.relevant : spread.irrelevant).push(r.similarity);
      if (relevant && i === 0 && spread.top1) spread.top1.hits++;
    });
  }
  return spread;
}

const q = (values: number[], p: number) =>
  values.length
    ? percentile(
        [...values].sort((a, b) => a - b),
        p / 100,
      ).toFixed(3)
    : "n/a";
const share = (values: number[], min: number) =>
  values.length ? `${Math.round((100 * values.filter((v) => v >= min).length) / values.length)} %` : "n/a";

export function spreadTable(spreads: Spread[], thresholds: number[]): string[] {
  const lines = [
    `| results | route | relevant (n) | relevant p10 / p50 / p90 | irrelevant (n) | irrelevant p50 / p90 / max | ${thresholds.map((t) => `relevant ≥ ${t} | irrelevant ≥ ${t} |`).join(" ")}`,
    `| --- | --- | --- | --- | --- | --- | ${thresholds.map(() => "--- | --- |").join(" ")}`,
  ];
  for (const s of spreads) {
    const max = s.irrelevant.length ? Math.max(...s.irrelevant).toFixed(3) : "n/a";
    lines.push(
      `| ${s.label} | ${s.route} | ${s.relevant.length} | ${q(s.relevant, 10)} / ${q(s.relevant, 50)} / ${q(s.relevant, 90)} | ${s.irrelevant.length} | ${q(s.irrelevant, 50)} / ${q(s.irrelevant, 90)} / ${max} | ${thresholds.map((t) => `${share(s.relevant, t)} | ${share(s.irrelevant, t)} |`).join(" ")}`,
    );
  }
  return lines;
}
