/**
 * Notion connector settings: the schemas of a connection's config and secrets, and their types.
 *
 * Settings (the create call's `metadata`):
 * - `includeDatabases` (default true): sync databases (their row pages and one document per data
 *   source). false: only pages that are not database rows.
 * - `pageSize` (default 100, Notion's maximum; 1-100): page size of search, block-children and database
 *   queries (small values are for tests).
 *
 * Secrets: none. Credentials are OAuth only; the engine keeps the tokens (see index.ts).
 */

import { z } from "zod";

const flatBoolean = z.union([z.boolean(), z.enum(["true", "false"]).transform((v) => v === "true")]);

export const notionConfigSchema = z.object({
  pageSize: z.coerce.number().int().min(1).max(100).default(100),
  includeDatabases: flatBoolean.default(true),
});
export type NotionConfig = z.infer<typeof notionConfigSchema>;

/** Tokens are the engine's (ctx.oauth): nothing secret is taken from metadata. */
export const notionSecretsSchema = z.object({}).passthrough();
export type NotionSecrets = z.infer<typeof notionSecretsSchema>;
