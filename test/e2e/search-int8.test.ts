import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createEmbedder,
  type Embedder,
  type QueryPrecision,
  resolveQueryPrecision,
} from "../../pipeline/embedder/index.ts";
import { cosineOf } from "../../services/similarity.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

const dot = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * (b[i] as number), 0);

/** A service started with `env` (memory extraction off) that holds one processed document, `content`, in `tag`. */
async function serviceWithDocument(env: Record<string, string>, tag: string, content: string) {
  const service = await startTestService({ env: { ...env, MEMORY_EXTRACTION: "false" } });
  try {
    const client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    const added = await client.add({ content, containerTag: tag });
    expect((await untilProcessed((i) => client.documents.get(i), added.id)).status).toBe("done");
    return { service, client };
  } catch (err) {
    await service.stop();
    throw err;
  }
}

// The query weights on the real service: searches embed the query with the int8 (Xenova), int8-block, int8-smooth or
// fp32 weights,
// the stored chunks keep their fp32 vectors, and the similarity a result reports is the one between those two.
// Left at auto, the service takes int8-smooth where the CPU has int8 dot products and setup made its model, else
// fp32 (pipeline/embedder/index.ts): this machine's choice is the one expected.
const SETTINGS: { setting: string; env: Record<string, string>; precision: QueryPrecision }[] = [
  { setting: "int8", env: { EMBEDDING_QUERY_PRECISION: "int8" }, precision: "int8" },
  { setting: "int8-block", env: { EMBEDDING_QUERY_PRECISION: "int8-block" }, precision: "int8-block" },
  { setting: "int8-smooth", env: { EMBEDDING_QUERY_PRECISION: "int8-smooth" }, precision: "int8-smooth" },
  { setting: "auto (the default)", env: {}, precision: resolveQueryPrecision("bge-small").precision },
];
describe.each(SETTINGS)("search with EMBEDDING_QUERY_PRECISION=$setting", ({ env, precision }) => {
  let service: TestService;
  let client: Supermemory;
  let fp32: Embedder;
  let quantised: Embedder;
  let other: Embedder;
  const CONTENT =
    "Norwich City football club plays its home games at Carrow Road stadium. The club's nickname is the Canaries.";
  const QUESTION = "What is the nickname of Norwich City football club?";

  beforeAll(async () => {
    ({ service, client } = await serviceWithDocument(env, "int8", CONTENT));
    fp32 = createEmbedder("bge-small", { threads: 1, queryThreads: 0 });
    quantised = createEmbedder("bge-small", { threads: 1, queryThreads: 1, queryPrecision: precision });
    // The weights the reported similarity must not match: fp32's, or int8-block's when fp32 is expected, or the
    // int8 export's for int8-smooth (the closest to fp32 of the three: this pair's similarity differs by less
    // than the check below needs to tell them apart).
    const others: Partial<Record<QueryPrecision, QueryPrecision>> = {
      fp32: "int8-block",
      "int8-smooth": "int8",
    };
    other = createEmbedder("bge-small", {
      threads: 1,
      queryThreads: 1,
      queryPrecision: others[precision] ?? "fp32",
    });
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await fp32?.close();
    await quantised?.close();
    await other?.close();
  });

  it(`reports the similarity of the ${precision} query vector to the chunk's fp32 vector`, async () => {
    const found = await client.search({ q: QUESTION, containerTag: "int8", searchMode: "documents" });
    const hit = found.results[0];
    expect(hit?.chunk).toBeDefined();
    const [stored] = await fp32.embed([hit?.chunk as string], "document");
    const [byQuantised] = await quantised.embed([QUESTION], "query");
    const [byOther] = await other.embed([QUESTION], "query");
    const withQuantised = dot(stored as number[], byQuantised as number[]);
    const withOther = dot(stored as number[], byOther as number[]);
    const reported = cosineOf("bge-small-en-v1.5", hit?.similarity as number);
    // The two weights give this pair measurably different similarities (int8-smooth against the int8 export:
    // 8e-4), so the check below can tell them apart.
    expect(Math.abs(withQuantised - withOther)).toBeGreaterThan(4e-4);
    expect(Math.abs(reported - withQuantised)).toBeLessThan(Math.abs(withQuantised - withOther) / 4);
  });
});

// The document weights on the real service (EMBEDDING_DOCUMENT_PRECISION=int8-block): the chunk is stored with its
// int8-block vector, and a search reports its similarity to the int8-block query vector, not the fp32 chunk's.
describe("documents embedded with EMBEDDING_DOCUMENT_PRECISION=int8-block", () => {
  let service: TestService;
  let client: Supermemory;
  let fp32: Embedder;
  let block: Embedder;
  const CONTENT =
    "The river Wensum flows through the city of Norwich before it joins the Yare. Its banks were home to mills.";
  const QUESTION = "Which river joins the Yare near Norwich?";

  beforeAll(async () => {
    ({ service, client } = await serviceWithDocument(
      // Queries by the same weights (auto would take int8-smooth on a CPU with int8 dot products).
      { EMBEDDING_DOCUMENT_PRECISION: "int8-block", EMBEDDING_QUERY_PRECISION: "int8-block" },
      "int8-documents",
      CONTENT,
    ));
    fp32 = createEmbedder("bge-small", { threads: 1, queryThreads: 0 });
    block = createEmbedder("bge-small", {
      threads: 1,
      queryThreads: 1,
      queryPrecision: "int8-block",
      documentPrecision: "int8-block",
    });
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await fp32?.close();
    await block?.close();
  });

  it("stores the int8-block chunk vector and reports its similarity to the query", async () => {
    const found = await client.search({
      q: QUESTION,
      containerTag: "int8-documents",
      searchMode: "documents",
    });
    const hit = found.results[0];
    expect(hit?.chunk).toBeDefined();
    const [query] = await block.embed([QUESTION], "query");
    const [byBlock] = await block.embed([hit?.chunk as string], "document");
    const [byFp32] = await fp32.embed([hit?.chunk as string], "document");
    const withBlock = dot(byBlock as number[], query as number[]);
    const withFp32 = dot(byFp32 as number[], query as number[]);
    const reported = cosineOf("bge-small-en-v1.5", hit?.similarity as number);
    // The two document weights give this pair measurably different similarities, so the check can tell them apart.
    expect(Math.abs(withBlock - withFp32)).toBeGreaterThan(1e-4);
    expect(Math.abs(reported - withBlock)).toBeLessThan(Math.abs(withBlock - withFp32) / 4);
  });
});
