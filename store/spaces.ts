// The container tags ("spaces", "projects") a key can see, with what each holds. Documents carry an
// array of tags, memories exactly one; only live memories (latest version, not forgotten) count.

import { type SQL, sql } from "drizzle-orm";
import { type Database, queryRows } from "./db.ts";
import { documents, memories } from "./schema/index.ts";
import type { TagScope } from "./tag-scope.ts";

export interface SpaceSummary {
  containerTag: string;
  documents: number;
  memories: number;
}

/** At most this many tags are listed (the most used first when there are more). */
const MAX_SPACES = 1000;

/**
 * Every tag that has documents or memories, inside the scope. A scoped key also sees its own tags
 * while they are still empty: those are the tags it may write to.
 */
export async function listSpaces(db: Database, scope: TagScope): Promise<SpaceSummary[]> {
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
      LIMIT ${MAX_SPACES}`,
  );
  const spaces = rows.map((r) => ({
    containerTag: r.tag,
    documents: Number(r.documents),
    memories: Number(r.memories),
  }));
  for (const tag of scope ?? []) {
    if (!spaces.some((s) => s.containerTag === tag))
      spaces.push({ containerTag: tag, documents: 0, memories: 0 });
  }
  return spaces;
}
