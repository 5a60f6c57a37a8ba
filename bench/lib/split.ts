// The development / test split of SciFact's judged queries. This copy of SciFact (BEIR layout) has
// judgements only for its 300 test queries (qrels/test.tsv, no train.tsv), so they are split in two:
// search defaults are tuned on `dev` only and `test` is held out, reported separately. The split is
// committed (bench/scifact-split.json) so that it never changes silently; `npx tsx bench/split.ts`
// writes it and refuses to change an existing one.

import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const SPLIT_FILE = fileURLToPath(new URL("../scifact-split.json", import.meta.url));

/** The salt of the hash: a new split needs a new version here (and a new file), never an edit. */
const SPLIT_SALT = "scifact-dev-test-v1";

interface ScifactSplit {
  description: string;
  method: string;
  salt: string;
  /** Where the judged ids came from, and the sha256 of that file as it was when the split was made. */
  source: { file: string; sha256: string; queries: number };
  /** The split the search defaults are tuned on. */
  tuning: "dev";
  dev: string[];
  test: string[];
}

const byNumber = (a: string, b: string) => Number(a) - Number(b) || a.localeCompare(b);

function hashOf(id: string): string {
  return createHash("sha256").update(`${SPLIT_SALT}:${id}`).digest("hex");
}

/**
 * The split of the given judged query ids: sorted by sha256(`${SPLIT_SALT}:${id}`), the first half
 * (rounded down) is dev, the rest test; each list is then sorted by id. Deterministic, and independent
 * of the order of `ids`.
 */
export function makeSplit(ids: readonly string[], source: { file: string; sha256: string }): ScifactSplit {
  const unique = [...new Set(ids)];
  if (unique.length !== ids.length) throw new Error("makeSplit: repeated query ids");
  const ordered = unique
    .map((id) => ({ id, h: hashOf(id) }))
    .sort((a, b) => (a.h < b.h ? -1 : a.h > b.h ? 1 : 0));
  const half = Math.floor(ordered.length / 2);
  return {
    description:
      "SciFact (BEIR) as kept here has relevance judgements only for its test queries (qrels/test.tsv; " +
      "there is no qrels/train.tsv), so its judged queries are split in two: search defaults are tuned on " +
      "`dev` only, and `test` is held out and reported separately (npm run eval).",
    method: `judged query ids sorted by sha256("${SPLIT_SALT}:" + id) in hex; the first ${half} are dev, the other ${ordered.length - half} test; each list sorted by id`,
    salt: SPLIT_SALT,
    source: { ...source, queries: unique.length },
    tuning: "dev",
    dev: ordered
      .slice(0, half)
      .map((x) => x.id)
      .sort(byNumber),
    test: ordered
      .slice(half)
      .map((x) => x.id)
      .sort(byNumber),
  };
}

export function sha256Of(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

export function readSplit(file = SPLIT_FILE): ScifactSplit {
  if (!existsSync(file)) throw new Error(`${file} is missing: the committed SciFact split (bench/split.ts)`);
  return JSON.parse(readFileSync(file, "utf8")) as ScifactSplit;
}

/** Which half a judged query is in; throws for a query the split does not know (the qrels changed). */
export function splitOf(split: ScifactSplit): (queryId: string) => "dev" | "test" {
  const dev = new Set(split.dev);
  const test = new Set(split.test);
  return (id) => {
    if (dev.has(id)) return "dev";
    if (test.has(id)) return "test";
    throw new Error(
      `query ${id} is in neither half of the SciFact split (made from ${split.source.file}, sha256 ${split.source.sha256}): the judgements changed`,
    );
  };
}
