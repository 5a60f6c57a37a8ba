import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caller, type Reply } from "../support/http.ts";
import { startTestService, type TestService, waitFor } from "../support/service.ts";

// Several tenants with scoped keys and random documents and memories; then well over 1,000 random requests with
// random keys, ids, customIds and tags. Property: no response ever carries another tenant's data,
// another tenant's documents are never changed or deleted, and a tenant's own documents stay reachable.
const TENANTS = 4;
const DOCS_PER_TENANT = 6;
const RUNS = 60;
const REQUESTS_PER_RUN = 20;

interface Doc {
  id: string;
  customId: string;
  tenant: number;
  tags: string[];
  marker: string;
  alive: boolean;
  /** Re-created by its owner under the same customId after a delete: new id, new content. */
  rewritten?: boolean;
}

interface Tenant {
  key: string;
  tags: string[];
  /** Strings only this tenant's documents contain: content and metadata markers. */
  markers: Set<string>;
}

interface Memory {
  content: string;
  tenant: number;
  tag: string;
  forgotten: boolean;
}

const WORDS = ["apple", "river", "engine", "garden", "violet", "copper", "signal", "harbor"];

describe("tenant isolation (property-based)", () => {
  let service: TestService;
  const call = caller(() => service.url);
  const tenants: Tenant[] = [];
  const docs: Doc[] = [];
  const memories: Memory[] = [];
  let requests = 0;
  let counter = 0;

  const tagsOf = (t: number) => [`ten${t}`, `ten${t}-b`];
  const allTags = () => Array.from({ length: TENANTS }, (_, t) => tagsOf(t)).flat();

  async function addDoc(tenant: number, tags: string[] | undefined, words: string[]): Promise<Reply> {
    const n = counter++;
    const marker = `mk${tenant}x${n}q${Math.random().toString(36).slice(2, 8)}`;
    const customId = `cid${tenant}n${n}z`;
    const res = await call(
      "POST",
      "/v3/documents",
      {
        content: `${marker} ${words.join(" ")} shared words for everyone`,
        customId,
        metadata: { owner: `meta-${marker}`, n },
        ...(tags ? { containerTags: tags } : {}),
      },
      tenants[tenant]?.key,
    );
    requests++;
    if (res.status === 200) {
      tenants[tenant]?.markers.add(marker);
      docs.push({
        id: res.json.id,
        customId,
        tenant,
        tags: tags ?? [tagsOf(tenant)[0] as string],
        marker,
        alive: true,
      });
    }
    return res;
  }

  beforeAll(async () => {
    service = await startTestService();
    for (let t = 0; t < TENANTS; t++) {
      const [first, ...rest] = tagsOf(t);
      const res = await call("POST", "/v3/auth/scoped-key", {
        containerTag: first,
        containerTags: rest,
        rateLimitMax: 10_000,
      });
      expect(res.status).toBe(200);
      tenants.push({ key: res.json.key, tags: tagsOf(t), markers: new Set() });
    }
    for (let t = 0; t < TENANTS; t++) {
      for (let i = 0; i < DOCS_PER_TENANT; i++) {
        const tags = i % 3 === 0 ? undefined : i % 3 === 1 ? [tagsOf(t)[1] as string] : tagsOf(t);
        expect((await addDoc(t, tags, [WORDS[i % WORDS.length] as string])).status).toBe(200);
      }
    }
    // Let the first documents finish so search has something to (not) leak.
    await waitFor(
      async () => {
        const res = await call("GET", "/v3/documents/processing");
        return res.json.totalCount === 0 ? true : undefined;
      },
      "initial documents processed",
      180_000,
    );
  });
  afterAll(async () => {
    await service?.stop();
  });

  /** A reference to some document: any tenant's id or customId, or one that never existed. */
  const docRef = fc.oneof(
    fc.nat().map((n) => ({ kind: "id" as const, n })),
    fc.nat().map((n) => ({ kind: "customId" as const, n })),
    fc.constantFrom({ kind: "unknown" as const, n: 0 }),
  );
  const resolve = (ref: { kind: "id" | "customId" | "unknown"; n: number }) => {
    if (ref.kind === "unknown" || !docs.length) return { value: `missing-${ref.n}`, doc: undefined };
    const doc = docs[ref.n % docs.length] as Doc;
    return { value: ref.kind === "id" ? doc.id : doc.customId, doc };
  };
  const tagPick = fc.subarray(Array.from({ length: TENANTS * 2 }, (_, i) => i));

  const request = fc.record({
    tenant: fc.integer({ min: 0, max: TENANTS - 1 }),
    op: fc.constantFrom(
      "get",
      "patch",
      "delete",
      "list",
      "processing",
      "search",
      "bulkIds",
      "bulkTags",
      "add",
      "addCustomId",
      "addMemory",
      "searchV4",
      "profile",
      "forgetMemory",
    ),
    ref: docRef,
    refs: fc.array(docRef, { maxLength: 4 }),
    tags: tagPick,
    operator: fc.constantFrom("any", "all", undefined),
    word: fc.constantFrom(...WORDS),
    flag: fc.boolean(),
    mode: fc.constantFrom("memories", "hybrid", "documents"),
    memory: fc.nat(),
  });

  type Req = typeof request extends fc.Arbitrary<infer T> ? T : never;

  /** Strings the response may not contain: other tenants' markers always; their ids unless the caller sent them. */
  function assertNoLeak(tenant: number, sent: string, res: Reply, what: string) {
    for (const [t, other] of tenants.entries()) {
      if (t === tenant) continue;
      for (const marker of other.markers) {
        if (res.text.includes(marker))
          throw new Error(`${what}: tenant ${tenant} saw tenant ${t}'s ${marker}: ${res.text.slice(0, 500)}`);
      }
    }
    for (const doc of docs) {
      if (doc.tenant === tenant) continue;
      // customIds live per tenant: one the caller also uses is its own to see.
      const ownCustomId = docs.some((d) => d.tenant === tenant && d.customId === doc.customId);
      for (const s of ownCustomId ? [doc.id] : [doc.id, doc.customId]) {
        if (res.text.includes(s) && !sent.includes(s)) {
          throw new Error(
            `${what}: tenant ${tenant} saw tenant ${doc.tenant}'s ${s}: ${res.text.slice(0, 500)}`,
          );
        }
      }
    }
    if (res.status >= 500) throw new Error(`${what}: ${res.status} ${res.text}`);
  }

  async function run(r: Req): Promise<void> {
    const tenant = tenants[r.tenant] as Tenant;
    const own = (tags: string[]) => tags.every((t) => tenant.tags.includes(t));
    const tags = r.tags.map((i) => allTags()[i] as string);
    let method = "GET";
    let path = "";
    let body: unknown;
    // Re-adding uses customIds only: a customId equal to another document's id would blur the model.
    const { value, doc } =
      r.op === "addCustomId"
        ? r.ref.kind === "unknown"
          ? { value: `new-${r.tenant}-${r.ref.n}`, doc: undefined }
          : resolve({ kind: "customId", n: r.ref.n })
        : resolve(r.ref);
    const foreign = doc !== undefined && doc.tenant !== r.tenant;
    /** What the reference names for this tenant: by id, that document if its own; by customId, its own of that name. */
    const target =
      r.ref.kind === "customId"
        ? docs.find((d) => d.tenant === r.tenant && d.alive && d.customId === value)
        : doc && !foreign && doc.alive
          ? doc
          : undefined;
    switch (r.op) {
      case "get":
        path = `/v3/documents/${encodeURIComponent(value)}`;
        break;
      case "patch":
        method = "PATCH";
        path = `/v3/documents/${encodeURIComponent(value)}`;
        body = { metadata: { touched: r.word }, ...(r.flag ? { title: `title ${r.word}` } : {}) };
        break;
      case "delete":
        method = "DELETE";
        path = `/v3/documents/${encodeURIComponent(value)}`;
        break;
      case "list":
        method = "POST";
        path = r.flag ? "/v3/documents/list" : "/v3/memories/list";
        body = {
          containerTags: tags.length ? tags : undefined,
          containerTagsOperator: r.operator,
          includeContent: true,
          limit: 200,
        };
        break;
      case "processing":
        path = "/v3/documents/processing";
        break;
      case "search":
        method = "POST";
        path = "/v3/search";
        body = {
          q: `${r.word} shared words`,
          containerTags: tags.length ? tags : undefined,
          includeFullDocs: r.flag,
          ...(doc && r.flag ? { docId: value } : {}),
        };
        break;
      case "bulkIds":
        method = "DELETE";
        path = "/v3/documents/bulk";
        body = { ids: [value, ...r.refs.map((x) => resolve(x).value)] };
        break;
      case "bulkTags":
        // Own tags would wipe the tenant's documents too often; keep those for the foreign-tag check.
        if (own(tags) && tags.length) return r.flag ? run({ ...r, op: "list" }) : undefined;
        method = "DELETE";
        path = "/v3/documents/bulk";
        body = { containerTags: tags.length ? tags : [tagsOf((r.tenant + 1) % TENANTS)[0]] };
        break;
      case "add":
        requests--;
        {
          const res = await addDoc(r.tenant, tags.length ? tags : undefined, [r.word]);
          assertNoLeak(r.tenant, "", res, "add");
          expect(res.status).toBe(tags.length && !own(tags) ? 403 : 200);
        }
        return;
      case "addCustomId":
        method = "POST";
        path = "/v3/documents";
        body = { content: `overwrite attempt ${r.word}`, customId: value };
        break;
    }
    if (r.op === "addMemory" || r.op === "searchV4" || r.op === "profile" || r.op === "forgetMemory") {
      return runMemoryOp(r, tenant, tags);
    }
    const sent = `${path} ${JSON.stringify(body ?? "")}`;
    const res = await call(method, path, body, tenant.key);
    requests++;
    assertNoLeak(r.tenant, sent, res, `${method} ${path}`);

    // What must have happened, given whose document it was.
    if (["get", "patch", "delete"].includes(r.op)) {
      if (!target) {
        expect(res.status, `${r.op} ${value}`).toBe(404);
        expect(res.json).toEqual({ error: "document not found", code: "not_found" });
      } else {
        expect(res.status).toBe(r.op === "delete" ? 204 : 200);
        if (r.op === "get" && !target.rewritten) expect(res.text).toContain(target.marker);
        if (r.op === "delete") target.alive = false;
      }
    }
    if (r.op === "list" || r.op === "search") {
      const badTags = tags.length > 0 && !own(tags);
      expect(res.status).toBe(badTags ? 403 : 200);
      if (r.op === "list" && !badTags && !tags.length) {
        // Every live document of the tenant is listed (the list is complete, not just filtered).
        const ids = new Set((res.json.memories as { id: string }[]).map((m) => m.id));
        for (const d of docs) if (d.tenant === r.tenant && d.alive) expect(ids.has(d.id)).toBe(true);
      }
    }
    if (r.op === "bulkIds") {
      expect(res.status).toBe(200);
      // Every document of the caller's that an id or a customId in the list names is gone; no other.
      const values = new Set([r.ref, ...r.refs].map((x) => resolve(x).value));
      const named = docs.filter((d) => d.tenant === r.tenant && (values.has(d.id) || values.has(d.customId)));
      const ownAlive = new Set(named.filter((d) => d.alive).map((d) => d.id));
      for (const d of named) d.alive = false;
      expect(res.json.deletedCount).toBeLessThanOrEqual(ownAlive.size * 2);
    }
    if (r.op === "bulkTags") expect(res.status).toBe(403);
    if (r.op === "addCustomId") {
      // Each tenant has its own customIds: another's never conflicts, and is never touched.
      expect(res.status).toBe(200);
      const mine = docs.find((d) => d.tenant === r.tenant && d.alive && d.customId === value);
      if (mine) {
        expect(res.json.id).toBe(mine.id);
        mine.rewritten = true;
      } else {
        expect(docs.some((d) => d.id === res.json.id)).toBe(false);
        docs.push({
          id: res.json.id,
          customId: value,
          tenant: r.tenant,
          tags: [tagsOf(r.tenant)[0] as string],
          marker: `overwrite attempt ${r.word}`,
          alive: true,
          rewritten: true,
        });
      }
    }
  }

  /**
   * A memory the model did not add itself is one of the tenant's own short documents kept as a memory (no LLM
   * here): its text carries the tenant's marker, or is the tenant's own overwrite of one of its documents.
   */
  const ownShortText = (tenant: Tenant, text: string) =>
    [...tenant.markers].some((marker) => text.includes(marker)) || text.startsWith("overwrite attempt ");

  /** Memories, v4 search and profiles: a container tag names one container, and only the key's own may be used. */
  async function runMemoryOp(r: Req, tenant: Tenant, tags: string[]): Promise<void> {
    const tag = tags[0] ?? (tenant.tags[r.memory % tenant.tags.length] as string);
    const ownTag = tenant.tags.includes(tag);
    let res: Reply;
    let sent = "";
    if (r.op === "addMemory") {
      const marker = `mm${r.tenant}x${counter++}q${Math.random().toString(36).slice(2, 8)}`;
      const content = `${marker} remembers ${r.word}`;
      res = await call("POST", "/v4/memories", { containerTag: tag, memories: [{ content }] }, tenant.key);
      if (res.status === 201) {
        tenant.markers.add(marker);
        memories.push({ content, tenant: r.tenant, tag, forgotten: false });
      }
    } else if (r.op === "forgetMemory") {
      const target = memories.length ? memories[r.memory % memories.length] : undefined;
      const body = { containerTag: tag, content: target?.content ?? `nothing ${r.word}` };
      sent = JSON.stringify(body);
      res = await call("DELETE", "/v4/memories", body, tenant.key);
      if (ownTag) {
        const mine = target && target.tenant === r.tenant && target.tag === tag;
        expect(res.status).toBe(mine ? (target.forgotten ? 409 : 200) : 404);
        if (mine && res.status === 200) target.forgotten = true;
      }
    } else if (r.op === "searchV4") {
      const body = {
        q: `${r.word} remembers shared words`,
        ...(tags.length ? { containerTag: tag } : {}),
        searchMode: r.mode,
        include: { forgottenMemories: r.flag, documents: true },
        limit: 50,
      };
      res = await call("POST", "/v4/search", body, tenant.key);
      if (res.status === 200 && r.mode !== "documents" && (!tags.length || ownTag)) {
        // Every result is the tenant's own, and a forgotten memory only comes back when asked for.
        for (const m of res.json.results as { memory?: string }[]) {
          if (!m.memory) continue;
          const known = memories.find((x) => x.content === m.memory);
          if (!known) {
            expect(ownShortText(tenant, m.memory), m.memory).toBe(true);
            continue;
          }
          expect(known?.tenant).toBe(r.tenant);
          if (known?.forgotten) expect(r.flag).toBe(true);
        }
      }
    } else {
      res = await call(
        "POST",
        "/v4/profile",
        { containerTag: tag, q: r.flag ? r.word : undefined },
        tenant.key,
      );
      if (res.status === 200) {
        for (const m of [...res.json.profile.static, ...res.json.profile.dynamic] as string[]) {
          const known = memories.find((x) => x.content === m);
          if (!known) {
            expect(ownShortText(tenant, m), m).toBe(true);
            continue;
          }
          expect(known?.tenant).toBe(r.tenant);
          expect(known?.forgotten).toBe(false);
        }
      }
    }
    requests++;
    assertNoLeak(r.tenant, sent, res, r.op);
    const foreignTag = (r.op !== "searchV4" || tags.length > 0) && !ownTag;
    expect(res.status === 403, `${r.op} ${tag}: ${res.status}`).toBe(foreignTag);
  }

  it("never shows, changes or deletes another tenant's documents over 1,000+ random requests", async () => {
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(
        fc.array(request, { minLength: REQUESTS_PER_RUN, maxLength: REQUESTS_PER_RUN }),
        async (reqs) => {
          for (const r of reqs) await run(r);
        },
      ),
      { numRuns: RUNS, endOnFailure: true },
    );
    expect(requests).toBeGreaterThanOrEqual(1000);

    // Afterwards, seen by the admin: every document is intact and still its owner's.
    for (const doc of docs) {
      const res = await call("GET", `/v3/documents/${doc.id}`);
      if (!doc.alive) {
        expect(res.status).toBe(404);
        continue;
      }
      expect(res.status, `${doc.id} of tenant ${doc.tenant}`).toBe(200);
      if (!doc.rewritten) expect(res.json.metadata.owner).toBe(`meta-${doc.marker}`);
      expect(res.json.customId).toBe(doc.customId);
      expect(res.json.containerTags.every((t: string) => tenants[doc.tenant]?.tags.includes(t))).toBe(true);
    }
    console.log(`isolation: ${requests} requests, ${docs.length} documents, ${Date.now() - started} ms`);
  });
});
