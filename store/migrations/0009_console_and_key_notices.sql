CREATE TABLE "console_users" (
	"id" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"password_hash" text NOT NULL,
	"disabled_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "key_expiry_notices" (
	"key_id" text NOT NULL,
	"lead_time" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"channel" text NOT NULL,
	"recipient" text,
	"sent_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "key_expiry_notices_key_id_lead_time_expires_at_pk" PRIMARY KEY("key_id","lead_time","expires_at")
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "contact_email" text;--> statement-breakpoint
ALTER TABLE "key_expiry_notices" ADD CONSTRAINT "key_expiry_notices_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "console_users_email_key" ON "console_users" USING btree ("email");