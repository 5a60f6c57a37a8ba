import type { RouteHandler } from "@hono/zod-openapi";
import { and, eq, type SQL } from "drizzle-orm";
import * as store from "../../store/documents.ts";
import { compileFilter, FilterError, type FilterNode } from "../../store/filters.ts";
import { documents } from "../../store/schema/index.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { badRequest, notFound } from "../errors.ts";
import { tagsOf } from "../schemas.ts";
import { presentDocument } from "./present.ts";
import type * as routes from "./routes.ts";
import { ListBody } from "./schemas.ts";

export function documentFilterSql(filters: FilterNode | undefined): SQL | undefined {
  if (!filters) return undefined;
  try {
    return compileFilter(documents.metadata as unknown as SQL, filters);
  } catch (error) {
    if (error instanceof FilterError) throw badRequest(error.message, "filters");
    throw error;
  }
}

export function createDocumentHandlers(deps: ApiDeps) {
  const { db, processing, log } = deps;

  /** Hands a saved document to Temporal. If Temporal is unreachable the reconciler picks it up later. */
  async function startProcessing(doc: store.DocumentRow, previousRun?: number) {
    if (previousRun) {
      await processing
        .stop({ documentId: doc.id, run: previousRun }, "superseded by a newer version")
        .catch((err) => log.debug({ err }, "previous run already finished"));
    }
    try {
      await processing.start({ documentId: doc.id, run: doc.processingRun });
    } catch (err) {
      log.warn({ err, documentId: doc.id }, "could not start processing now; the reconciler will retry");
    }
  }

  async function add(input: store.NewDocumentInput) {
    const before = input.customId ? await store.findDocument(db, input.customId) : undefined;
    const saved = await store.saveDocument(db, {
      ...input,
      url: store.looksLikeUrl(input.source) ? input.source.trim() : null,
    });
    if (saved.process) await startProcessing(saved.document, before?.processingRun);
    return { id: saved.document.id, status: saved.document.status };
  }

  const addDocument: RouteHandler<typeof routes.addDocument, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const result = await add({
      source: body.content,
      customId: body.customId,
      containerTags: tagsOf(body),
      metadata: body.metadata ?? {},
      filepath: body.filepath,
      entityContext: body.entityContext,
    });
    return c.json(result, 200);
  };

  const batchAdd: RouteHandler<typeof routes.batchAdd, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const sharedTags = tagsOf(body);
    const results: { id: string; status: string; error?: string }[] = [];
    for (const item of body.documents) {
      const doc = typeof item === "string" ? { content: item } : item;
      try {
        const itemTags = typeof item === "string" ? [] : tagsOf(item);
        results.push(
          await add({
            source: doc.content,
            customId: typeof item === "string" ? undefined : item.customId,
            containerTags: itemTags.length ? itemTags : sharedTags,
            metadata: { ...body.metadata, ...(typeof item === "string" ? {} : item.metadata) },
            filepath: (typeof item === "string" ? undefined : item.filepath) ?? body.filepath,
          }),
        );
      } catch (err) {
        log.warn({ err }, "batch item failed");
        results.push({ id: "", status: "failed", error: (err as Error).message });
      }
    }
    const failed = results.filter((r) => r.error).length;
    return c.json({ results, success: results.length - failed, failed }, 200);
  };

  const listDocuments: RouteHandler<typeof routes.listDocuments, AppEnv> = async (c) => {
    // The body is optional: parse again so defaults apply when it was left out.
    const q = ListBody.parse(c.req.valid("json") ?? {});
    const where = and(
      documentFilterSql(q.filters as FilterNode | undefined),
      q.filepath ? eq(documents.filepath, q.filepath) : undefined,
    );
    const { rows, total } = await store.listDocuments(db, {
      containerTags: q.containerTags,
      tagMode: q.containerTagsOperator,
      sort: q.sort,
      order: q.order,
      limit: q.limit,
      page: q.page,
      where,
    });
    return c.json(
      {
        memories: rows.map((r) => presentDocument(r, { content: q.includeContent })),
        pagination: {
          currentPage: q.page,
          totalPages: Math.ceil(total / q.limit),
          totalItems: total,
          limit: q.limit,
        },
      },
      200,
    );
  };

  const listProcessing: RouteHandler<typeof routes.listProcessing, AppEnv> = async (c) => {
    const rows = await store.unfinishedDocuments(db, 500);
    return c.json(
      { documents: rows.map((r) => presentDocument(r, { content: false })), totalCount: rows.length },
      200,
    );
  };

  const getDocument: RouteHandler<typeof routes.getDocument, AppEnv> = async (c) => {
    const row = await store.findDocument(db, c.req.valid("param").id);
    if (!row) throw notFound("document");
    return c.json(presentDocument(row, { content: true, history: true }), 200);
  };

  const updateDocument: RouteHandler<typeof routes.updateDocument, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    const body = c.req.valid("json");
    const tags = tagsOf(body);
    const before = await store.findDocument(db, id);
    if (!before) throw notFound("document");
    const saved = await store.updateDocument(db, before.id, {
      content: body.content,
      metadata: body.metadata,
      containerTags: tags.length ? tags : undefined,
      customId: body.customId,
      title: body.title,
      filepath: body.filepath,
    });
    if (!saved) throw notFound("document");
    if (saved.process) await startProcessing(saved.document, before.processingRun);
    return c.json({ id: saved.document.id, status: saved.document.status }, 200);
  };

  const deleteDocument: RouteHandler<typeof routes.deleteDocument, AppEnv> = async (c) => {
    const row = await store.deleteDocument(db, c.req.valid("param").id);
    if (!row) throw notFound("document");
    if (!store.terminalStatuses.includes(row.status)) {
      await processing
        .stop({ documentId: row.id, run: row.processingRun }, "document deleted")
        .catch((err) => log.debug({ err }, "no run to stop"));
    }
    return c.body(null, 204);
  };

  const deleteBulk: RouteHandler<typeof routes.deleteBulk, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    if (body.containerTags) {
      const deletedCount = await store.deleteDocumentsByTags(db, body.containerTags);
      return c.json({ success: true, deletedCount, containerTags: body.containerTags }, 200);
    }
    const ids = [...new Set(body.ids ?? [])];
    const deleted = new Set(await store.deleteDocumentsByIds(db, ids));
    const errors = ids.filter((id) => !deleted.has(id)).map((id) => ({ id, error: "not found" }));
    return c.json(
      {
        success: errors.length === 0,
        deletedCount: ids.length - errors.length,
        ...(errors.length ? { errors } : {}),
      },
      200,
    );
  };

  return {
    addDocument,
    batchAdd,
    listDocuments,
    listProcessing,
    getDocument,
    updateDocument,
    deleteDocument,
    deleteBulk,
  };
}
