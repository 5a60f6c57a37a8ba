// Writes bench/scifact-split.json, the development / test split of SciFact's judged queries
// (bench/lib/split.ts says how it is made). Refuses to change an existing file: the split is a record.
// Usage: npx tsx bench/split.ts

import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { SCIFACT_DIR } from "./lib/corpus.ts";
import { readQrels } from "./lib/scifact.ts";
import { makeSplit, SPLIT_FILE, sha256Of } from "./lib/split.ts";

const qrelsFile = path.join(SCIFACT_DIR, "qrels", "test.tsv");
const split = makeSplit([...readQrels("test").keys()], {
  file: "qrels/test.tsv",
  sha256: sha256Of(qrelsFile),
});
const text = `${JSON.stringify(split, null, 2)}\n`;
if (existsSync(SPLIT_FILE)) {
  if (readFileSync(SPLIT_FILE, "utf8") === text) {
    process.stdout.write(
      `${SPLIT_FILE} is up to date (${split.dev.length} dev, ${split.test.length} test)\n`,
    );
    process.exit(0);
  }
  process.stderr.write(
    `${SPLIT_FILE} exists and differs from what the judgements give now: left unchanged\n`,
  );
  process.exit(1);
}
mkdirSync(path.dirname(SPLIT_FILE), { recursive: true });
writeFileSync(SPLIT_FILE, text);
process.stdout.write(`wrote ${SPLIT_FILE} (${split.dev.length} dev, ${split.test.length} test)\n`);
