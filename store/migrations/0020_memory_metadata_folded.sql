-- ignoreCase filters on memories had no containment an index could answer (migration 0019 gave documents theirs),
-- so a memory search filtered with ignoreCase read the container's memories first to find the few it keeps
-- (store/exact-rank.ts): in a container of 100,000 memories (bench/search-memories.ts store, 200,000 in all) one
-- project's filter took p50 180 / p95 260 ms with ignoreCase against 20.6 / 28.8 ms case-sensitive (in process).
-- Memories get an index on the folded metadata, metadata_folded(metadata), rather than the stored column documents
-- have: adding a column computed from every row rewrote the memories table and with it its HNSW index (8 minutes
-- for 200,000 memories), where this index is built beside it (7.4 s with the statistics). A table of folded metadata
-- beside the memories was tried first: a selective filter then looked each of its memories up by id (p50 33.5
-- against 18.9 ms case-sensitive), and under an OR the planner could not search its index at all.
--
-- The index's entries are hashes (jsonb_path_ops), so every memory they find is checked again, computing the
-- expression, and so is every memory an HNSW walk meets: the function took ~16 us a row in PGlite, most of it the
-- cost of calling a SQL function that cannot be inlined. Metadata with no upper-case character anywhere in its
-- text is its own folding, and lower() of the text tells that (a string value whose text lower() leaves as it is
-- is left so by lower() alone too), so metadata_folded() is now one expression the planner inlines, answering
-- those at once (~2 us a row) and folding the others as before (metadata_folded_each, the body of migration
-- 0019). Its results are unchanged: the documents' stored column and this index stay valid.
-- The 0019 function keeps its body under the new name; the documents' stored column, which names it by its oid,
-- goes on computing with it.
ALTER FUNCTION metadata_folded(jsonb) RENAME TO metadata_folded_each;--> statement-breakpoint
-- Written so the planner inlines it (one expression, no FROM): called as a function, a SQL function costs ~15 us a
-- row in PGlite whatever its body. The inner function is named with its schema: an index expression is computed
-- with only pg_catalog on the search path.
DO $migration$
BEGIN
  EXECUTE format($body$
    CREATE FUNCTION metadata_folded(metadata jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE WHEN jsonb_typeof(metadata) = 'object' AND metadata::text = lower(metadata::text) THEN metadata
                  ELSE %I.metadata_folded_each(metadata) END
    $$
  $body$, current_schema());
END
$migration$;--> statement-breakpoint
CREATE INDEX "memories_metadata_folded_gin" ON "memories" USING gin (metadata_folded("metadata") jsonb_path_ops)
  WITH (gin_pending_list_limit = 256);--> statement-breakpoint
-- Existing stores: the planner estimates such a filter from the expression's statistics from the first search on.
ANALYZE "memories";
