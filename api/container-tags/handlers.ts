import type { RouteHandler } from "@hono/zod-openapi";
import { deleteContainerTag } from "../../services/container-tags.ts";
import {
  exportContainerTag,
  ImportConflictError,
  ImportLineError,
  importContainerTag,
  parseImport,
} from "../../services/export.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { ApiError, notFound } from "../errors.ts";
import type * as routes from "./routes.ts";

export function createContainerTagHandlers(deps: ApiDeps) {
  const remove: RouteHandler<typeof routes.deleteContainerTag, AppEnv> = async (c) => {
    const { containerTag } = c.req.valid("param");
    const deleted = await deleteContainerTag(deps, containerTag);
    if (!deleted) throw notFound("container tag");
    // success and the two counts under the names of Supermemory's OpenAPI document (checked by SDK 5).
    return c.json(
      {
        success: true,
        ...deleted,
        deletedDocumentsCount: deleted.deletedDocuments,
        deletedMemoriesCount: deleted.deletedMemories,
      },
      200,
    );
  };

  const exportTag: RouteHandler<typeof routes.exportContainerTag, AppEnv> = async (c) => {
    const { containerTag } = c.req.valid("param");
    const { files } = c.req.valid("query");
    const stream = await exportContainerTag(deps, containerTag, { files: files === "true" });
    if (!stream) throw notFound("container tag");
    const response = c.body(stream, 200, {
      "content-type": "application/x-ndjson; charset=utf-8",
      "content-disposition": `attachment; filename="${containerTag}.jsonl"`,
      "cache-control": "no-store",
    });
    // zod-openapi types only JSON and text responses; this one is a stream of JSON lines.
    return response as never;
  };

  const importTag: RouteHandler<typeof routes.importContainerTag, AppEnv> = async (c) => {
    const { containerTag } = c.req.valid("param");
    try {
      const parsed = await parseImport(c.req.raw.body);
      return c.json(await importContainerTag(deps, containerTag, parsed), 200);
    } catch (error) {
      if (error instanceof ImportLineError) {
        throw new ApiError(400, "validation_error", error.message, `line ${error.line}`);
      }
      if (error instanceof ImportConflictError)
        throw new ApiError(409, "conflict", error.message, "customId");
      throw error;
    }
  };

  return { remove, exportTag, importTag };
}
