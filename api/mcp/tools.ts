// The memory server's tools. Each one resolves its container tag through the caller (argument, else
// x-sm-project, else the default; refused outside a scoped key's tags) and then calls the services
// the REST API calls: nothing here searches, stores or ranks on its own.

import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { createMemories, forgetMemory, MemoryNotFoundError } from "../../services/memories.ts";
import { buildProfile } from "../../services/profile.ts";
import { searchMemoriesAndChunks } from "../../services/search-memories.ts";
import { listContainerTags } from "../../store/container-tag-list.ts";
import { findDocument, listDocuments } from "../../store/documents.ts";
import { listMemories } from "../../store/memory-list.ts";
import type { MemoryFields, MemoryRow } from "../../store/schema/index.ts";
import type { ApiDeps } from "../deps.ts";
import { presentDocument } from "../documents/present.ts";
import { notFound } from "../errors.ts";
import { type McpCaller, toolError } from "./context.ts";

/**
 * `forget` without an exact match takes the most similar live memory of the container, but only when
 * it is at least this similar: a loose paraphrase must not forget an unrelated memory.
 */
/** On /v4/search's reported (calibrated) scale: bge-small's cosine 0.75 (services/similarity.ts). */
export const FORGET_MIN_SIMILARITY = 0.79;

const containerTag = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_:.-]+$/, "may contain only letters, digits, hyphens, underscores, colons and dots")
  .optional()
  .describe(
    "Container tag (space/project) to work in. Omit it to use the x-sm-project header's tag, else the default (sm_project_default).",
  );

const page = z.number().int().min(1).max(10_000).optional().describe("Page number (1-based, default 1)");
const limit = (what: string) =>
  z.number().int().min(1).max(100).optional().describe(`${what} per page (default 10, max 100)`);

const saveOrForget = {
  content: z.string().min(1).max(200_000).describe("The memory to save, or the memory to forget"),
  action: z
    .enum(["save", "forget"])
    .optional()
    .describe(
      "save (default) stores the content as a new memory; forget marks the memory with exactly this content, else the most similar one, as forgotten",
    ),
  containerTag,
};

const SaveOrForgetOutput = z.object({
  action: z.enum(["save", "forget"]),
  id: z.string(),
  containerTag: z.string(),
  memory: z.string(),
  /** forget only: found by exact content or by similarity. */
  match: z.enum(["exact", "similar"]).optional(),
  similarity: z.number().optional(),
});

const searchInput = (queryDescription: string) => ({
  query: z.string().min(1).max(10_000).describe(queryDescription),
  includeProfile: z
    .boolean()
    .optional()
    .describe("Also return the container's profile: long-lived facts and recent memories (default true)"),
  limit: z.number().int().min(1).max(100).optional().describe("Memories returned at most (default 10)"),
  containerTag,
});

const Profile = z.object({ static: z.array(z.string()), dynamic: z.array(z.string()) });

const SearchOutput = z.object({
  query: z.string(),
  containerTag: z.string(),
  profile: Profile.optional(),
  results: z.array(
    z.object({ id: z.string(), memory: z.string(), similarity: z.number(), updatedAt: z.string() }),
  ),
  total: z.number(),
  timing: z.number(),
});

const Pagination = z.object({
  currentPage: z.number(),
  totalPages: z.number(),
  totalItems: z.number(),
  limit: z.number(),
});

const DocumentOut = z.looseObject({
  id: z.string(),
  customId: z.string().nullable(),
  title: z.string().nullable(),
  type: z.string(),
  status: z.string(),
  summary: z.string().nullable(),
  containerTags: z.array(z.string()),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const MemoryOut = z.object({
  id: z.string(),
  memory: z.string(),
  containerTag: z.string(),
  isStatic: z.boolean(),
  version: z.number(),
  createdAt: z.string(),
  updatedAt: z.string(),
  forgetAfter: z.string().nullable(),
  sourceDocumentId: z.string().nullable(),
});

const ContainerTagCount = z.object({ containerTag: z.string(), documents: z.number(), memories: z.number() });

type PageArgs = { page?: number; limit?: number; containerTag?: string };

/** A listing tool's output: its container tag, its items and the REST API's pagination block. */
const pageOutput = <T extends z.ZodRawShape>(items: T) =>
  z.object({ containerTag: z.string(), ...items, pagination: Pagination });

function pageRequest(caller: McpCaller, args: PageArgs) {
  return { tag: caller.tag(args.containerTag), q: { page: args.page ?? 1, limit: args.limit ?? 10 } };
}

function pageOf(q: { page: number; limit: number }, total: number): z.infer<typeof Pagination> {
  return { currentPage: q.page, totalPages: Math.ceil(total / q.limit), totalItems: total, limit: q.limit };
}

const readOnly = { readOnlyHint: true, openWorldHint: false } as const;

const text = (value: string): CallToolResult["content"] => [{ type: "text", text: value }];
const percent = (similarity: number) => `${Math.round(similarity * 100)}%`;
const iso = (d: Date | null) => d?.toISOString() ?? null;

function presentMemory(m: MemoryFields): z.infer<typeof MemoryOut> {
  return {
    id: m.id,
    memory: m.content,
    containerTag: m.containerTag,
    isStatic: m.isStatic,
    version: m.version,
    createdAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
    forgetAfter: iso(m.forgetAfter),
    sourceDocumentId: m.sourceDocumentId,
  };
}

/** Profile and matching memories of one container, as `recall` and `search_memory` answer. */
export async function recall(
  deps: ApiDeps,
  caller: McpCaller,
  args: { query: string; includeProfile?: boolean; limit?: number; containerTag?: string },
): Promise<z.infer<typeof SearchOutput>> {
  const tag = caller.tag(args.containerTag);
  const [search, profile] = await Promise.all([
    searchMemoriesAndChunks(
      deps,
      {
        q: args.query,
        containerTags: [tag],
        searchMode: "memories",
        threshold: 0,
        limit: args.limit ?? 10,
        include: { documents: false, summaries: false, relatedMemories: false, forgottenMemories: false },
        rerank: false,
        rewriteQuery: false,
      },
      caller.scope.tags,
    ),
    args.includeProfile === false
      ? undefined
      : buildProfile(deps, { containerTag: tag, threshold: 0 }, caller.scope.tags),
  ]);
  return {
    query: args.query,
    containerTag: tag,
    ...(profile ? { profile: profile.profile } : {}),
    results: search.results.map((r) => ({
      id: r.id,
      memory: r.memory ?? r.chunk ?? "",
      similarity: r.similarity,
      updatedAt: r.updatedAt,
    })),
    total: search.total,
    timing: search.timing,
  };
}

export function profileText(tag: string, profile: { static: string[]; dynamic: string[] }): string {
  const parts: string[] = [];
  if (profile.static.length) parts.push("## Profile", ...profile.static.map((f) => `- ${f}`));
  if (profile.dynamic.length) {
    if (parts.length) parts.push("");
    parts.push("## Recent context", ...profile.dynamic.map((f) => `- ${f}`));
  }
  if (!parts.length) parts.push(`No profile facts yet in container '${tag}'.`);
  return parts.join("\n");
}

function recallText(out: z.infer<typeof SearchOutput>): string {
  const parts: string[] = [];
  if (out.profile) parts.push(profileText(out.containerTag, out.profile), "");
  if (out.results.length) {
    parts.push(`## Matching memories (container '${out.containerTag}')`);
    for (const r of out.results) parts.push(`- [${percent(r.similarity)}] ${r.memory} (id: ${r.id})`);
  } else {
    parts.push(`No matching memories found in container '${out.containerTag}'.`);
  }
  return parts.join("\n");
}

/** `save` stores a memory (embedded at once, so it is found right away); `forget` marks one forgotten. */
async function saveOrForgetMemory(
  deps: ApiDeps,
  caller: McpCaller,
  args: { content: string; action?: "save" | "forget"; containerTag?: string },
): Promise<z.infer<typeof SaveOrForgetOutput>> {
  const tag = caller.tag(args.containerTag);
  if (args.action !== "forget") {
    const [row] = await createMemories(deps, tag, [{ content: args.content }]);
    const saved = row as MemoryRow;
    return { action: "save", id: saved.id, containerTag: tag, memory: saved.content };
  }
  const reason = "forgotten through the MCP memory server";
  try {
    const row = await forgetMemory(deps, tag, { content: args.content }, reason, caller.scope.tags);
    return { action: "forget", id: row.id, containerTag: tag, memory: row.content, match: "exact" };
  } catch (error) {
    if (!(error instanceof MemoryNotFoundError)) throw error;
  }
  // No memory with exactly this content: the most similar live one, if it is close enough.
  const search = await searchMemoriesAndChunks(
    deps,
    {
      q: args.content,
      containerTags: [tag],
      searchMode: "memories",
      threshold: FORGET_MIN_SIMILARITY,
      limit: 1,
      include: { documents: false, summaries: false, relatedMemories: false, forgottenMemories: false },
      rerank: false,
      rewriteQuery: false,
    },
    caller.scope.tags,
  );
  const best = search.results[0];
  if (!best) {
    throw new MemoryNotFoundError(
      `no memory in container '${tag}' matches this content (exactly or with similarity >= ${FORGET_MIN_SIMILARITY})`,
    );
  }
  const row = await forgetMemory(deps, tag, { id: best.id }, reason, caller.scope.tags);
  return {
    action: "forget",
    id: row.id,
    containerTag: tag,
    memory: row.content,
    match: "similar",
    similarity: best.similarity,
  };
}

function saveOrForgetText(out: z.infer<typeof SaveOrForgetOutput>): string {
  if (out.action === "save") return `Memory saved (id: ${out.id}, container: ${out.containerTag})`;
  const how = out.match === "similar" ? ` (closest match, ${percent(out.similarity ?? 0)} similar)` : "";
  return `Memory forgotten${how}: "${out.memory}" (id: ${out.id}, container: ${out.containerTag})`;
}

/** Runs a tool body; refusals and failures become `isError` results the model can read. */
function tool<A, O extends Record<string, unknown>>(
  deps: ApiDeps,
  body: (args: A) => Promise<O>,
  render: (out: O) => string,
): (args: A) => Promise<CallToolResult> {
  return async (args) => {
    try {
      const out = await body(args);
      return { content: text(render(out)), structuredContent: out };
    } catch (error) {
      return toolError(error, deps.log);
    }
  };
}

export function registerTools(server: McpServer, deps: ApiDeps, caller: McpCaller): void {
  const save = tool(
    deps,
    (args: z.infer<z.ZodObject<typeof saveOrForget>>) => saveOrForgetMemory(deps, caller, args),
    saveOrForgetText,
  );
  server.registerTool(
    "add_memory",
    {
      title: "Add or forget a memory",
      description:
        "Save a memory (action 'save', the default) or forget one (action 'forget': the memory with exactly this content, else the most similar one). Use it when the user shares something worth remembering or asks to remove outdated information.",
      inputSchema: saveOrForget,
      outputSchema: SaveOrForgetOutput,
    },
    save,
  );
  server.registerTool(
    "memory",
    {
      title: "Save or forget a memory (earlier name)",
      description:
        "Earlier name of add_memory, kept for existing clients: save (default) or forget a memory in the container.",
      inputSchema: saveOrForget,
      outputSchema: SaveOrForgetOutput,
    },
    save,
  );

  const search = tool(
    deps,
    (args: { query: string; includeProfile?: boolean; limit?: number; containerTag?: string }) =>
      recall(deps, caller, args),
    recallText,
  );
  server.registerTool(
    "search_memory",
    {
      title: "Search memories",
      description:
        "Search the container's memories with a natural-language query; also returns its profile (long-lived facts and recent context) unless includeProfile is false.",
      inputSchema: searchInput("What to look for"),
      outputSchema: SearchOutput,
      annotations: readOnly,
    },
    search,
  );
  server.registerTool(
    "recall",
    {
      title: "Recall memories (earlier name)",
      description:
        "Earlier name of search_memory, kept for existing clients: memories matching the query, with the profile unless includeProfile is false.",
      inputSchema: searchInput("What to recall"),
      outputSchema: SearchOutput,
      annotations: readOnly,
    },
    search,
  );

  server.registerTool(
    "listDocuments",
    {
      title: "List documents",
      description:
        "Documents of the container, newest first: ids, titles, types, processing status and summaries (no content; use getDocument for one document's content).",
      inputSchema: { page, limit: limit("Documents"), containerTag },
      outputSchema: pageOutput({ documents: z.array(DocumentOut) }),
      annotations: readOnly,
    },
    tool(
      deps,
      async (args: PageArgs) => {
        const { tag, q } = pageRequest(caller, args);
        const { rows, total } = await listDocuments(deps.db, {
          containerTags: [tag],
          tagMode: "any",
          sort: "createdAt",
          order: "desc",
          ...q,
          scope: caller.scope.tags,
        });
        return {
          containerTag: tag,
          documents: rows.map((r) => presentDocument(r, { content: false, scope: caller.scope.tags })),
          pagination: pageOf(q, total),
        };
      },
      (out) =>
        out.documents.length
          ? [
              `Documents in container '${out.containerTag}' (page ${out.pagination.currentPage} of ${out.pagination.totalPages}, ${out.pagination.totalItems} in all):`,
              ...out.documents.map(
                (d) =>
                  `- ${d.title ?? "(untitled)"} (id: ${d.id}, ${d.type}, ${d.status}, ${d.createdAt})${d.summary ? `: ${d.summary}` : ""}`,
              ),
            ].join("\n")
          : `No documents in container '${out.containerTag}'${out.pagination.currentPage > 1 ? " on this page" : ""}.`,
    ),
  );

  server.registerTool(
    "getDocument",
    {
      title: "Get a document",
      description: "One document by its id or customId, with its content (only documents the key may see).",
      inputSchema: { id: z.string().min(1).max(255).describe("The document's id or customId") },
      outputSchema: z.object({ document: DocumentOut }),
      annotations: readOnly,
    },
    tool(
      deps,
      async (args: { id: string }) => {
        const row = await findDocument(deps.db, args.id, caller.scope.tags);
        if (!row) throw notFound("document");
        return { document: presentDocument(row, { content: true, scope: caller.scope.tags }) };
      },
      ({ document: d }) =>
        [
          `# ${d.title ?? "(untitled)"}`,
          `id: ${d.id}${d.customId ? `, customId: ${d.customId}` : ""}; type: ${d.type}; status: ${d.status}; containers: ${d.containerTags.join(", ") || "none"}`,
          ...(d.summary ? ["", `Summary: ${d.summary}`] : []),
          "",
          typeof d.content === "string" ? d.content : "(no text content stored)",
        ].join("\n"),
    ),
  );

  server.registerTool(
    "listMemories",
    {
      title: "List memories",
      description:
        "The container's live memories (latest version of each, not forgotten), most recently updated first, with their ids. Use search_memory to find memories by meaning.",
      inputSchema: { page, limit: limit("Memories"), containerTag },
      outputSchema: pageOutput({ memories: z.array(MemoryOut) }),
      annotations: readOnly,
    },
    tool(
      deps,
      async (args: PageArgs) => {
        const { tag, q } = pageRequest(caller, args);
        const { rows, total } = await listMemories(deps.db, {
          containerTags: [tag],
          scope: caller.scope.tags,
          includeHistory: false,
          includeForgotten: false,
          sort: "updatedAt",
          order: "desc",
          ...q,
        });
        return {
          containerTag: tag,
          memories: rows.map(presentMemory),
          pagination: pageOf(q, total),
        };
      },
      (out) =>
        out.memories.length
          ? [
              `Memories in container '${out.containerTag}' (page ${out.pagination.currentPage} of ${out.pagination.totalPages}, ${out.pagination.totalItems} in all):`,
              ...out.memories.map((m) => `- ${m.memory} (id: ${m.id}${m.isStatic ? ", static" : ""})`),
            ].join("\n")
          : `No memories in container '${out.containerTag}'${out.pagination.currentPage > 1 ? " on this page" : ""}.`,
    ),
  );

  server.registerTool(
    "listSpaces",
    {
      title: "List spaces",
      description:
        "The container tags (spaces, projects) this key can see, with how many documents and memories each holds, and the tag used when none is named.",
      inputSchema: {},
      outputSchema: z.object({ defaultContainerTag: z.string(), spaces: z.array(ContainerTagCount) }),
      annotations: readOnly,
    },
    tool(deps, () => visibleContainerTags(deps, caller), containerTagsText),
  );

  server.registerTool(
    "whoAmI",
    {
      title: "Who am I",
      description:
        "The API key this connection uses: its name, kind, the container tags it may use and the default tag.",
      inputSchema: {},
      outputSchema: z.object({
        keyId: z.string(),
        name: z.string(),
        kind: z.enum(["admin", "scoped"]),
        containerTags: z.array(z.string()).nullable(),
        expiresAt: z.string().nullable(),
        project: z.string().nullable(),
        defaultContainerTag: z.string(),
      }),
      annotations: readOnly,
    },
    tool(
      deps,
      async () => ({
        keyId: caller.key.id,
        name: caller.key.name,
        kind: caller.key.kind === "admin" ? ("admin" as const) : ("scoped" as const),
        containerTags: caller.scope.tags ? [...caller.scope.tags] : null,
        expiresAt: iso(caller.key.expiresAt),
        project: caller.headerTag ?? null,
        defaultContainerTag: caller.headerTag ?? caller.defaultTag,
      }),
      (out) =>
        [
          `Key '${out.name}' (${out.kind}, id ${out.keyId})${out.expiresAt ? `, expires ${out.expiresAt}` : ""}`,
          `Container tags: ${out.containerTags ? out.containerTags.join(", ") : "all (admin key)"}`,
          `Default container tag: ${out.defaultContainerTag}${out.project ? " (from x-sm-project)" : ""}`,
        ].join("\n"),
    ),
  );
}

/** Container tags visible to the caller; shared by the listSpaces tool and the supermemory://spaces resource. */
export async function visibleContainerTags(deps: ApiDeps, caller: McpCaller) {
  return {
    defaultContainerTag: caller.headerTag ?? caller.defaultTag,
    spaces: await listContainerTags(deps.db, caller.scope.tags),
  };
}

function containerTagsText(out: Awaited<ReturnType<typeof visibleContainerTags>>): string {
  const lines = out.spaces.map(
    (s) =>
      `- ${s.containerTag}: ${s.documents} document${s.documents === 1 ? "" : "s"}, ${s.memories} memor${s.memories === 1 ? "y" : "ies"}${s.containerTag === out.defaultContainerTag ? " (default)" : ""}`,
  );
  return [
    lines.length ? "Container tags:" : "No container tags yet.",
    ...lines,
    `Default container tag: ${out.defaultContainerTag}`,
  ].join("\n");
}
