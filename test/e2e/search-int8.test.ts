import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEmbedder, type Embedder } from "../../pipeline/embedder/index.ts";
import { cosineOf } from "../../services/similarity.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

const dot = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * (b[i] as number), 0);

// EMBEDDING_QUERY_PRECISION=int8 on the real service: searches embed the query with the int8 weights, the stored
// chunks keep their fp32 vectors, and the similarity a result reports is the one between those two.
describe("search with int8 query weights (EMBEDDING_QUERY_PRECISION=int8)", () => {
  let service: TestService;
  let client: Supermemory;
  let fp32: Embedder;
  let int8: Embedder;
  const CONTENT =
    "Norwich City football club plays its home games at Carrow Road stadium. The club's nickname is the Canaries.";
  const QUESTION = "Where does Norwich City play its home games?";

  beforeAll(async () => {
    service = await startTestService({
      env: { EMBEDDING_QUERY_PRECISION: "int8", MEMORY_EXTRACTION: "false" },
    });
    client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    const added = await client.add({ content: CONTENT, containerTag: "int8" });
    expect((await untilProcessed((i) => client.documents.get(i), added.id)).status).toBe("done");
    fp32 = createEmbedder("bge-small", { threads: 1, queryThreads: 0 });
    int8 = createEmbedder("bge-small", { threads: 1, queryThreads: 1, queryPrecision: "int8" });
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await fp32?.close();
    await int8?.close();
  });

  it("reports the similarity of the int8 query vector to the chunk's fp32 vector", async () => {
    const found = await client.search({ q: QUESTION, containerTag: "int8", searchMode: "documents" });
    const hit = found.results[0];
    expect(hit?.chunk).toBeDefined();
    const [stored] = await fp32.embed([hit?.chunk as string], "document");
    const [byInt8] = await int8.embed([QUESTION], "query");
    const [byFp32] = await fp32.embed([QUESTION], "query");
    const withInt8 = dot(stored as number[], byInt8 as number[]);
    const withFp32 = dot(stored as number[], byFp32 as number[]);
    // The two weights give this pair measurably different similarities, so the check below can tell them apart.
    expect(Math.abs(withInt8 - withFp32)).toBeGreaterThan(2e-3);
    const reported = cosineOf("bge-small-en-v1.5", hit?.similarity as number);
    expect(Math.abs(reported - withInt8)).toBeLessThan(5e-4);
  });
});
