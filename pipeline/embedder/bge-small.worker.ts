// Runs inside a piscina worker thread: tokenisation is JavaScript and would otherwise take the service's event
// loop, and onnxruntime's inference then runs on its own native threads (intraOpThreads) from here.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { InferenceSession, Tensor } from "onnxruntime-node";
import { move, workerData } from "piscina";
import { lowerThreadPriority } from "../threads.ts";

export interface BgeWorkerData {
  modelDir: string;
  intraOpThreads: number;
  /** OS niceness of this thread and of the onnxruntime threads it starts (0: unchanged). */
  niceness: number;
  maxTokens: number;
  dimension: number;
  /**
   * The model file that embeds queries when it is not model.onnx (EMBEDDING_QUERY_PRECISION=int8: the int8
   * export, same tokenizer). Loaded with the thread when `preloadQueryModel`, else at the first query.
   */
  queryModelFile?: string;
  preloadQueryModel?: boolean;
  /** The model file that embeds documents. Default: modelDir's model.onnx (fp32). */
  documentModelFile?: string;
  /**
   * Create the document model (model.onnx, ~240 MB in memory) at this thread's first document task rather than
   * at start: a query thread with its own query model embeds documents only for interactive work (a memory add,
   * a single document), which a store that only imports and searches never sends it.
   */
  deferDocumentModel?: boolean;
  /**
   * onnxruntime threads of a second session of the query model, which embeds queries when they are waiting (a
   * task of several, or another task queued behind this one); unset: one session for all. A lone query runs on
   * `intraOpThreads` (less wall time); under load the extra thread's CPU is taken from the API and the store,
   * which then wait longer (docs/decisions/README.md#0004-query-thread).
   */
  busyIntraOpThreads?: number;
  /** Counts of queries embedded alone and when waiting (two Int32 slots, shared with the embedder). */
  queryRuns?: Int32Array;
}

export interface BgeTask {
  texts: string[];
  /** Most texts in one inference call; a batch is padded to its longest text. */
  batchSize: number;
  /** Search queries: embedded by the query model when there is one (BgeWorkerData.queryModelFile). */
  query?: boolean;
}

const config = workerData as BgeWorkerData;

interface Loaded {
  tokenizer: Tokenizer;
  clsId: number;
  sepId: number;
}

async function load(): Promise<Loaded> {
  // Before the session exists, so that onnxruntime's own threads inherit the priority.
  const notLowered = lowerThreadPriority(config.niceness);
  if (notLowered) console.warn(`bge-small embedding thread: ${notLowered}; it runs at normal priority`);
  const tokenizerJson = JSON.parse(readFileSync(join(config.modelDir, "tokenizer.json"), "utf8"));
  // tokenizer_config.json is not shipped with the model files; the BERT normaliser (lower-casing, accent
  // handling) and the [CLS]/[SEP] template come from tokenizer.json itself.
  const tokenizer = new Tokenizer(tokenizerJson, {});
  const clsId = tokenizer.token_to_id("[CLS]");
  const sepId = tokenizer.token_to_id("[SEP]");
  if (clsId === undefined || sepId === undefined) throw new Error("tokenizer.json lacks [CLS] or [SEP]");
  if (!config.deferDocumentModel) await documentModel();
  return { tokenizer, clsId, sepId };
}

function createSession(file: string, intraOpThreads = config.intraOpThreads): Promise<InferenceSession> {
  return InferenceSession.create(file, {
    intraOpNumThreads: intraOpThreads,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all",
    // The memory pattern pre-plans one block for all of a run's tensors per input shape, and the arena keeps
    // the largest, so with texts of many lengths it holds much more memory for no speed; the arena itself stays
    // on, since inference without it is far slower.
    enableMemPattern: false,
    // onnxruntime's threads spin between operators by default, burning a core while they wait; on a small
    // machine that CPU belongs to the rest of the pipeline, and the rate is the same without spinning.
    extra: { session: { intra_op: { allow_spinning: "0" }, inter_op: { allow_spinning: "0" } } },
  });
}

const documentModelFile = config.documentModelFile ?? join(config.modelDir, "model.onnx");

/** The document model's session, which embeds documents (and queries when there is no query model): created once. */
let documentSession: Promise<InferenceSession> | undefined;
function documentModel(): Promise<InferenceSession> {
  documentSession ??= createSession(documentModelFile);
  return documentSession;
}

// Loading starts when piscina imports this file, so the first request does not also pay for it. The catch
// keeps a failed load from being an unhandled rejection; every task that awaits it gets the error.
const ready = load();
ready.catch(() => {});

/** The query model's session, when queries have their own model file: created once, on first use or at start. */
let querySession: Promise<InferenceSession> | undefined;
function queryModel(): Promise<InferenceSession> | undefined {
  if (!config.queryModelFile) return undefined;
  // The same weights for both (EMBEDDING_DOCUMENT_PRECISION=int8-block): one session, one copy in memory.
  querySession ??=
    config.queryModelFile === documentModelFile ? documentModel() : createSession(config.queryModelFile);
  return querySession;
}

/** The session for queries that were waiting (BgeWorkerData.busyIntraOpThreads): the query weights on fewer threads. */
let busySession: Promise<InferenceSession> | undefined;
function busyQueryModel(): Promise<InferenceSession> | undefined {
  if (config.busyIntraOpThreads === undefined) return undefined;
  busySession ??= createSession(config.queryModelFile ?? documentModelFile, config.busyIntraOpThreads);
  return busySession;
}

if (config.preloadQueryModel) {
  queryModel()?.catch(() => {});
  busyQueryModel()?.catch(() => {});
}

const ALONE = 0;
const WAITING = 1;

/** [CLS] text [SEP], cut to maxTokens the way Hugging Face truncation does (the text loses its tail). */
function tokenize(model: Loaded, text: string): number[] {
  const ids = model.tokenizer.encode(text, { add_special_tokens: true }).ids;
  if (ids[0] !== model.clsId || ids[ids.length - 1] !== model.sepId)
    throw new Error("the tokenizer did not add [CLS] ... [SEP]");
  if (ids.length <= config.maxTokens) return ids;
  const cut = ids.slice(0, config.maxTokens - 1);
  cut.push(model.sepId);
  return cut;
}

/** The task running now; piscina may hand this thread its next one before it ends (tasksPerThread). */
let previous: Promise<unknown> = Promise.resolve();
/** Tasks handed to this thread that have not ended, and those of them not started yet. */
let handed = 0;
let queued = 0;

/**
 * piscina task: texts in, one flat Float32Array of unit-length CLS vectors (text i at i * dimension) out.
 * Tasks run one after another in arrival order: a task queued ahead waits here, not on the main thread, so
 * the model starts on it the moment the one before ends (inference runs on this thread between awaits, and
 * two interleaved tasks would only both finish later).
 */
export default function embedTexts(task: BgeTask): Promise<Float32Array> {
  const waited = handed > 0;
  handed++;
  queued++;
  const result = previous
    .then(() => {
      queued--;
      // Queries that came together, waited, or have another task behind them are a sign of load: the busy
      // session takes them.
      return embedNow(task, task.query === true && (task.texts.length > 1 || waited || queued > 0));
    })
    .finally(() => {
      handed--;
    });
  previous = result.catch(() => {});
  return result;
}

async function embedNow(task: BgeTask, underLoad: boolean): Promise<Float32Array> {
  const model = await ready;
  const busy = underLoad ? busyQueryModel() : undefined;
  if (task.query && config.queryRuns)
    Atomics.add(config.queryRuns, busy ? WAITING : ALONE, task.texts.length);
  const dim = config.dimension;
  const encoded = task.texts.map((text) => tokenize(model, text));
  // Longest first, so each batch holds texts of similar length and pads little.
  const order = encoded
    .map((_, i) => i)
    .sort((a, b) => (encoded[b]?.length ?? 0) - (encoded[a]?.length ?? 0));
  const out = new Float32Array(task.texts.length * dim);
  for (let start = 0; start < order.length; start += task.batchSize) {
    const batch = order.slice(start, start + task.batchSize);
    const width = Math.max(...batch.map((i) => (encoded[i] as number[]).length));
    const ids = new BigInt64Array(batch.length * width);
    const mask = new BigInt64Array(batch.length * width);
    batch.forEach((textIndex, row) => {
      const tokens = encoded[textIndex] as number[];
      for (let t = 0; t < tokens.length; t++) {
        ids[row * width + t] = BigInt(tokens[t] as number);
        mask[row * width + t] = 1n;
      }
    });
    const dims = [batch.length, width];
    const feeds: Record<string, Tensor> = {
      input_ids: new Tensor("int64", ids, dims),
      attention_mask: new Tensor("int64", mask, dims),
    };
    const session = (busy && (await busy)) || (task.query && (await queryModel())) || (await documentModel());
    if (session.inputNames.includes("token_type_ids"))
      feeds.token_type_ids = new Tensor("int64", new BigInt64Array(ids.length), dims);
    const result = await session.run(feeds);
    const hidden = result.last_hidden_state ?? result[session.outputNames[0] as string];
    if (hidden?.dims.length !== 3 || hidden.dims[2] !== dim)
      throw new Error(`unexpected model output shape ${JSON.stringify(hidden?.dims)}`);
    const data = hidden.data as Float32Array;
    batch.forEach((textIndex, row) => {
      // CLS pooling: the hidden state of the first token, then L2 normalisation (as BGE is evaluated).
      const cls = data.subarray(row * width * dim, row * width * dim + dim);
      let sum = 0;
      for (const x of cls) sum += x * x;
      const norm = Math.sqrt(sum);
      if (!(norm > 0) || !Number.isFinite(norm))
        throw new Error("the model returned a zero or non-finite vector");
      for (let d = 0; d < dim; d++) out[textIndex * dim + d] = (cls[d] as number) / norm;
    });
    for (const tensor of Object.values(result)) tensor.dispose();
  }
  return move(out) as unknown as Float32Array;
}
