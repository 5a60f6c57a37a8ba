-- customIds live in namespaces (store/scope.ts customIdNamespace): a scoped key's own, or "" for admin keys and
-- syncs. Rows from before stay in "", where every key whose scope they are in still finds them by customId.
DROP INDEX "documents_custom_id_key";--> statement-breakpoint
ALTER TABLE "documents" ADD COLUMN "custom_id_namespace" text DEFAULT '' NOT NULL;--> statement-breakpoint
CREATE INDEX "documents_custom_id_idx" ON "documents" USING btree ("custom_id") WHERE "documents"."custom_id" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "documents_custom_id_key" ON "documents" USING btree ("custom_id_namespace","custom_id") WHERE "documents"."custom_id" IS NOT NULL;