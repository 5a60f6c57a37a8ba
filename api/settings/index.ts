import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { declaredOAuthSettingsPrefixes, oauthSettingsKeys } from "../../connectors/oauth-apps.ts";
import { resetOrganisation } from "../../services/reset.ts";
import { readSettings, type StoredSettings, updateSettings } from "../../store/settings.ts";
import { requireAdmin } from "../auth.ts";
import { connectionDeps } from "../connections/deps.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { badRequest } from "../errors.ts";
import { ErrorResponse, errorResponses } from "../schemas.ts";
import { validationHook } from "../validation.ts";

/** A caller's own OAuth app for each app a connector declares (googleDrive, notion, onedrive, github). */
const OAUTH_APPS = declaredOAuthSettingsPrefixes().map((settingsPrefix) =>
  oauthSettingsKeys({ settingsPrefix }),
);
const SECRET_FIELDS = OAUTH_APPS.map((keys) => keys.clientSecret);

const AnyJson = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  z.record(z.string(), z.unknown()),
  z.array(z.unknown()),
]);

const plainShape = {
  chunkSize: z.number().int().min(200).max(20_000).nullable().optional().openapi({
    description: "Largest chunk in characters for documents processed from now on (null: CHUNK_MAX_CHARS)",
  }),
  excludeItems: AnyJson.nullable().optional(),
  includeItems: AnyJson.nullable().optional(),
  filterPrompt: z.string().max(10_000).nullable().optional(),
  shouldLLMFilter: z.boolean().nullable().optional(),
  ...Object.fromEntries(
    OAUTH_APPS.flatMap((keys) => [
      [keys.customKeyEnabled, z.boolean().nullable().optional()],
      [keys.clientId, z.string().max(1000).nullable().optional()],
    ]),
  ),
} as Record<string, z.ZodType>;

const secretShape = Object.fromEntries(
  SECRET_FIELDS.map((f) => [f, z.string().min(1).max(4000).nullable().optional()]),
) as Record<string, z.ZodType>;

export const SettingsPatch = z
  .object({ ...plainShape, ...secretShape })
  .strict()
  .openapi("SettingsUpdate", {
    description: "Fields left out are unchanged; null clears. Client secrets are stored encrypted.",
  });

/** Secrets come back as null with `<field>Set: true|false`; the clear value never leaves the server. */
const SettingsJson = z
  .object({
    ...Object.fromEntries(Object.keys(plainShape).map((k) => [k, z.unknown().optional()])),
    ...Object.fromEntries(
      SECRET_FIELDS.flatMap((f) => [
        [f, z.null()],
        [`${f}Set`, z.boolean()],
      ]),
    ),
  })
  .openapi("Settings");

function present(stored: StoredSettings) {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(plainShape)) out[k] = stored.values[k] ?? null;
  for (const f of SECRET_FIELDS) {
    out[f] = null;
    out[`${f}Set`] = stored.secretsSet.includes(f);
  }
  return out;
}

const security = [{ bearer: [] }];
const tags = ["settings"];
const forbidden = {
  403: { description: "Not an admin key", content: { "application/json": { schema: ErrorResponse } } },
} as const;

const getSettings = createRoute({
  method: "get",
  path: "/",
  tags,
  security,
  summary: "Service settings (admin only)",
  responses: {
    200: { description: "Settings", content: { "application/json": { schema: SettingsJson } } },
    ...errorResponses,
    ...forbidden,
  },
});

const patchSettings = createRoute({
  method: "patch",
  path: "/",
  tags,
  security,
  summary: "Update service settings (admin only)",
  request: { body: { content: { "application/json": { schema: SettingsPatch } }, required: true } },
  responses: {
    200: {
      description: "What the settings are now",
      content: {
        "application/json": {
          schema: z.object({ orgId: z.string(), orgSlug: z.string(), updated: SettingsJson }),
        },
      },
    },
    ...errorResponses,
    ...forbidden,
  },
});

/** The one organisation's slug (as PATCH answers it): what a reset must be confirmed with. */
const ORG_SLUG = "default";

const ResetBody = z
  .object({
    confirmation: z
      .string()
      .min(1)
      .openapi({
        description: `The organisation's slug, '${ORG_SLUG}', typed out: anything else is refused (400)`,
        example: ORG_SLUG,
      }),
  })
  .openapi("SettingsReset");

const ResetResult = z
  .object({
    success: z.literal(true),
    deletedConnections: z.number(),
    deletedDocumentBatches: z.number(),
    deletedDocumentsApprox: z.number().openapi({ description: "Documents there were when the reset began" }),
    deletedMemoryRows: z.number().openapi({ description: "Memory rows, every version and forgotten ones" }),
    deletedExtraSpaces: z.number().openapi({ description: "Container tags that held documents or memories" }),
    clearedDefaultSpaceContext: z
      .boolean()
      .openapi({ description: "Always false: there is no default space" }),
    clearedBrainMemoryRegistry: z
      .boolean()
      .openapi({ description: "Always false: there is no such registry" }),
    settingsReset: z.boolean(),
  })
  .openapi("SettingsResetResult");

const resetSettings = createRoute({
  method: "post",
  path: "/reset",
  tags,
  security,
  summary:
    "Delete the organisation's content: connections, documents, files, memories, settings (admin only)",
  description:
    "Keeps API keys, console users and webhooks. Documents go the way DELETE /v3/documents takes them (runs " +
    `stopped, stored files deleted). Needs {"confirmation": "${ORG_SLUG}"}.`,
  request: { body: { content: { "application/json": { schema: ResetBody } }, required: true } },
  responses: {
    200: { description: "Reset done", content: { "application/json": { schema: ResetResult } } },
    ...errorResponses,
    ...forbidden,
  },
});

/** Mounted at /v3/settings; the shapes are the SDK's `settings` resource. One organisation: `default`. */
export function settingsApp(deps: ApiDeps) {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use("*", requireAdmin());
  return app
    .openapi(getSettings, async (c) => c.json(present(await readSettings(deps.db)), 200))
    .openapi(patchSettings, async (c) => {
      const body = c.req.valid("json") as Record<string, unknown>;
      const values: Record<string, unknown> = {};
      const secrets: Record<string, string | null> = {};
      for (const [k, v] of Object.entries(body)) {
        if (v === undefined) continue;
        if (SECRET_FIELDS.includes(k)) secrets[k] = v as string | null;
        else values[k] = v;
      }
      const stored = await updateSettings(deps.db, deps.secrets, { values, secrets });
      return c.json({ orgId: ORG_SLUG, orgSlug: ORG_SLUG, updated: present(stored) }, 200);
    })
    .openapi(resetSettings, async (c) => {
      if (c.req.valid("json").confirmation !== ORG_SLUG)
        throw badRequest(
          `confirmation must be the organisation's slug, '${ORG_SLUG}': the reset deletes all of its content`,
          "confirmation",
        );
      return c.json(await resetOrganisation(connectionDeps(deps)), 200);
    });
}
