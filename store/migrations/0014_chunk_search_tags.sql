-- Search filters on the chunk itself (issue #25): `search_tags` holds the document's container tags while the
-- document is `done`, NULL otherwise, so a search needs no join to `documents`. At 50,000 documents that join
-- (a scan of every document row, or a probe per keyword match) was most of a search's time.
ALTER TABLE "chunks" ADD COLUMN "search_tags" text[];--> statement-breakpoint
-- Existing chunks: once, before the index exists (one rewrite of the chunks table; maintenance vacuums it).
UPDATE "chunks" AS c SET "search_tags" = d."container_tags"
  FROM "documents" AS d WHERE d."id" = c."document_id" AND d."status" = 'done';--> statement-breakpoint
CREATE INDEX "chunks_search_tags_gin" ON "chunks" USING gin ("search_tags");--> statement-breakpoint
-- The planner needs the new column's statistics at once: without them it takes a tag holding every chunk for
-- a handful of rows and sorts them all instead of walking the HNSW index.
ANALYZE "chunks";--> statement-breakpoint
-- A chunk written without the value takes it from its document (a document being processed gives NULL).
-- Writers that know it (the run that marks its document done in the same statement) set it themselves.
-- Both functions plan their statement at each call (EXECUTE): PL/pgSQL would otherwise keep a generic plan made
-- while the tables were small, a sequential scan, and with no autovacuum (PGlite) nothing replans it: a
-- 6,000-document import slowed from 132 to 81 documents/s with static SQL here, and held 130 with EXECUTE.
CREATE FUNCTION "chunks_search_tags_from_document"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'SELECT CASE WHEN status = ''done'' THEN container_tags END FROM documents WHERE id = $1'
    INTO NEW.search_tags USING NEW.document_id;
  RETURN NEW;
END $$;--> statement-breakpoint
CREATE TRIGGER "chunks_search_tags_from_document" BEFORE INSERT ON "chunks"
  FOR EACH ROW WHEN (NEW.search_tags IS NULL) EXECUTE FUNCTION "chunks_search_tags_from_document"();--> statement-breakpoint
-- A document that becomes done, stops being done (a new run) or changes tags while done passes it on to its
-- chunks; rows that already hold the value are not written again.
CREATE FUNCTION "documents_search_tags_to_chunks"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tags text[] := CASE WHEN NEW.status = 'done' THEN NEW.container_tags END;
BEGIN
  EXECUTE 'UPDATE chunks SET search_tags = $1 WHERE document_id = $2 AND search_tags IS DISTINCT FROM $1'
    USING tags, NEW.id;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "documents_search_tags_to_chunks" AFTER UPDATE OF "status", "container_tags" ON "documents"
  FOR EACH ROW
  WHEN ((OLD.status = 'done') IS DISTINCT FROM (NEW.status = 'done')
        OR (NEW.status = 'done' AND OLD.container_tags IS DISTINCT FROM NEW.container_tags))
  EXECUTE FUNCTION "documents_search_tags_to_chunks"();
