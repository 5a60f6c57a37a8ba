-- Indexes for reads that walked every document of a big store.
-- documents_metadata_gin, memories_metadata_gin: store/filters.ts writes an equality, an array_contains and a
-- numeric "=" filter as a containment (metadata @> {...}) beside its exact condition. With these indexes the
-- planner finds the few documents a selective filter keeps instead of reading every document of the tag, and
-- estimates how few they are from the column's statistics: for the exact condition alone it assumed half the rows,
-- so a search walked the HNSW index up to pgvector's scan limit and returned fewer rows than it should have. On
-- the imported store (100,000 chunks in one tag), a filter keeping 0.4 % of the documents: a search 420 -> 21 ms,
-- with all of its 100 candidates instead of 88.
-- documents_unfinished_idx: the processing list (oldest unfinished first) walked every finished document in
-- created_at order to find the few that are not: 50 ms at 50,000 documents for an empty list.
CREATE INDEX "documents_metadata_gin" ON "documents" USING gin ("metadata" jsonb_path_ops);--> statement-breakpoint
CREATE INDEX "documents_unfinished_idx" ON "documents" USING btree ("created_at") WHERE "documents"."status" NOT IN ('done', 'failed');--> statement-breakpoint
CREATE INDEX "memories_metadata_gin" ON "memories" USING gin ("metadata" jsonb_path_ops);