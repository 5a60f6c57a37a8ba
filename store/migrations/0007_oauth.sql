CREATE TABLE "oauth_states" (
	"state" text PRIMARY KEY NOT NULL,
	"connection_id" text NOT NULL,
	"code_verifier" text,
	"redirect_uri" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "connections" ADD COLUMN "selection" jsonb;--> statement-breakpoint
ALTER TABLE "connections" ADD COLUMN "picker_token_hash" text;--> statement-breakpoint
ALTER TABLE "connections" ADD COLUMN "picker_token_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "oauth_states" ADD CONSTRAINT "oauth_states_connection_id_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."connections"("id") ON DELETE cascade ON UPDATE no action;