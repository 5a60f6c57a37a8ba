import { z } from "@hono/zod-openapi";
import { ContainerTag } from "../schemas.ts";

export const Provider = z
  .string()
  .min(1)
  .max(50)
  .openapi({ param: { name: "provider", in: "path" }, example: "s3" });
export const ConnectionIdParam = z.object({
  connectionId: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "connectionId", in: "path" } }),
});

const FlatMetadata = z.record(z.string().min(1).max(200), z.union([z.string(), z.number(), z.boolean()]));

export const CreateBody = z
  .object({
    containerTag: ContainerTag.optional(),
    containerTags: z.array(ContainerTag).max(20).optional(),
    documentLimit: z.number().int().min(1).max(1_000_000).optional(),
    metadata: FlatMetadata.nullish().openapi({
      description:
        "The provider's settings (bucket, startUrls, host, ...) and credentials; credentials are sealed at rest and never returned",
    }),
    // http(s) only: the picker page sends the browser there, and a javascript: URL would run on this origin.
    redirectUrl: z
      .url({ protocol: /^https?$/, error: "redirectUrl must be an http or https URL" })
      .optional(),
    syncIntervalMinutes: z
      .number()
      .int()
      .min(0)
      .max(7 * 24 * 60)
      .default(60)
      .openapi({
        description: "Minutes between scheduled syncs (a Temporal schedule); 0 = only on create and import",
      }),
  })
  .openapi("ConnectionCreate");

export const CreateResponse = z
  .object({ id: z.string(), authLink: z.string(), expiresIn: z.string(), redirectsTo: z.string().optional() })
  .openapi("ConnectionCreated");

export const TagsBody = z.object({ containerTags: z.array(ContainerTag).max(20).optional() });
export const RequiredTagsBody = z.object({ containerTags: z.array(ContainerTag).min(1).max(20) });

const Counts = z.object({
  added: z.number(),
  updated: z.number(),
  deleted: z.number(),
  unchanged: z.number(),
  failed: z.number(),
  skipped: z.number().openapi({
    description:
      "Items the source would not give (too large, export limit, unsupported type, no permission, not found)",
  }),
  skippedReasons: z.record(z.string(), z.number()).openapi({
    description:
      "The skipped items by reason: too_large, export_limit, unsupported_type, archived, no_permission, not_found",
  }),
  heldForReview: z.number().openapi({
    description:
      "Documents the source no longer gave but kept, because deleting them would have removed over a fifth of the connection's items (and at least 50) at once",
  }),
});

export const SyncRun = z
  .object({
    id: z.string(),
    trigger: z.string().openapi({ description: "create | import | schedule" }),
    status: z.enum(["running", "done", "failed", "auth_expired", "skipped"]),
    errorCode: z.string().nullable(),
    error: z.string().nullable(),
    startedAt: z.string(),
    finishedAt: z.string().nullable(),
    counts: Counts,
    workflowId: z.string().nullable().openapi({ description: "The run's Temporal workflow id" }),
  })
  .openapi("SyncRun");

export const LastSyncRun = z
  .object({
    status: z.string(),
    errorCode: z
      .enum(["auth_expired", "rate_limited", "plan_required", "provider_unavailable", "internal"])
      .nullable()
      .openapi({
        description:
          "Why the run failed, or why a running run waits: auth_expired (reconnect), rate_limited (the source asked to slow down), provider_unavailable (unreachable or 5xx), internal (anything else; lastSync.errorCode says more)",
      }),
    error: z.string().nullable(),
    startedAt: z.string(),
    completedAt: z.string().optional(),
  })
  .openapi("LastSyncRun");

export const RunsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

export const ConnectionJson = z
  .object({
    id: z.string(),
    provider: z.string(),
    createdAt: z.string(),
    containerTags: z.array(z.string()),
    documentLimit: z.number().optional(),
    email: z.string().optional(),
    metadata: z.record(z.string(), z.unknown()),
    status: z.enum(["pending", "setup", "active", "auth_expired", "paused"]).openapi({
      description:
        "pending: waiting for the provider consent page; setup: waiting for the picker selection; active: syncing; auth_expired: credentials refused, reconnect it",
    }),
    syncIntervalMinutes: z.number(),
    lastSync: SyncRun.nullable(),
    lastSyncRun: LastSyncRun.optional().openapi({
      description: "The last run in the shape of Supermemory's API (absent before the first)",
    }),
  })
  .openapi("Connection");

export const ConnectionDocument = z.object({
  id: z.string(),
  createdAt: z.string(),
  status: z.string(),
  summary: z.string().nullable(),
  title: z.string().nullable(),
  type: z.string(),
  updatedAt: z.string(),
});

export const ResourcesQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(30),
  parent_id: z.string().max(500).optional(),
});

export const ConfigureBody = z.object({
  resources: z.array(z.record(z.string(), z.unknown())).min(1).max(500),
});

export const DeleteQuery = z.object({
  deleteDocuments: z.enum(["true", "false"]).default("true").openapi({
    description: "Also delete the documents the connection imported (default true)",
  }),
});
