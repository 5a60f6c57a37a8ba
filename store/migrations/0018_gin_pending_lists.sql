-- A GIN index takes new rows into a pending list (fastupdate), merged into the index only when the list passes
-- gin_pending_list_limit (4 MB by default), by VACUUM or by autovacuum's ANALYZE. PGlite runs no autovacuum, and
-- the maintenance pass vacuums only tables with dead rows, so on a store that only grows the lists stayed between
-- 0 and 4 MB, and every search read its whole list: the keyword side (tsv), the tag and metadata filters. On
-- 200,000 memories added through the store path (bench/search-memories.ts) the metadata index's list held 491
-- pages and the tsv index's 118: a search in a 100,000-memory container filtered to one project p50 70.7 ms,
-- unfiltered 40.1 ms; with the lists merged 18.7 and 29.1 ms. At 256 kB a list is merged 16 times as often, in
-- smaller steps, and a search reads at most 32 pages of it; adding 20,000 memories ran at 122 and 132 per second
-- (4 MB, 256 kB): no cost to see beside the HNSW updates.
ALTER INDEX "chunks_tsv_gin" SET (gin_pending_list_limit = 256);--> statement-breakpoint
ALTER INDEX "chunks_search_tags_gin" SET (gin_pending_list_limit = 256);--> statement-breakpoint
ALTER INDEX "documents_container_tags_gin" SET (gin_pending_list_limit = 256);--> statement-breakpoint
ALTER INDEX "documents_metadata_gin" SET (gin_pending_list_limit = 256);--> statement-breakpoint
ALTER INDEX "memories_tsv_gin" SET (gin_pending_list_limit = 256);--> statement-breakpoint
ALTER INDEX "memories_metadata_gin" SET (gin_pending_list_limit = 256);--> statement-breakpoint
-- Existing stores: the lists merged now, not at the next insert that passes the new limit.
SELECT gin_clean_pending_list('"chunks_tsv_gin"'::regclass);--> statement-breakpoint
SELECT gin_clean_pending_list('"chunks_search_tags_gin"'::regclass);--> statement-breakpoint
SELECT gin_clean_pending_list('"documents_container_tags_gin"'::regclass);--> statement-breakpoint
SELECT gin_clean_pending_list('"documents_metadata_gin"'::regclass);--> statement-breakpoint
SELECT gin_clean_pending_list('"memories_tsv_gin"'::regclass);--> statement-breakpoint
SELECT gin_clean_pending_list('"memories_metadata_gin"'::regclass);
