import type { RouteHandler } from "@hono/zod-openapi";
import { releaseFiles } from "../../services/document-files.ts";
import {
  type DocumentToSave,
  requeueForProcessing,
  saveDocumentForProcessing,
  updateDocumentForProcessing,
} from "../../services/documents.ts";
import { FileLinkRefusedError, fileUrl, NoStoredFileError, openFileLink } from "../../services/file-urls.ts";
import * as store from "../../store/documents.ts";
import { FilterError, type FilterNode } from "../../store/filters.ts";
import { DOCUMENT_PRIORITY } from "../../store/vocabulary.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { ApiError, badRequest, notFound } from "../errors.ts";
import type { KeyScope } from "../key-scope.ts";
import { ContainerTag, Metadata, tagsOf } from "../schemas.ts";
import { presentDocument, presentFullDocument } from "./present.ts";
import type * as routes from "./routes.ts";
import { ListBody } from "./schemas.ts";

export function createDocumentHandlers(deps: ApiDeps) {
  const { db, processing, log } = deps;

  /**
   * The runs of deleted documents stop and their files go. A document a scoped key shares with other tenants
   * only lost that key's tags (store.removeWithinScope): it goes on as it was.
   */
  async function afterDelete(removed: store.DeletedDocument[]) {
    const gone = store.deletedOnly(removed);
    await processing.stopDeleted(gone, "document deleted");
    await releaseFiles(
      deps,
      gone.map((r) => r.fileKey),
    );
  }

  /** Every write goes through here: the tags are checked against the caller's scope (403 outside it). */
  async function add(scope: KeyScope, input: DocumentToSave) {
    const defaultTags = scope.writeTags(input.containerTags);
    const url = input.source !== undefined && store.looksLikeUrl(input.source) ? input.source.trim() : null;
    const saved = await saveDocumentForProcessing(
      deps,
      { ...input, defaultTags, url },
      { scope: scope.tags },
    );
    return { id: saved.document.id, status: saved.document.status };
  }

  const addDocument: RouteHandler<typeof routes.addDocument, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const result = await add(c.get("scope"), {
      source: body.content,
      // One document at a time is someone waiting for it: it goes before batches, syncs and imports.
      priority: DOCUMENT_PRIORITY.interactive,
      customId: body.customId,
      containerTags: tagsOf(body),
      metadata: body.metadata ?? {},
      filepath: body.filepath,
      entityContext: body.entityContext,
      endUserId: body.endUserId,
    });
    return c.json(result, 200);
  };

  const batchAdd: RouteHandler<typeof routes.batchAdd, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const sharedTags = tagsOf(body);
    const scope = c.get("scope");
    // Refuse the whole batch up front if it names a foreign tag anywhere.
    scope.check(sharedTags);
    for (const item of body.documents) if (typeof item !== "string") scope.check(tagsOf(item));
    const results: { id: string; status: string; error?: string }[] = [];
    for (const item of body.documents) {
      const doc = typeof item === "string" ? { content: item } : item;
      try {
        const itemTags = typeof item === "string" ? [] : tagsOf(item);
        results.push(
          await add(scope, {
            source: doc.content,
            priority: DOCUMENT_PRIORITY.bulk,
            customId: typeof item === "string" ? undefined : item.customId,
            containerTags: itemTags.length ? itemTags : sharedTags,
            metadata: { ...body.metadata, ...(typeof item === "string" ? {} : item.metadata) },
            filepath: (typeof item === "string" ? undefined : item.filepath) ?? body.filepath,
            endUserId: (typeof item === "string" ? undefined : item.endUserId) ?? body.endUserId,
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

  const uploadFile: RouteHandler<typeof routes.uploadFile, AppEnv> = async (c) => {
    const form = c.req.valid("form");
    const scope = c.get("scope");
    const containerTags = [
      ...new Set([...(form.containerTag ? [form.containerTag] : []), ...parseTagList(form.containerTags)]),
    ];
    const metadata = parseMetadataField(form.metadata);
    // Refused before anything is stored: a tag outside the key's scope stores no bytes.
    scope.check(containerTags);
    // An empty file is accepted like any other: processing ends it `failed` ("the content is empty"), visibly.
    const declaredMime = form.mimeType || form.file.type || null;
    const result = await add(scope, {
      priority: DOCUMENT_PRIORITY.interactive,
      file: {
        bytes: Buffer.from(await form.file.arrayBuffer()),
        name: form.file.name || null,
        contentType: declaredMime,
        mimeType: hintedMime(form.fileType) ?? declaredMime,
      },
      customId: form.customId,
      containerTags,
      metadata,
      filepath: form.filepath,
      endUserId: form.endUserId,
    });
    return c.json(result, 200);
  };

  const listDocuments: RouteHandler<typeof routes.listDocuments, AppEnv> = async (c) => {
    // The body is optional: parse again so defaults apply when it was left out.
    const q = ListBody.parse(c.req.valid("json") ?? {});
    const scope = c.get("scope");
    scope.check(q.containerTags ?? []);
    const { rows, total } = await store
      .listDocuments(db, {
        containerTags: q.containerTags,
        tagMode: q.containerTagsOperator,
        sort: q.sort,
        order: q.order,
        limit: q.limit,
        page: q.page,
        statuses: q.statuses,
        filters: q.filters as FilterNode | undefined,
        filepath: q.filepath,
        scope: scope.tags,
      })
      .catch((error: unknown) => {
        throw error instanceof FilterError ? badRequest(error.message, "filters") : error;
      });
    return c.json(
      {
        memories: rows.map((r) => presentDocument(r, { content: q.includeContent, scope: scope.tags })),
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
    const scope = c.get("scope").tags;
    const rows = await store.unfinishedDocuments(db, 500, scope);
    return c.json(
      // With their status history: the run and stage times are what a caller watching processing needs.
      {
        documents: rows.map((r) => presentDocument(r, { content: false, history: true, scope })),
        totalCount: rows.length,
      },
      200,
    );
  };

  const getDocument: RouteHandler<typeof routes.getDocument, AppEnv> = async (c) => {
    const scope = c.get("scope").tags;
    const row = await store.findDocument(db, c.req.valid("param").id, scope);
    if (!row) throw notFound("document");
    return c.json(presentFullDocument(row, scope), 200);
  };

  const listChunks: RouteHandler<typeof routes.listChunks, AppEnv> = async (c) => {
    const row = await store.findDocument(db, c.req.valid("param").id, c.get("scope").tags);
    if (!row) throw notFound("document");
    const chunks = await store.documentChunks(db, row.id);
    // documentId, total, type and createdAt as Supermemory's OpenAPI document requires (SDK 5 checks them).
    // Every chunk is text: images and audio are indexed by the text read from them.
    return c.json(
      {
        documentId: row.id,
        total: chunks.length,
        chunks: chunks.map((k) => ({ ...k, type: "text" as const, createdAt: k.createdAt.toISOString() })),
      },
      200,
    );
  };

  const documentFileUrl: RouteHandler<typeof routes.documentFileUrl, AppEnv> = async (c) => {
    // A scoped key finds only documents of its tags: another tenant's id is simply not found.
    const row = await store.findDocument(db, c.req.valid("param").id, c.get("scope").tags);
    if (!row) throw notFound("document");
    try {
      const link = await fileUrl(deps, row, c.req.valid("query").expiresIn);
      return c.json({ url: link.url, expiresAt: link.expiresAt.toISOString() }, 200);
    } catch (error) {
      if (error instanceof NoStoredFileError) throw new ApiError(404, "not_found", error.message);
      throw error;
    }
  };

  const reprocessDocument: RouteHandler<typeof routes.reprocessDocument, AppEnv> = async (c) => {
    const row = await requeueForProcessing(deps, c.req.valid("param").id, { scope: c.get("scope").tags });
    if (!row) throw notFound("document");
    return c.json({ id: row.id, status: row.status }, 200);
  };

  const updateDocument: RouteHandler<typeof routes.updateDocument, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    const body = c.req.valid("json");
    const scope = c.get("scope");
    const before = await store.findDocument(db, id, scope.tags);
    if (!before) throw notFound("document");
    const tags = tagsOf(body);
    scope.check(tags);
    const saved = await updateDocumentForProcessing(
      deps,
      before.id,
      {
        content: body.content,
        metadata: body.metadata,
        containerTags: tags.length ? tags : undefined,
        customId: body.customId,
        title: body.title,
        filepath: body.filepath,
      },
      { scope: scope.tags },
    );
    if (!saved) throw notFound("document");
    return c.json({ id: saved.document.id, status: saved.document.status }, 200);
  };

  const deleteDocument: RouteHandler<typeof routes.deleteDocument, AppEnv> = async (c) => {
    const row = await store.deleteDocument(db, c.req.valid("param").id, c.get("scope").tags);
    if (!row) throw notFound("document");
    await afterDelete([row]);
    return c.body(null, 204);
  };

  const deleteBulk: RouteHandler<typeof routes.deleteBulk, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const scope = c.get("scope");
    if (!body.ids) {
      // By tags, by filepath, or by both (the documents carrying one of the tags under that filepath).
      if (body.containerTags) scope.check(body.containerTags);
      const removed = body.filepath
        ? await store.deleteDocumentsUnderPath(
            db,
            { filepath: body.filepath, containerTags: body.containerTags },
            scope.tags,
          )
        : await store.deleteDocumentsByTags(db, body.containerTags ?? [], scope.tags);
      await afterDelete(removed);
      return c.json(
        {
          success: true,
          deletedCount: removed.length,
          ...(body.containerTags ? { containerTags: body.containerTags } : {}),
        },
        200,
      );
    }
    const ids = [...new Set(body.ids)];
    if (body.containerTags) scope.check(body.containerTags);
    // With containerTags or a filepath, only those of the given documents carrying one of the tags (under the
    // path) go; an id that then matches nothing counts as not found. A customId names every document of the
    // scope that holds it (for an admin, each tenant's that uses it: containerTags say whose).
    const removed = await store.deleteDocumentsByIds(db, ids, scope.tags, {
      underPath: body.filepath,
      containerTags: body.containerTags,
    });
    await afterDelete(removed);
    const deleted = new Set(removed.flatMap((r) => [r.id, ...(r.customId ? [r.customId] : [])]));
    const errors = ids.filter((id) => !deleted.has(id)).map((id) => ({ id, error: "not found" }));
    return c.json(
      {
        success: errors.length === 0,
        // Each document removed (or, for a scoped key, untagged), not each id given: one customId can name several.
        deletedCount: removed.length,
        ...(errors.length ? { errors } : {}),
        ...(body.containerTags ? { containerTags: body.containerTags } : {}),
      },
      200,
    );
  };

  return {
    addDocument,
    uploadFile,
    batchAdd,
    listDocuments,
    listProcessing,
    getDocument,
    listChunks,
    documentFileUrl,
    reprocessDocument,
    updateDocument,
    deleteDocument,
    deleteBulk,
  };
}

export function createFileLinkHandler(
  deps: ApiDeps,
): RouteHandler<typeof routes.downloadDocumentFile, AppEnv> {
  return async (c) => {
    const { expires, signature } = c.req.valid("query");
    let file: Awaited<ReturnType<typeof openFileLink>>;
    try {
      file = await openFileLink(deps, c.req.valid("param").id, { expires, signature });
    } catch (error) {
      if (!(error instanceof FileLinkRefusedError)) throw error;
      if (error.reason === "gone") throw new ApiError(404, "not_found", error.message);
      throw new ApiError(403, "forbidden", error.message);
    }
    return c.body(new Uint8Array(file.bytes), 200, {
      "content-type": file.contentType,
      "content-disposition": file.disposition,
      // The bytes are anyone's upload, served from the API's (and the console's) origin: never rendered
      // as a page there, never guessed into another type, never kept by a shared cache.
      "content-security-policy": "sandbox",
      "x-content-type-options": "nosniff",
      "cache-control": "private, no-store",
    });
  };
}

/** The SDK's `fileType` names a processing kind; only the text-like kinds need a hint, bytes decide the rest. */
function hintedMime(fileType: string | undefined): string | null {
  if (fileType === "webpage") return "text/html";
  if (fileType === "email") return "message/rfc822";
  if (fileType === "text") return "text/plain";
  return null;
}

/** containerTags arrives as a form field: a JSON array or a comma-separated list. */
function parseTagList(raw: string | undefined): string[] {
  if (!raw?.trim()) return [];
  let tags: unknown;
  try {
    tags = raw.trim().startsWith("[")
      ? JSON.parse(raw)
      : raw
          .split(",")
          .map((t) => t.trim())
          .filter(Boolean);
  } catch {
    throw badRequest("containerTags is not a JSON array", "containerTags");
  }
  const parsed = ContainerTag.array().max(100).safeParse(tags);
  if (!parsed.success) throw badRequest(`containerTags: ${parsed.error.issues[0]?.message}`, "containerTags");
  return parsed.data;
}

function parseMetadataField(raw: string | undefined) {
  if (!raw?.trim()) return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw badRequest("metadata is not valid JSON", "metadata");
  }
  const parsed = Metadata.safeParse(value);
  if (!parsed.success) throw badRequest(`metadata: ${parsed.error.issues[0]?.message}`, "metadata");
  return parsed.data;
}
