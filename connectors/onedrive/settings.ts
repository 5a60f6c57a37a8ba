/**
 * OneDrive connector settings: the schemas of a connection's config and secrets, and their types.
 *
 * Settings (the create call's `metadata`):
 * - `syncScope` (default "selected"): "full" syncs the whole drive; "selected" syncs only what was ticked
 *   in the hosted picker: the picked files, and everything under the picked folders. With nothing picked
 *   a sync lists nothing. Changing the picks later removes the documents of what is no longer picked.
 * - `maxFileBytes` (default 100 MiB, at most 1 GiB): larger files are skipped (logged), not synced; a file
 *   that grows past it loses its document.
 * - `pageSize` (default 200, 1 to 1000): items per Graph request (`$top`) for delta, children and browse.
 *
 * Secrets: none of the caller's; the OAuth tokens are kept sealed by the engine.
 */

import { z } from "zod";

export const onedriveConfigSchema = z.object({
  syncScope: z.enum(["full", "selected"]).default("selected"),
  maxFileBytes: z.coerce
    .number()
    .int()
    .min(1)
    .max(1024 * 1024 * 1024)
    .default(100 * 1024 * 1024),
  pageSize: z.coerce.number().int().min(1).max(1000).default(200),
});
export type OnedriveConfig = z.infer<typeof onedriveConfigSchema>;

/** The engine keeps the OAuth tokens; the connection itself has no secret settings. */
export const onedriveSecretsSchema = z.looseObject({});
export type OnedriveSecrets = z.infer<typeof onedriveSecretsSchema>;
