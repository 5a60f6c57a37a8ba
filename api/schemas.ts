import { z } from "@hono/zod-openapi";

/** Same characters as the spec allows for scoped keys' container tags. */
export const ContainerTag = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_:.-]+$/, "may contain only letters, digits, hyphens, underscores, colons and dots")
  .openapi({ example: "user_123" });

export const MetadataValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]);
export const Metadata = z
  .record(z.string().min(1).max(200), MetadataValue)
  .openapi({ example: { source: "notes", priority: 2 } });

const boolish = z.union([z.boolean(), z.enum(["true", "false"]).transform((v) => v === "true")]);

const FilterCondition = z.object({
  key: z.string().min(1).max(200),
  value: z.string(),
  filterType: z.enum(["metadata", "numeric", "array_contains", "string_contains"]).optional(),
  numericOperator: z.enum([">", "<", ">=", "<=", "="]).optional(),
  ignoreCase: boolish.optional(),
  negate: boolish.optional(),
});

type FilterNodeIn = z.infer<typeof FilterCondition> | { AND: FilterNodeIn[] } | { OR: FilterNodeIn[] };

export const FilterNode: z.ZodType<FilterNodeIn> = z.lazy(() =>
  z.union([
    z.object({ AND: z.array(FilterNode) }).strict(),
    z.object({ OR: z.array(FilterNode) }).strict(),
    FilterCondition,
  ]),
);

/** Filters arrive as an object (current SDK) or as a JSON string (earlier SDK versions). */
export const Filters = z
  .union([
    z.object({ AND: z.array(FilterNode) }).strict(),
    z.object({ OR: z.array(FilterNode) }).strict(),
    z.string().transform((s, ctx) => {
      try {
        const parsed = FilterNode.safeParse(JSON.parse(s));
        if (parsed.success) return parsed.data;
        ctx.addIssue({ code: "custom", message: `invalid filters: ${parsed.error.issues[0]?.message}` });
      } catch {
        ctx.addIssue({ code: "custom", message: "filters string is not valid JSON" });
      }
      return z.NEVER;
    }),
  ])
  .openapi({ type: "object", description: "Nested AND/OR of metadata conditions" });

/** Supermemory's ErrorResponse (`error`: the message), with our code, field and issues beside it. */
export const ErrorResponse = z
  .object({
    error: z.string().openapi({ description: "What went wrong, for people" }),
    code: z.string().openapi({ description: "validation_error, unauthorized, not_found, ... (docs/api.md)" }),
    field: z.string().optional(),
    issues: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
  })
  .openapi("Error");

/** A JSON response of a route, for createRoute's `responses`. */
export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/** A required JSON request body, for createRoute's `request`. */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  body: { content: { "application/json": { schema } }, required: true },
});

export const errorResponses = {
  400: { description: "Invalid request", content: { "application/json": { schema: ErrorResponse } } },
  401: {
    description: "Missing or invalid API key",
    content: { "application/json": { schema: ErrorResponse } },
  },
} as const;

export const notFoundResponse = {
  404: { description: "Not found", content: { "application/json": { schema: ErrorResponse } } },
} as const;

export function tagsOf(body: { containerTag?: string; containerTags?: string[] }): string[] {
  return [...new Set([...(body.containerTag ? [body.containerTag] : []), ...(body.containerTags ?? [])])];
}
