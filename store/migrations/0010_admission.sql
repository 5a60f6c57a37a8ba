ALTER TABLE "documents" ADD COLUMN "admitted_run" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "documents" ADD COLUMN "admitted_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "documents" ADD COLUMN "priority" smallint DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "documents" ADD COLUMN "fairness_key" text DEFAULT '' NOT NULL;--> statement-breakpoint
-- Runs whose workflow already started are in flight; the rest wait for admission like new ones.
UPDATE "documents" SET "admitted_run" = "workflow_run",
  "admitted_at" = CASE WHEN "workflow_run" > 0 THEN "updated_at" END,
  "fairness_key" = COALESCE('connection:' || "connection_id", 'tag:' || "container_tags"[1], '');--> statement-breakpoint
CREATE INDEX "documents_awaiting_admission_idx" ON "documents" USING btree ("priority","fairness_key","created_at") WHERE "documents"."admitted_run" < "documents"."processing_run" AND "documents"."status" NOT IN ('done', 'failed');--> statement-breakpoint
CREATE INDEX "documents_in_flight_idx" ON "documents" USING btree ("fairness_key") WHERE "documents"."admitted_run" = "documents"."processing_run" AND "documents"."status" NOT IN ('done', 'failed');