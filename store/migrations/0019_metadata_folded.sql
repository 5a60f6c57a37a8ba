-- ignoreCase metadata filters (store/filters.ts) had no containment an index could answer, so a search in a big tag
-- read its documents first (store/exact-rank.ts): on the imported store (100,000 chunks in one tag) a search
-- filtered with ignoreCase to one project p95 118 ms, against 47.5 ms for the same filter case-sensitive.
-- metadata_folded(m) is m with every string value, and every string in an array value, lower-cased by the
-- database's lower(); keys are kept as they are (two keys that differ by case stay two). An ignoreCase equality or
-- array_contains is now also written as metadata_folded @> metadata_folded({key: value}), which the GIN indexes
-- below answer; the exact condition beside it keeps the meaning.
-- A stored column rather than an index on the expression: the function costs ~25 us a row in PGlite, and a search
-- that walks the HNSW graph checks the condition on every chunk it meets (a tenth of a tag: ~1,400), which made
-- such a search twice as slow as its case-sensitive twin. The column is computed once, when the metadata is written.
-- Adding it rewrites the table with its indexes: 3 s for 50,000 documents here. Memories are left as they were
-- (their ignoreCase filters still read the rows first): their table holds an HNSW index, and the rewrite rebuilt it,
-- 8 minutes for 200,000 memories.
CREATE OR REPLACE FUNCTION metadata_folded(metadata jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(jsonb_object_agg(f.key, CASE jsonb_typeof(f.value)
    WHEN 'string' THEN to_jsonb(lower(f.value #>> '{}'))
    WHEN 'array' THEN coalesce((
      SELECT jsonb_agg(CASE jsonb_typeof(e.value) WHEN 'string' THEN to_jsonb(lower(e.value #>> '{}')) ELSE e.value END
                       ORDER BY e.ordinality)
      FROM jsonb_array_elements(f.value) WITH ORDINALITY AS e), '[]'::jsonb)
    ELSE f.value END), '{}'::jsonb)
  FROM jsonb_each(CASE WHEN jsonb_typeof(metadata) = 'object' THEN metadata ELSE '{}'::jsonb END) AS f
$$;--> statement-breakpoint
ALTER TABLE "documents" ADD COLUMN "metadata_folded" jsonb GENERATED ALWAYS AS (metadata_folded("metadata")) STORED;--> statement-breakpoint
CREATE INDEX "documents_metadata_folded_gin" ON "documents" USING gin ("metadata_folded" jsonb_path_ops) WITH (gin_pending_list_limit = 256);--> statement-breakpoint
-- Existing stores: the planner estimates such a filter from the new column's statistics from the first search on.
ANALYZE "documents" ("metadata_folded");
