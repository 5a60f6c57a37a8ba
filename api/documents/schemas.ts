import { z } from "@hono/zod-openapi";
import { documentStatuses } from "../../store/vocabulary.ts";
import { ContainerTag, Filters, Metadata } from "../schemas.ts";

const CustomId = z.string().min(1).max(255);
const EndUserId = z.string().min(1).max(255).openapi({
  description:
    "Which end user of your application added this (e.g. your user's id); search can be limited to one end user with endUserId",
});
const TaskType = z.enum(["memory", "superrag"]).optional().openapi({
  description: "Accepted for SDK compatibility; both values process the document the same way here.",
});

export const AddDocumentBody = z
  .object({
    content: z.string().min(1).openapi({ description: "Text, markdown, or an http(s) URL to fetch" }),
    containerTag: ContainerTag.optional(),
    containerTags: z.array(ContainerTag).max(100).optional(),
    customId: CustomId.optional(),
    metadata: Metadata.optional(),
    filepath: z.string().max(1000).optional(),
    entityContext: z.string().max(10_000).optional(),
    endUserId: EndUserId.optional(),
    taskType: TaskType,
  })
  .openapi("AddDocument");

export const AddDocumentResponse = z.object({ id: z.string(), status: z.string() }).openapi("DocumentStatus");

const BatchItem = AddDocumentBody.omit({ entityContext: true });

export const BatchBody = z
  .object({
    documents: z.union([z.array(BatchItem).min(1).max(500), z.array(z.string().min(1)).min(1).max(500)]),
    containerTag: ContainerTag.optional(),
    containerTags: z.array(ContainerTag).max(100).optional(),
    metadata: Metadata.optional(),
    filepath: z.string().max(1000).optional(),
    endUserId: EndUserId.optional(),
    taskType: TaskType,
    content: z.null().optional(),
  })
  .openapi("BatchAddDocuments");

export const BatchResponse = z
  .object({
    results: z.array(
      z.object({
        id: z.string(),
        status: z.string(),
        error: z.string().optional(),
        details: z.string().optional(),
      }),
    ),
    success: z.number(),
    failed: z.number(),
  })
  .openapi("BatchAddResult");

const numberish = (def: number, max: number) => z.coerce.number().int().min(1).max(max).default(def);

export const ListBody = z
  .object({
    limit: numberish(50, 200),
    page: numberish(1, 1_000_000),
    containerTags: z.array(ContainerTag).max(100).optional(),
    containerTagsOperator: z.enum(["any", "all"]).default("any").openapi({
      description:
        "With several containerTags: 'any' lists documents carrying at least one of them (default), 'all' only those carrying every one.",
    }),
    sort: z.enum(["createdAt", "updatedAt"]).default("createdAt"),
    order: z.enum(["desc", "asc"]).default("desc"),
    includeContent: z.boolean().default(false),
    filters: Filters.optional(),
    filepath: z.string().optional().openapi({
      description: "Documents whose filepath is this (exact), or starts with it when it ends in '/'",
    }),
    statuses: z
      .array(z.enum(documentStatuses))
      .min(1)
      .max(documentStatuses.length)
      .optional()
      .openapi({ description: "Extension: only documents in one of these processing statuses" }),
  })
  .openapi("ListDocuments");

export const Status = z.enum(documentStatuses);

export const DocumentJson = z
  .object({
    id: z.string(),
    customId: z.string().nullable(),
    title: z.string().nullable(),
    type: z.string(),
    status: Status,
    content: z.string().nullable().optional(),
    summary: z.string().nullable(),
    url: z.string().nullable(),
    filepath: z.string().nullable(),
    fileName: z.string().nullable(),
    mimeType: z.string().nullable(),
    fileSize: z.number().nullable(),
    containerTags: z.array(z.string()),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    fileMetadata: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
      .nullable()
      .openapi({
        description: "Facts read from the file: pages, durationSeconds, codecs, author, encoding, ...",
      }),
    connectionId: z.string().nullable(),
    errorReason: z.string().nullable(),
    embeddingModel: z.string().nullable(),
    statusHistory: z.array(z.object({ status: Status, at: z.string(), run: z.number() })).optional(),
    memoryExtraction: z
      .object({
        run: z.number(),
        status: z.enum(["done", "skipped", "failed"]),
        memories: z.number(),
        reason: z.string().optional(),
        at: z.string(),
      })
      .nullable()
      .optional()
      .openapi({
        description:
          "With an LLM configured (LLM_BASE_URL): what memory extraction made of the document's latest run. " +
          "Shown with the full document (GET /v3/documents/{id}); null when it did not run.",
      }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Document");

/** GET /v3/documents/{id}: the document with the fields the official SDK's DocumentGetResponse requires. */
export const FullDocumentJson = DocumentJson.extend({
  source: z
    .string()
    .nullable()
    .openapi({ description: "The connector a synced document came from; null for the API" }),
  ogImage: z.null(),
  raw: z.null(),
  spatialPoint: z.null(),
  taskType: z.enum(["memory", "superrag"]).openapi({
    description: "Always memory: every document is processed the same way (superrag is accepted on writes)",
  }),
  dreamingStatus: z.enum(["dreaming", "done"]).openapi({
    description: "dreaming until processing (memory extraction included) has finished, done or failed",
  }),
}).openapi("FullDocument");

export const ListResponse = z
  .object({
    memories: z.array(DocumentJson),
    pagination: z.object({
      currentPage: z.number(),
      totalPages: z.number(),
      totalItems: z.number(),
      limit: z.number(),
    }),
  })
  .openapi("DocumentList");

export const ProcessingResponse = z
  .object({ documents: z.array(DocumentJson), totalCount: z.number() })
  .openapi("ProcessingDocuments");

export const UpdateBody = z
  .object({
    content: z.string().min(1).optional(),
    metadata: Metadata.optional(),
    containerTag: ContainerTag.optional(),
    containerTags: z.array(ContainerTag).max(100).optional(),
    customId: CustomId.optional(),
    title: z.string().max(500).optional(),
    filepath: z.string().max(1000).optional(),
    taskType: TaskType,
  })
  .openapi("UpdateDocument");

export const BulkDeleteBody = z
  .object({
    ids: z.array(z.string().min(1)).min(1).max(1000).optional(),
    containerTags: z.array(ContainerTag).min(1).max(100).optional().openapi({
      description:
        "Documents carrying any of these tags. With ids it narrows them: only those of the given documents that carry one of the tags go (a customId several tenants use deletes only theirs of these tags)",
    }),
    filepath: z.string().min(1).max(1000).optional().openapi({
      description:
        "Documents whose filepath is this (exact), or starts with it when it ends in '/'. Alone it selects the documents; with ids or containerTags it narrows them",
    }),
  })
  .refine((b) => Boolean(b.ids || b.containerTags || b.filepath), {
    message: "give ids, containerTags or filepath",
    path: ["ids"],
  })
  .openapi("BulkDelete");

export const BulkDeleteResponse = z
  .object({
    success: z.boolean(),
    deletedCount: z.number().openapi({
      description:
        "Documents deleted (for a scoped key, also those it only untagged): a customId several documents hold counts each of them",
    }),
    containerTags: z.array(z.string()).optional(),
    errors: z.array(z.object({ id: z.string(), error: z.string() })).optional(),
  })
  .openapi("BulkDeleteResult");

export const IdParam = z.object({
  id: z
    .string()
    .min(1)
    .openapi({ param: { name: "id", in: "path" } }),
});

/** Multipart fields of POST /v3/documents/file, as the official SDK's documents.uploadFile sends them. */
export const UploadForm = z
  .object({
    file: z.instanceof(File).openapi({ type: "string", format: "binary" }),
    containerTag: ContainerTag.optional(),
    containerTags: z
      .string()
      .optional()
      .openapi({ description: 'JSON array (["a","b"]) or comma-separated list of container tags' }),
    metadata: z.string().optional().openapi({ description: "JSON object of metadata" }),
    customId: CustomId.optional(),
    fileType: z
      .string()
      .max(50)
      .optional()
      .openapi({ description: "Hint for text-like files (text, webpage, email)" }),
    mimeType: z.string().max(255).optional(),
    filepath: z.string().max(1000).optional(),
    endUserId: EndUserId.optional(),
    taskType: TaskType,
    useAdvancedProcessing: z.string().optional(),
  })
  .openapi("UploadFile");

export const ChunksResponse = z
  .object({
    documentId: z.string(),
    total: z.number(),
    chunks: z.array(
      z.object({
        id: z.string(),
        position: z.number(),
        content: z.string(),
        type: z
          .literal("text")
          .openapi({ description: "Always text: images and audio are indexed by their text" }),
        metadata: z.record(z.string(), z.union([z.string(), z.number()])),
        embeddingModel: z.string().nullable(),
        createdAt: z.string(),
      }),
    ),
  })
  .openapi("DocumentChunks");

export const FileUrlQuery = z.object({
  expiresIn: z.coerce
    .number()
    .int()
    .min(1)
    .max(86_400)
    .optional()
    .openapi({
      param: { name: "expiresIn", in: "query" },
      description: "Extension: seconds the link stays valid (default and ceiling 86400, 24 hours)",
    }),
});

export const FileUrlResponse = z
  .object({
    url: z
      .string()
      .openapi({ description: "Downloads the original file, without an API key, until it expires" }),
    expiresAt: z.string().openapi({ description: "Extension: when the link stops working (ISO 8601)" }),
  })
  .openapi("DocumentFileUrl");

export const FileLinkQuery = z.object({
  expires: z.coerce
    .number()
    .int()
    .openapi({ param: { name: "expires", in: "query" }, description: "Unix time (seconds) the link ends" }),
  signature: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: "signature", in: "query" } }),
});
