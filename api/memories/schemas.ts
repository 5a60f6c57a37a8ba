import { z } from "@hono/zod-openapi";
import { ContainerTag, Metadata } from "../schemas.ts";

const MemoryContent = z.string().trim().min(1).max(10_000);
const IsoDate = z.iso.datetime({ offset: true }).openapi({ example: "2026-12-31T00:00:00Z" });

export const NewMemory = z
  .object({
    content: MemoryContent,
    isStatic: z.boolean().optional().openapi({ description: "A long-lived fact (name, preference)" }),
    metadata: Metadata.optional(),
    forgetAfter: IsoDate.nullable()
      .optional()
      .openapi({ description: "Left out of search and profiles after this time (nothing is deleted)" }),
    forgetReason: z.string().max(1000).nullable().optional(),
    endUserId: z.string().min(1).max(255).optional(),
  })
  .openapi("NewMemory");

export const CreateMemoriesBody = z
  .object({
    containerTag: ContainerTag,
    memories: z.array(NewMemory).min(1).max(100),
  })
  .openapi("CreateMemories");

export const CreateMemoriesResponse = z
  .object({
    documentId: z
      .string()
      .nullable()
      .openapi({ description: "Always null: these memories have no source document" }),
    memories: z.array(
      z.object({
        id: z.string(),
        memory: z.string(),
        isStatic: z.boolean(),
        createdAt: z.string(),
        forgetAfter: z.string().nullable(),
        forgetReason: z.string().nullable(),
        metadata: z.record(z.string(), z.unknown()).nullable(),
        version: z.number(),
      }),
    ),
  })
  .openapi("CreatedMemories");

const Target = {
  containerTag: ContainerTag,
  id: z.string().min(1).optional(),
  content: z.string().min(1).optional(),
};
// The SDK's types let a client send both; the id then decides which memory and content is not used.
const aTarget = (b: { id?: string; content?: string }) => Boolean(b.id) || b.content !== undefined;

export const ForgetMemoryBody = z
  .object({ ...Target, reason: z.string().max(1000).optional() })
  .refine(aTarget, { message: "give id or content (with both, id decides)", path: ["id"] })
  .openapi("ForgetMemory");

export const ForgetMemoryResponse = z
  .object({ id: z.string(), forgotten: z.boolean() })
  .openapi("ForgottenMemory");

export const UpdateMemoryBody = z
  .object({
    ...Target,
    newContent: MemoryContent,
    metadata: Metadata.optional(),
    forgetAfter: IsoDate.nullable().optional(),
    forgetReason: z.string().max(1000).nullable().optional(),
    temporalContext: z
      .object({
        documentDate: z.string().nullable().optional(),
        eventDate: z.array(z.string()).nullable().optional(),
      })
      .optional(),
  })
  .refine(aTarget, { message: "give id or content (with both, id decides)", path: ["id"] })
  .openapi("UpdateMemory");

export const UpdateMemoryResponse = z
  .object({
    id: z.string(),
    createdAt: z.string(),
    forgetAfter: z.string().nullable(),
    forgetReason: z.string().nullable(),
    memory: z.string(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    parentMemoryId: z.string().nullable(),
    rootMemoryId: z.string().nullable(),
    version: z.number(),
  })
  .openapi("UpdatedMemory");

const pageNumber = (def: number, max: number) => z.coerce.number().int().min(1).max(max).default(def);

export const ListMemoriesBody = z
  .object({
    containerTag: ContainerTag.optional(),
    containerTags: z.array(ContainerTag).max(100).optional(),
    limit: pageNumber(50, 1000),
    page: pageNumber(1, 1_000_000),
    includeHistory: z
      .boolean()
      .default(false)
      .openapi({ description: "Every version of each memory, not only the latest" }),
    includeForgotten: z.boolean().default(false).openapi({
      description: "Also forgotten memories and those whose forgetAfter has passed (left out by default)",
    }),
    sort: z.enum(["createdAt", "updatedAt"]).default("createdAt"),
    order: z.enum(["desc", "asc"]).default("desc"),
  })
  .openapi("ListMemories");

export const MemoryJson = z
  .object({
    id: z.string(),
    memory: z.string(),
    isStatic: z.boolean(),
    createdAt: z.string(),
    forgetAfter: z.string().nullable(),
    version: z.number(),
    containerTag: z.string(),
    metadata: z.record(z.string(), z.unknown()),
    isForgotten: z
      .boolean()
      .openapi({ description: "Forgotten on request, or its forgetAfter has passed (as of this request)" }),
    forgetReason: z.string().nullable(),
    parentId: z.string().nullable(),
    rootId: z.string().nullable(),
    isLatest: z.boolean(),
    relation: z.string().nullable(),
    relatedTo: z.string().nullable(),
    sourceDocumentId: z.string().nullable(),
    updatedAt: z.string(),
  })
  .openapi("Memory");

const MemoryVersion = z.object({
  id: z.string(),
  memory: z.string(),
  version: z.number(),
  createdAt: z.string(),
  updatedAt: z.string(),
  parentMemoryId: z.string().nullable(),
  rootMemoryId: z.string().nullable(),
  isLatest: z.boolean(),
  isForgotten: z.boolean(),
});

/** A listed memory as Supermemory's OpenAPI document (and so SDK 5) gives it. */
export const MemoryEntry = MemoryVersion.extend({
  isStatic: z.boolean(),
  isInference: z.boolean().nullable(),
  spaceId: z.string().openapi({ description: "The container tag" }),
  orgId: z.string(),
  sourceCount: z.number(),
  forgetAfter: z.string().nullable(),
  forgetReason: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  memoryRelations: z.record(z.string(), z.enum(["updates", "extends", "derives"])).nullable(),
  temporalContext: z.record(z.string(), z.unknown()).nullable(),
  history: z
    .array(MemoryVersion)
    .openapi({ description: "Earlier versions on the same page (includeHistory)" }),
  documentIds: z.array(z.string()),
}).openapi("MemoryEntry");

export const ListMemoriesResponse = z
  .object({
    memories: z.array(MemoryJson),
    memoryEntries: z.array(MemoryEntry).openapi({
      description: "The same memories in the shape of Supermemory's current API (SDK 5 reads these)",
    }),
    pagination: z.object({
      currentPage: z.number(),
      totalPages: z.number(),
      totalItems: z.number(),
      limit: z.number(),
    }),
  })
  .openapi("MemoryList");

export const MemoryIdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(255)
    .openapi({ param: { name: "id", in: "path" } }),
});

export const ForgetMatchingBody = z
  .object({
    query: z
      .string()
      .trim()
      .min(1)
      .max(2000)
      .optional()
      .openapi({
        description:
          "An instruction ('forget everything about Project Titan') or a bare topic; the container's memories are " +
          "searched for it. Give query or ids.",
        example: "forget everything about Project Titan",
      }),
    ids: z.array(z.string().min(1).max(255)).min(1).max(500).optional().openapi({
      description: "Forget exactly these memories (no search); unknown or out-of-scope ids are ignored",
    }),
    containerTag: ContainerTag,
    dryRun: z
      .boolean()
      .default(false)
      .openapi({ description: "Answer what would be forgotten, forget nothing" }),
    threshold: z.number().min(0).max(1).default(0.5).openapi({
      description: "Least similarity (as /v4/search reports it) a memory must reach to be forgotten",
    }),
    maxForget: z
      .number()
      .int()
      .min(1)
      .max(500)
      .default(100)
      .openapi({ description: "At most this many (≤ 500)" }),
    reason: z.string().max(1000).optional().openapi({ description: "Stored as forgetReason on each memory" }),
  })
  .refine((b) => (b.query === undefined) !== (b.ids === undefined), {
    message: "give query or ids (exactly one of them)",
    path: ["query"],
  })
  .openapi("ForgetMatching");

const ForgetCandidate = z.object({ id: z.string(), memory: z.string(), score: z.number() });

export const ForgetMatchingResponse = z
  .object({
    dryRun: z.boolean(),
    count: z.number().openapi({ description: "Memories selected (dry run) or forgotten" }),
    forgetBatchId: z
      .string()
      .nullable()
      .openapi({ description: "Names this call's forget (null on a dry run or when nothing was forgotten)" }),
    summary: z.string(),
    candidates: z.array(ForgetCandidate).optional().openapi({ description: "On a dry run: what would go" }),
    forgotten: z.array(ForgetCandidate).optional().openapi({ description: "On a real run: what went" }),
  })
  .openapi("ForgetMatchingResult");
