-- Console sessions kept on the server (api/console/session.ts): sign-out and disabling delete the row, so a
-- copied cookie stops working. Cookies issued before this migration name no row: their holders sign in again.
CREATE TABLE "console_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"subject" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "console_sessions_subject_idx" ON "console_sessions" USING btree ("kind","subject");--> statement-breakpoint
CREATE INDEX "console_sessions_expires_idx" ON "console_sessions" USING btree ("expires_at");