import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import { openPglite, queryRows } from "../../store/db.ts";
import { caller } from "../support/http.ts";
import { startTestService, type TestService, waitFor } from "../support/service.ts";

// Changing EMBEDDING_MODEL on a store that holds vectors of the old model: a Temporal workflow
// re-embeds every chunk and memory; search never compares vectors of two models meanwhile.
describe("re-embedding after a model change", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "memory-reembed-"));
  let service: TestService | undefined;
  const call = caller(() => service?.url as string);

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("migrates chunks and memories to the new model and keeps search working", async () => {
    service = await startTestService({ dataDir, env: { EMBEDDING_MODEL: "use-lite" } });
    const texts = [
      "Sourdough bread rises slowly because wild yeast ferments the dough overnight.",
      "The Voyager 1 probe left the heliosphere in 2012 and still sends data to Earth.",
      "Tomato plants need at least six hours of direct sunlight every day.",
    ];
    const ids: string[] = [];
    for (const content of texts)
      ids.push((await call("POST", "/v3/documents", { content, containerTag: "m" })).json.id);
    await call("POST", "/v4/memories", {
      containerTag: "m",
      memories: [{ content: "Sam bakes sourdough every weekend" }],
    });
    for (const id of ids)
      await waitFor(
        async () => ((await call("GET", `/v3/documents/${id}`)).json.status === "done" ? true : undefined),
        `document ${id} done`,
      );
    await service.stop();
    service = undefined;

    service = await startTestService({ dataDir, env: { EMBEDDING_MODEL: "bge-small" } });
    // The migration runs in the background; wait until no vector of the old model is left.
    await waitFor(
      async () => {
        const res = await call("POST", "/v3/search", {
          q: "space probe",
          containerTag: "m",
          retrieval: "vector",
        });
        return res.json.results.length === texts.length ? res : undefined;
      },
      "every chunk re-embedded",
      180_000,
    );
    // Documents record their model when the migration's last page is done: wait for that too.
    await waitFor(
      async () => {
        for (const id of ids)
          if ((await call("GET", `/v3/documents/${id}`)).json.embeddingModel !== "bge-small-en-v1.5")
            return undefined;
        return true;
      },
      "every document to record the new model",
      180_000,
    );
    const found = await call("POST", "/v3/search", {
      q: "space probe beyond the solar system",
      containerTag: "m",
    });
    expect(found.json.results[0].documentId).toBe(ids[1]);
    const memory = await call("POST", "/v4/search", { q: "bread baking hobby", containerTag: "m" });
    // The short documents are memories too (no LLM here): the saved memory is among the best.
    expect(memory.json.results.slice(0, 3).map((r: { memory?: string }) => r.memory)).toContain(
      "Sam bakes sourdough every weekend",
    );
    const doc = await call("GET", `/v3/documents/${ids[0]}`);
    expect(doc.status).toBe(200);
    await service.stop();
    service = undefined;

    const store = await openPglite(dataDir);
    try {
      const models = await queryRows<{ model: string; n: number }>(
        store.db,
        sql`SELECT embedding_model AS model, count(*)::int AS n FROM (
              SELECT embedding_model FROM chunks UNION ALL SELECT embedding_model FROM memories) v GROUP BY 1`,
      );
      expect(models.map((m) => m.model)).toEqual(["bge-small-en-v1.5"]);
      const docModels = await queryRows<{ model: string }>(
        store.db,
        sql`SELECT DISTINCT embedding_model AS model FROM documents`,
      );
      expect(docModels).toEqual([{ model: "bge-small-en-v1.5" }]);
      const indexes = await queryRows<{ name: string }>(
        store.db,
        sql`SELECT indexname AS name FROM pg_indexes WHERE indexname LIKE '%hnsw%' ORDER BY 1`,
      );
      expect(indexes.map((i) => i.name).every((n) => n.endsWith("bge_small_en_v1_5"))).toBe(true);
    } finally {
      await store.close();
    }
  }, 400_000);
});
