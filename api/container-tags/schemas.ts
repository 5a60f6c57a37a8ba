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
