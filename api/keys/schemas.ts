import { z } from "@hono/zod-openapi";
import { ContainerTag } from "../schemas.ts";

/** Scoped keys live this long unless `expiresInDays` says otherwise. */
export const DEFAULT_SCOPED_KEY_DAYS = 365;
/** A scoped key's rate limit unless the request says otherwise. */
export const DEFAULT_RATE_LIMIT_MAX = 500;
export const DEFAULT_RATE_LIMIT_WINDOW_MS = 60_000;

const ContactEmail = z
  .email()
  .max(254)
  .openapi({ description: "Who gets the key-expiry notices", example: "ops@example.com" });
const RateLimitTimeWindow = z
  .number()
  .int()
  .min(1)
  .max(3_600_000)
  .openapi({ description: "Window of the rate limit, in milliseconds" });

export const ScopedKeyBody = z
  .object({
    containerTag: ContainerTag,
    containerTags: z
      .array(ContainerTag)
      .max(100)
      .optional()
      .openapi({ description: "More container tags for the same key, besides containerTag" }),
    name: z.string().trim().min(1).max(200).optional(),
    expiresInDays: z.number().int().min(1).max(365).default(DEFAULT_SCOPED_KEY_DAYS),
    rateLimitMax: z.number().int().min(1).max(10_000).default(DEFAULT_RATE_LIMIT_MAX),
    rateLimitTimeWindow: RateLimitTimeWindow.default(DEFAULT_RATE_LIMIT_WINDOW_MS),
    contactEmail: ContactEmail.optional(),
  })
  .strict()
  .openapi("ScopedKeyRequest");

export const ScopedKeyResponse = z
  .object({
    key: z.string().openapi({ description: "The secret: shown once, only its hash is stored" }),
    id: z.string(),
    name: z.string(),
    containerTag: z.string(),
    containerTags: z.array(z.string()),
    expiresAt: z.string(),
    allowedEndpoints: z.array(z.string()),
    rateLimitMax: z.number(),
    rateLimitTimeWindow: z.number(),
    contactEmail: z.string().nullable(),
  })
  .openapi("ScopedKey");

export const CreateKeyBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    kind: z.enum(["scoped", "admin"]).default("scoped").openapi({
      description: "scoped: limited to container tags and the document endpoints; admin: everything",
    }),
    containerTags: z
      .array(ContainerTag)
      .max(100)
      .optional()
      .openapi({ description: "Required (non-empty) for a scoped key; none for an admin key" }),
    expiresInDays: z
      .number()
      .int()
      .min(1)
      .max(3650)
      .optional()
      .openapi({
        description: `Default ${DEFAULT_SCOPED_KEY_DAYS} for a scoped key; an admin key never expires unless given`,
      }),
    contactEmail: ContactEmail.optional(),
    rateLimitMax: z
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .optional()
      .openapi({
        description: `Requests per window; default ${DEFAULT_RATE_LIMIT_MAX} for a scoped key, ADMIN_RATE_LIMIT_MAX for an admin key`,
      }),
    rateLimitTimeWindow: RateLimitTimeWindow.optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    const tags = body.containerTags ?? [];
    if (body.kind === "scoped" && !tags.length) {
      ctx.addIssue({
        code: "custom",
        path: ["containerTags"],
        message: "a scoped key needs at least one container tag",
      });
    }
    if (body.kind === "admin" && tags.length) {
      ctx.addIssue({
        code: "custom",
        path: ["containerTags"],
        message: "an admin key has no container tags",
      });
    }
  })
  .openapi("CreateKeyRequest");

export const UpdateKeyBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    contactEmail: ContactEmail.nullable().optional(),
    expiresAt: z.iso
      .datetime({ offset: true })
      .refine((v) => Date.parse(v) > Date.now(), "must be in the future")
      .nullable()
      .optional()
      .openapi({
        description:
          "A new expiry (ISO 8601, in the future) or null for none; a moved expiry gets fresh notices",
      }),
  })
  .strict()
  .openapi("UpdateKeyRequest");

export const KeyNotice = z
  .object({
    leadTime: z.string().openapi({ example: "7d" }),
    expiresAt: z.string().openapi({ description: "The expiry this notice announced" }),
    channel: z
      .enum(["smtp", "log"])
      .openapi({ description: "smtp: mailed; log: written to the service log" }),
    recipient: z.string().nullable(),
    sentAt: z.string(),
  })
  .openapi("KeyNotice");

export const KeyInfo = z
  .object({
    id: z.string(),
    name: z.string(),
    kind: z.enum(["scoped", "admin"]),
    keyPrefix: z.string().openapi({ description: "First characters of the secret, to recognise the key" }),
    containerTags: z.array(z.string()),
    expiresAt: z.string().nullable(),
    contactEmail: z.string().nullable(),
    rateLimitMax: z.number().nullable(),
    rateLimitTimeWindow: z.number().nullable(),
    createdAt: z.string(),
    disabledAt: z.string().nullable(),
    status: z.enum(["active", "disabled", "expired"]),
    fromEnvironment: z.boolean().openapi({
      description:
        "The key from MEMORY_ADMIN_KEY: rotated in the environment, never disabled or given an expiry here",
    }),
    notices: z
      .array(KeyNotice)
      .openapi({ description: "Key-expiry notices sent for this key, newest first" }),
  })
  .openapi("KeyInfo");

export const CreatedKey = KeyInfo.omit({
  disabledAt: true,
  status: true,
  fromEnvironment: true,
  notices: true,
})
  .extend({ key: z.string().openapi({ description: "The secret: shown once, only its hash is stored" }) })
  .openapi("CreatedKey");

export const KeyNoticeEntry = KeyNotice.extend({ keyId: z.string(), keyName: z.string() }).openapi(
  "KeyNoticeEntry",
);

export const IdParam = z.object({ id: z.string().min(1).max(100) });
