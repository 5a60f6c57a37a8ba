import { type SQL, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { expect, it } from "vitest";
import { type Database, queryRows } from "../../../store/db.ts";
import { requeueDocument, resultDocuments, updateDocument } from "../../../store/documents.ts";
import { isStoreUnavailable, storeErrorMessage } from "../../../store/errors.ts";
import { checkFilter, FilterError, type FilterNode } from "../../../store/filters.ts";
import * as processing from "../../../store/processing.ts";
import {
  chunksAt,
  type HybridSearchQuery,
  hybridChunkSearch,
  searchStatement,
} from "../../../store/search/chunk-search.ts";
import { ensureVectorIndexes, queryVectorText } from "../../../store/search/vector-index.ts";
import { addDocument, axis, processedDocument, type StoreOf, space } from "./support.ts";

export function searchCases(store: StoreOf) {
  it("narrows chunk search by file path (exact, or under a folder) and by metadata filter", async () => {
    const { db } = store();
    await ensureVectorIndexes(db, space);
    const tag = "search-paths";
    const inDocs = await processedDocument(
      db,
      { source: "a", containerTags: [tag], filepath: "/docs/guide.md", metadata: { lang: "en", pages: 3 } },
      ["the guide to otters"],
      [9],
    );
    const inNested = await processedDocument(
      db,
      {
        source: "b",
        containerTags: [tag],
        filepath: "/docs/deep/notes.md",
        metadata: { lang: "fr", pages: 30 },
      },
      ["notes on otters"],
      [9],
    );
    const elsewhere = await processedDocument(
      db,
      { source: "c", containerTags: [tag], filepath: "/docsx/other.md", metadata: { lang: "en", pages: 1 } },
      ["other otters"],
      [9],
    );
    const found = async (q: Partial<HybridSearchQuery>) =>
      new Set(
        (
          await hybridChunkSearch(db, {
            text: "otters",
            embedding: axis(9),
            space,
            containerTags: [tag],
            tagMode: "any",
            candidates: 10,
            ...q,
          })
        ).map((h) => h.documentId),
      );
    expect(await found({})).toEqual(new Set([inDocs, inNested, elsewhere]));
    expect(await found({ filepath: "/docs/guide.md" })).toEqual(new Set([inDocs]));
    // A trailing "/" is a folder: everything under it, and not a sibling that merely shares the prefix.
    expect(await found({ filepath: "/docs/" })).toEqual(new Set([inDocs, inNested]));
    expect(await found({ filepath: "/docs" })).toEqual(new Set());
    expect(await found({ filters: { key: "lang", value: "en" } })).toEqual(new Set([inDocs, elsewhere]));
    expect(
      await found({
        filepath: "/docs/",
        filters: { key: "pages", value: "10", filterType: "numeric", numericOperator: "<" },
      }),
    ).toEqual(new Set([inDocs]));
    await expect(found({ filters: { key: "pages", value: "ten", filterType: "numeric" } })).rejects.toThrow(
      FilterError,
    );
  });

  it("keeps each chunk's search tags with its document: done, retagged, requeued, in one go or in batches", async () => {
    const { db } = store();
    await ensureVectorIndexes(db, space);
    const tagsOf = async (documentId: string) =>
      (
        await queryRows<{ search_tags: string[] | null }>(
          db,
          sql`SELECT search_tags FROM chunks WHERE document_id = ${documentId} ORDER BY position`,
        )
      ).map((r) => r.search_tags);
    const found = async (tags: string[]) =>
      (
        await hybridChunkSearch(db, {
          text: "capybaras",
          embedding: axis(11),
          space,
          containerTags: tags,
          tagMode: "any",
          candidates: 10,
        })
      ).map((h) => h.documentId);
    // Chunked, embedded, then marked done (the long path): searchable only from `done` on.
    const id = await processedDocument(
      db,
      { source: "capybaras", containerTags: ["tags-a"] },
      ["capybaras graze", "capybaras swim"],
      [11, 11],
    );
    expect(await tagsOf(id)).toEqual([["tags-a"], ["tags-a"]]);
    expect(await found(["tags-a"])).toEqual([id, id]);
    // Retagged while done: found under the new tag only.
    await updateDocument(db, id, { containerTags: ["tags-b"] });
    expect(await tagsOf(id)).toEqual([["tags-b"], ["tags-b"]]);
    expect(await found(["tags-a"])).toEqual([]);
    expect(await found(["tags-b"])).toEqual([id, id]);
    // A new run: hidden until it is done again, as before it.
    const requeued = await requeueDocument(db, id);
    expect(await tagsOf(id)).toEqual([null, null]);
    expect(await found(["tags-b"])).toEqual([]);
    // Embedded in two batches, the last one marking the run done: every chunk searchable.
    const ref = { documentId: id, run: requeued?.processingRun ?? 0 };
    await processing.replaceChunks(db, ref, [
      { content: "capybaras again", position: 0 },
      { content: "capybaras twice", position: 1 },
    ]);
    expect(await tagsOf(id)).toEqual([null, null]);
    const [first, second] = await processing.chunksWithoutEmbedding(db, id, 10);
    const model = { name: space.model, dimension: space.dimension };
    await processing.saveEmbeddings(db, ref, model, [{ id: String(first?.id), embedding: axis(11, 0.01) }]);
    expect(await tagsOf(id)).toEqual([null, null]);
    await processing.saveEmbeddings(db, ref, model, [{ id: String(second?.id), embedding: axis(11, 0.01) }], {
      done: true,
    });
    expect(await tagsOf(id)).toEqual([["tags-b"], ["tags-b"]]);
    expect(await found(["tags-b"])).toEqual([id, id]);
    // A short text saved in one statement with its chunks: searchable at once; not done yet, not searchable.
    const { document } = await addDocument(db, { source: "capybara note", containerTags: ["tags-c"] });
    const shortRef = { documentId: document.id, run: document.processingRun };
    const short = (status: "embedding" | "done") => ({
      identified: { type: "text", mimeType: "text/plain" },
      extracted: { content: "capybara note", title: null, type: "text", contentHash: "h" },
      pieces: [{ content: "capybaras nap", position: 0, embedding: axis(11, 0.01) }],
      model,
      stages: [{ status, at: new Date() }],
    });
    await processing.saveProcessedText(db, shortRef, short("embedding"));
    expect(await tagsOf(document.id)).toEqual([null]);
    await processing.saveProcessedText(db, shortRef, short("done"));
    expect(await tagsOf(document.id)).toEqual([["tags-c"]]);
    expect(await found(["tags-c"])).toEqual([document.id]);
  });

  it("runs the keyword side while the query is still being embedded, then fuses both sides", async () => {
    const { db } = store();
    await ensureVectorIndexes(db, space);
    const tag = "search-pending";
    const walruses = await processedDocument(
      db,
      { source: "walrus", containerTags: [tag] },
      ["walruses bask on the ice"],
      [4],
    );
    await processedDocument(db, { source: "gull", containerTags: [tag] }, ["gulls circle the harbour"], [5]);
    const query = { text: "walruses", space, containerTags: [tag], tagMode: "any" as const, candidates: 10 };
    const given = await hybridChunkSearch(db, { ...query, embedding: axis(4) });

    // The embedding arrives only once the keyword statement has run: a search that waited for the
    // embedding before its keyword side would never finish (the test's timeout fails it).
    const events: string[] = [];
    let deliver: (vector: number[]) => void = () => undefined;
    const embedding = new Promise<number[]>((resolve) => {
      deliver = resolve;
    });
    const dialect = new PgDialect();
    const watchedTx = (tx: Database) =>
      new Proxy(tx, {
        get(target, prop, receiver) {
          if (prop !== "execute") return Reflect.get(target, prop, receiver);
          return (statement: SQL) => {
            if (dialect.sqlToQuery(statement).sql.includes("c.tsv @@")) {
              events.push("keyword side");
              deliver(axis(4));
            }
            return target.execute(statement);
          };
        },
      });
    const watched = new Proxy(db, {
      get(target, prop, receiver) {
        if (prop !== "transaction") return Reflect.get(target, prop, receiver);
        return (fn: (tx: Database) => Promise<unknown>) =>
          target.transaction((tx) => fn(watchedTx(tx as unknown as Database)));
      },
    });
    const pending = await hybridChunkSearch(watched, { ...query, embedding });
    expect(events).toEqual(["keyword side"]);
    expect(pending).toEqual(given);
    expect(pending[0]).toMatchObject({ documentId: walruses, keywordRank: 1 });
    expect(pending[0]?.similarity).toBeGreaterThan(0.9);
    expect(pending.map((h) => h.documentId)).toHaveLength(2);

    // A failed embedding fails the search; a keyword side that fails first leaves no unhandled rejection.
    await expect(
      hybridChunkSearch(db, { ...query, embedding: Promise.reject(new Error("model down")) }),
    ).rejects.toThrow("model down");
    await expect(
      hybridChunkSearch(db, {
        ...query,
        embedding: Promise.reject(new Error("model down")),
        filters: { key: "pages", value: "ten", filterType: "numeric" },
      }),
    ).rejects.toThrow(FilterError);
  });

  it("shows every hit's own chunk, whichever side found it, and drops a keyword match deleted meanwhile", async () => {
    const { db } = store();
    await ensureVectorIndexes(db, space);
    const tag = "search-sides";
    // Two candidates a side: the two nearest by vector (gull, tern), the keyword side's walrus far from the query.
    const gull = await processedDocument(
      db,
      { source: "gull", containerTags: [tag] },
      ["gulls circle the harbour"],
      [4],
    );
    await processedDocument(db, { source: "tern", containerTags: [tag] }, ["terns dive for fish"], [5]);
    const walrus = await processedDocument(
      db,
      { source: "walrus", containerTags: [tag] },
      ["a", "walruses bask"],
      [7, 8],
    );
    await db.execute(
      sql`UPDATE chunks SET metadata = '{"page": 2}'::jsonb WHERE document_id IN (${gull}, ${walrus})`,
    );
    const near = axis(4).map((x, i) => x + (i === 5 ? 0.5 : 0));
    const query: HybridSearchQuery = {
      text: "walruses",
      embedding: near,
      space,
      containerTags: [tag],
      tagMode: "any",
      candidates: 2,
    };
    const hits = await hybridChunkSearch(db, query);
    expect(hits.map((h) => [h.documentId, h.position, h.content, h.metadata, h.keywordRank])).toEqual([
      [gull, 0, "gulls circle the harbour", { page: 2 }, null],
      [walrus, 1, "walruses bask", { page: 2 }, 1],
    ]);
    // Found by keywords alone, its similarity is still the chunk's own (axis 8 is orthogonal to the query).
    expect(hits[1]?.similarity).toBeCloseTo(0, 1);

    // The keyword side's rows as they were, then the document deleted before the vector side runs.
    const [walrusChunk] = await queryRows<{ id: string }>(
      db,
      sql`SELECT id FROM chunks WHERE document_id = ${walrus} AND position = 1`,
    );
    const keywordRows = JSON.stringify([{ id: walrusChunk?.id, rank: 1, score: 0.5 }]);
    await db.execute(sql`DELETE FROM documents WHERE id = ${walrus}`);
    const s = searchStatement(query, "walruses", keywordRows);
    const rows = await db.transaction(async (tx) => {
      for (const setting of s.settings) await tx.execute(sql.raw(setting));
      return queryRows<{ chunk_id: string; document_id: string }>(tx as unknown as Database, s.statement);
    });
    // Gone, as a chunk the final join no longer finds: not a row of nulls (the best two were gull and walrus).
    expect(rows.map((r) => r.document_id)).toEqual([gull]);
  });

  it("checks a filter without a query, refusing what compiling would refuse", () => {
    expect(() => checkFilter({ AND: [{ key: "kind", value: "note" }] })).not.toThrow();
    expect(() => checkFilter({ key: "pages", value: "many", filterType: "numeric" })).toThrow(FilterError);
    let tooDeep: FilterNode = { key: "k", value: "v" };
    for (let i = 0; i < 10; i++) tooDeep = { OR: [tooDeep] };
    expect(() => checkFilter(tooDeep)).toThrow(/deeper/);
  });

  it("reads the documents of results by id, only within a key's scope when one is given", async () => {
    const { db } = store();
    const mine = (
      await addDocument(db, { source: "scoped mine", containerTags: ["scope-mine", "scope-shared"] })
    ).document.id;
    const theirs = (await addDocument(db, { source: "scoped theirs", containerTags: ["scope-theirs"] }))
      .document.id;
    const ids = async (scope?: string[] | null) =>
      (await resultDocuments(db, [mine, theirs, "no-such-document"], { content: "none", scope }))
        .map((d) => d.id)
        .sort();
    expect(await ids()).toEqual([mine, theirs].sort());
    expect(await ids(["scope-shared"])).toEqual([mine]);
    expect(await ids(["scope-nobody"])).toEqual([]);
    expect(await resultDocuments(db, [], { content: "full" })).toEqual([]);
  });

  it("reads a result document's text only as far as asked: all, those without a summary, or none", async () => {
    const { db } = store();
    const summarized = await processedDocument(
      db,
      { source: "Text with a summary.", containerTags: ["rd"] },
      ["x"],
      [1],
    );
    const plain = await processedDocument(
      db,
      { source: "Text without one.", containerTags: ["rd"] },
      ["y"],
      [2],
    );
    await queryRows(db, sql`UPDATE documents SET summary = 'The summary.' WHERE id = ${summarized}`);
    const texts = async (content: "full" | "unsummarized" | "none") => {
      const rows = await resultDocuments(db, [summarized, plain], { content });
      const byId = new Map(rows.map((r) => [r.id, r]));
      expect(byId.get(summarized)?.summary).toBe("The summary.");
      expect(byId.get(plain)?.containerTags).toEqual(["rd"]);
      return [byId.get(summarized)?.content ?? null, byId.get(plain)?.content ?? null];
    };
    expect(await texts("full")).toEqual(["Text with a summary.", "Text without one."]);
    expect(await texts("unsummarized")).toEqual([null, "Text without one."]);
    expect(await texts("none")).toEqual([null, null]);
  });

  it("fetches the chunks at given positions, to show a match in its context", async () => {
    const { db } = store();
    await ensureVectorIndexes(db, space);
    const id = await processedDocument(
      db,
      { source: "context", containerTags: ["search-context"] },
      ["first part", "second part", "third part"],
      [10, 11, 12],
    );
    const around = await chunksAt(db, [
      { documentId: id, position: 0 },
      { documentId: id, position: 2 },
      { documentId: id, position: 7 },
      { documentId: "no-such-document", position: 1 },
    ]);
    expect(around.map((c) => [c.position, c.content]).sort()).toEqual([
      [0, "first part"],
      [2, "third part"],
    ]);
    expect(await chunksAt(db, [])).toEqual([]);
  });

  it("compares a query vector sent as whole numbers by cosine as it would the exact one", async () => {
    const { db } = store();
    // Unit vectors with components of every magnitude, the smallest far below the rounding step.
    const unit = (seed: number) => {
      const raw = Array.from({ length: 384 }, (_, i) => Math.sin(seed * 7.3 + i * i * 0.37) * 10 ** -(i % 7));
      const norm = Math.hypot(...raw);
      return raw.map((x) => Math.fround(x / norm));
    };
    for (let seed = 1; seed <= 5; seed++) {
      const query = unit(seed);
      const text = queryVectorText(query);
      const numbers = JSON.parse(text) as number[];
      expect(numbers.every((n) => Number.isInteger(n) && Math.abs(n) < 2 ** 24)).toBe(true);
      expect(Math.max(...numbers.map(Math.abs))).toBeGreaterThan(2 ** 22);
      const [row] = await queryRows<{ exact: number; sent: number }>(
        db,
        sql`SELECT ${`[${query.join(",")}]`}::vector(384) <=> ${`[${unit(seed + 10).join(",")}]`}::vector(384) AS exact,
                   ${text}::vector(384) <=> ${`[${unit(seed + 10).join(",")}]`}::vector(384) AS sent`,
      );
      expect(Math.abs(Number(row?.sent) - Number(row?.exact))).toBeLessThan(1.2e-6);
    }
    // A vector with nothing to scale goes as it is.
    expect(queryVectorText([0, 0, 0])).toBe("[0,0,0]");
    expect(queryVectorText([0.5, -0.25])).toBe(`[${2 ** 23},${-(2 ** 22)}]`);
  });

  it("reports a failed query by its cause only, never with the query's parameters", async () => {
    const { db } = store();
    const documentText = "a private sentence from a document";
    const failure = await queryRows(db, sql`SELECT ${documentText} AS t FROM no_such_table`).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(Error);
    const message = storeErrorMessage(failure);
    expect(message).toMatch(/^database error: .*no_such_table/);
    expect(message).not.toContain(documentText);
    // A wrong query is not the store being away: retrying it would not help.
    expect(isStoreUnavailable(failure)).toBe(false);
    expect(storeErrorMessage(new Error("not from the store"))).toBeUndefined();
  });
}
