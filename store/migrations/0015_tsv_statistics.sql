-- The keyword side of search weighs a query's terms by the planner's statistics (store/keyword.ts: the rarest
-- first, as many as keep the estimated matches within the match budget), and a term missing from the most
-- common lexemes counts as rare. At the default statistics target (100) ANALYZE keeps about 1,000 lexemes; on
-- a million chunks many terms outside them still match thousands of chunks each, so a search ranked up to
-- 8,600 matches instead of about 4,000: on PostgreSQL the keyword side read p50 21,800 buffers and took most of a
-- search's time. With 10,000 lexemes kept (target 1000): p50 5,300 buffers, a search p50 86 -> 21 ms
-- (bench/search-plan.ts --postgres, 1,000,000 chunks). ANALYZE then samples up to 300,000 rows.
ALTER TABLE "chunks" ALTER COLUMN "tsv" SET STATISTICS 1000;--> statement-breakpoint
ALTER TABLE "memories" ALTER COLUMN "tsv" SET STATISTICS 1000;--> statement-breakpoint
-- Existing stores: the new statistics at once, not at the next ANALYZE.
ANALYZE "chunks";--> statement-breakpoint
ANALYZE "memories";
