ALTER TABLE "documents" ADD COLUMN "workflow_run" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE "documents" SET "workflow_run" = "processing_run";
