/**
 * Google Drive connector settings: the schemas of a connection's config and secrets, and their types.
 *
 * Settings (the create call's `metadata`):
 * - `syncScope` (default "selected"): "selected" syncs the files and folders (recursively) picked in the
 *   hosted picker (`SyncContext.selection`; nothing while none are picked); "full" syncs all of My Drive
 *   (not files merely shared with the account). Changing the scope or the selection makes the next
 *   sync list the new scope and delete what only the old one held.
 * - `maxFileBytes` (default 50 MiB): larger files are skipped as `too_large` (the run counts them);
 *   Google Docs, Sheets and Slides have no size and are exported whatever it is (Google refuses exports
 *   past 10 MB: skipped as `export_limit`).
 * - `pageSize` (default 100, at most 1000): files or changes per Drive listing request, and items per
 *   page at which a listing page stops; small values are for tests.
 *
 * Secrets: none of its own; the OAuth tokens are the engine's (see index.ts).
 */

import { z } from "zod";

export const googleDriveConfigSchema = z.object({
  syncScope: z.enum(["full", "selected"]).default("selected"),
  maxFileBytes: z.coerce
    .number()
    .int()
    .min(1)
    .default(50 * 1024 * 1024),
  pageSize: z.coerce.number().int().min(1).max(1000).default(100),
});
export type GoogleDriveConfig = z.infer<typeof googleDriveConfigSchema>;

/** The engine keeps the OAuth tokens; nothing secret is given at creation. */
export const googleDriveSecretsSchema = z.object({}).passthrough();
export type GoogleDriveSecrets = z.infer<typeof googleDriveSecretsSchema>;
