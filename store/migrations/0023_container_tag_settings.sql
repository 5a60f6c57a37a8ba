CREATE TABLE "container_tag_settings" (
	"container_tag" text PRIMARY KEY NOT NULL,
	"name" text,
	"entity_context" text,
	"memory_filesystem_paths" jsonb,
	"profile_buckets" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
