-- A short text kept word for word as a memory (no LLM; pipeline/short-text-memory.ts) is a copy of its
-- document, like its chunks: it goes when the document goes, whichever delete removed it. Memories an LLM
-- extracted from a document stay (their source_document_id becomes NULL).
CREATE FUNCTION "delete_short_text_memories"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "memories" WHERE "source_document_id" = OLD."id" AND "metadata"->>'memorySource' = 'short-text';
  RETURN OLD;
END;
$$;--> statement-breakpoint
CREATE TRIGGER "documents_delete_short_text_memories" BEFORE DELETE ON "documents"
  FOR EACH ROW EXECUTE FUNCTION "delete_short_text_memories"();
