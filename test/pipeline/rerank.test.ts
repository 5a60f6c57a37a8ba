import { copyFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bgeSmallModelDir, checkBgeSmallFiles, sha256File } from "../../pipeline/embedder/bge-small-files.ts";
import {
  CROSS_ENCODERS,
  CrossEncoderReranker,
  type CrossEncoderSpec,
  createReranker,
  resolveReranker,
  sigmoid,
} from "../../pipeline/rerank/index.ts";
import { truncatePair } from "../../pipeline/rerank/pairs.ts";
import { cpuTicks, cpuTicksSince, withLoopTurns } from "../support/cpu-ticks.ts";

// No registry this service installs from ships a cross-encoder's weights (docs/models.md), so no real reranker is
// pinned. These tests say so explicitly, and check the cross-encoder machinery (pair tokenisation, segments,
// truncation, batching, sigmoid, order, threads) end to end with a tiny ONNX test double built below. The double
// is NOT a reranker: its logit counts passage tokens that also occur in the query.

describe("reranker resolution", () => {
  it("reports honestly that no cross-encoder is installed", () => {
    // Pinning a real cross-encoder must come with relevance tests for it (see the "real cross-encoder" block).
    expect(CROSS_ENCODERS).toEqual([]);
    const resolved = resolveReranker();
    expect(resolved.available).toBe(false);
    expect(resolved.reason).toMatch(/no cross-encoder reranker is installed/);
    expect(createReranker()).toBeUndefined();
  });

  it("names the missing files when a pinned model is not installed", () => {
    const spec: CrossEncoderSpec = {
      id: "not-installed-model",
      files: [{ name: "model.onnx", bytes: 1, sha256: "0".repeat(64) }],
      modelFile: "model.onnx",
      tokenizerFile: "tokenizer.json",
      maxTokens: 512,
    };
    const resolved = resolveReranker([spec]);
    expect(resolved.available).toBe(false);
    expect(resolved.reason).toMatch(/not-installed-model: .*model\.onnx is missing/);
  });
});

const RELEVANCE_SETS = [
  {
    query: "how do plants turn sunlight into energy",
    relevant: "Photosynthesis lets plants convert light energy into chemical energy stored in glucose.",
    others: ["The striker scored twice in the cup final.", "Interest rates were raised by the central bank."],
  },
  {
    query: "when did Iwan Roberts join Norwich City",
    relevant: "Roberts transferred to Norwich City in 1997, where he spent seven years.",
    others: ["Leicester won the match which secured them promotion.", "The recipe needs two eggs and flour."],
  },
];

for (const spec of CROSS_ENCODERS) {
  describe(`real cross-encoder ${spec.id}`, () => {
    let reranker: CrossEncoderReranker;
    beforeAll(() => {
      reranker = new CrossEncoderReranker(spec); // throws (fails) when setup did not install it
    });
    afterAll(async () => {
      await reranker?.close();
    });
    it.each(RELEVANCE_SETS)(
      "ranks the relevant passage first: $query",
      async ({ query, relevant, others }) => {
        const scores = await reranker.score(query, [...others, relevant]);
        const best = scores.indexOf(Math.max(...scores));
        expect(best).toBe(others.length);
        for (const s of scores) expect(s >= 0 && s <= 1).toBe(true);
      },
    );
  });
}

// --- A minimal ONNX writer for the test double (protobuf wire format, only what the graph needs). ---

function varint(n: number | bigint): number[] {
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n;
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return out;
}
const field = (no: number, wire: number) => varint((no << 3) | wire);
const int = (no: number, n: number | bigint) => [...field(no, 0), ...varint(n)];
const bytes = (no: number, data: number[] | Uint8Array) => [...field(no, 2), ...varint(data.length), ...data];
const str = (no: number, s: string) => bytes(no, new TextEncoder().encode(s));

const FLOAT = 1;
const INT64 = 7;

function tensorType(elem: number, dims: (number | string)[]): number[] {
  const shape = dims.flatMap((d) => bytes(1, typeof d === "number" ? int(1, d) : str(2, d)));
  return bytes(1, [...int(1, elem), ...bytes(2, shape)]);
}
const valueInfo = (name: string, elem: number, dims: (number | string)[]) => [
  ...str(1, name),
  ...bytes(2, tensorType(elem, dims)),
];
function initializer(name: string, elem: number, dims: number[], raw: Uint8Array): number[] {
  return [...dims.flatMap((d) => int(1, d)), ...int(2, elem), ...str(8, name), ...bytes(9, raw)];
}
function node(op: string, inputs: string[], outputs: string[], attrs: number[][] = []): number[] {
  return [
    ...inputs.flatMap((i) => str(1, i)),
    ...outputs.flatMap((o) => str(2, o)),
    ...str(4, op),
    ...attrs.flatMap((a) => bytes(5, a)),
  ];
}
const attrInt = (name: string, v: number) => [...str(1, name), ...int(3, v), ...int(20, 2)];
const attrInts = (name: string, vs: number[]) => [
  ...str(1, name),
  ...vs.flatMap((v) => int(8, v)),
  ...int(20, 7),
];

/** logits[b] = (passage tokens, [SEP] included, that also occur in the query) - 2.5, as a BERT-shaped ONNX model. */
function lexicalOverlapModel(): Uint8Array {
  const i64 = (v: number) => new Uint8Array(new BigInt64Array([BigInt(v)]).buffer);
  const nodes = [
    node("Sub", ["one", "token_type_ids"], ["query_segment"]),
    node("Mul", ["query_segment", "attention_mask"], ["query_mask"]),
    node("Mul", ["input_ids", "query_mask"], ["query_ids"]),
    node("Mul", ["input_ids", "token_type_ids"], ["passage_ids"]),
    node("Unsqueeze", ["passage_ids", "axis2"], ["passage_col"]),
    node("Unsqueeze", ["query_ids", "axis1"], ["query_row"]),
    node("Equal", ["passage_col", "query_row"], ["same"]),
    node("Cast", ["same"], ["same_f"], [attrInt("to", FLOAT)]),
    node("ReduceMax", ["same_f"], ["in_query"], [attrInts("axes", [2]), attrInt("keepdims", 0)]),
    node("Cast", ["token_type_ids"], ["passage_f"], [attrInt("to", FLOAT)]),
    node("Mul", ["in_query", "passage_f"], ["hits"]),
    node("ReduceSum", ["hits", "axis1"], ["count"], [attrInt("keepdims", 1)]),
    node("Add", ["count", "bias"], ["logits"]),
  ];
  const graph = [
    ...nodes.flatMap((n) => bytes(1, n)),
    ...str(2, "lexical-overlap-test-double"),
    ...bytes(5, initializer("one", INT64, [], i64(1))),
    ...bytes(5, initializer("axis1", INT64, [1], i64(1))),
    ...bytes(5, initializer("axis2", INT64, [1], i64(2))),
    ...bytes(5, initializer("bias", FLOAT, [1], new Uint8Array(new Float32Array([-2.5]).buffer))),
    ...["input_ids", "attention_mask", "token_type_ids"].flatMap((n) =>
      bytes(11, valueInfo(n, INT64, ["batch", "sequence"])),
    ),
    ...bytes(12, valueInfo("logits", FLOAT, ["batch", 1])),
  ];
  const opset = [...str(1, ""), ...int(2, 13)];
  return new Uint8Array([
    ...int(1, 7),
    ...str(2, "memory-service test"),
    ...bytes(7, graph),
    ...bytes(8, opset),
  ]);
}

describe("cross-encoder machinery (with an ONNX test double)", () => {
  let dir: string;
  let spec: CrossEncoderSpec;
  let reranker: CrossEncoderReranker;

  beforeAll(() => {
    // The BERT WordPiece tokenizer that setup installs with bge-small (the same uncased vocabulary as the
    // MS MARCO MiniLM cross-encoders).
    expect(checkBgeSmallFiles().ok).toBe(true);
    dir = mkdtempSync(join(tmpdir(), "rerank-test-"));
    writeFileSync(join(dir, "model.onnx"), lexicalOverlapModel());
    copyFileSync(join(bgeSmallModelDir(), "tokenizer.json"), join(dir, "tokenizer.json"));
    const pin = (name: string) => ({
      name,
      bytes: statSync(join(dir, name)).size,
      sha256: sha256File(join(dir, name)),
    });
    spec = {
      id: "lexical-overlap-test-double",
      files: [pin("model.onnx"), pin("tokenizer.json")],
      modelFile: "model.onnx",
      tokenizerFile: "tokenizer.json",
      maxTokens: 512,
    };
    reranker = new CrossEncoderReranker(spec, { modelDir: dir, batchSize: 3 });
  });

  afterAll(async () => {
    await reranker?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("returns one sigmoid score per passage, in input order, stable across calls and batch sizes", async () => {
    expect(reranker.model).toBe("lexical-overlap-test-double");
    const passages = [
      "nothing in common here",
      "Norwich City signed Roberts",
      "Roberts",
      "Roberts scored for Norwich City in 1997",
      "",
    ];
    const scores = await reranker.score("Did Roberts score for Norwich City?", passages);
    // Overlapping tokens (lower-cased WordPiece; "scored" is not "score") plus the shared [SEP], minus 2.5.
    const expected = [1, 4, 2, 5, 1].map((n) => sigmoid(n - 2.5));
    expect(scores).toHaveLength(passages.length);
    scores.forEach((s, i) => {
      expect(s).toBeGreaterThanOrEqual(0);
      expect(s).toBeLessThanOrEqual(1);
      expect(s).toBeCloseTo(expected[i] as number, 5);
    });
    expect(await reranker.score("Did Roberts score for Norwich City?", passages)).toEqual(scores);
    const reversed = await reranker.score("Did Roberts score for Norwich City?", [...passages].reverse());
    expect(reversed).toEqual([...scores].reverse());
    expect(await reranker.score("anything", [])).toEqual([]);
  });

  it("puts the query in segment 0 and the passage in segment 1", async () => {
    // Words only in the query must not count as passage hits: a passage sharing nothing scores the baseline.
    const [alone] = await reranker.score("alpha beta gamma", ["delta"]);
    expect(alone).toBeCloseTo(sigmoid(1 - 2.5), 5);
  });

  it("truncates a pair to 512 tokens the way Hugging Face does (the passage loses its tail)", async () => {
    const filler = Array.from({ length: 600 }, () => "filler").join(" ");
    const [late, early] = await reranker.score("norwich", [`${filler} norwich`, `norwich ${filler}`]);
    expect(late).toBeCloseTo(sigmoid(1 - 2.5), 5); // "norwich" was beyond token 512 and cut off
    expect(early).toBeCloseTo(sigmoid(2 - 2.5), 5);
    expect(truncatePair([1, 2], Array(600).fill(3), 509)[1]).toHaveLength(507);
  });

  it("rejects an empty query and non-string passages", async () => {
    await expect(reranker.score(" ", ["text"])).rejects.toThrow("cannot rerank for an empty query");
    await expect(reranker.score("q", ["a", 3 as unknown as string])).rejects.toThrow(
      "passage 1 is not a string",
    );
  });

  it("scores 1,000 ~200-word passages off the main event loop", async () => {
    const words = "the club signed a forward who scored goals for norwich city and wales".split(" ");
    // Enough work for the test double (tokenising, mostly) to show up in the CPU accounts.
    const passages = Array.from({ length: 1000 }, (_, i) =>
      Array.from({ length: 200 }, (_, j) => words[(i + j) % words.length]).join(" "),
    );
    const before = cpuTicks();
    const { value: scores, turns } = await withLoopTurns(
      reranker.score("which club did the forward join", passages),
    );
    const used = cpuTicksSince(before);
    expect(scores).toHaveLength(1000);
    // Where the CPU went: the model's work is the process's, and little of it the main thread's.
    expect(used.process).toBeGreaterThan(20);
    expect(used.mainThread).toBeLessThan(used.process / 5);
    expect(turns).toBeGreaterThan(10);
  });

  it("refuses model files that do not match their pins, and releases threads on close", async () => {
    const wrong = {
      ...spec,
      files: [{ ...(spec.files[0] as CrossEncoderSpec["files"][0]), sha256: "0".repeat(64) }],
    };
    expect(() => new CrossEncoderReranker(wrong, { modelDir: dir })).toThrow(
      /sha256 .* expected the pinned 0{64}/,
    );
    const other = new CrossEncoderReranker(spec, { modelDir: dir, threads: 2, intraOpThreads: 1 });
    expect(other.threadCount).toBe(2);
    expect(await other.score("norwich", ["norwich", "x", "norwich norwich"])).toHaveLength(3);
    await other.close();
    expect(other.threadCount).toBe(0);
    await expect(other.score("q", ["p"])).rejects.toThrow("the reranker is closed");
    await other.close();
  });
});
