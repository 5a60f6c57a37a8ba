import Supermemory, { APIError, toFile } from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { htmlPage, type LocalSite, startLocalSite } from "../support/local-site.ts";
import {
  startTestService,
  TEST_ADMIN_KEY,
  type TestService,
  untilProcessed,
  waitFor,
} from "../support/service.ts";

// The official SDK's request types (supermemory 4.25.x: resources/*.d.ts, top-level.d.ts, client.d.ts),
// resource by resource: every optional field on its own with a realistic value, then all of them in one
// call. Each call either succeeds, answering with every field the SDK's response type requires, or is
// refused with a 4xx whose one error body names the field; never a 5xx, never a dropped connection.

// ---------------------------------------------------------------------------------------------------
// Types: what the SDK declares

type AddParams = Supermemory.AddParams;
type DocumentAddParams = Supermemory.DocumentAddParams;
type DocumentBatchAddParams = Supermemory.DocumentBatchAddParams;
type BatchItem = Exclude<DocumentBatchAddParams["documents"][number], string>;
type DocumentUpdateParams = Supermemory.DocumentUpdateParams;
type DocumentListParams = Supermemory.DocumentListParams;
type DocumentDeleteBulkParams = Supermemory.DocumentDeleteBulkParams;
type DocumentUploadFileParams = Supermemory.DocumentUploadFileParams;
type DocumentGetResponse = Supermemory.DocumentGetResponse;
type SearchDocumentsParams = Supermemory.SearchDocumentsParams;
type SearchMemoriesParams = Supermemory.SearchMemoriesParams;
type SearchInclude = NonNullable<SearchMemoriesParams["include"]>;
type MemoryUpdateMemoryParams = Supermemory.MemoryUpdateMemoryParams;
type MemoryForgetParams = Supermemory.MemoryForgetParams;
type SettingUpdateParams = Supermemory.SettingUpdateParams;
type ConnectionCreateParams = Supermemory.ConnectionCreateParams;
type ConnectionResourcesParams = Supermemory.ConnectionResourcesParams;
type ProfileParams = Supermemory.ProfileParams;

/** The keys a type requires (its properties that are not optional): what a response must carry. */
// biome-ignore lint/complexity/noBannedTypes: `{}` is exactly "an object without that property"
type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T];
/** Every required key of a response type; the compiler refuses a missing or an unknown key. */
type Promised<T> = Record<RequiredKeys<T>, true>;
/** One realistic value for each optional field of a request type P; the compiler refuses a missing one. */
type EachOptional<P> = {
  [K in keyof P as Record<never, never> extends Pick<P, K> ? K : never]-?: Pick<P, K>;
};

const promised = {
  add: { id: true, status: true } satisfies Promised<Supermemory.AddResponse>,
  documentAdd: { id: true, status: true } satisfies Promised<Supermemory.DocumentAddResponse>,
  documentUpdate: { id: true, status: true } satisfies Promised<Supermemory.DocumentUpdateResponse>,
  upload: { id: true, status: true } satisfies Promised<Supermemory.DocumentUploadFileResponse>,
  batch: {
    failed: true,
    results: true,
    success: true,
  } satisfies Promised<Supermemory.DocumentBatchAddResponse>,
  batchResult: { id: true, status: true } satisfies Promised<
    Supermemory.DocumentBatchAddResponse["results"][number]
  >,
  deleteBulk: {
    deletedCount: true,
    success: true,
  } satisfies Promised<Supermemory.DocumentDeleteBulkResponse>,
  list: { memories: true, pagination: true } satisfies Promised<Supermemory.DocumentListResponse>,
  listed: {
    id: true,
    connectionId: true,
    createdAt: true,
    customId: true,
    filepath: true,
    metadata: true,
    status: true,
    summary: true,
    title: true,
    type: true,
    updatedAt: true,
  } satisfies Promised<Supermemory.DocumentListResponse["memories"][number]>,
  pagination: { currentPage: true, totalItems: true, totalPages: true } satisfies Promised<
    Supermemory.DocumentListResponse["pagination"]
  >,
  document: {
    id: true,
    connectionId: true,
    content: true,
    createdAt: true,
    customId: true,
    filepath: true,
    metadata: true,
    ogImage: true,
    raw: true,
    source: true,
    spatialPoint: true,
    status: true,
    summary: true,
    taskType: true,
    title: true,
    type: true,
    updatedAt: true,
  } satisfies Promised<DocumentGetResponse>,
  processing: {
    documents: true,
    totalCount: true,
  } satisfies Promised<Supermemory.DocumentListProcessingResponse>,
  processingDocument: {
    id: true,
    createdAt: true,
    customId: true,
    metadata: true,
    status: true,
    title: true,
    type: true,
    updatedAt: true,
  } satisfies Promised<Supermemory.DocumentListProcessingResponse["documents"][number]>,
  documentSearch: {
    results: true,
    timing: true,
    total: true,
  } satisfies Promised<Supermemory.SearchDocumentsResponse>,
  documentHit: {
    chunks: true,
    createdAt: true,
    documentId: true,
    metadata: true,
    score: true,
    title: true,
    type: true,
    updatedAt: true,
  } satisfies Promised<Supermemory.SearchDocumentsResponse["results"][number]>,
  documentHitChunk: { content: true, isRelevant: true, score: true } satisfies Promised<
    Supermemory.SearchDocumentsResponse["results"][number]["chunks"][number]
  >,
  memorySearch: {
    results: true,
    timing: true,
    total: true,
  } satisfies Promised<Supermemory.SearchMemoriesResponse>,
  memoryHit: { id: true, metadata: true, similarity: true, updatedAt: true } satisfies Promised<
    Supermemory.SearchMemoriesResponse["results"][number]
  >,
  memoryUpdate: {
    id: true,
    createdAt: true,
    forgetAfter: true,
    forgetReason: true,
    memory: true,
    parentMemoryId: true,
    rootMemoryId: true,
    version: true,
  } satisfies Promised<Supermemory.MemoryUpdateMemoryResponse>,
  memoryForget: { id: true, forgotten: true } satisfies Promised<Supermemory.MemoryForgetResponse>,
  settingsUpdate: {
    orgId: true,
    orgSlug: true,
    updated: true,
  } satisfies Promised<Supermemory.SettingUpdateResponse>,
  connectionCreate: {
    id: true,
    authLink: true,
    expiresIn: true,
  } satisfies Promised<Supermemory.ConnectionCreateResponse>,
  connection: {
    id: true,
    createdAt: true,
    provider: true,
  } satisfies Promised<Supermemory.ConnectionGetByIDResponse>,
  connectionDocument: {
    id: true,
    createdAt: true,
    status: true,
    summary: true,
    title: true,
    type: true,
    updatedAt: true,
  } satisfies Promised<Supermemory.ConnectionListDocumentsResponse[number]>,
  connectionDelete: { id: true, provider: true } satisfies Promised<Supermemory.ConnectionDeleteByIDResponse>,
  profile: { profile: true } satisfies Promised<Supermemory.ProfileResponse>,
  profileFacts: { dynamic: true, static: true } satisfies Promised<Supermemory.ProfileResponse["profile"]>,
  profileSearch: { results: true, timing: true, total: true } satisfies Promised<
    NonNullable<Supermemory.ProfileResponse["searchResults"]>
  >,
};

// ---------------------------------------------------------------------------------------------------
// Checks

/** The value carries every field the SDK's response type requires. */
function expectPromised(value: unknown, fields: Record<string, boolean>, what = "response") {
  expect(value, what).toBeTypeOf("object");
  expect(value, what).not.toBeNull();
  for (const field of Object.keys(fields)) expect(value, `${what}.${field}`).toHaveProperty(field);
}

/** A call the SDK's types allow and the service must take: its answer, or a failure saying what was refused. */
async function accepted<T>(call: PromiseLike<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof APIError) {
      throw new Error(`refused with ${error.status ?? "no response"}: ${JSON.stringify(error.error)}`);
    }
    throw error;
  }
}

/** A call the service refuses: a 4xx with the one error body (api/errors.ts), naming the offending field. */
async function refusedNaming(call: PromiseLike<unknown>, field: string | RegExp) {
  const error = await Promise.resolve(call).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "the call should have been refused").toBeInstanceOf(APIError);
  const { status, error: body } = error as APIError;
  expect(status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
  expect(status, JSON.stringify(body)).toBeLessThan(500);
  expect(body).toMatchObject({
    error: expect.any(String),
    code: expect.any(String),
    field: typeof field === "string" ? field : expect.stringMatching(field),
  });
}

/** The options of a table as [name, params] pairs, and all of them merged into one call. */
const cases = <P extends object>(options: P) => Object.entries(options) as [string, P[keyof P]][];
const allOf = <P extends object>(options: P) => Object.assign({}, ...Object.values(options));

/** The container tags a request names, as the document keeps them. */
const tagsOf = (p: { containerTag?: string; containerTags?: string[] }) => [
  ...new Set([...(p.containerTag ? [p.containerTag] : []), ...(p.containerTags ?? [])]),
];

/** What a stored document must show of an add or update request. */
function storedAs(p: Partial<DocumentAddParams>) {
  const tags = tagsOf(p);
  return {
    ...(tags.length ? { containerTags: tags } : {}),
    ...(p.customId ? { customId: p.customId } : {}),
    ...(p.filepath ? { filepath: p.filepath } : {}),
    ...(p.metadata ? { metadata: expect.objectContaining(p.metadata) } : {}),
    ...(p.content ? { content: expect.stringContaining(p.content) } : {}),
  };
}

/** The smallest of some scores (1 for none, the best a score can be). */
const lowest = (scores: number[]) => Math.min(1, ...scores);

/** What both searches add to the SDK's response types: nothing asked for is dropped without a word. */
interface Extras {
  reranked?: boolean;
  rewrittenQuery?: string;
  warnings?: string[];
}
/** rewriteQuery is honoured (rewrittenQuery) or the response says why not (no LLM is configured here). */
function expectRewriteAnswered(r: Extras) {
  expect(
    r.rewrittenQuery !== undefined || Boolean(r.warnings?.some((w) => w.startsWith("rewriteQuery"))),
  ).toBe(true);
}

// ---------------------------------------------------------------------------------------------------
// The service and the client

let service: TestService;
let client: Supermemory;

beforeAll(async () => {
  service = await startTestService({
    // The service's own Notion app, so a Notion connection can be started (its consent page is never opened).
    env: { NOTION_CLIENT_ID: "conformance-notion-app", NOTION_CLIENT_SECRET: "conformance-notion-secret" },
  });
  client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
});
afterAll(async () => {
  await service?.stop();
});

const getDocument = (id: string) => client.documents.get(id);
const untilDone = async (id: string) => {
  const doc = await untilProcessed(getDocument, id);
  expect(doc.status, doc.errorReason ?? "").toBe("done");
  return doc;
};

/** Memories through POST /v4/memories (the SDK 4.25 has no method for it; its client posts the body). */
interface CreatedMemory {
  id: string;
  memory: string;
}
async function remember(
  containerTag: string,
  memories: { content: string; isStatic?: boolean; metadata?: Record<string, string | number | boolean> }[],
) {
  const created = await client.post<{ memories: CreatedMemory[] }>("/v4/memories", {
    body: { containerTag, memories },
  });
  return created.memories;
}
interface StoredMemory {
  id: string;
  memory: string;
  isForgotten: boolean;
  isLatest: boolean;
  forgetReason: string | null;
  forgetAfter: string | null;
  metadata: Record<string, unknown>;
}
const readMemory = (id: string) => client.get<StoredMemory>(`/v4/memories/${id}`);

// ---------------------------------------------------------------------------------------------------
// client.add (top-level.d.ts) and documents.add

describe("add: client.add and documents.add", () => {
  const options = (tag: string) =>
    ({
      containerTag: { containerTag: tag },
      containerTags: { containerTags: [tag, `${tag}-archive`] },
      customId: { customId: `${tag}-safety-briefing` },
      entityContext: { entityContext: "Notes kept by Maya Lind, head coach of the Tidewater rowing club." },
      filepath: { filepath: `/handbook/${tag}/safety.md` },
      metadata: {
        metadata: { source: "handbook", revision: 3, reviewed: true, topics: ["safety", "boats"] },
      },
      taskType: { taskType: "superrag" },
    }) satisfies EachOptional<AddParams> & EachOptional<DocumentAddParams>;
  const content = "Every crew checks the weather and the tide table before a boat leaves the dock.";

  for (const [method, add] of [
    ["client.add", (p: AddParams) => client.add(p)],
    ["documents.add", (p: DocumentAddParams) => client.documents.add(p)],
  ] as const) {
    const tag = method === "client.add" ? "sdk-add-top" : "sdk-add-documents";

    it(`${method} with content only`, async () => {
      const added = await accepted(add({ content }));
      expectPromised(added, promised.add);
      expect(await getDocument(added.id)).toMatchObject({ content, status: expect.any(String) });
    });

    for (const [field, params] of cases(options(tag))) {
      it(`${method} with ${field}`, async () => {
        const added = await accepted(add({ content: `${content} (${field})`, ...params }));
        expectPromised(added, promised.documentAdd);
        expect(await getDocument(added.id)).toMatchObject(storedAs(params));
      });
    }

    it(`${method} with every optional field`, async () => {
      const params = { content, ...allOf(options(`${tag}-all`)) };
      const added = await accepted(add(params));
      expectPromised(added, promised.add);
      const doc = await untilDone(added.id);
      expect(doc).toMatchObject(storedAs(params));
      expectPromised(doc, promised.document, "DocumentGetResponse");
    });
  }
});

// ---------------------------------------------------------------------------------------------------
// documents (resources/documents.d.ts)

describe("documents", () => {
  describe("batchAdd", () => {
    const tag = "sdk-batch";
    const shared = {
      containerTag: { containerTag: tag },
      containerTags: { containerTags: [tag, `${tag}-shared`] },
      content: { content: null },
      filepath: { filepath: "/minutes/2024/" },
      metadata: { metadata: { meeting: "committee", year: 2024 } },
      taskType: { taskType: "memory" },
    } satisfies EachOptional<DocumentBatchAddParams>;
    const perItem = {
      containerTag: { containerTag: `${tag}-item` },
      containerTags: { containerTags: [`${tag}-item`, `${tag}-item-2`] },
      customId: { customId: `${tag}-minutes-march` },
      filepath: { filepath: "/minutes/2024/march.md" },
      metadata: { metadata: { month: "march", attendees: 11 } },
      taskType: { taskType: "superrag" },
    } satisfies EachOptional<BatchItem>;
    const minutes = [
      "The committee agreed to replace the oars of the coastal four before the summer regatta.",
      "Membership fees stay the same next year; juniors row free on Saturday mornings.",
    ];

    async function batch(params: DocumentBatchAddParams) {
      const result = await accepted(client.documents.batchAdd(params));
      expectPromised(result, promised.batch);
      for (const r of result.results) expectPromised(r, promised.batchResult, "result");
      expect(result).toMatchObject({ success: params.documents.length, failed: 0 });
      return result;
    }

    it("takes plain strings", async () => {
      await batch({ documents: minutes });
    });

    for (const [field, params] of cases(shared)) {
      it(`takes the shared ${field}`, async () => {
        const result = await batch({ documents: minutes, ...params });
        const doc = await getDocument(result.results[0]?.id ?? "");
        expect(doc).toMatchObject(storedAs({ ...params, content: undefined }));
      });
    }

    for (const [field, params] of cases(perItem)) {
      it(`takes ${field} on an item`, async () => {
        const result = await batch({ documents: [{ content: `${minutes[0]} (${field})`, ...params }] });
        expect(await getDocument(result.results[0]?.id ?? "")).toMatchObject(storedAs(params));
      });
    }

    it("takes every shared and every item field together", async () => {
      const item = allOf(perItem) as BatchItem;
      const result = await batch({
        ...allOf(shared),
        documents: [
          { ...item, customId: `${tag}-minutes-april`, content: minutes[0] as string },
          { content: minutes[1] as string },
        ],
      });
      const [first, second] = await Promise.all(result.results.map((r) => getDocument(r.id)));
      // An item's own tags and metadata win over the shared ones; an item without them takes the shared.
      expect(first).toMatchObject(
        storedAs({
          ...item,
          customId: `${tag}-minutes-april`,
          metadata: { ...shared.metadata.metadata, ...item.metadata },
        }),
      );
      expect(second).toMatchObject({ containerTags: tagsOf(allOf(shared)), filepath: "/minutes/2024/" });
    });
  });

  describe("update", () => {
    const tag = "sdk-update";
    const options = {
      containerTag: { containerTag: `${tag}-moved` },
      containerTags: { containerTags: [tag, `${tag}-archive`] },
      content: { content: "The boathouse opens at six on weekdays and at seven on Sundays." },
      customId: { customId: `${tag}-opening-hours` },
      filepath: { filepath: "/handbook/opening-hours.md" },
      metadata: { metadata: { audience: "members", revision: 2 } },
      taskType: { taskType: "superrag" },
    } satisfies EachOptional<DocumentUpdateParams>;
    let id: string;

    beforeAll(async () => {
      ({ id } = await client.documents.add({
        content: "The boathouse opens at seven every day.",
        containerTag: tag,
      }));
    });

    it("takes an empty update", async () => {
      expectPromised(await accepted(client.documents.update(id, {})), promised.documentUpdate);
    });

    for (const [field, params] of cases(options)) {
      it(`takes ${field}`, async () => {
        const updated = await accepted(client.documents.update(id, params));
        expectPromised(updated, promised.documentUpdate);
        expect(updated.id).toBe(id);
        // New content is reprocessed: the document shows it once that run is done.
        const doc = "content" in params ? await untilDone(id) : await getDocument(id);
        expect(doc).toMatchObject(storedAs(params));
      });
    }

    it("takes every optional field together", async () => {
      const params = {
        ...allOf(options),
        customId: `${tag}-opening-hours-2025`,
        content: "From April the boathouse opens at half past five.",
      };
      const updated = await accepted(client.documents.update(id, params));
      expect(updated).toMatchObject({ id, status: "queued" });
      expect(await untilDone(id)).toMatchObject(storedAs(params));
    });
  });

  describe("list", () => {
    const tag = "sdk-list";
    const options = {
      containerTags: { containerTags: [tag] },
      filepath: { filepath: "/reports/2024/" },
      filters: { filters: { AND: [{ key: "listQuarter", value: "q2" }] } },
      includeContent: { includeContent: true },
      limit: { limit: 2 },
      order: { order: "asc" },
      page: { page: 2 },
      sort: { sort: "updatedAt" },
    } satisfies EachOptional<DocumentListParams>;
    const ids: Record<string, string> = {};

    beforeAll(async () => {
      const reports = [
        ["q1", "/reports/2024/q1.md", 12, ["boats", "budget"], "Spring report: two new sculls"],
        ["q2", "/reports/2024/q2.md", 31, ["regatta"], "Summer report: the regatta crew won"],
        ["q3", "/reports/2023/q3.md", 7, ["boats"], "Autumn report: hull repairs"],
      ] as const;
      for (const [quarter, filepath, crews, topics, title] of reports) {
        const { id } = await client.documents.add({
          content: `${title}. Written for the annual meeting.`,
          containerTag: tag,
          filepath,
          metadata: { listQuarter: quarter, crews, topics: [...topics], author: "Treasurer Ines Okafor" },
        });
        ids[quarter] = id;
      }
      // Processing changes updatedAt: the sort by it is checked once it is settled.
      for (const id of Object.values(ids)) await untilDone(id);
    });

    async function list(params: DocumentListParams) {
      const result = await accepted(client.documents.list(params));
      expectPromised(result, promised.list);
      expectPromised(result.pagination, promised.pagination, "pagination");
      for (const doc of result.memories) expectPromised(doc, promised.listed, "memory");
      return result;
    }
    const idsOf = (r: Supermemory.DocumentListResponse) => r.memories.map((m) => m.id).sort();

    it("takes an empty body", async () => {
      expect((await list({})).pagination).toMatchObject({ currentPage: 1, limit: 50 });
    });

    it("takes containerTags", async () => {
      expect(idsOf(await list(options.containerTags))).toEqual(Object.values(ids).sort());
    });

    it("takes filepath: a prefix when it ends in /", async () => {
      expect(idsOf(await list(options.filepath))).toEqual([ids.q1, ids.q2].sort());
    });

    it("takes filepath: an exact path", async () => {
      expect(idsOf(await list({ filepath: "/reports/2023/q3.md" }))).toEqual([ids.q3]);
    });

    it("takes filters", async () => {
      expect(idsOf(await list(options.filters))).toEqual([ids.q2]);
    });

    it("takes includeContent", async () => {
      const result = await list(options.includeContent);
      const q1 = result.memories.find((m) => m.id === ids.q1);
      expect(q1?.content).toContain("Spring report");
    });

    it("takes limit, as a number and as a string", async () => {
      for (const limit of [2, "2"]) {
        const result = await list({ limit });
        expect(result.memories).toHaveLength(2);
        expect(result.pagination).toMatchObject({
          limit: 2,
          totalPages: Math.ceil(result.pagination.totalItems / 2),
        });
      }
    });

    it("takes order", async () => {
      const result = await list(options.order);
      const times = result.memories.map((m) => m.createdAt);
      expect(times).toEqual([...times].sort());
    });

    it("takes page, as a number and as a string", async () => {
      for (const page of [2, "2"]) expect((await list({ page })).pagination.currentPage).toBe(2);
    });

    it("takes sort", async () => {
      const result = await list(options.sort);
      const times = result.memories.map((m) => m.updatedAt);
      expect(times).toEqual([...times].sort().reverse());
    });

    it("takes every optional field together", async () => {
      const filters = {
        OR: [
          { key: "listQuarter", value: "q1" },
          { key: "listQuarter", value: "q2" },
        ],
      };
      const result = await list({ ...allOf(options), filters, limit: 1 });
      // q1 and q2 match; by updatedAt ascending, one a page, page 2 is the one updated last.
      const [q1, q2] = await Promise.all([getDocument(ids.q1 ?? ""), getDocument(ids.q2 ?? "")]);
      const later = (q1.updatedAt > q2.updatedAt ? q1 : q2) as DocumentGetResponse;
      expect(result.pagination).toMatchObject({ currentPage: 2, totalItems: 2, totalPages: 2, limit: 1 });
      expect(result.memories.map((m) => m.id)).toEqual([later.id]);
      expect(result.memories[0]?.content).toBe(later.content);
    });

    // The filter leaves the SDK types: each filterType, numericOperator, ignoreCase and negate (booleans and
    // their string forms), nested AND/OR.
    const filterCases: [string, NonNullable<DocumentListParams["filters"]>, string[]][] = [
      ["filterType metadata", { AND: [{ key: "listQuarter", value: "q3", filterType: "metadata" }] }, ["q3"]],
      [
        "filterType numeric with numericOperator",
        { AND: [{ key: "crews", value: "10", filterType: "numeric", numericOperator: ">=" }] },
        ["q1", "q2"],
      ],
      [
        "filterType array_contains",
        { AND: [{ key: "topics", value: "boats", filterType: "array_contains" }] },
        ["q1", "q3"],
      ],
      [
        "filterType string_contains with ignoreCase",
        { AND: [{ key: "author", value: "ines", filterType: "string_contains", ignoreCase: true }] },
        ["q1", "q2", "q3"],
      ],
      ["ignoreCase as a string", { AND: [{ key: "listQuarter", value: "Q1", ignoreCase: "true" }] }, ["q1"]],
      ["negate", { AND: [{ key: "listQuarter", value: "q1", negate: true }] }, ["q2", "q3"]],
      ["negate as a string", { AND: [{ key: "listQuarter", value: "q1", negate: "false" }] }, ["q1"]],
      [
        "nested OR inside AND",
        {
          AND: [
            {
              OR: [
                { key: "listQuarter", value: "q1" },
                { key: "listQuarter", value: "q3" },
              ],
            },
            { key: "topics", value: "budget", filterType: "array_contains" },
          ],
        },
        ["q1"],
      ],
    ];
    for (const [name, filters, expected] of filterCases) {
      it(`takes filters: ${name}`, async () => {
        const result = await list({ containerTags: [tag], filters });
        expect(idsOf(result)).toEqual(expected.map((q) => ids[q]).sort());
      });
    }
  });

  describe("get, listProcessing and delete", () => {
    it("get answers every field of DocumentGetResponse", async () => {
      const { id } = await client.documents.add({
        content: "Life jackets hang on the left wall of the boathouse.",
        containerTag: "sdk-get",
      });
      const doc = await accepted(client.documents.get(id));
      expectPromised(doc, promised.document, "DocumentGetResponse");
      expect(["memory", "superrag"]).toContain(doc.taskType);
      expect(doc.source).toBeNull();
    });

    it("listProcessing answers every field of its response", async () => {
      await client.documents.add({ content: "Oars are stored blade up.", containerTag: "sdk-processing" });
      const result = await accepted(client.documents.listProcessing());
      expectPromised(result, promised.processing);
      expect(result.totalCount).toBe(result.documents.length);
      for (const doc of result.documents) expectPromised(doc, promised.processingDocument, "document");
    });

    it("delete removes the document", async () => {
      const { id } = await client.documents.add({ content: "Temporary note.", containerTag: "sdk-delete" });
      await accepted(client.documents.delete(id));
      await expect(client.documents.get(id)).rejects.toMatchObject({ status: 404 });
    });
  });

  describe("deleteBulk", () => {
    const tag = "sdk-bulk";
    const add = (content: string, extra: Partial<DocumentAddParams> = {}) =>
      client.documents.add({ content, containerTag: tag, ...extra }).then((r) => r.id);

    async function deleteBulk(params: DocumentDeleteBulkParams) {
      const result = await accepted(client.documents.deleteBulk(params));
      expectPromised(result, promised.deleteBulk);
      return result;
    }

    it("takes ids", async () => {
      const id = await add("Bulk note one.");
      expect(await deleteBulk({ ids: [id] })).toMatchObject({ success: true, deletedCount: 1 });
      await expect(client.documents.get(id)).rejects.toMatchObject({ status: 404 });
    });

    it("takes containerTags", async () => {
      const id = await add("Bulk note two.", { containerTag: `${tag}-tagged` });
      expect(await deleteBulk({ containerTags: [`${tag}-tagged`] })).toMatchObject({ deletedCount: 1 });
      await expect(client.documents.get(id)).rejects.toMatchObject({ status: 404 });
    });

    it("takes filepath: exact, or a prefix when it ends in /", async () => {
      const exact = await add("Bulk note three.", { filepath: "/bulk/old/a.md" });
      const under = await add("Bulk note four.", { filepath: "/bulk/old/deeper/b.md" });
      const other = await add("Bulk note five.", { filepath: "/bulk/new/c.md" });
      expect(await deleteBulk({ filepath: "/bulk/old/a.md" })).toMatchObject({
        success: true,
        deletedCount: 1,
      });
      expect(await deleteBulk({ filepath: "/bulk/old/" })).toMatchObject({ success: true, deletedCount: 1 });
      await expect(client.documents.get(exact)).rejects.toMatchObject({ status: 404 });
      await expect(client.documents.get(under)).rejects.toMatchObject({ status: 404 });
      expect((await client.documents.get(other)).id).toBe(other);
    });

    it("takes ids with a filepath: only the given documents under it", async () => {
      const inside = await add("Bulk note six.", { filepath: "/bulk/drafts/six.md" });
      const outside = await add("Bulk note seven.", { filepath: "/bulk/final/seven.md" });
      const result = await deleteBulk({ ids: [inside, outside], filepath: "/bulk/drafts/" });
      expect(result).toMatchObject({
        success: false,
        deletedCount: 1,
        errors: [{ id: outside, error: "not found" }],
      });
      expect((await client.documents.get(outside)).id).toBe(outside);
    });

    it("takes every optional field together: the given documents carrying one of the tags under the filepath", async () => {
      const id = await add("Bulk note eight.", { filepath: "/bulk/kept/eight.md" });
      const elsewhere = await add("Bulk note nine.", {
        filepath: "/bulk/kept/nine.md",
        containerTag: `${tag}-other`,
      });
      expect(
        await deleteBulk({ ids: [id, elsewhere], containerTags: [tag], filepath: "/bulk/kept/" }),
      ).toMatchObject({ success: false, deletedCount: 1, errors: [{ id: elsewhere, error: "not found" }] });
      await expect(client.documents.get(id)).rejects.toMatchObject({ status: 404 });
      expect((await client.documents.get(elsewhere)).id).toBe(elsewhere);
    });

    it("refuses an empty body, naming ids", async () => {
      await refusedNaming(client.documents.deleteBulk({}), "ids");
    });
  });

  describe("uploadFile", () => {
    const tag = "sdk-upload";
    const options = {
      containerTag: { containerTag: tag },
      containerTags: { containerTags: JSON.stringify([tag, `${tag}-archive`]) },
      filepath: { filepath: "/uploads/rigging.txt" },
      fileType: { fileType: "text" },
      metadata: { metadata: JSON.stringify({ uploadedBy: "Maya", pages: 1 }) },
      mimeType: { mimeType: "text/plain" },
      taskType: { taskType: "superrag" },
      useAdvancedProcessing: { useAdvancedProcessing: "true" },
    } satisfies EachOptional<DocumentUploadFileParams>;
    const file = (name: string) =>
      toFile(
        Buffer.from(`Rigging guide (${name}): set the gate height to 16 cm above the water.\n`),
        `${name}.txt`,
        {
          type: "text/plain",
        },
      );

    async function upload(params: Omit<DocumentUploadFileParams, "file">, name: string) {
      const result = await accepted(client.documents.uploadFile({ file: await file(name), ...params }));
      expectPromised(result, promised.upload);
      return getDocument(result.id);
    }

    it("takes a file alone", async () => {
      expect(await upload({}, "alone")).toMatchObject({ status: expect.any(String) });
    });

    for (const [field, params] of cases(options)) {
      it(`takes ${field}`, async () => {
        const doc = await upload(params, field);
        if ("containerTag" in params) expect(doc.containerTags).toEqual([tag]);
        if ("containerTags" in params) expect(doc.containerTags).toEqual([tag, `${tag}-archive`]);
        if ("filepath" in params) expect(doc.filepath).toBe(params.filepath);
        if ("metadata" in params) expect(doc.metadata).toMatchObject({ uploadedBy: "Maya", pages: 1 });
      });
    }

    it("takes containerTags as a single tag", async () => {
      expect((await upload({ containerTags: `${tag}-single` }, "single")).containerTags).toEqual([
        `${tag}-single`,
      ]);
    });

    it("takes every optional field together", async () => {
      const doc = await upload(allOf(options), "all");
      expect(doc).toMatchObject({
        containerTags: [tag, `${tag}-archive`],
        filepath: "/uploads/rigging.txt",
        metadata: { uploadedBy: "Maya", pages: 1 },
      });
      expect((await untilDone(doc.id)).content).toContain("gate height");
    });
  });
});

// ---------------------------------------------------------------------------------------------------
// search (resources/search.d.ts): search.documents, search.execute, search.memories and client.search

describe("search", () => {
  const tag = "sdk-search";
  let rowing: string;
  let tides: string;

  beforeAll(async () => {
    rowing = (
      await client.documents.add({
        content:
          "Rowing technique: drive with the legs first, then swing the back, and finish with the arms. " +
          "Sculling beginners practise the catch at quarter slide on calm water.",
        containerTag: tag,
        customId: `${tag}-technique`,
        filepath: "/coaching/technique.md",
        metadata: { category: "guide", season: "summer", level: 1 },
      })
    ).id;
    tides = (
      await client.documents.add({
        content:
          "Tide notice: spring tides on the estuary run strongest two hours after high water. " +
          "Crews stay upstream of the bridge when the ebb runs hard.",
        containerTag: `${tag}-notices`,
        filepath: "/notices/tides.md",
        metadata: { category: "notice", season: "winter", level: 2 },
      })
    ).id;
    await untilDone(rowing);
    await untilDone(tides);
  });

  describe("documents and execute", () => {
    const options = {
      categoriesFilter: { categoriesFilter: ["notice"] },
      chunkThreshold: { chunkThreshold: 0.1 },
      containerTag: { containerTag: tag },
      containerTags: { containerTags: [tag, `${tag}-notices`] },
      docId: { docId: `${tag}-technique` },
      documentThreshold: { documentThreshold: 0.1 },
      filepath: { filepath: "/coaching/" },
      filters: { filters: { AND: [{ key: "season", value: "summer" }] } },
      includeFullDocs: { includeFullDocs: true },
      includeSummary: { includeSummary: true },
      limit: { limit: 1 },
      onlyMatchingChunks: { onlyMatchingChunks: true },
      rerank: { rerank: true },
      rewriteQuery: { rewriteQuery: true },
    } satisfies EachOptional<SearchDocumentsParams> & EachOptional<Supermemory.SearchExecuteParams>;
    const q = "how do rowers drive with their legs";

    /** What each option must show in the results, beyond the promised fields. */
    const effects: Record<keyof typeof options, (r: Supermemory.SearchDocumentsResponse & Extras) => void> = {
      categoriesFilter: (r) => expect(r.results.map((h) => h.documentId)).toEqual([tides]),
      chunkThreshold: (r) =>
        expect(
          lowest(r.results.flatMap((h) => h.chunks.filter((c) => c.isRelevant).map((c) => c.score))),
        ).toBeGreaterThanOrEqual(0.1),
      documentThreshold: (r) => expect(lowest(r.results.map((h) => h.score))).toBeGreaterThanOrEqual(0.1),
      containerTag: (r) => expect(r.results.map((h) => h.documentId)).toEqual([rowing]),
      containerTags: (r) => expect(r.results.map((h) => h.documentId).sort()).toEqual([rowing, tides].sort()),
      docId: (r) => expect(r.results.map((h) => h.documentId)).toEqual([rowing]),
      filepath: (r) => expect(r.results.map((h) => h.documentId)).toEqual([rowing]),
      filters: (r) => expect(r.results.map((h) => h.documentId)).toEqual([rowing]),
      includeFullDocs: (r) =>
        expect(r.results.find((h) => h.documentId === rowing)?.content).toContain("drive with the legs"),
      includeSummary: (r) => expect(r.results.every((h) => "summary" in h)).toBe(true),
      limit: (r) => expect(r.results.length).toBe(1),
      onlyMatchingChunks: (r) =>
        expect(r.results.every((h) => h.chunks.every((c) => c.isRelevant))).toBe(true),
      rerank: (r) => expect(r.reranked).toBe(true),
      rewriteQuery: expectRewriteAnswered,
    };

    for (const [method, search] of [
      ["search.documents", (p: SearchDocumentsParams) => client.search.documents(p)],
      ["search.execute", (p: Supermemory.SearchExecuteParams) => client.search.execute(p)],
    ] as const) {
      const run = async (params: Omit<SearchDocumentsParams, "q">) => {
        const result: Supermemory.SearchDocumentsResponse & Extras = await accepted(search({ q, ...params }));
        expectPromised(result, promised.documentSearch);
        for (const hit of result.results) {
          expectPromised(hit, promised.documentHit, "result");
          for (const chunk of hit.chunks) expectPromised(chunk, promised.documentHitChunk, "chunk");
        }
        return result;
      };

      it(`${method} with q only`, async () => {
        expect((await run({})).results[0]?.documentId).toBe(rowing);
      });

      for (const [field, params] of cases(options)) {
        it(`${method} with ${field}`, async () => {
          const result = await run(params);
          expect(result.results.length).toBeGreaterThan(0);
          effects[field as keyof typeof options](result);
        });
      }

      it(`${method} with every optional field`, async () => {
        const result = await run({ ...allOf(options), categoriesFilter: ["guide"] });
        expect(result.results.map((h) => h.documentId)).toEqual([rowing]);
        expect(result.results[0]?.content).toContain("drive with the legs");
      });
    }
  });

  describe("memories and client.search", () => {
    const memTag = `${tag}-memories`;
    let forgotten: string;

    beforeAll(async () => {
      const created = await remember(memTag, [
        {
          content: "Maya coaches the junior squad on Tuesday evenings.",
          isStatic: true,
          metadata: { squad: "junior" },
        },
        { content: "Maya prefers to row bow side in the coastal four." },
        { content: "Maya used to coach the veterans' crew." },
      ]);
      forgotten = created[2]?.id as string;
      await client.memories.forget({ containerTag: memTag, id: forgotten, reason: "no longer true" });
      // A document in the same container, for the hybrid and documents modes.
      const { id } = await client.documents.add({
        content: "Junior squad schedule: Tuesday evenings from six, coached by Maya on the river.",
        containerTag: memTag,
        filepath: "/squads/junior.md",
        metadata: { squad: "junior" },
      });
      await untilDone(id);
    });

    const include = {
      chunks: { chunks: true },
      documents: { documents: true },
      forgottenMemories: { forgottenMemories: true },
      relatedMemories: { relatedMemories: true },
      summaries: { summaries: true },
    } satisfies EachOptional<SearchInclude>;
    const options = {
      aggregate: { aggregate: true },
      containerTag: { containerTag: memTag },
      filepath: { filepath: "/squads/" },
      filters: { filters: { OR: [{ key: "squad", value: "junior" }] } },
      include: { include: { documents: true, relatedMemories: true } },
      limit: { limit: 1 },
      rerank: { rerank: true },
      rewriteQuery: { rewriteQuery: true },
      searchMode: { searchMode: "hybrid" },
      threshold: { threshold: 0.2 },
    } satisfies EachOptional<SearchMemoriesParams>;
    const q = "when does Maya coach the juniors";

    for (const [method, search] of [
      ["search.memories", (p: SearchMemoriesParams) => client.search.memories(p)],
      ["client.search", (p: Supermemory.SearchParams) => client.search(p)],
    ] as const) {
      const run = async (params: Omit<SearchMemoriesParams, "q">) => {
        const result: Supermemory.SearchMemoriesResponse & Extras = await accepted(search({ q, ...params }));
        expectPromised(result, promised.memorySearch);
        for (const hit of result.results) expectPromised(hit, promised.memoryHit, "result");
        return result;
      };

      it(`${method} with q only`, async () => {
        expect((await run({})).results.some((h) => h.memory?.includes("Tuesday evenings"))).toBe(true);
      });

      for (const [field, params] of cases(options)) {
        it(`${method} with ${field}`, async () => {
          const result = await run(params);
          expect(result.results.length).toBeGreaterThan(0);
          if (field === "limit") expect(result.results.length).toBe(1);
          if (field === "threshold")
            expect(lowest(result.results.map((h) => h.similarity))).toBeGreaterThanOrEqual(0.2);
          if (field === "rerank") expect(result.reranked).toBe(true);
          if (field === "rewriteQuery") expectRewriteAnswered(result);
          if (field === "aggregate")
            expect(result.warnings?.some((w) => w.startsWith("aggregate"))).toBe(true);
          if (field === "containerTag") expect(result.results.every((h) => h.id !== forgotten)).toBe(true);
          if (field === "filters") {
            expect(result.results.some((h) => h.memory?.includes("Tuesday evenings"))).toBe(true);
            expect(
              result.results.every((h) => (h.metadata as { squad?: string } | null)?.squad === "junior"),
            ).toBe(true);
          }
        });
      }

      // Memory results carry `memory`, chunk results `chunk`. The schedule document's text may also be kept
      // as a memory (a short text); hybrid then shows it once, so it is found as either.
      const kinds = (r: Supermemory.SearchMemoriesResponse) =>
        [...new Set(r.results.map((h) => (h.memory !== undefined ? "memory" : "chunk")))].sort();
      const findsSchedule = (r: Supermemory.SearchMemoriesResponse) =>
        r.results.some((h) => (h.memory ?? h.chunk ?? "").includes("Junior squad schedule"));

      it(`${method} with each searchMode`, async () => {
        expect(kinds(await run({ containerTag: memTag, searchMode: "memories" }))).toEqual(["memory"]);
        const documents = await run({ containerTag: memTag, searchMode: "documents" });
        expect(kinds(documents)).toEqual(["chunk"]);
        expect(findsSchedule(documents)).toBe(true);
        const hybrid = await run({ containerTag: memTag, searchMode: "hybrid" });
        expect(kinds(hybrid)).toContain("memory");
        expect(findsSchedule(hybrid)).toBe(true);
      });

      for (const [field, params] of cases(include)) {
        it(`${method} with include.${field}`, async () => {
          const result = await run({ containerTag: memTag, include: params });
          if (field === "forgottenMemories")
            expect(result.results.some((h) => h.id === forgotten)).toBe(true);
          else expect(result.results.some((h) => h.id === forgotten)).toBe(false);
          if (field === "chunks") expect(findsSchedule(result)).toBe(true);
        });
      }

      it(`${method} with every optional field`, async () => {
        const result = await run({ ...allOf(options), include: allOf(include), limit: 5, threshold: 0 });
        expect(result.results.length).toBeGreaterThan(0);
        expect(result.results.length).toBeLessThanOrEqual(5);
        expect(result.results.some((h) => h.id === forgotten)).toBe(false); // its metadata has no squad
        expect(findsSchedule(result)).toBe(true);
      });
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// memories (resources/memories.d.ts)

describe("memories", () => {
  describe("updateMemory", () => {
    const tag = "sdk-memory-update";
    const targets: Record<string, CreatedMemory> = {};
    const facts = {
      id: "Ines keeps the club's accounts.",
      content: "Ines rows in the second eight.",
      forgetAfter: "The spring regatta entry closes on Friday.",
      forgetReason: "The trailer is parked behind the boathouse.",
      metadata: "Ines owns a single scull.",
      temporalContext: "Ines joined the club in the summer.",
      all: "Ines coaches the novices on Sundays.",
      bothDecoy: "Ines repairs the riggers.",
    };

    beforeAll(async () => {
      const created = await remember(
        tag,
        Object.values(facts).map((content) => ({ content })),
      );
      for (const [i, key] of Object.keys(facts).entries()) targets[key] = created[i] as CreatedMemory;
    });

    const target = (key: keyof typeof facts) => targets[key] as CreatedMemory;
    const inFuture = new Date(Date.UTC(2031, 5, 1)).toISOString();

    async function update(params: MemoryUpdateMemoryParams) {
      const result = await accepted(client.memories.updateMemory(params));
      expectPromised(result, promised.memoryUpdate);
      expect(result.version).toBe(2);
      return result;
    }

    it("refuses a call without id or content, naming id", async () => {
      await refusedNaming(
        client.memories.updateMemory({ containerTag: tag, newContent: "Something new." }),
        "id",
      );
    });

    it("takes id", async () => {
      const result = await update({
        containerTag: tag,
        id: target("id").id,
        newContent: "Ines keeps the accounts and the keys.",
      });
      expect(result.parentMemoryId).toBe(target("id").id);
    });

    it("takes content", async () => {
      const result = await update({
        containerTag: tag,
        content: facts.content,
        newContent: "Ines rows in the first eight.",
      });
      expect(result.parentMemoryId).toBe(target("content").id);
    });

    const optional = {
      forgetAfter: { forgetAfter: inFuture },
      forgetReason: { forgetReason: "superseded by the new timetable" },
      metadata: { metadata: { source: "committee", confidence: 0.9, confirmed: true, people: ["Ines"] } },
      temporalContext: {
        temporalContext: { documentDate: "2024-06-01", eventDate: ["2024-06-15", "2024-06-16"] },
      },
    } satisfies Omit<EachOptional<MemoryUpdateMemoryParams>, "id" | "content">;

    for (const [field, params] of cases(optional)) {
      it(`takes ${field} (with id)`, async () => {
        const key = field as keyof typeof optional;
        const result = await update({
          containerTag: tag,
          id: target(key).id,
          newContent: `${facts[key]} (updated)`,
          ...params,
        });
        const stored = await readMemory(result.id);
        if (key === "forgetAfter") expect(result.forgetAfter).toBe(inFuture);
        if (key === "forgetReason") expect(result.forgetReason).toBe("superseded by the new timetable");
        if (key === "metadata") expect(stored.metadata).toMatchObject(optional.metadata.metadata);
        if (key === "temporalContext") {
          expect(stored.metadata).toMatchObject({
            documentDate: "2024-06-01",
            eventDate: ["2024-06-15", "2024-06-16"],
          });
        }
      });
    }

    it("takes null for forgetAfter, forgetReason and the temporal dates", async () => {
      const first = await accepted(
        client.memories.updateMemory({
          containerTag: tag,
          id: target("forgetAfter").id,
          newContent: "The entry closes on Saturday.",
          forgetAfter: null,
          forgetReason: null,
          temporalContext: { documentDate: null, eventDate: null },
        }),
      );
      expect(first).toMatchObject({ forgetAfter: null, forgetReason: null, version: 3 });
    });

    it("takes every optional field together (id and content: id decides)", async () => {
      const result = await update({
        containerTag: tag,
        id: target("all").id,
        content: facts.bothDecoy,
        newContent: "Ines coaches the novices on Sunday mornings.",
        ...allOf(optional),
      });
      expect(result.parentMemoryId).toBe(target("all").id);
      expect((await readMemory(target("bothDecoy").id)).isLatest).toBe(true);
    });
  });

  describe("forget", () => {
    const tag = "sdk-memory-forget";
    const facts = {
      id: "Tomas locks the boathouse on Thursdays.",
      content: "Tomas drives the launch during races.",
      reason: "Tomas keeps spare gates in his locker.",
      both: "Tomas coxes the women's eight.",
      bothDecoy: "Tomas paints the blades.",
      all: "Tomas checks the life jackets monthly.",
      allDecoy: "Tomas orders the new ergometers.",
    };
    const targets: Record<string, CreatedMemory> = {};

    beforeAll(async () => {
      const created = await remember(
        tag,
        Object.values(facts).map((content) => ({ content })),
      );
      for (const [i, key] of Object.keys(facts).entries()) targets[key] = created[i] as CreatedMemory;
    });
    const target = (key: keyof typeof facts) => targets[key] as CreatedMemory;

    async function forget(params: MemoryForgetParams, expected: CreatedMemory) {
      const result = await accepted(client.memories.forget(params));
      expectPromised(result, promised.memoryForget);
      expect(result).toEqual({ id: expected.id, forgotten: true });
      const stored = await readMemory(expected.id);
      expect(stored.isForgotten).toBe(true);
      return stored;
    }

    it("refuses a call without id or content, naming id", async () => {
      await refusedNaming(client.memories.forget({ containerTag: tag }), "id");
    });

    it("takes id", async () => {
      await forget({ containerTag: tag, id: target("id").id }, target("id"));
    });

    it("takes content", async () => {
      await forget({ containerTag: tag, content: facts.content }, target("content"));
    });

    it("takes reason (with id)", async () => {
      const stored = await forget(
        { containerTag: tag, id: target("reason").id, reason: "he moved away" },
        target("reason"),
      );
      expect(stored.forgetReason).toBe("he moved away");
    });

    it("takes id and content together: id decides", async () => {
      await forget({ containerTag: tag, id: target("both").id, content: facts.bothDecoy }, target("both"));
      expect((await readMemory(target("bothDecoy").id)).isForgotten).toBe(false);
    });

    it("takes every optional field together", async () => {
      const stored = await forget(
        {
          containerTag: tag,
          id: target("all").id,
          content: facts.allDecoy,
          reason: "checked by the club now",
        },
        target("all"),
      );
      expect(stored.forgetReason).toBe("checked by the club now");
      expect((await readMemory(target("allDecoy").id)).isForgotten).toBe(false);
    });
  });
});

// ---------------------------------------------------------------------------------------------------
// profile (top-level.d.ts: client.profile)

describe("profile: client.profile", () => {
  const tag = "sdk-profile";
  const options = {
    filters: { filters: { AND: [{ key: "topic", value: "training", negate: "false" }] } },
    q: { q: "what does Sam train for" },
    threshold: { threshold: 0.1 },
  } satisfies EachOptional<ProfileParams>;

  const goal = "Sam is training for the head of the river race.";
  const result2k = "Sam rowed a 7:05 2k on the ergometer last week.";
  const routine = "Sam trains on the ergometer three times a week.";

  beforeAll(async () => {
    await remember(tag, [
      { content: goal, isStatic: true, metadata: { topic: "training" } },
      { content: result2k, metadata: { topic: "results" } },
    ]);
    await remember(tag, [{ content: routine, metadata: { topic: "training" } }]);
  });

  async function profile(params: Omit<ProfileParams, "containerTag">) {
    const result = await accepted(client.profile({ containerTag: tag, ...params }));
    expectPromised(result, promised.profile);
    expectPromised(result.profile, promised.profileFacts, "profile");
    if (result.searchResults) expectPromised(result.searchResults, promised.profileSearch, "searchResults");
    return result;
  }

  const memoryTexts = (r: Supermemory.ProfileResponse) =>
    (r.searchResults?.results ?? []).map((hit) => (hit as { memory?: string }).memory);

  it("takes containerTag only", async () => {
    const result = await profile({});
    expect(result.profile).toEqual({ static: [goal], dynamic: [routine, result2k] });
    expect(result.searchResults).toBeUndefined();
  });

  it("takes filters", async () => {
    expect((await profile(options.filters)).profile).toEqual({ static: [goal], dynamic: [routine] });
  });

  it("takes q", async () => {
    const result = await profile(options.q);
    expect(memoryTexts(result)).toEqual(expect.arrayContaining([goal, routine]));
  });

  it("takes threshold (it applies to the search, so alone it changes nothing)", async () => {
    const result = await profile(options.threshold);
    expect(result.profile).toEqual({ static: [goal], dynamic: [routine, result2k] });
    expect(result.searchResults).toBeUndefined();
  });

  it("takes every optional field together", async () => {
    const result = await profile(allOf(options));
    expect(result.profile).toEqual({ static: [goal], dynamic: [routine] });
    expect(memoryTexts(result).length).toBeGreaterThan(0);
    expect(memoryTexts(result)).not.toContain(result2k);
  });
});

// ---------------------------------------------------------------------------------------------------
// settings (resources/settings.d.ts)

describe("settings", () => {
  const options = {
    chunkSize: { chunkSize: 1200 },
    excludeItems: { excludeItems: { paths: ["/private/"], extensions: [".tmp"] } },
    filterPrompt: { filterPrompt: "Keep rowing club content; leave out personal messages." },
    githubClientId: { githubClientId: "Iv1.club-github-app" },
    githubClientSecret: { githubClientSecret: "github-app-secret" },
    githubCustomKeyEnabled: { githubCustomKeyEnabled: true },
    googleDriveClientId: { googleDriveClientId: "1234-club.apps.googleusercontent.com" },
    googleDriveClientSecret: { googleDriveClientSecret: "google-app-secret" },
    googleDriveCustomKeyEnabled: { googleDriveCustomKeyEnabled: false },
    includeItems: { includeItems: ["*.md", "*.pdf"] },
    notionClientId: { notionClientId: "club-notion-integration" },
    notionClientSecret: { notionClientSecret: "notion-app-secret" },
    notionCustomKeyEnabled: { notionCustomKeyEnabled: false },
    onedriveClientId: { onedriveClientId: "7f3c1a2e-club-onedrive" },
    onedriveClientSecret: { onedriveClientSecret: "onedrive-app-secret" },
    onedriveCustomKeyEnabled: { onedriveCustomKeyEnabled: false },
    shouldLLMFilter: { shouldLLMFilter: true },
  } satisfies EachOptional<SettingUpdateParams>;

  /** What the service shows for a field it was given: secrets never come back, only that they are set. */
  function expectShown(settings: object, params: SettingUpdateParams) {
    for (const [key, value] of Object.entries(params)) {
      if (key.endsWith("ClientSecret")) {
        expect(settings).toMatchObject({ [key]: null, [`${key}Set`]: value !== null });
      } else {
        expect(settings).toMatchObject({ [key]: value });
      }
    }
  }

  it("get answers the settings", async () => {
    const settings = await accepted(client.settings.get());
    expect(settings).toMatchObject({ chunkSize: null, notionClientSecret: null });
  });

  for (const [field, params] of cases(options)) {
    it(`update takes ${field}`, async () => {
      const result = await accepted(client.settings.update(params));
      expectPromised(result, promised.settingsUpdate);
      expect(result).toMatchObject({ orgId: "default", orgSlug: "default" });
      expectShown(result.updated, params);
      expectShown(await client.settings.get(), params);
    });
  }

  it("update takes every optional field together, then null for each", async () => {
    const all = allOf(options) as SettingUpdateParams;
    expectShown((await accepted(client.settings.update(all))).updated, all);
    const cleared = Object.fromEntries(Object.keys(all).map((k) => [k, null])) as SettingUpdateParams;
    const result = await accepted(client.settings.update(cleared));
    expectShown(result.updated, cleared);
    expectShown(await client.settings.get(), cleared);
  });
});

// ---------------------------------------------------------------------------------------------------
// connections (resources/connections.d.ts): web-crawler against a site on 127.0.0.1, Notion up to its
// consent link, S3 only as far as its settings check (nothing here reaches a real network)

describe("connections", () => {
  const tag = "sdk-crawl";
  let site: LocalSite;
  let crawl: { startUrls: string; maxPages: number; maxDepth: number; useSitemaps: boolean };
  const created: string[] = [];

  beforeAll(async () => {
    site = await startLocalSite({
      "/": htmlPage(
        "Tidewater Rowing Club",
        ["Members row on the estuary every Saturday morning."],
        ["/join"],
      ),
      "/join": htmlPage("Join the club", ["New members start with a learn-to-row course in April."]),
    });
    crawl = { startUrls: `${site.url}/`, maxPages: 5, maxDepth: 1, useSitemaps: false };
  });
  afterAll(async () => {
    // Leave no schedule behind: every connection made here goes, whatever the tests did.
    for (const id of created) await client.connections.deleteByID(id).catch(() => undefined);
    await site?.stop();
  });

  async function create(provider: "web-crawler" | "notion", params: ConnectionCreateParams) {
    const result = await accepted(client.connections.create(provider, params));
    expectPromised(result, promised.connectionCreate);
    created.push(result.id);
    return result;
  }

  describe("create", () => {
    const options = {
      containerTag: { containerTag: tag },
      containerTags: { containerTags: [tag, `${tag}-club`] },
      documentLimit: { documentLimit: 25 },
      metadata: { metadata: null },
      redirectUrl: { redirectUrl: "https://club.example.org/settings/connections" },
    } satisfies EachOptional<ConnectionCreateParams>;

    it("web-crawler with its settings only (no tag: the default project tag)", async () => {
      const result = await create("web-crawler", { metadata: crawl });
      expect(result.expiresIn).toBe("0");
      expect(await client.connections.getByID(result.id)).toMatchObject({
        provider: "web-crawler",
        containerTags: ["sm_project_default"],
      });
    });

    for (const [field, params] of cases(options)) {
      if (field === "metadata") continue; // a crawler needs its settings: the refusal is below
      it(`web-crawler with ${field}`, async () => {
        const result = await create("web-crawler", { metadata: crawl, ...params });
        const connection = await accepted(client.connections.getByID(result.id));
        expectPromised(connection, promised.connection, "connection");
        if ("containerTag" in params || "containerTags" in params) {
          expect(connection.containerTags).toEqual(tagsOf(params));
        }
        if ("documentLimit" in params) expect(connection.documentLimit).toBe(25);
        if ("redirectUrl" in params) expect(result.redirectsTo).toBe(params.redirectUrl);
      });
    }

    it("web-crawler without settings is refused, naming the missing one", async () => {
      await refusedNaming(
        client.connections.create("web-crawler", { containerTag: tag }),
        /^metadata\.startUrls$/,
      );
      await refusedNaming(
        client.connections.create("web-crawler", options.metadata),
        /^metadata\.startUrls$/,
      );
    });

    it("web-crawler with every optional field", async () => {
      const result = await create("web-crawler", { ...allOf(options), metadata: crawl });
      expect(result.redirectsTo).toBe(options.redirectUrl.redirectUrl);
      expect(await client.connections.getByID(result.id)).toMatchObject({
        containerTags: [tag, `${tag}-club`],
        documentLimit: 25,
      });
    });

    it("notion with an empty body: a consent link, under the default project tag", async () => {
      const result = await create("notion", {});
      expect(new URL(result.authLink).searchParams.get("client_id")).toBe("conformance-notion-app");
      expect(await client.connections.getByID(result.id)).toMatchObject({
        provider: "notion",
        containerTags: ["sm_project_default"],
      });
    });

    for (const [field, params] of cases(options)) {
      it(`notion with ${field}`, async () => {
        const result = await create("notion", params);
        expect(result.authLink).toContain("client_id=");
        if ("redirectUrl" in params) expect(result.redirectsTo).toBe(params.redirectUrl);
      });
    }

    it("notion with every optional field", async () => {
      const result = await create("notion", allOf(options));
      expect(await client.connections.getByID(result.id)).toMatchObject({
        provider: "notion",
        containerTags: [tag, `${tag}-club`],
        documentLimit: 25,
      });
    });

    it("s3 without credentials is refused, naming the missing setting", async () => {
      await refusedNaming(
        client.connections.create("s3", {
          containerTag: tag,
          metadata: { bucket: "club-archive", region: "eu-west-1" },
        }),
        /^metadata\.(accessKeyId|secretAccessKey)$/,
      );
      await refusedNaming(
        client.connections.create("s3", {
          metadata: { bucket: "x", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "s" },
        }),
        /^metadata\.bucket$/,
      );
    });
  });

  describe("reading, syncing and deleting", () => {
    let id: string;

    beforeAll(async () => {
      ({ id } = await create("web-crawler", { containerTag: `${tag}-read`, metadata: crawl }));
    });

    it("list with and without containerTags", async () => {
      const all = await accepted(client.connections.list({}));
      for (const c of all) expectPromised(c, promised.connection, "connection");
      expect(all.map((c) => c.id)).toContain(id);
      const tagged = await accepted(client.connections.list({ containerTags: [`${tag}-read`] }));
      expect(tagged.map((c) => c.id)).toEqual([id]);
    });

    it("getByID", async () => {
      const connection = await accepted(client.connections.getByID(id));
      expectPromised(connection, promised.connection, "connection");
      expect(connection.id).toBe(id);
    });

    it("getByTag", async () => {
      const connection = await accepted(
        client.connections.getByTag("web-crawler", { containerTags: [`${tag}-read`] }),
      );
      expectPromised(connection, promised.connection, "connection");
      expect(connection.id).toBe(id);
      await refusedNaming(client.connections.getByTag("web-crawler", { containerTags: [] }), "containerTags");
    });

    it("import with and without containerTags", async () => {
      expect(
        await accepted(client.connections.import("web-crawler", { containerTags: [`${tag}-read`] })),
      ).toMatch(/Sync started for 1 web-crawler/);
      expect(typeof (await accepted(client.connections.import("web-crawler", {})))).toBe("string");
    });

    it("listDocuments with and without containerTags: the crawled pages", async () => {
      // The first sync crawls the site's two pages into documents of the connection.
      const pages = await waitFor(async () => {
        const docs = await accepted(
          client.connections.listDocuments("web-crawler", { containerTags: [`${tag}-read`] }),
        );
        return docs.length >= 2 ? docs : undefined;
      }, "the crawl to save both pages");
      for (const doc of pages) expectPromised(doc, promised.connectionDocument, "document");
      const all = await accepted(client.connections.listDocuments("web-crawler", {}));
      expect(all.map((d) => d.id)).toEqual(expect.arrayContaining(pages.map((d) => d.id)));
    });

    const resourceOptions = {
      page: { page: 2 },
      parent_id: { parent_id: "folder-123" },
      per_page: { per_page: 50 },
    } satisfies EachOptional<ConnectionResourcesParams>;

    // A crawler has nothing to choose from: each call is refused, and the refusal names the connection.
    it("resources with each optional field and with all: refused for a crawler, naming connectionId", async () => {
      for (const params of [undefined, ...Object.values(resourceOptions), allOf(resourceOptions)]) {
        await refusedNaming(client.connections.resources(id, params), "connectionId");
      }
    });

    it("configure: refused for a crawler, naming resources", async () => {
      await refusedNaming(
        client.connections.configure(id, { resources: [{ id: 1, name: "club/site" }] }),
        "resources",
      );
    });

    it("deleteByID with deleteDocuments false keeps the documents", async () => {
      const other = await create("web-crawler", { containerTag: `${tag}-keep`, metadata: crawl });
      const result = await accepted(client.connections.deleteByID(other.id, { deleteDocuments: "false" }));
      expectPromised(result, promised.connectionDelete);
      expect(result).toEqual({ id: other.id, provider: "web-crawler" });
      await expect(client.connections.getByID(other.id)).rejects.toMatchObject({ status: 404 });
    });

    it("deleteByProvider", async () => {
      const other = await create("web-crawler", { containerTag: `${tag}-gone`, metadata: crawl });
      const result = await accepted(
        client.connections.deleteByProvider("web-crawler", { containerTags: [`${tag}-gone`] }),
      );
      expect(result).toEqual({ id: other.id, provider: "web-crawler" });
      await refusedNaming(
        client.connections.deleteByProvider("web-crawler", { containerTags: [] }),
        "containerTags",
      );
    });

    it("deleteByID without params", async () => {
      const result = await accepted(client.connections.deleteByID(id));
      expect(result).toEqual({ id, provider: "web-crawler" });
      await expect(client.connections.getByID(id)).rejects.toMatchObject({ status: 404 });
    });
  });
});
