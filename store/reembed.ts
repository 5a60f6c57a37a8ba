import { sql } from "drizzle-orm";
import { type Database, queryRows } from "./db.ts";
import type { VectorSpace } from "./search/vector-index.ts";

/** Tables whose rows carry vectors; both migrate when the embedding model changes. */
export const VECTOR_TABLES = ["chunks", "memories"] as const;
export type VectorTable = (typeof VECTOR_TABLES)[number];

export interface StaleRow {
  id: string;
  content: string;
}

/** Rows embedded by another model than `model`, after `afterId` in id order (a resumable cursor). */
export async function staleVectors(
  db: Database,
  table: VectorTable,
  model: string,
  afterId: string,
  limit: number,
): Promise<StaleRow[]> {
  const rows = await queryRows<{ id: string; content: string }>(
    db,
    sql`SELECT id, content FROM ${sql.identifier(table)}
        WHERE embedding IS NOT NULL AND embedding_model IS DISTINCT FROM ${model} AND id > ${afterId}
        ORDER BY id LIMIT ${limit}`,
  );
  return rows.map((r) => ({ id: String(r.id), content: String(r.content) }));
}

/** Replaces vectors in one transaction; rows deleted meanwhile are simply not updated. */
export async function replaceVectors(
  db: Database,
  table: VectorTable,
  space: VectorSpace,
  vectors: { id: string; embedding: number[] }[],
): Promise<void> {
  if (!vectors.length) return;
  const payload = JSON.stringify(vectors.map((v) => ({ id: v.id, embedding: `[${v.embedding.join(",")}]` })));
  const dimension = table === "chunks" ? sql`, embedding_dimension = ${space.dimension}` : sql``;
  await db.execute(
    sql`UPDATE ${sql.identifier(table)} AS t
        SET embedding = v.embedding::vector, embedding_model = ${space.model}${dimension}
        FROM jsonb_to_recordset(${payload}::jsonb) AS v(id text, embedding text)
        WHERE t.id = v.id`,
  );
}

/** How many rows of each table still carry vectors of another model. */
export async function staleVectorCounts(db: Database, model: string): Promise<Record<VectorTable, number>> {
  const [row] = await queryRows<{ chunks: number; memories: number }>(
    db,
    sql`SELECT
          (SELECT count(*)::int FROM chunks WHERE embedding IS NOT NULL AND embedding_model IS DISTINCT FROM ${model}) AS chunks,
          (SELECT count(*)::int FROM memories WHERE embedding IS NOT NULL AND embedding_model IS DISTINCT FROM ${model}) AS memories`,
  );
  return { chunks: Number(row?.chunks ?? 0), memories: Number(row?.memories ?? 0) };
}

/** Whether any stored vector comes from another model: an index probe, cheap at every worker start. */
export async function hasStaleVectors(db: Database, model: string): Promise<boolean> {
  const [row] = await queryRows<{ stale: boolean }>(
    db,
    sql`SELECT EXISTS (SELECT 1 FROM chunks WHERE embedding IS NOT NULL AND embedding_model IS DISTINCT FROM ${model})
            OR EXISTS (SELECT 1 FROM memories WHERE embedding IS NOT NULL AND embedding_model IS DISTINCT FROM ${model}) AS stale`,
  );
  return Boolean(row?.stale);
}

/** Documents report the model of their vectors; set it once every chunk of theirs is migrated. */
export async function markDocumentsModel(db: Database, model: string): Promise<void> {
  await db.execute(
    sql`UPDATE documents d SET embedding_model = ${model}
        WHERE d.status = 'done' AND d.embedding_model IS DISTINCT FROM ${model}
          AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id
                          AND c.embedding IS NOT NULL AND c.embedding_model IS DISTINCT FROM ${model})`,
  );
}
