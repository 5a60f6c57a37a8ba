CREATE TABLE "memories" (
	"id" text PRIMARY KEY NOT NULL,
	"container_tag" text NOT NULL,
	"content" text NOT NULL,
	"is_static" boolean DEFAULT false NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"end_user_id" text,
	"forget_after" timestamp with time zone,
	"forget_reason" text,
	"is_forgotten" boolean DEFAULT false NOT NULL,
	"forgotten_at" timestamp with time zone,
	"version" integer DEFAULT 1 NOT NULL,
	"parent_id" text,
	"root_id" text,
	"is_latest" boolean DEFAULT true NOT NULL,
	"relation" text,
	"related_to" text,
	"source_document_id" text,
	"embedding" vector,
	"embedding_model" text,
	"tsv" "tsvector" GENERATED ALWAYS AS (to_tsvector('english', "memories"."content")) STORED,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
DROP INDEX "chunks_embedding_hnsw";--> statement-breakpoint
ALTER TABLE "chunks" ALTER COLUMN "embedding" SET DATA TYPE vector;--> statement-breakpoint
ALTER TABLE "documents" ADD COLUMN "end_user_id" text;--> statement-breakpoint
ALTER TABLE "memories" ADD CONSTRAINT "memories_source_document_id_documents_id_fk" FOREIGN KEY ("source_document_id") REFERENCES "public"."documents"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "memories_container_latest_idx" ON "memories" USING btree ("container_tag","is_latest");--> statement-breakpoint
CREATE INDEX "memories_root_idx" ON "memories" USING btree ("root_id");--> statement-breakpoint
CREATE INDEX "memories_source_document_idx" ON "memories" USING btree ("source_document_id");--> statement-breakpoint
CREATE INDEX "memories_embedding_model_idx" ON "memories" USING btree ("embedding_model");--> statement-breakpoint
CREATE INDEX "memories_tsv_gin" ON "memories" USING gin ("tsv");--> statement-breakpoint
CREATE INDEX "chunks_embedding_model_idx" ON "chunks" USING btree ("embedding_model");--> statement-breakpoint
CREATE INDEX "documents_end_user_idx" ON "documents" USING btree ("end_user_id") WHERE "documents"."end_user_id" IS NOT NULL;