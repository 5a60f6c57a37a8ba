import type { RouteHandler } from "@hono/zod-openapi";
import { forgetMatching as forgetMatchingMemories } from "../../services/forget-matching.ts";
import {
  createMemories,
  forgetMemory,
  MemoryAlreadyForgottenError,
  type MemoryDeps,
  MemoryNotFoundError,
  updateMemory,
} from "../../services/memories.ts";
import type { SearchDeps } from "../../services/search-documents.ts";
import { findMemory, listMemories } from "../../store/memory-list.ts";
import type { MemoryFields } from "../../store/schema/index.ts";
import type { AppEnv } from "../deps.ts";
import { ApiError, notFound } from "../errors.ts";
import { tagsOf } from "../schemas.ts";
import type * as routes from "./routes.ts";
import { ListMemoriesBody } from "./schemas.ts";

const dateOrNull = (value: string | null | undefined) =>
  value === undefined ? undefined : value === null ? null : new Date(value);

async function translate<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof MemoryNotFoundError) throw notFound("memory");
    if (error instanceof MemoryAlreadyForgottenError) throw new ApiError(409, "conflict", error.message);
    throw error;
  }
}

export function createMemoryHandlers(deps: MemoryDeps & SearchDeps) {
  const create: RouteHandler<typeof routes.createMemories, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    c.get("scope").check([body.containerTag]);
    const rows = await createMemories(
      deps,
      body.containerTag,
      body.memories.map((m) => ({ ...m, forgetAfter: dateOrNull(m.forgetAfter) })),
    );
    return c.json(
      {
        documentId: null,
        memories: rows.map((m) => ({
          id: m.id,
          memory: m.content,
          isStatic: m.isStatic,
          createdAt: m.createdAt.toISOString(),
          forgetAfter: m.forgetAfter?.toISOString() ?? null,
          forgetReason: m.forgetReason,
          metadata: m.metadata,
          version: m.version,
        })),
      },
      // 201 as Supermemory's OpenAPI document gives it: SDK 5 checks the status; SDK 4 accepts any 2xx.
      201,
    );
  };

  const forget: RouteHandler<typeof routes.forgetMemory, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    c.get("scope").check([body.containerTag]);
    const memory = await translate(() =>
      forgetMemory(
        deps,
        body.containerTag,
        { id: body.id, content: body.content },
        body.reason ?? null,
        c.get("scope").tags,
      ),
    );
    return c.json({ id: memory.id, forgotten: true }, 200);
  };

  const update: RouteHandler<typeof routes.updateMemory, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    c.get("scope").check([body.containerTag]);
    const metadata =
      body.metadata || body.temporalContext
        ? { ...body.metadata, ...(body.temporalContext ? flattenTemporal(body.temporalContext) : {}) }
        : undefined;
    const row = await translate(() =>
      updateMemory(
        deps,
        body.containerTag,
        { id: body.id, content: body.content },
        {
          newContent: body.newContent,
          metadata,
          forgetAfter: dateOrNull(body.forgetAfter),
          forgetReason: body.forgetReason,
        },
      ),
    );
    return c.json(
      {
        id: row.id,
        createdAt: row.createdAt.toISOString(),
        forgetAfter: row.forgetAfter?.toISOString() ?? null,
        forgetReason: row.forgetReason,
        memory: row.content,
        metadata: row.metadata,
        parentMemoryId: row.parentId,
        rootMemoryId: row.rootId,
        version: row.version,
      },
      200,
    );
  };

  const list: RouteHandler<typeof routes.listMemories, AppEnv> = async (c) => {
    // The body is optional: parse again so defaults apply when it was left out.
    const q = ListMemoriesBody.parse(c.req.valid("json") ?? {});
    const scope = c.get("scope");
    const containerTags = tagsOf(q);
    scope.check(containerTags);
    const { rows, total } = await listMemories(deps.db, {
      containerTags,
      scope: scope.tags,
      includeHistory: q.includeHistory,
      includeForgotten: q.includeForgotten,
      sort: q.sort,
      order: q.order,
      limit: q.limit,
      page: q.page,
    });
    return c.json(
      {
        memories: rows.map(presentMemory),
        memoryEntries: presentMemoryEntries(rows),
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

  const get: RouteHandler<typeof routes.getMemory, AppEnv> = async (c) => {
    const row = await findMemory(deps.db, c.req.valid("param").id, c.get("scope").tags);
    if (!row) throw notFound("memory");
    return c.json(presentMemory(row), 200);
  };

  const forgetMatching: RouteHandler<typeof routes.forgetMatching, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const scope = c.get("scope");
    scope.check([body.containerTag]);
    return c.json(await forgetMatchingMemories(deps, body, scope.tags), 200);
  };

  return { create, forget, update, list, get, forgetMatching };
}

/** A stored memory in the shape POST /v4/memories answers, with its container, state and links. */
function presentMemory(m: MemoryFields) {
  const expired = m.forgetAfter !== null && m.forgetAfter.getTime() <= Date.now();
  return {
    id: m.id,
    memory: m.content,
    isStatic: m.isStatic,
    createdAt: m.createdAt.toISOString(),
    forgetAfter: m.forgetAfter?.toISOString() ?? null,
    version: m.version,
    containerTag: m.containerTag,
    metadata: m.metadata,
    isForgotten: m.isForgotten || expired,
    forgetReason: m.forgetReason,
    parentId: m.parentId,
    rootId: m.rootId,
    isLatest: m.isLatest,
    relation: m.relation,
    relatedTo: m.relatedTo,
    sourceDocumentId: m.sourceDocumentId,
    updatedAt: m.updatedAt.toISOString(),
  };
}

/**
 * The same memory as a `memoryEntries` item of Supermemory's OpenAPI document (what SDK 5 reads and checks):
 * its space is the container tag, there is one organisation, and `history` holds the earlier versions of
 * the memory found on the same page (with `includeHistory`; otherwise only latest versions are listed).
 */
function presentMemoryEntries(page: MemoryFields[]) {
  const versions = new Map<string, MemoryFields[]>();
  for (const m of page) {
    const root = m.rootId ?? m.id;
    const group = versions.get(root);
    if (group) group.push(m);
    else versions.set(root, [m]);
  }
  return page.map((m) => presentMemoryEntry(m, versions.get(m.rootId ?? m.id) ?? []));
}

function presentMemoryEntry(m: MemoryFields, sameRoot: MemoryFields[]) {
  const temporal = Object.fromEntries(
    Object.entries(m.metadata ?? {}).filter(([k]) => k === "documentDate" || k === "eventDate"),
  );
  return {
    id: m.id,
    memory: m.content,
    version: m.version,
    isLatest: m.isLatest,
    isForgotten: m.isForgotten || (m.forgetAfter !== null && m.forgetAfter.getTime() <= Date.now()),
    isStatic: m.isStatic,
    isInference: null,
    createdAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
    spaceId: m.containerTag,
    orgId: "default",
    sourceCount: m.sourceDocumentId ? 1 : 0,
    parentMemoryId: m.parentId,
    rootMemoryId: m.rootId,
    forgetAfter: m.forgetAfter?.toISOString() ?? null,
    forgetReason: m.forgetReason,
    metadata: m.metadata,
    memoryRelations: m.relation && m.relatedTo ? { [m.relatedTo]: m.relation } : null,
    temporalContext: Object.keys(temporal).length ? temporal : null,
    history: sameRoot
      .filter((v) => v.version < m.version)
      .sort((a, b) => a.version - b.version)
      .map((v) => ({
        id: v.id,
        memory: v.content,
        version: v.version,
        createdAt: v.createdAt.toISOString(),
        updatedAt: v.updatedAt.toISOString(),
        parentMemoryId: v.parentId,
        rootMemoryId: v.rootId,
        isLatest: v.isLatest,
        isForgotten: v.isForgotten,
      })),
    documentIds: m.sourceDocumentId ? [m.sourceDocumentId] : [],
  };
}

/** Metadata values are flat (string | number | boolean | string[]); temporal context is stored in that form. */
function flattenTemporal(t: { documentDate?: string | null; eventDate?: string[] | null }) {
  return {
    ...(t.documentDate ? { documentDate: t.documentDate } : {}),
    ...(t.eventDate ? { eventDate: t.eventDate } : {}),
  };
}
