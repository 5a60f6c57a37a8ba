import { z } from "@hono/zod-openapi";
import { ContainerTag } from "../schemas.ts";

export const TagParam = z.object({
  containerTag: ContainerTag.openapi({ param: { name: "containerTag", in: "path" } }),
});

export const DeletedTag = z
  .object({
    containerTag: z.string(),
    deletedDocuments: z
      .number()
      .openapi({ description: "Documents that carried only this tag: deleted with their chunks" }),
    untaggedDocuments: z
      .number()
      .openapi({ description: "Documents shared with other tags: kept there, the tag removed from them" }),
    deletedMemories: z.number().openapi({ description: "Memories of the tag, every version" }),
    success: z.literal(true),
    deletedDocumentsCount: z.number().openapi({ description: "deletedDocuments, as SDK 5 names it" }),
    deletedMemoriesCount: z.number().openapi({ description: "deletedMemories, as SDK 5 names it" }),
  })
  .openapi("DeletedContainerTag");

export const ExportQuery = z.object({
  files: z
    .enum(["true", "false"])
    .default("true")
    .openapi({
      param: { name: "files", in: "query" },
      description: "false leaves the original files' bytes out of the document lines",
    }),
});

export const ImportResult = z
  .object({
    containerTag: z.string(),
    documents: z.object({ imported: z.number(), skipped: z.number() }),
    memories: z.object({ imported: z.number(), skipped: z.number() }),
  })
  .openapi("ImportedContainerTag");

export const JsonLines = z.string().openapi({
  description:
    'JSON Lines: {"kind":"header","format":"memory-service-export","version":1,"containerTag","exportedAt","counts":{"documents","memories"}}, then one {"kind":"document",...} line per document (with `file`: the original bytes in base64, when stored), then one {"kind":"memory",...} line per memory version, ordered by rootId then version',
});

const ProfileBucket = z
  .object({
    key: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[a-z0-9][a-z0-9_-]*$/, "a lower-case slug: letters, digits, '_' and '-'")
      .openapi({ description: "Stable slug for the bucket, stored on each memory" }),
    description: z
      .string()
      .max(2000)
      .default("")
      .openapi({ description: "What belongs in this bucket (guides a classifier)" }),
  })
  .openapi("ProfileBucket");

const ProfileBuckets = z
  .array(ProfileBucket)
  .max(50)
  .refine((buckets) => new Set(buckets.map((b) => b.key)).size === buckets.length, "bucket keys must differ");

export const TagSettingsBody = z
  .object({
    name: z.string().min(1).max(100).optional().openapi({
      description: "Display name; the container tag itself does not change",
    }),
    entityContext: z.string().max(1500).nullable().optional().openapi({
      description: "Context for processing the tag's documents that carry none of their own; null clears it",
    }),
    memoryFilesystemPaths: z.array(z.string().max(1000)).max(100).nullable().optional().openapi({
      description: "Accepted and returned; this service has no mounted filesystem to apply it to",
    }),
    profileBuckets: ProfileBuckets.optional().openapi({
      description: "The tag's own profile buckets, replacing the list set before",
    }),
  })
  .openapi("ContainerTagSettingsUpdate");

export const TagSettings = z
  .object({
    containerTag: z.string(),
    name: z.string().nullable(),
    entityContext: z.string().nullable(),
    memoryFilesystemPaths: z.array(z.string()).nullable(),
    profileBuckets: z.array(z.object({ key: z.string(), description: z.string() })),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("ContainerTagSettings");

export const TagList = z
  .array(
    z.object({
      id: z.string().openapi({ description: "The container tag (tags have no other identity here)" }),
      name: z.string().openapi({ description: "The display name set, else the tag" }),
      containerTag: z.string(),
      description: z.string().nullable().openapi({ description: "Always null: no summaries are kept" }),
      createdAt: z.string(),
      updatedAt: z.string(),
      isExperimental: z.boolean(),
      isNova: z.boolean().openapi({ description: "Whether the tag starts with sm_project_" }),
      documentCount: z.number(),
      memoryCount: z.number().openapi({ description: "Live memories: latest versions, not forgotten" }),
      lastActivityAt: z.string().nullable(),
    }),
  )
  .openapi("ContainerTagList");
