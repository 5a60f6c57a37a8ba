// The container tags a key can see (Supermemory calls them "spaces" and "projects"), with what each holds. Documents carry an
// array of tags, memories exactly one; only live memories (latest version, not forgotten) count.

import { type SQL, sql } from "drizzle-orm";
import { type Database, queryRows } from "./db.ts";
import { documents, memories } from "./schema/index.ts";
import type { TagScope } from "./tag-scope.ts";

export interface ContainerTagSummary {
  containerTag: string;
  documents: number;
  memories: number;
}

/** At most this many tags are listed (the most used first when there are more). */
const MAX_TAGS = 1000;

/**
 * Every tag that has documents or memories, inside the scope. A scoped key also sees its own tags
 * while they are still empty: those are the tags it may write to.
 */
export async function listContainerTags(db: Database, scope: TagScope): Promise<ContainerTagSummary[]> {
  const inScope = (column: SQL) =>
    scope
      ? sql`${column} IN (${sql.join(
          scope.map((t) => sql`${t}`),
          sql`, `,
        )})`
      : sql`TRUE`;
  const rows = await queryRows<{ tag: string; documents: number | string; memories: number | string }>(
    db,
    sql`
      SELECT tag, sum(d)::int AS documents, sum(m)::int AS memories FROM (
        SELECT unnest(${documents.containerTags}) AS tag, 1 AS d, 0 AS m FROM ${documents}
        UNION ALL
        SELECT ${memories.containerTag} AS tag, 0 AS d, 1 AS m FROM ${memories}
          WHERE ${memories.isLatest} AND NOT ${memories.isForgotten}
      ) t
      WHERE ${inScope(sql`tag`)}
      GROUP BY tag
      ORDER BY sum(d) + sum(m) DESC, tag
      LIMIT ${MAX_TAGS}`,
  );
  const tags = rows.map((r) => ({
    containerTag: r.tag,
    documents: Number(r.documents),
    memories: Number(r.memories),
  }));
  for (const tag of scope ?? []) {
    if (!tags.some((s) => s.containerTag === tag))
      tags.push({ containerTag: tag, documents: 0, memories: 0 });
  }
  return tags;
}
