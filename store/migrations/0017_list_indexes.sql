-- The document list (POST /v3/documents/list) pages in created_at or updated_at order and counts its total under
-- tags and statuses. Its indexes now carry the id, the status and the tags, so the count and the rows a page
-- skips are read from the index alone instead of from the document rows, which hold the text: in a tag of 50,001
-- documents on the embedded default (store/documents.ts listDocuments, in process), page 1 with its count
-- 73-77 -> 30 ms, page 2,000 102-107 -> 31-34 ms (once VACUUM has set the visibility map). They replace the
-- single-column indexes, whose every use (admission's stale runs, a connection's newest documents) they serve too.
CREATE INDEX "documents_created_list_idx" ON "documents" USING btree ("created_at","id","status","container_tags");--> statement-breakpoint
CREATE INDEX "documents_updated_list_idx" ON "documents" USING btree ("updated_at","id","status","container_tags");--> statement-breakpoint
DROP INDEX "documents_created_at_idx";--> statement-breakpoint
DROP INDEX "documents_updated_at_idx";
