// Runs inside a piscina worker thread: tokenisation is JavaScript and inference is heavy, so neither may run on
// the service's event loop. onnxruntime then runs the model on its own native threads (intraOpThreads).

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { InferenceSession, Tensor } from "onnxruntime-node";
import { move, workerData } from "piscina";
import { truncatePair } from "./pairs.ts";

export interface CrossEncoderWorkerData {
  modelDir: string;
  /** File names inside modelDir. */
  modelFile: string;
  tokenizerFile: string;
  intraOpThreads: number;
  /** Most tokens per query+passage pair, [CLS] and both [SEP] included. */
  maxTokens: number;
}

export interface CrossEncoderTask {
  query: string;
  passages: string[];
  batchSize: number;
}

const config = workerData as CrossEncoderWorkerData;

interface Loaded {
  session: InferenceSession;
  tokenizer: Tokenizer;
  clsId: number;
  sepId: number;
  wantsTokenTypes: boolean;
  output: string;
}

async function load(): Promise<Loaded> {
  const tokenizerJson = JSON.parse(readFileSync(join(config.modelDir, config.tokenizerFile), "utf8"));
  const tokenizer = new Tokenizer(tokenizerJson, {});
  const clsId = tokenizer.token_to_id("[CLS]");
  const sepId = tokenizer.token_to_id("[SEP]");
  if (clsId === undefined || sepId === undefined) throw new Error("the tokenizer lacks [CLS] or [SEP]");
  const session = await InferenceSession.create(join(config.modelDir, config.modelFile), {
    intraOpNumThreads: config.intraOpThreads,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all",
  });
  const output = session.outputNames.includes("logits") ? "logits" : (session.outputNames[0] as string);
  return {
    session,
    tokenizer,
    clsId,
    sepId,
    wantsTokenTypes: session.inputNames.includes("token_type_ids"),
    output,
  };
}

// Loading starts when piscina imports this file; a failed load is rethrown to every task.
const ready = load();
ready.catch(() => {});

/** Token ids of a text without [CLS]/[SEP]. */
function pieces(model: Loaded, text: string): number[] {
  return model.tokenizer.encode(text, { add_special_tokens: false }).ids;
}

/** piscina task: one logit per passage, in input order. */
export default async function scorePassages(task: CrossEncoderTask): Promise<Float32Array> {
  const model = await ready;
  const query = pieces(model, task.query);
  const budget = config.maxTokens - 3; // [CLS] query [SEP] passage [SEP]
  const pairs = task.passages.map((passage) => {
    const [q, p] = truncatePair(query, pieces(model, passage), budget);
    return { ids: [model.clsId, ...q, model.sepId, ...p, model.sepId], firstSegment: q.length + 2 };
  });
  // Longest first, so each batch holds pairs of similar length and pads little.
  const order = pairs
    .map((_, i) => i)
    .sort((a, b) => (pairs[b]?.ids.length ?? 0) - (pairs[a]?.ids.length ?? 0));
  const logits = new Float32Array(pairs.length);
  for (let start = 0; start < order.length; start += task.batchSize) {
    const batch = order.slice(start, start + task.batchSize);
    const width = Math.max(...batch.map((i) => pairs[i]?.ids.length ?? 0));
    const ids = new BigInt64Array(batch.length * width);
    const mask = new BigInt64Array(batch.length * width);
    const types = new BigInt64Array(batch.length * width);
    batch.forEach((pairIndex, row) => {
      const pair = pairs[pairIndex] as { ids: number[]; firstSegment: number };
      for (let t = 0; t < pair.ids.length; t++) {
        ids[row * width + t] = BigInt(pair.ids[t] as number);
        mask[row * width + t] = 1n;
        if (t >= pair.firstSegment) types[row * width + t] = 1n;
      }
    });
    const dims = [batch.length, width];
    const feeds: Record<string, Tensor> = {
      input_ids: new Tensor("int64", ids, dims),
      attention_mask: new Tensor("int64", mask, dims),
    };
    if (model.wantsTokenTypes) feeds.token_type_ids = new Tensor("int64", types, dims);
    const result = await model.session.run(feeds);
    const out = result[model.output];
    if (!out || out.dims[0] !== batch.length || out.data.length !== batch.length)
      throw new Error(
        `unexpected reranker output shape ${JSON.stringify(out?.dims)}; expected [${batch.length}, 1]`,
      );
    const data = out.data as Float32Array;
    batch.forEach((pairIndex, row) => {
      logits[pairIndex] = data[row] as number;
    });
    for (const tensor of Object.values(result)) tensor.dispose();
  }
  return move(logits) as unknown as Float32Array;
}
