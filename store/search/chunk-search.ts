import { type SQL, sql } from "drizzle-orm";
import { type Database, queryRows } from "../db.ts";
import { compileFilter, type FilterNode, metadataColumns } from "../filters.ts";
import type { Metadata } from "../schema/index.ts";
import type { TagScope } from "../tag-scope.ts";
import type { ChunkHit } from "./chunk-hit.ts";
import { heldMetadata } from "./chunk-index/held-chunks.ts";
import { chunkIndexOf } from "./chunk-index/index.ts";
import { indexAnswers, indexedChunkSearch } from "./chunk-index/search.ts";
import { EXACT_RANK_LIMIT, fewIds, inIdList, opaqueFilter } from "./exact-rank.ts";
import { commonTerms, keywordTsquery, topKeywordMatches } from "./keyword.ts";
import { type Fusion, RRF_K, searchTuning } from "./tuning.ts";
import { hnswScanSettings, queryVectorText, type VectorSpace, vectorTerms } from "./vector-index.ts";

/** Which retrievers run: both fused (the default), or one alone (for evaluation and comparison). */
export type Retrieval = "hybrid" | "vector" | "keyword";

export interface HybridSearchQuery {
  text: string;
  /** The query's vector and the model that made it; only chunks embedded by that model are compared. */
  embedding: number[];
  space: VectorSpace;
  retrieval?: Retrieval;
  fusion?: Fusion;
  /** Only documents added for this end user. */
  endUserId?: string;
  containerTags?: string[];
  tagMode: "any" | "all";
  /** The caller's scope: only documents carrying one of these tags (null/undefined: all). */
  scope?: TagScope;
  documentId?: string;
  /** Only documents at this path, or under it when it ends in "/" (as in the official API). */
  filepath?: string;
  /** A filter over the documents' metadata (a bad one throws FilterError). */
  filters?: FilterNode;
  /**
   * Only these documents, found beforehand under every narrowing the document row answers (hybridChunkSearch's
   * probe): the search then reads no document row, and ranks the chunks of so few documents exactly.
   */
  documentIds?: string[];
  /** How many fused chunk candidates to rank before grouping into documents. */
  candidates: number;
}

export type { ChunkHit } from "./chunk-hit.ts";

/** How the two rankings combine; the default and the blend's weights are tuned (store/search/tuning.ts). */
export type { Fusion } from "./tuning.ts";

function fusedScore(fusion: Fusion): SQL {
  if (fusion === "blend") {
    const norm = (side: string) =>
      sql.raw(
        `coalesce((${side}.score - ${side}.lo) / nullif(${side}.hi - ${side}.lo, 0), CASE WHEN ${side}.id IS NULL THEN 0 ELSE 1 END)`,
      );
    const w = searchTuning().blendVectorWeight;
    return sql`${sql.raw(String(w))} * ${norm("v")} + ${sql.raw(String(Number((1 - w).toFixed(6))))} * ${norm("k")}`;
  }
  return sql.raw(`coalesce(1.0 / (${RRF_K} + v.rank), 0) + coalesce(1.0 / (${RRF_K} + k.rank), 0)`);
}

/** The caller's `filepath` over documents aliased `d`: exact, or a prefix when it ends in "/". */
function filepathCondition(filepath: string | undefined): SQL | undefined {
  if (!filepath) return undefined;
  return filepath.endsWith("/") ? sql`starts_with(d.filepath, ${filepath})` : sql`d.filepath = ${filepath}`;
}

/** The parts of the search statement, each runnable on its own (bench/search-plan.ts explains them per stage). */
export interface SearchStatement {
  /** Statements that set transaction-local settings (SET LOCAL), to run first in the same transaction. */
  settings: string[];
  /** The vector side on its own (with the query vector it reads). */
  byVector: SQL;
  /** The keyword side, or the rows it already returned as a value (hybridChunkSearch). */
  byKeyword: SQL;
  /** The whole statement: by_vector, by_keyword, fusion, the chunk rows. */
  statement: SQL;
}

const textArray = (values: readonly string[]) =>
  sql`ARRAY[${sql.join(
    values.map((t) => sql`${t}`),
    sql`, `,
  )}]::text[]`;

/** The caller's scope and tags over a tags column (a chunk's search_tags, or a document's container_tags). */
function tagConditions(q: KeywordSideQuery, column: string): SQL[] {
  const tagsColumn = sql.raw(column);
  const tags = q.containerTags?.length ? textArray(q.containerTags) : undefined;
  return [
    q.scope && sql`${tagsColumn} && ${textArray(q.scope)}`,
    tags && (q.tagMode === "all" ? sql`${tagsColumn} @> ${tags}` : sql`${tagsColumn} && ${tags}`),
  ].filter((c): c is SQL => Boolean(c));
}

/** The narrowings only the document row answers, over documents aliased `d`. */
function documentConditions(q: KeywordSideQuery): SQL[] {
  return [
    q.documentId && sql`(d.id = ${q.documentId} OR d.custom_id = ${q.documentId})`,
    q.endUserId && sql`d.end_user_id = ${q.endUserId}`,
    filepathCondition(q.filepath),
    q.filters && compileFilter(metadataColumns("d"), q.filters),
  ].filter((c): c is SQL => Boolean(c));
}

/**
 * Whether a search's document narrowing is one the planner cannot estimate: a filepath prefix, or a filter with a
 * leaf no index answers (EXACT_RANK_LIMIT).
 */
function opaqueNarrowing(q: KeywordSideQuery): boolean {
  return Boolean(q.filepath) || opaqueFilter(q.filters, metadataColumns("d"));
}

/**
 * For a search narrowed by a condition the planner cannot estimate (opaqueNarrowing), the documents it may return
 * when they are at most `limit` (fewIds), read from the documents alone: their tags, status and narrowings.
 * hybridChunkSearch then ranks their chunks exactly, with no document join. Null for any other search, and when
 * there are more: the search then runs as without this.
 */
export async function documentsToRank(
  db: Database,
  q: KeywordSideQuery,
  limit = EXACT_RANK_LIMIT,
): Promise<string[] | null> {
  if (q.documentIds || !opaqueNarrowing(q)) return null;
  return fewIds(db, documentsInScope(q), limit);
}

/** The documents a search may return: found by their tags' index in a small tag, by a scan in a big one. */
export function documentsInScope(q: KeywordSideQuery): SQL {
  const where = [sql`d.status = 'done'`, ...tagConditions(q, "d.container_tags"), ...documentConditions(q)];
  return sql`SELECT d.id FROM documents d WHERE ${sql.join(where, sql` AND `)}`;
}

/**
 * Which chunks a search may return, and the FROM clause that reads them. Whether a chunk's document is done,
 * and its tags, are on the chunk itself (`search_tags`, kept by the triggers of migration 0014): the caller's
 * scope and tags need no join. Only the narrowings the document row alone can answer (a document id, an end
 * user, a filepath, metadata filters) join `documents`. Joined for every search, `documents` was most of
 * its time at 50,000 documents: a scan of every document row to hash, or a probe per keyword match
 * (bench/search-plan.ts --imported: keyword side p50 106 ms in a tag holding every chunk, 17 ms without the join).
 */
function searchScope(q: KeywordSideQuery): { from: SQL; where: SQL } {
  const onChunk = tagConditions(q, "c.search_tags");
  // Without a tag condition, searchable is spelled out (NULL while the document is not done).
  if (!onChunk.length) onChunk.push(sql`c.search_tags IS NOT NULL`);
  if (q.documentIds) onChunk.push(inIdList(sql`c.document_id`, q.documentIds));
  const onDocument = q.documentIds ? [] : documentConditions(q);
  return {
    from: onDocument.length ? sql`chunks c JOIN documents d ON d.id = c.document_id` : sql`chunks c`,
    where: sql.join([...onChunk, ...onDocument], sql` AND `),
  };
}

/** What the keyword side reads of a search: everything but the query's vector. */
type KeywordSideQuery = Omit<HybridSearchQuery, "embedding" | "space">;

const NO_ROWS = sql`SELECT NULL::text AS id, NULL::bigint AS rank, NULL::float8 AS score WHERE FALSE`;

/** The vector side's columns with no rows: its rows carry their chunk's fields too (searchStatement). */
const NO_VECTOR_ROWS = sql`SELECT NULL::text AS id, NULL::text AS document_id, NULL::integer AS position,
  NULL::text AS content, NULL::jsonb AS metadata, NULL::bigint AS rank, NULL::float8 AS score WHERE FALSE`;

/** The keyword side alone (GIN + the tuned rank over the scoped chunks), or no rows without a keyword query. */
function keywordSide(q: KeywordSideQuery, tsq: string | null, scope = searchScope(q)): SQL {
  if (q.retrieval === "vector" || tsq === null) return NO_ROWS;
  return topKeywordMatches({ from: scope.from, alias: "c", where: scope.where, tsq, limit: q.candidates });
}

/**
 * One statement: the nearest chunks by cosine distance (HNSW, or an exact sort of a small tag's chunks)
 * and the best keyword matches (GIN + the tuned rank, any query term may match) are fused (store/search/tuning.ts:
 * a score blend by default). `tsq` is the keyword query (keywordTsquery), passed as a value rather than computed inside the
 * statement: the planner then estimates its matches from the statistics. Computed in the statement (an
 * InitPlan), it was a guess of 500 rows, and under a small tag the planner rescanned the whole GIN
 * posting lists once per document of the tag (27 ms for a 6-document tag at 100,000 chunks).
 *
 * With `keywordRows` (the rows the keyword side returned, run beforehand: id, rank and score, as JSON
 * text) the statement fuses those rows instead of running the keyword side itself: that is how
 * hybridChunkSearch runs it, the keyword side first, while the query is still being embedded. Without it the
 * whole search is one statement, the same rows (for EXPLAIN).
 */
export function searchStatement(
  q: HybridSearchQuery,
  tsq: string | null,
  keywordRows?: string,
): SearchStatement {
  const vector = queryVectorText(q.embedding);
  const scope = searchScope(q);
  const retrieval = q.retrieval ?? "hybrid";
  const v = vectorTerms("c", q.space);
  // The vector is sent once and read where needed: as a parameter at each use it was parsed four times. A
  // scalar subquery (an InitPlan) still drives the HNSW scan.
  const queryVector = sql`(SELECT v FROM query_vector)`;
  const withQueryVector = sql`query_vector AS (SELECT ${vector}${v.cast} AS v)`;
  // The vector side reads each candidate's row anyway (to check its tags), so it takes the fields a hit shows
  // from it: only chunks found by the keyword side alone are read again at the end.
  const byVector =
    retrieval === "keyword"
      ? NO_VECTOR_ROWS
      : sql`SELECT c.id, c.document_id, c.position, c.content, c.metadata, row_number() OVER (ORDER BY ${v.column} <=> ${queryVector}) AS rank,
             1 - (${v.column} <=> ${queryVector}) AS score
      FROM ${scope.from}
      WHERE ${v.inSpace} AND ${scope.where}
      ORDER BY ${v.column} <=> ${queryVector}
      LIMIT ${q.candidates}`;
  // Rows the keyword side already returned are fused as a value; without them it runs in the statement.
  const byKeyword =
    keywordRows === undefined || retrieval === "vector" || tsq === null
      ? keywordSide(q, tsq, scope)
      : sql`SELECT k.id, k.rank, k.score
      FROM jsonb_to_recordset(${keywordRows}::jsonb) AS k(id text, rank bigint, score float8)`;
  const settings = [hnswScanSettings(q.candidates)];
  const statement = sql`
    WITH ${withQueryVector},
    by_vector AS (${byVector}),
    by_keyword AS (${byKeyword}),
    fused AS (
      SELECT coalesce(v.id, k.id) AS id, ${fusedScore(q.fusion ?? searchTuning().fusion)} AS fused, k.rank AS keyword_rank,
             v.score AS vector_score, v.id IS NOT NULL AS on_vector_side, v.document_id, v.position, v.content, v.metadata
      FROM (SELECT *, min(score) OVER () AS lo, max(score) OVER () AS hi FROM by_vector) v
      FULL OUTER JOIN (SELECT *, min(score) OVER () AS lo, max(score) OVER () AS hi FROM by_keyword) k
        ON v.id = k.id
    ),
    -- The best rows first, then the chunks the vector side did not bring: joined before the LIMIT, every fused row
    -- (up to both sides' candidates together) was fetched from the table and most were thrown away; and fetching
    -- the vector side's rows a second time was ~1.3 ms of a search at 100,000 chunks (in process, the same rows).
    best AS (SELECT * FROM fused ORDER BY fused DESC, id LIMIT ${q.candidates})
    SELECT f.id AS chunk_id,
           CASE WHEN f.on_vector_side THEN f.document_id ELSE c.document_id END AS document_id,
           CASE WHEN f.on_vector_side THEN f.position ELSE c.position END AS position,
           CASE WHEN f.on_vector_side THEN f.content ELSE c.content END AS content,
           CASE WHEN f.on_vector_side THEN f.metadata ELSE c.metadata END AS metadata,
           -- The vector side's score where it has one: the embedding lives out of line (TOAST) in most rows, and
           -- computing the distance again read it a second time (~1 ms a search at 100,000 chunks).
           CASE WHEN f.on_vector_side THEN f.vector_score
                WHEN ${v.inSpace} THEN 1 - (${v.column} <=> ${queryVector}) ELSE 0 END AS similarity,
           f.keyword_rank, f.fused
    -- Looked up only for the keyword side's own rows. As a plain join condition (NOT f.on_vector_side AND
    -- c.id = f.id) the planner looked every fused row up and dropped it afterwards (a join filter): 96 useless
    -- index lookups in a small tag (in process on the imported store, runs interleaved, this statement p50
    -- 5.1–5.5 → 4.7–5.1 ms in small tags, the same rows). OFFSET 0 keeps the subquery from being merged back into
    -- that join, so the outer condition gates the index scan (a one-time filter per fused row).
    FROM best f LEFT JOIN LATERAL (
      SELECT c.id, c.document_id, c.position, c.content, c.metadata, c.embedding, c.embedding_model
      FROM chunks c WHERE NOT f.on_vector_side AND c.id = f.id OFFSET 0) c ON true
    -- A keyword match deleted since the keyword side ran is gone, as the inner join left it.
    WHERE f.on_vector_side OR c.id IS NOT NULL
    ORDER BY f.fused DESC, f.id
  `;
  return { settings, byVector: sql`WITH ${withQueryVector} ${byVector}`, byKeyword, statement };
}

/**
 * A statement's rows as one JSON text (one row, one column), in the statement's order given by `order` over its
 * columns. PGlite decodes and type-parses every field of every row in JavaScript, on the thread the whole store
 * runs on: for the ~100 rows of eight columns a search returns that was about 1 ms of its time (in process at
 * 100,000 chunks, 0.65 ms saved; under load, in a CPU profile of 8 concurrent clients, result parsing took a
 * fifth of the main thread). One text and JSON.parse do the same in a fraction of it.
 */
function rowsAsJson(statement: SQL, order: string): SQL {
  return sql`SELECT coalesce(json_agg(r ORDER BY ${sql.raw(order)}), '[]')::text AS rows FROM (${statement}) r`;
}

const jsonRows = (rows: Record<string, unknown>[]): string => String(rows[0]?.rows ?? "[]");

/** A search whose query vector may still be on its way (being embedded while the keyword side runs). */
export type PendingSearchQuery = Omit<HybridSearchQuery, "embedding"> & {
  embedding: number[] | PromiseLike<number[]>;
};

/**
 * The keyword side needs no vector, so it runs first, while the query is still being embedded: the model
 * runs on a worker thread (or another process) and the database on its own, so the two overlap instead of
 * adding up. Then the vector side and the fusion run in one statement over the keyword rows found.
 */
export async function hybridChunkSearch(db: Database, q: PendingSearchQuery): Promise<ChunkHit[]> {
  const index = chunkIndexOf(db);
  if (index && indexAnswers(index, q)) {
    const hits = await indexedChunkSearch(db, index, q);
    if (hits) return hits;
  }
  const pending = Promise.resolve(q.embedding);
  // Observed at once: when the keyword side fails first, a failed embedding must not go unhandled.
  pending.catch(() => undefined);
  let tsq: string | null = null;
  let keywordRows: string | undefined;
  const documentIds = await documentsToRank(db, q);
  if (documentIds?.length === 0) return [];
  if (documentIds) q = { ...q, documentIds };
  if (q.retrieval !== "vector") {
    const common = await commonTerms(db, "chunks");
    // One transaction for the two statements: on PGlite one turn at its gate (store/pglite-gate.ts), so a
    // search waits behind an import's writes at most once for this side and once for the other.
    ({ tsq, keywordRows } = await db.transaction(async (tx) => {
      const query = await keywordTsquery(tx as Database, q.text, common);
      if (query === null) return { tsq: query, keywordRows: "[]" };
      // The rows go back into the next statement as they came, as JSON text: never parsed here.
      const rows = await queryRows(tx as Database, rowsAsJson(keywordSide(q, query), "r.rank"));
      return { tsq: query, keywordRows: jsonRows(rows) };
    }));
  }
  const s = searchStatement({ ...q, embedding: await pending }, tsq, keywordRows);
  const rows = JSON.parse(
    jsonRows(
      await db.transaction(async (tx) => {
        for (const setting of s.settings) await tx.execute(sql.raw(setting));
        return queryRows(tx as Database, rowsAsJson(s.statement, "r.fused DESC, r.chunk_id"));
      }),
    ),
  ) as Record<string, unknown>[];
  return rows.map((r) => ({
    chunkId: String(r.chunk_id),
    documentId: String(r.document_id),
    position: Number(r.position),
    content: String(r.content),
    metadata: (r.metadata ?? {}) as Record<string, string | number>,
    similarity: Number(r.similarity),
    keywordRank: r.keyword_rank == null ? null : Number(r.keyword_rank),
    fused: Number(r.fused),
  }));
}

export interface NeighbourChunk {
  documentId: string;
  position: number;
  content: string;
  metadata: Record<string, string | number>;
}

/**
 * Chunks next to the given positions, to show matches in context. With a current in-memory index (the embedded
 * default) they come from its copy, as the hits themselves do, so a search makes one statement fewer on the
 * store's one thread. Documents the index holds nothing of are asked of the store.
 */
export async function chunksAt(
  db: Database,
  wanted: { documentId: string; position: number }[],
): Promise<NeighbourChunk[]> {
  if (!wanted.length) return [];
  const index = chunkIndexOf(db);
  if (!index?.current) return chunksAtInStore(db, wanted);
  const { found, elsewhere } = index.chunksAt(wanted);
  const held = found.map((f) => ({
    documentId: f.documentId,
    position: f.position,
    content: f.content,
    metadata: heldMetadata(f),
  }));
  return elsewhere.length ? [...held, ...(await chunksAtInStore(db, elsewhere))] : held;
}

async function chunksAtInStore(
  db: Database,
  wanted: { documentId: string; position: number }[],
): Promise<NeighbourChunk[]> {
  const rows = await queryRows(
    db,
    sql`
    SELECT c.document_id, c.position, c.content, c.metadata
    FROM chunks c
    JOIN jsonb_to_recordset(${JSON.stringify(wanted.map((w) => ({ document_id: w.documentId, position: w.position })))}::jsonb)
      AS w(document_id text, position int)
      ON w.document_id = c.document_id AND w.position = c.position`,
  );
  return rows.map((r) => ({
    documentId: String(r.document_id),
    position: Number(r.position),
    content: String(r.content),
    metadata: (r.metadata ?? {}) as Record<string, string | number>,
  }));
}

export type { Metadata };
