/**
 * GitHub connector settings: the schemas of a connection's config and secrets, and their types.
 *
 * Settings (the create call's `metadata`):
 * - `repositories` (default ""): comma-separated `owner/name` list. Usually written by
 *   `POST /v3/connections/:id/configure` from items picked out of `GET /v3/connections/:id/resources`;
 *   while empty, a sync lists nothing.
 * - `baseUrl` (default `https://api.github.com`): the REST API root, e.g. `https://ghe.example.com/api/v3`
 *   for Enterprise Server. Hosts on loopback or private networks are refused unless the deployment's
 *   network policy allows private networks (the same rule as for crawled URLs and S3 endpoints).
 * - `includeIssues` (default true), `includePullRequests` (default true).
 * - `fileExtensions` (default `md,mdx,markdown,txt,rst`): comma-separated, case-insensitive, without dots.
 *   README files (with no extension or a text one) are always taken.
 * - `maxFileBytes` (default 1 MiB): larger files are skipped (logged), not synced.
 * - `filesPerPage` (default 500) and `issuesPerPage` (default 100, GitHub's maximum): listing page sizes.
 *
 * Secrets (sealed at rest, never returned): `token`, a personal access token (classic with `repo` scope for
 * private repositories, or fine-grained with Contents and Issues/Pull requests read access) or an OAuth
 * token.
 */

import { z } from "zod";
import { parseRepositoryList } from "./repositories.ts";

const flatBoolean = z.union([z.boolean(), z.enum(["true", "false"]).transform((v) => v === "true")]);

export const DEFAULT_GITHUB_API = "https://api.github.com";

export const githubConfigSchema = z.object({
  repositories: z
    .string()
    .default("")
    .superRefine((value, ctx) => {
      const problem = parseRepositoryList(value).error;
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    }),
  baseUrl: z
    .url({ protocol: /^https?$/ })
    .default(DEFAULT_GITHUB_API)
    .transform((url) => url.replace(/\/+$/, "")),
  includeIssues: flatBoolean.default(true),
  includePullRequests: flatBoolean.default(true),
  fileExtensions: z
    .string()
    .default("md,mdx,markdown,txt,rst")
    .transform((value) =>
      value
        .split(",")
        .map((ext) => ext.trim().replace(/^\.+/, "").toLowerCase())
        .filter((ext) => ext.length > 0),
    ),
  maxFileBytes: z.coerce
    .number()
    .int()
    .min(1)
    // The blob API serves files up to 100 MB.
    .max(100 * 1024 * 1024)
    .default(1024 * 1024),
  filesPerPage: z.coerce.number().int().min(1).max(5000).default(500),
  issuesPerPage: z.coerce.number().int().min(1).max(100).default(100),
});
export type GithubConfig = z.infer<typeof githubConfigSchema>;

/** A token given at creation; without one, the connection goes through GitHub's OAuth consent instead. */
export const githubSecretsSchema = z.looseObject({
  token: z.string().min(1).optional(),
});
export type GithubSecrets = z.infer<typeof githubSecretsSchema>;
