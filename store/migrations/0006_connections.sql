CREATE TABLE "connection_items" (
	"connection_id" text NOT NULL,
	"item_id" text NOT NULL,
	"parent_item_id" text,
	"version" text NOT NULL,
	"document_id" text,
	"seen_run" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "connection_items_connection_id_item_id_pk" PRIMARY KEY("connection_id","item_id")
);
--> statement-breakpoint
CREATE TABLE "connections" (
	"id" text PRIMARY KEY NOT NULL,
	"provider" text NOT NULL,
	"container_tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"sealed_secrets" text,
	"document_limit" integer,
	"sync_interval_minutes" integer DEFAULT 60 NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"cursor" jsonb,
	"redirect_url" text,
	"email" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sync_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"connection_id" text NOT NULL,
	"trigger" text NOT NULL,
	"status" text DEFAULT 'running' NOT NULL,
	"error_code" text,
	"error" text,
	"counts" jsonb DEFAULT '{"added":0,"updated":0,"deleted":0,"unchanged":0,"failed":0}'::jsonb NOT NULL,
	"workflow_id" text,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "connection_items" ADD CONSTRAINT "connection_items_connection_id_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."connections"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "connection_items" ADD CONSTRAINT "connection_items_document_id_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."documents"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sync_runs" ADD CONSTRAINT "sync_runs_connection_id_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."connections"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "connection_items_parent_idx" ON "connection_items" USING btree ("connection_id","parent_item_id");--> statement-breakpoint
CREATE INDEX "connection_items_seen_idx" ON "connection_items" USING btree ("connection_id","seen_run");--> statement-breakpoint
CREATE INDEX "connections_provider_idx" ON "connections" USING btree ("provider");--> statement-breakpoint
CREATE INDEX "connections_container_tags_gin" ON "connections" USING gin ("container_tags");--> statement-breakpoint
CREATE INDEX "sync_runs_connection_idx" ON "sync_runs" USING btree ("connection_id","started_at");