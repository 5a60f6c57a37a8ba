import { and, asc, count, desc, eq, inArray, type SQL, sql } from "drizzle-orm";
import type { Database } from "./db.ts";
import { type MemoryFields, memories, memoryFields } from "./schema/index.ts";
import type { TagScope } from "./tag-scope.ts";

/**
 * A memory is live unless it was forgotten or its forgetAfter has passed; checked at query time,
 * so a memory expires without anything being written.
 */
export function liveMemory(): SQL {
  return sql`(NOT ${memories.isForgotten} AND (${memories.forgetAfter} IS NULL OR ${memories.forgetAfter} > now()))`;
}

/** Memories carry one container tag: inside a key's scope when that tag is one of the key's. */
export function memoryInScope(scope: TagScope | undefined): SQL | undefined {
  if (!scope) return undefined;
  return inArray(memories.containerTag, [...scope]);
}

export interface MemoryListQuery {
  containerTags?: string[];
  scope: TagScope;
  /** Every version rather than only the latest of each chain. */
  includeHistory: boolean;
  /** Also forgotten memories and those past forgetAfter. */
  includeForgotten: boolean;
  sort: "createdAt" | "updatedAt";
  order: "asc" | "desc";
  limit: number;
  page: number;
}

export async function listMemories(
  db: Database,
  q: MemoryListQuery,
): Promise<{ rows: MemoryFields[]; total: number }> {
  const where = and(
    q.containerTags?.length ? inArray(memories.containerTag, q.containerTags) : undefined,
    memoryInScope(q.scope),
    q.includeHistory ? undefined : eq(memories.isLatest, true),
    q.includeForgotten ? undefined : liveMemory(),
  );
  const sortColumn = q.sort === "updatedAt" ? memories.updatedAt : memories.createdAt;
  const direction = q.order === "asc" ? asc : desc;
  const [rows, totals] = await Promise.all([
    db
      .select(memoryFields)
      .from(memories)
      .where(where)
      .orderBy(direction(sortColumn), direction(memories.version), direction(memories.id))
      .limit(q.limit)
      .offset((q.page - 1) * q.limit),
    db.select({ total: count() }).from(memories).where(where),
  ]);
  return { rows, total: Number(totals[0]?.total ?? 0) };
}

/** One memory (any version) by id, only when its container tag is inside the scope. */
export async function findMemory(
  db: Database,
  id: string,
  scope: TagScope,
): Promise<MemoryFields | undefined> {
  const [row] = await db
    .select(memoryFields)
    .from(memories)
    .where(and(eq(memories.id, id), memoryInScope(scope)))
    .limit(1);
  return row;
}
