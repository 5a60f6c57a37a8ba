import type { RouteHandler } from "@hono/zod-openapi";
import { deleteContainerTag } from "../../services/container-tags.ts";
import {
  exportContainerTag,
  ImportConflictError,
  ImportLineError,
  importContainerTag,
  parseImport,
} from "../../services/export.ts";
import {
  containerTagOverview,
  listContainerTagOverviews,
  saveTagSettings,
} from "../../store/container-tag-settings.ts";
import type { ContainerTagSettingsRow } from "../../store/schema/container-tag-settings.ts";
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

  const list: RouteHandler<typeof routes.listContainerTags, AppEnv> = async (c) => {
    const tags = await listContainerTagOverviews(deps.db, c.get("scope").tags);
    return c.json(
      tags.map((t) => ({
        id: t.containerTag,
        name: t.settings?.name ?? t.containerTag,
        containerTag: t.containerTag,
        description: null,
        createdAt: t.createdAt.toISOString(),
        updatedAt: t.updatedAt.toISOString(),
        isExperimental: false,
        isNova: t.containerTag.startsWith("sm_project_"),
        documentCount: t.documents,
        memoryCount: t.memories,
        lastActivityAt: t.lastActivityAt?.toISOString() ?? null,
      })),
      200,
    );
  };

  const get: RouteHandler<typeof routes.getContainerTag, AppEnv> = async (c) => {
    const { containerTag } = c.req.valid("param");
    const tag = await containerTagOverview(deps.db, containerTag);
    if (!tag) throw notFound("container tag");
    return c.json(presentSettings(containerTag, tag.settings, tag), 200);
  };

  const update: RouteHandler<typeof routes.updateContainerTag, AppEnv> = async (c) => {
    const { containerTag } = c.req.valid("param");
    const body = c.req.valid("json");
    // Only a tag that exists (content or settings) is updated: the OpenAPI document answers 404 otherwise.
    if (!(await containerTagOverview(deps.db, containerTag))) throw notFound("container tag");
    const saved = await saveTagSettings(deps.db, containerTag, {
      name: body.name,
      entityContext: body.entityContext,
      memoryFilesystemPaths: body.memoryFilesystemPaths,
      profileBuckets: body.profileBuckets,
    });
    return c.json(presentSettings(containerTag, saved, saved), 200);
  };

  return { remove, exportTag, importTag, list, get, update };
}

function presentSettings(
  containerTag: string,
  settings: ContainerTagSettingsRow | null,
  times: { createdAt: Date; updatedAt: Date },
) {
  return {
    containerTag,
    name: settings?.name ?? null,
    entityContext: settings?.entityContext ?? null,
    memoryFilesystemPaths: settings?.memoryFilesystemPaths ?? null,
    profileBuckets: settings?.profileBuckets ?? [],
    createdAt: times.createdAt.toISOString(),
    updatedAt: times.updatedAt.toISOString(),
  };
}
