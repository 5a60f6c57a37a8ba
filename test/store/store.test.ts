import { type SQL, sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type AdmittedRun,
  admissionCounts,
  admitRuns,
  admittedWithoutWorkflow,
  releaseAdmission,
} from "../../store/admission.ts";
import { createKey, findActiveKey, hashKey } from "../../store/api-keys.ts";
import { createConnection } from "../../store/connections.ts";
import { openPostgres, queryRows, type Store } from "../../store/db.ts";
import * as docs from "../../store/documents.ts";
import { isStoreUnavailable } from "../../store/errors.ts";
import { compileFilter, FilterError, type FilterNode, metadataColumns } from "../../store/filters.ts";
import * as processing from "../../store/processing.ts";
import { apiKeys, documents } from "../../store/schema/index.ts";
import { hybridChunkSearch } from "../../store/search/chunk-search.ts";
import { keywordTsquery } from "../../store/search/keyword.ts";
import { ensureVectorIndexes } from "../../store/search/vector-index.ts";
import { freshDatabase } from "../support/service.ts";
import { storeDrivers } from "../support/store-drivers.ts";
import { accessCases } from "./cases/access.ts";
import { connectionCases } from "./cases/connections.ts";
import { containerTagSettingsCases } from "./cases/container-tag-settings.ts";
import { containerCases, resetCases } from "./cases/containers.ts";
import { maintenanceCases } from "./cases/maintenance.ts";
import { memoryCases } from "./cases/memories.ts";
import { processingCases } from "./cases/processing.ts";
import { searchCases } from "./cases/search.ts";
import { axis, space } from "./cases/support.ts";
import { webhookCases } from "./cases/webhooks.ts";

// One suite, every driver: the embedded default and the scale-out store must behave the same.
describe.each(storeDrivers)("store on %s", (_name, open) => {
  let store: Store;
  beforeAll(async () => {
    store = await open();
  });
  afterAll(async () => {
    await store?.close();
  });

  const add = (input: Partial<docs.NewDocumentInput> & { source: string }) =>
    docs.saveDocument(store.db, { containerTags: [], metadata: {}, ...input });

  it("creates documents queued at run 1 and upserts by customId", async () => {
    const first = await add({ source: "hello", customId: "c-1", containerTags: ["a"], metadata: { k: "v" } });
    expect(first.process).toBe(true);
    expect(first.document).toMatchObject({ status: "queued", processingRun: 1, customId: "c-1" });

    const same = await add({ source: "hello", customId: "c-1", containerTags: ["a"], metadata: { k2: 1 } });
    expect(same.process).toBe(false);
    expect(same.document.id).toBe(first.document.id);
    expect(same.document.metadata).toEqual({ k: "v", k2: 1 });

    const changed = await add({ source: "hello again", customId: "c-1", containerTags: ["a"] });
    expect(changed.process).toBe(true);
    expect(changed.document.processingRun).toBe(2);

    // A failed document with the same customId is retried even when the content is unchanged.
    await processing.markFailed(store.db, { documentId: first.document.id, run: 2 }, "boom");
    const retried = await add({ source: "hello again", customId: "c-1" });
    expect(retried.process).toBe(true);
    expect(retried.document).toMatchObject({ status: "queued", processingRun: 3, errorReason: null });
    expect((await docs.findDocument(store.db, "c-1"))?.id).toBe(first.document.id);
  });

  it("lets concurrent first adds of one customId end in one document", async () => {
    const results = await Promise.all(
      [1, 2, 3, 4].map((i) => add({ source: `race ${i}`, customId: "race", containerTags: ["race"] })),
    );
    expect(new Set(results.map((r) => r.document.id)).size).toBe(1);
    const { total } = await docs.listDocuments(store.db, {
      containerTags: ["race"],
      tagMode: "any",
      sort: "createdAt",
      order: "asc",
      limit: 10,
      page: 1,
    });
    expect(total).toBe(1);
  });

  it("keeps customIds per namespace: each scope its own, admins and syncs the shared one", async () => {
    const save = (source: string, tags: string[], scope: string[] | null) =>
      docs.saveDocument(store.db, { source, customId: "ns-note", containerTags: tags, metadata: {} }, scope);
    const a = await save("tenant a", ["ns-a"], ["ns-a"]);
    const b = await save("tenant b", ["ns-b"], ["ns-b"]);
    expect(b.document.id).not.toBe(a.document.id);
    expect([a, b].map((r) => r.document.customIdNamespace)).toEqual(["ns-a", "ns-b"]);
    // An admin re-adding it into tenant a's tag updates tenant a's document (and never tenant b's) ...
    expect((await save("admin into a", ["ns-a"], null)).document.id).toBe(a.document.id);
    // ... and into a tag of no tenant makes a document of the shared namespace.
    const shared = await save("admin", ["ns-admin"], null);
    expect(shared.document.customIdNamespace).toBe("");
    expect([a.document.id, b.document.id]).not.toContain(shared.document.id);
    // A lookup finds the caller's own first; an admin's the shared namespace's.
    expect((await docs.findDocument(store.db, "ns-note", ["ns-a"]))?.id).toBe(a.document.id);
    expect((await docs.findDocument(store.db, "ns-note", ["ns-b"]))?.id).toBe(b.document.id);
    expect((await docs.findDocument(store.db, "ns-note", null))?.id).toBe(shared.document.id);
    await docs.deleteDocument(store.db, a.document.id);
    expect(await docs.findDocument(store.db, "ns-note", ["ns-a"])).toBeUndefined();
    // The same scope again updates its own document; a rename onto a customId its namespace holds is refused.
    expect((await save("tenant b again", ["ns-b"], ["ns-b"])).document.id).toBe(b.document.id);
    const other = await docs.saveDocument(
      store.db,
      { source: "other", customId: "ns-other", containerTags: ["ns-b"], metadata: {} },
      ["ns-b"],
    );
    await expect(
      docs.updateDocument(store.db, other.document.id, { customId: "ns-note" }, ["ns-b"]),
    ).rejects.toBeInstanceOf(docs.CustomIdTakenError);
    expect(
      (await docs.updateDocument(store.db, other.document.id, { customId: "ns-free" }, ["ns-b"]))?.document
        .customId,
    ).toBe("ns-free");
  });

  it("renames a shared-namespace document into the renaming key's namespace, checked within its tenant", async () => {
    const save = (customId: string, tags: string[], scope: string[] | null) =>
      docs.saveDocument(store.db, { source: customId, customId, containerTags: tags, metadata: {} }, scope);
    const legacy = await save("rn-legacy", ["rn-a"], null);
    const elsewhere = await save("rn-taken", ["rn-b"], null);
    expect([legacy, elsewhere].map((r) => r.document.customIdNamespace)).toEqual(["", ""]);
    // Another tenant's document of the shared namespace does not hold the customId for tenant a.
    const renamed = await docs.updateDocument(store.db, legacy.document.id, { customId: "rn-taken" }, [
      "rn-a",
    ]);
    expect(renamed?.document).toMatchObject({ customId: "rn-taken", customIdNamespace: "rn-a" });
    expect((await docs.findDocument(store.db, "rn-taken", ["rn-b"]))?.id).toBe(elsewhere.document.id);
    // One in tenant a's tags does, whatever its namespace; so does one of its namespace.
    await save("rn-admin-in-a", ["rn-a"], null);
    await save("rn-own", ["rn-a"], ["rn-a"]);
    for (const customId of ["rn-admin-in-a", "rn-own"])
      await expect(
        docs.updateDocument(store.db, legacy.document.id, { customId }, ["rn-a"]),
      ).rejects.toBeInstanceOf(docs.CustomIdTakenError);
  });

  it("refuses a scoped key's reprocessing of a document shared with tags outside its scope", async () => {
    const shared = await docs.saveDocument(store.db, {
      source: "shared text",
      containerTags: ["rq-a", "rq-b"],
      metadata: {},
    });
    await expect(docs.requeueDocument(store.db, shared.document.id, ["rq-a"])).rejects.toBeInstanceOf(
      docs.SharedDocumentError,
    );
    expect((await docs.findDocument(store.db, shared.document.id))?.processingRun).toBe(1);
    expect((await docs.requeueDocument(store.db, shared.document.id, ["rq-a", "rq-b"]))?.processingRun).toBe(
      2,
    );
    expect((await docs.requeueDocument(store.db, shared.document.id, null))?.processingRun).toBe(3);
  });

  it("leaves very common terms out of keyword queries, keeping the rarest if nothing else is left", async () => {
    const lexemes = async (text: string, common: string[], frequencies: number[]) => {
      const tsq = await keywordTsquery(store.db, text, { lexemes: common, frequencies, loadedAt: 0 });
      return (tsq ?? "").split(" | ").filter(Boolean).sort();
    };
    expect(await lexemes("The common cats chase rare dogs", ["common", "chase"], [0.5, 0.2])).toEqual([
      "'cat'",
      "'dog'",
      "'rare'",
    ]);
    expect(await lexemes("common chase", ["common", "chase"], [0.5, 0.2])).toEqual(["'chase'"]);
    // Quotes, backslashes and tsquery operators in the text are only text.
    expect(await lexemes("it's a \\ test & | ! (x)", ['a"b'], [0.9])).toEqual(["'test'", "'x'"]);
    expect(await lexemes("the and of", [], [])).toEqual([]);
  });

  describe("admission", () => {
    const inFlightIds = async () =>
      (
        await queryRows<{ id: string }>(
          store.db,
          sql`SELECT id FROM documents WHERE admitted_run = processing_run AND status NOT IN ('done', 'failed')`,
        )
      ).map((r) => r.id);
    /** Finishes every run in flight, as processing would, so the next pass starts from no load. */
    const finishAll = async () => {
      for (const id of await inFlightIds()) {
        const [row] = await store.db.select().from(documents).where(sql`${documents.id} = ${id}`);
        await processing.markDone(store.db, { documentId: id, run: row?.processingRun ?? 0 }, "m");
      }
    };
    /** Admits and finishes whatever earlier tests left waiting, so each test starts from an empty queue. */
    const drain = async () => {
      await finishAll();
      while ((await admitRuns(store.db, { maxInFlight: 1000 })).length) await finishAll();
    };
    beforeEach(drain);
    /** Adds one after another, so creation order (which admission follows within a key) is the ids' order. */
    const tagged = async (tag: string, n: number, priority: 0 | 1 = 1) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++)
        ids.push((await add({ source: `${tag} document ${i}`, containerTags: [tag], priority })).document.id);
      return ids;
    };

    it("keeps runs waiting beyond the in-flight bound and admits each run once", async () => {
      const ids = await tagged("adm-bound", 12);
      const first = await admitRuns(store.db, { maxInFlight: 5 });
      expect(first).toHaveLength(5);
      // Full: a second pass admits nothing until a run finishes.
      expect(await admitRuns(store.db, { maxInFlight: 5 })).toEqual([]);
      expect(await admissionCounts(store.db)).toMatchObject({ inFlight: 5 });
      const done = first[0] as { documentId: string; run: number };
      await processing.markDone(store.db, done, "m");
      const next = await admitRuns(store.db, { maxInFlight: 5 });
      expect(next).toHaveLength(1);
      // Oldest first within a key, and never the same run twice.
      const all = [...first, ...next].map((r) => r.documentId);
      expect(new Set(all).size).toBe(all.length);
      expect(all).toEqual(ids.slice(0, 6));
    });

    it("admits interactive runs before bulk ones, whenever they arrived", async () => {
      const bulk = await tagged("adm-bulk", 6, 1);
      const interactive = await tagged("adm-live", 2, 0);
      const admitted = await admitRuns(store.db, { maxInFlight: 3 });
      expect(
        admitted
          .map((r) => r.documentId)
          .slice(0, 2)
          .sort(),
      ).toEqual([...interactive].sort());
      expect(admitted[2]?.documentId).toBe(bulk[0]);
    });

    it("shares slots across tags: a small tag is not queued behind a big tag's backlog", async () => {
      await tagged("adm-big", 40);
      // The big tag already holds slots when the small one arrives.
      const early = await admitRuns(store.db, { maxInFlight: 4 });
      expect(new Set(early.map((r) => r.fairnessKey))).toEqual(new Set(["tag:adm-big"]));
      const small = await tagged("adm-small", 3);
      // Two of the big tag's runs finish: it still holds two slots, the small tag none, so the small
      // tag gets both free slots although the big tag's runs are older.
      for (const r of early.slice(0, 2)) await processing.markDone(store.db, r, "m");
      const next = await admitRuns(store.db, { maxInFlight: 4 });
      expect(next.map((r) => r.documentId)).toEqual(small.slice(0, 2));
      // One run of each finishes: each holds one, so the two free slots are split, the small tag's last
      // run included.
      await processing.markDone(store.db, early[2] as AdmittedRun, "m");
      await processing.markDone(store.db, next[0] as AdmittedRun, "m");
      const after = await admitRuns(store.db, { maxInFlight: 4 });
      expect(after.filter((r) => r.fairnessKey === "tag:adm-small").map((r) => r.documentId)).toEqual([
        small[2],
      ]);
      expect(after.filter((r) => r.fairnessKey === "tag:adm-big")).toHaveLength(1);
    });

    it("shares slots across connections syncing into one tag, and the API's own adds go first", async () => {
      const synced = async (connectionId: string, n: number) => {
        const ids: string[] = [];
        for (let i = 0; i < n; i++)
          ids.push(
            (
              await add({
                source: `${connectionId} file ${i}`,
                containerTags: ["adm-team"],
                connectionId,
                priority: 1,
              })
            ).document.id,
          );
        return ids;
      };
      const connection = () =>
        createConnection(store.db, {
          provider: "s3",
          containerTags: ["adm-team"],
          metadata: {},
          sealedSecrets: null,
          syncIntervalMinutes: 60,
        });
      const big = (await connection()).id;
      const small = (await connection()).id;
      // A sync's save is fenced by its connection: one deleted meanwhile saves nothing.
      await expect(synced("deleted-connection", 1)).rejects.toBeInstanceOf(docs.ConnectionGoneError);
      // A first sync of a big drive, then another connection's incremental sync and a user's own add,
      // all into the same container tag.
      await synced(big, 40);
      const early = await admitRuns(store.db, { maxInFlight: 4 });
      expect(new Set(early.map((r) => r.fairnessKey))).toEqual(new Set([`connection:${big}`]));
      const incremental = await synced(small, 2);
      const [own] = await tagged("adm-team", 1, 0);
      // Three of the big sync's four finish; of the two free slots (at a bound of 3) the user's add takes
      // one and the small sync, holding none, the other, although the big sync's files are older.
      for (const r of early.slice(0, 3)) await processing.markDone(store.db, r, "m");
      const next = await admitRuns(store.db, { maxInFlight: 3 });
      expect(next.map((r) => r.documentId)).toEqual([own, incremental[0]]);
      expect(next.map((r) => r.fairnessKey)).toEqual(["tag:adm-team", `connection:${small}`]);
    });

    it("splits slots evenly between tags with equal load", async () => {
      await tagged("adm-even-a", 10);
      await tagged("adm-even-b", 10);
      const admitted = await admitRuns(store.db, { maxInFlight: 6 });
      const byKey = new Map<string, number>();
      for (const r of admitted) byKey.set(r.fairnessKey, (byKey.get(r.fairnessKey) ?? 0) + 1);
      expect(Object.fromEntries(byKey)).toEqual({ "tag:adm-even-a": 3, "tag:adm-even-b": 3 });
    });

    it("puts a new run back in the queue, and a deleted one leaves nothing waiting", async () => {
      const [id] = await tagged("adm-requeue", 1);
      const [admitted] = await admitRuns(store.db, { maxInFlight: 100 });
      expect(admitted?.documentId).toBe(id);
      await processing.markDone(store.db, admitted as { documentId: string; run: number }, "m");
      await docs.updateDocument(store.db, id as string, { content: "changed" });
      const again = await admitRuns(store.db, { maxInFlight: 100 });
      expect(again).toEqual([expect.objectContaining({ documentId: id, run: 2, priority: 0 })]);
      // A start that failed gives the slot back; the run waits again.
      await releaseAdmission(store.db, again);
      expect((await admitRuns(store.db, { maxInFlight: 100 })).map((r) => r.documentId)).toEqual([id]);
      const queued = await tagged("adm-deleted", 5);
      const removed = await docs.deleteDocumentsByTags(store.db, ["adm-deleted", "adm-requeue"]);
      expect(removed.map((r) => r.id).sort()).toEqual([...queued, id].sort());
      expect(await admissionCounts(store.db)).toEqual({ waiting: 0, inFlight: 0 });
    });

    it("finds admitted runs whose workflow start was never confirmed", async () => {
      const [id] = await tagged("adm-unconfirmed", 1);
      const [run] = await admitRuns(store.db, { maxInFlight: 100 });
      const lost = async () =>
        (await admittedWithoutWorkflow(store.db, new Date(Date.now() + 1000))).map((r) => r.documentId);
      expect(await lost()).toEqual([id]);
      await docs.markWorkflowsStarted(store.db, [
        { documentId: id as string, run: (run as { run: number }).run },
      ]);
      expect(await lost()).toEqual([]);
    });
  });

  it("fences writes of superseded runs and records each transition once", async () => {
    const { document } = await add({ source: "fenced" });
    const ref = { documentId: document.id, run: 1 };
    await processing.setStatus(store.db, ref, "extracting");
    await processing.setStatus(store.db, ref, "extracting");
    const updated = await docs.updateDocument(store.db, document.id, { content: "fenced v2" });
    expect(updated?.process).toBe(true);
    await expect(processing.setStatus(store.db, ref, "chunking")).rejects.toBeInstanceOf(
      processing.SupersededRunError,
    );
    await expect(processing.markDone(store.db, ref, "m")).rejects.toBeInstanceOf(
      processing.SupersededRunError,
    );
    const row = await docs.findDocument(store.db, document.id);
    expect(row?.statusHistory.map((h) => `${h.status}@${h.run}`)).toEqual([
      "queued@1",
      "extracting@1",
      "queued@2",
    ]);

    const metaOnly = await docs.updateDocument(store.db, document.id, { metadata: { x: true } });
    expect(metaOnly?.process).toBe(false);
    expect(metaOnly?.document.processingRun).toBe(2);
  });

  it("lists with tag modes, sorting and pagination", async () => {
    const ids: string[] = [];
    for (const [i, tags] of [["t1"], ["t1", "t2"], ["t2"]].entries()) {
      ids.push((await add({ source: `list ${i}`, containerTags: tags })).document.id);
      await new Promise((r) => setTimeout(r, 5));
    }
    const base = { sort: "createdAt", order: "asc", limit: 50, page: 1 } as const;
    const any = await docs.listDocuments(store.db, { ...base, containerTags: ["t1", "t2"], tagMode: "any" });
    expect(any.rows.map((r) => r.id)).toEqual(ids);
    const all = await docs.listDocuments(store.db, { ...base, containerTags: ["t1", "t2"], tagMode: "all" });
    expect(all.rows.map((r) => r.id)).toEqual([ids[1]]);
    const page2 = await docs.listDocuments(store.db, {
      ...base,
      order: "desc",
      limit: 1,
      page: 2,
      containerTags: ["t1", "t2"],
      tagMode: "any",
    });
    expect(page2).toMatchObject({ total: 3 });
    expect(page2.rows.map((r) => r.id)).toEqual([ids[1]]);
    expect(await docs.deleteDocumentsByTags(store.db, ["t2"])).toHaveLength(2);
  });

  it("compiles nested metadata filters to parameterised SQL", async () => {
    const tag = "filters";
    const rows: { name: string; metadata: docs.Metadata }[] = [
      { name: "a", metadata: { kind: "Note", score: 5, labels: ["x", "Y"], title: "Alpha 100% done" } },
      { name: "b", metadata: { kind: "note", score: 12, labels: ["z"], title: "beta_release" } },
      { name: "c", metadata: { kind: "mail", score: "12", title: "Gamma" } },
    ];
    const byId = new Map<string, string>();
    for (const r of rows)
      byId.set(
        (await add({ source: r.name, containerTags: [tag], metadata: r.metadata })).document.id,
        r.name,
      );
    const run = async (f: FilterNode) => {
      const { rows: found } = await docs.listDocuments(store.db, {
        containerTags: [tag],
        tagMode: "any",
        sort: "createdAt",
        order: "asc",
        limit: 50,
        page: 1,
        filters: f,
      });
      return found.map((d) => byId.get(d.id)).sort();
    };
    expect(await run({ AND: [{ key: "kind", value: "note" }] })).toEqual(["b"]);
    expect(await run({ AND: [{ key: "kind", value: "NOTE", ignoreCase: true }] })).toEqual(["a", "b"]);
    expect(
      await run({ AND: [{ key: "score", value: "10", filterType: "numeric", numericOperator: ">" }] }),
    ).toEqual(["b"]);
    expect(
      await run({ AND: [{ key: "labels", value: "y", filterType: "array_contains", ignoreCase: true }] }),
    ).toEqual(["a"]);
    expect(await run({ AND: [{ key: "labels", value: "y", filterType: "array_contains" }] })).toEqual([]);
    expect(await run({ AND: [{ key: "title", value: "100%", filterType: "string_contains" }] })).toEqual([
      "a",
    ]);
    expect(await run({ AND: [{ key: "title", value: "_", filterType: "string_contains" }] })).toEqual(["b"]);
    expect(await run({ AND: [{ key: "kind", value: "mail", negate: true }] })).toEqual(["a", "b"]);
    expect(await run({ AND: [{ key: "missing", value: "x", negate: true }] })).toEqual(["a", "b", "c"]);
    // Five levels deep: OR(AND(OR(AND(cond)))) ...
    const deep: FilterNode = {
      OR: [
        { AND: [{ OR: [{ AND: [{ OR: [{ key: "kind", value: "mail" }] }] }] }] },
        { AND: [{ key: "score", value: "5", filterType: "numeric", numericOperator: "<=" }] },
      ],
    };
    expect(await run(deep)).toEqual(["a", "c"]);
    // Injection attempts are just values.
    expect(await run({ AND: [{ key: "kind' OR '1'='1", value: "x' OR '1'='1" }] })).toEqual([]);
    expect(() =>
      compileFilter(metadataColumns("d"), { AND: [{ key: "n", value: "abc", filterType: "numeric" }] }),
    ).toThrow(FilterError);
    let tooDeep: FilterNode = { key: "k", value: "v" };
    for (let i = 0; i < 10; i++) tooDeep = { AND: [tooDeep] };
    expect(() => compileFilter(metadataColumns("d"), tooDeep)).toThrow(/deeper/);
  });

  it("keeps a filter's meaning whatever JSON type the metadata holds (the index's containment only narrows)", async () => {
    const tag = "filter-types";
    // Raw JSON, so that numbers keep how they were written (1.0, 1e3, 5.50) as jsonb keeps them.
    const stored = [
      '"5"',
      "5",
      "5.0",
      "5.50",
      "1e3",
      "1000",
      "1.0",
      "1",
      "-0",
      "0",
      "true",
      '"true"',
      "false",
      "null",
      '"null"',
      '["x"]',
      '["x", 5]',
      '{"a": 1}',
      '"x"',
      '""',
      '"[x"',
      // For ignoreCase: letters in both cases, letters outside ASCII (whether lower() folds them depends on the
      // database's collation, which the oracle below uses too), mixed arrays, two keys that differ only by case.
      '"X"',
      '"TRUE"',
      '"ÉTÉ"',
      '"été"',
      '["X", 5, true, "ÉTÉ"]',
      '"Key", "V": "OTHER"',
    ];
    const idOf = new Map<string, string>();
    for (const raw of [...stored, "missing"]) {
      const { document } = await add({ source: `types ${raw}`, containerTags: [tag] });
      if (raw !== "missing")
        await store.db.execute(
          sql`UPDATE documents SET metadata = ${`{"v": ${raw}}`}::jsonb WHERE id = ${document.id}`,
        );
      idOf.set(document.id, raw);
    }
    const listed = async (filters: FilterNode) => {
      const { rows } = await docs.listDocuments(store.db, {
        containerTags: [tag],
        tagMode: "any",
        sort: "createdAt",
        order: "asc",
        limit: 100,
        page: 1,
        filters,
      });
      return rows.map((d) => idOf.get(d.id)).sort();
    };
    // What each filter meant before it gained a containment: its exact condition alone, evaluated here.
    const meant = async (condition: SQL) =>
      (
        await queryRows<{ id: string }>(
          store.db,
          sql`SELECT id FROM documents WHERE ${tag} = ANY(container_tags) AND ${condition}`,
        )
      )
        .map((r) => idOf.get(r.id))
        .sort();
    const texts = [
      "5",
      "5.0",
      "5.50",
      "1000",
      "1e3",
      "1",
      "1.0",
      "0",
      "-0",
      "true",
      "false",
      "null",
      "x",
      "",
      '["x"]',
      '["x", 5]',
      '{"a": 1}',
      "[x",
      // Numbers PostgreSQL's numeric cannot hold: a containment of them would fail the statement.
      "1e999999",
      "1e-999999",
      `0.${"0".repeat(20_000)}1`,
      "X",
      "True",
      "FALSE",
      "été",
      "ÉTÉ",
      "key",
      "other",
    ];
    for (const value of texts) {
      const text = sql`(metadata ->> 'v') = ${value}`;
      expect(await listed({ key: "v", value }), `"${value}"`).toEqual(
        await meant(sql`coalesce(${text}, FALSE)`),
      );
      expect(await listed({ key: "v", value, negate: true })).toEqual(
        await meant(sql`NOT coalesce(${text}, FALSE)`),
      );
      expect(await listed({ key: "v", value, filterType: "array_contains" })).toEqual(
        await meant(
          sql`coalesce(jsonb_typeof(metadata -> 'v') = 'array' AND (metadata -> 'v') @> jsonb_build_array(${value}::text), FALSE)`,
        ),
      );
      // ignoreCase (migration 0019 gives it a containment on the folded metadata).
      expect(await listed({ key: "v", value, ignoreCase: true }), `"${value}", ignoreCase`).toEqual(
        await meant(sql`coalesce(lower(metadata ->> 'v') = lower(${value}), FALSE)`),
      );
      expect(await listed({ key: "v", value, filterType: "array_contains", ignoreCase: true })).toEqual(
        await meant(
          sql`coalesce(jsonb_typeof(metadata -> 'v') = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(metadata -> 'v') e WHERE lower(e) = lower(${value})), FALSE)`,
        ),
      );
    }
    for (const value of ["5", "5.5", "1000", "1", "0", "-0"])
      expect(await listed({ key: "v", value, filterType: "numeric" }), `= ${value}`).toEqual(
        await meant(
          sql`coalesce(CASE WHEN jsonb_typeof(metadata -> 'v') = 'number' THEN (metadata ->> 'v')::numeric END = ${Number(value)}, FALSE)`,
        ),
      );
    // Spot checks of the oracle itself.
    expect(await listed({ key: "v", value: "5" })).toEqual(['"5"', "5"]);
    expect(await listed({ key: "v", value: "true" })).toEqual(['"true"', "true"]);
    expect(await listed({ key: "v", value: "5", filterType: "numeric" })).toEqual(["5", "5.0"]);
    expect(await listed({ key: "v", value: "x", ignoreCase: true })).toEqual(['"X"', '"x"']);
    expect(await listed({ key: "v", value: "true", ignoreCase: true })).toEqual(['"TRUE"', '"true"', "true"]);
    expect(await listed({ key: "v", value: "5", filterType: "array_contains", ignoreCase: true })).toEqual([
      '["X", 5, true, "ÉTÉ"]',
      '["x", 5]',
    ]);
    expect(await listed({ key: "v", value: "other", ignoreCase: true })).toEqual([]);
    expect(await listed({ key: "V", value: "other", ignoreCase: true })).toEqual(['"Key", "V": "OTHER"']);
  });

  it("stores chunks with vectors and finds them by meaning and by keyword", async () => {
    const tag = "search";
    await ensureVectorIndexes(store.db, space);
    const makeDone = async (source: string, pieces: string[], axes: number[], endUserId?: string) => {
      const { document } = await add({ source, containerTags: [tag], endUserId });
      const ref = { documentId: document.id, run: 1 };
      await processing.saveExtraction(store.db, ref, {
        content: source,
        title: null,
        type: "text",
        contentHash: "h",
      });
      await processing.replaceChunks(
        store.db,
        ref,
        pieces.map((content, position) => ({ content, position })),
      );
      // A retry replaces rather than duplicates.
      await processing.replaceChunks(
        store.db,
        ref,
        pieces.map((content, position) => ({ content, position })),
      );
      const pending = await processing.chunksWithoutEmbedding(store.db, document.id, 100);
      expect(pending).toHaveLength(pieces.length);
      await processing.saveEmbeddings(
        store.db,
        ref,
        { name: space.model, dimension: space.dimension },
        pending.map((c, i) => ({ id: c.id, embedding: axis(axes[i] as number, 0.01) })),
      );
      expect(await processing.chunksWithoutEmbedding(store.db, document.id, 100)).toHaveLength(0);
      await processing.markDone(store.db, ref, "test-axes");
      return document.id;
    };
    const d1 = await makeDone("one", ["the quick brown fox", "jumps over the lazy dog"], [1, 2]);
    const d2 = await makeDone("two", ["a treatise on zebras"], [3], "end-user-7");
    const notDone = (await add({ source: "pending", containerTags: [tag] })).document.id;

    const byVector = await hybridChunkSearch(store.db, {
      text: "nothing in common",
      embedding: axis(3),
      space,
      containerTags: [tag],
      tagMode: "any",
      candidates: 10,
    });
    expect(byVector[0]).toMatchObject({ documentId: d2, content: "a treatise on zebras" });
    expect(byVector[0]?.similarity).toBeGreaterThan(0.9);
    expect(byVector.some((h) => h.documentId === notDone)).toBe(false);

    const byKeyword = await hybridChunkSearch(store.db, {
      text: "lazy dogs",
      embedding: axis(15),
      space,
      containerTags: [tag],
      tagMode: "any",
      candidates: 10,
    });
    expect(byKeyword[0]).toMatchObject({ documentId: d1, content: "jumps over the lazy dog" });
    expect(byKeyword[0]?.keywordRank).toBe(1);

    const inOne = await hybridChunkSearch(store.db, {
      text: "zebras",
      embedding: axis(3),
      space,
      documentId: d1,
      tagMode: "any",
      candidates: 10,
    });
    expect(new Set(inOne.map((h) => h.documentId))).toEqual(new Set([d1]));

    // One retriever alone: the vector side ignores keywords, the keyword side ignores meaning.
    const base = { space, containerTags: [tag], tagMode: "any" as const, candidates: 10 };
    const vectorOnly = await hybridChunkSearch(store.db, {
      ...base,
      text: "lazy dog",
      embedding: axis(3),
      retrieval: "vector",
    });
    expect(vectorOnly[0]?.content).toBe("a treatise on zebras");
    expect(vectorOnly.every((h) => h.keywordRank === null)).toBe(true);
    const keywordOnly = await hybridChunkSearch(store.db, {
      ...base,
      text: "lazy dog",
      embedding: axis(3),
      retrieval: "keyword",
    });
    expect(keywordOnly.map((h) => h.content)).toEqual(["jumps over the lazy dog"]);

    const forEndUser = await hybridChunkSearch(store.db, {
      ...base,
      text: "zebras dog fox",
      embedding: axis(3),
      endUserId: "end-user-7",
    });
    expect(new Set(forEndUser.map((h) => h.documentId))).toEqual(new Set([d2]));

    // Vectors of another model are never compared with this one's query.
    const otherModel = { model: "test-other", dimension: 4 };
    await ensureVectorIndexes(store.db, otherModel);
    const inOtherSpace = await hybridChunkSearch(store.db, {
      ...base,
      text: "nothing in common",
      embedding: [1, 0, 0, 0],
      space: otherModel,
      retrieval: "vector",
    });
    expect(inOtherSpace).toEqual([]);

    await docs.deleteDocument(store.db, d1);
    const left = await queryRows(
      store.db,
      sql`SELECT count(*)::int AS n FROM chunks WHERE document_id = ${d1}`,
    );
    expect(left[0]).toEqual({ n: 0 });
  });

  it("finds a small container's chunks next to a large container's nearer ones", async () => {
    await ensureVectorIndexes(store.db, space);
    const docRows = (tag: string, n: number, offset: number) =>
      Array.from({ length: n }, (_, i) => ({ id: `vec-${tag}-${i}`, tag, axisOf: offset + (i % 3) }));
    const rows = [...docRows("vec-big", 600, 0), ...docRows("vec-small", 5, 8)];
    await store.db.execute(sql`
      INSERT INTO documents (id, source, status, container_tags, processing_run, workflow_run)
      SELECT r.id, 'x', 'done', ARRAY[r.tag], 1, 1
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(id text, tag text)`);
    await store.db.execute(sql`
      INSERT INTO chunks (id, document_id, position, content, embedding, embedding_model, embedding_dimension)
      SELECT r.id || '-c', r.id, 0, 'chunk of ' || r.id, r.v::vector, ${space.model}, ${space.dimension}
      FROM jsonb_to_recordset(${JSON.stringify(
        rows.map((r) => ({ id: r.id, v: `[${axis(r.axisOf, 0.05).join(",")}]` })),
      )}::jsonb) AS r(id text, v text)`);
    await store.db.execute(sql`ANALYZE chunks`);
    await store.db.execute(sql`ANALYZE documents`);
    // The query points at the big container's cluster; the small container must still get its own nearest.
    const hits = await hybridChunkSearch(store.db, {
      text: "zzz",
      embedding: axis(0),
      space,
      containerTags: ["vec-small"],
      tagMode: "any",
      retrieval: "vector",
      candidates: 10,
    });
    expect(hits).toHaveLength(5);
    expect(hits.every((h) => h.documentId.startsWith("vec-vec-small"))).toBe(true);
  });

  it("keeps only hashes of API keys and refuses expired or disabled ones", async () => {
    const { key, secret } = await createKey(store.db, { name: "k", kind: "admin" });
    expect(key.keyHash).toBe(hashKey(secret));
    expect(JSON.stringify(key)).not.toContain(secret);
    expect((await findActiveKey(store.db, secret))?.id).toBe(key.id);
    expect(await findActiveKey(store.db, `${secret}x`)).toBeUndefined();
    const expired = await createKey(store.db, {
      name: "old",
      kind: "admin",
      expiresAt: new Date(Date.now() - 1000),
    });
    expect(await findActiveKey(store.db, expired.secret)).toBeUndefined();
    await store.db.update(apiKeys).set({ disabledAt: new Date() }).where(sql`${apiKeys.id} = ${key.id}`);
    expect(await findActiveKey(store.db, secret)).toBeUndefined();
  });

  // The store's other areas, each in a module of its own under ./cases/.
  describe("memories", () => memoryCases(() => store));
  describe("search", () => searchCases(() => store));
  describe("processing stages", () => processingCases(() => store));
  describe("API keys, rate limits, OAuth states, settings and console users", () => accessCases(() => store));
  describe("webhooks", () => webhookCases(() => store));
  describe("connections", () => connectionCases(() => store));
  describe("container tags, spaces and health", () => containerCases(() => store));
  describe("container tag settings", () => containerTagSettingsCases(() => store));
  describe("re-embedding, key-expiry notices and BM25 statistics", () => maintenanceCases(() => store));
  // Last: it empties the store.
  describe("organisation reset", () => resetCases(() => store));
});

describe("a new PostgreSQL database opened by several processes at once", () => {
  it("is migrated once, and every opener gets a working store", async () => {
    // A deployment's APIs and workers all start together against an empty database.
    const url = await freshDatabase();
    const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgres(url, 2)));
    try {
      const [applied] = await queryRows<{ n: number }>(
        (stores[0] as Store).db,
        sql`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`,
      );
      const [extensions] = await queryRows<{ n: number }>(
        (stores[3] as Store).db,
        sql`SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'vector'`,
      );
      expect(applied?.n).toBeGreaterThan(0);
      expect(extensions?.n).toBe(1);
      for (const store of stores) {
        const [row] = await queryRows<{ n: number }>(store.db, sql`SELECT count(*)::int AS n FROM documents`);
        expect(row?.n).toBe(0);
      }
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});

describe("a PostgreSQL store whose server cuts a checked-out connection", () => {
  it("fails the query in flight instead of crashing the process, and goes on serving", async () => {
    const url = await freshDatabase();
    const store = await openPostgres(url, 2);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const cut = await store.db
        .transaction(async (tx) => {
          const { rows } = (await tx.execute(sql`SELECT pg_backend_pid() AS pid`)) as unknown as {
            rows: { pid: number }[];
          };
          // The server ends this session while the transaction holds its client between two queries
          // (what stopping PostgreSQL does to every session).
          await admin.query("SELECT pg_terminate_backend($1)", [rows[0]?.pid]);
          await new Promise((resolve) => setTimeout(resolve, 500));
          await tx.execute(sql`SELECT 1`);
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      // Recognised as the store being away (what processing waits out), not as a wrong query.
      expect(isStoreUnavailable(cut)).toBe(true);
      expect(await queryRows(store.db, sql`SELECT 1 AS one`)).toEqual([{ one: 1 }]);
    } finally {
      await admin.end();
      await store.close();
    }
  });
});
