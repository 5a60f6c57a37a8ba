import { z } from "@hono/zod-openapi";

export const SignInBody = z
  .union([
    z.object({ apiKey: z.string().min(1).max(500).openapi({ description: "An admin API key" }) }).strict(),
    z
      .object({
        email: z.email().max(320),
        password: z.string().min(1).max(1000),
      })
      .strict(),
  ])
  .openapi("ConsoleSignIn", {
    description: "Either an admin API key, or a console user's email and password",
  });

export const ConsoleSession = z
  .object({
    csrfToken: z.string().openapi({
      description: "Send it as the x-csrf-token header with every request that is not GET or HEAD",
    }),
    user: z.object({
      kind: z
        .enum(["key", "user"])
        .openapi({ description: "key: signed in with an admin key; user: a console user" }),
      id: z.string(),
      name: z.string(),
      email: z.string().nullable(),
    }),
    expiresAt: z.string(),
  })
  .openapi("ConsoleSession");

export const NewConsoleUser = z
  .object({
    email: z.email().max(320),
    password: z.string().min(12).max(1000).openapi({ description: "At least 12 characters" }),
  })
  .strict()
  .openapi("NewConsoleUser");

export const ConsoleUser = z
  .object({
    id: z.string(),
    email: z.string(),
    createdAt: z.string(),
    disabledAt: z.string().nullable(),
  })
  .openapi("ConsoleUser");

export const ConsoleConfig = z
  .object({
    temporalUiUrl: z.string().nullable().openapi({
      description: "Temporal Web UI base URL (TEMPORAL_UI_URL, or the local dev server's); null if unknown",
    }),
    temporalNamespace: z.string(),
    maxFileBytes: z.number(),
  })
  .openapi("ConsoleConfig");

export const UserIdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});
