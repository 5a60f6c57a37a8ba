import type { RouteHandler } from "@hono/zod-openapi";
import * as keys from "../../store/api-keys.ts";
import { type KeyExpiryNoticeRow, listNotices, noticesOfKeys } from "../../store/key-notices.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { ApiError, notFound } from "../errors.ts";
import { SCOPED_KEY_ENDPOINTS } from "../key-scope.ts";
import type * as routes from "./routes.ts";
import { DEFAULT_RATE_LIMIT_MAX, DEFAULT_RATE_LIMIT_WINDOW_MS, DEFAULT_SCOPED_KEY_DAYS } from "./schemas.ts";

const DAY_MS = 86_400_000;

function presentNotice(n: KeyExpiryNoticeRow) {
  return {
    leadTime: n.leadTime,
    expiresAt: n.expiresAt.toISOString(),
    channel: n.channel,
    recipient: n.recipient,
    sentAt: n.sentAt.toISOString(),
  };
}

/** What a listing shows of a key: never its secret or hash. */
function presentKey(row: keys.ApiKeyRow) {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    keyPrefix: row.keyPrefix,
    containerTags: row.containerTags,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    contactEmail: row.contactEmail,
    rateLimitMax: row.rateLimitMax,
    rateLimitTimeWindow: row.rateLimitWindowMs,
    createdAt: row.createdAt.toISOString(),
  };
}

function keyInfo(
  row: keys.ApiKeyRow,
  notices: KeyExpiryNoticeRow[],
  fromEnvironment: boolean,
  now = Date.now(),
) {
  const status = row.disabledAt
    ? ("disabled" as const)
    : row.expiresAt && row.expiresAt.getTime() <= now
      ? ("expired" as const)
      : ("active" as const);
  return {
    ...presentKey(row),
    disabledAt: row.disabledAt?.toISOString() ?? null,
    status,
    fromEnvironment,
    notices: notices.map(presentNotice),
  };
}

const lockout = (message: string) => new ApiError(409, "conflict", message);

export function createKeyHandlers(deps: ApiDeps) {
  /**
   * The key registered from MEMORY_ADMIN_KEY is the operator's way in: start-up never re-enables it,
   * so the API neither disables it nor gives it an expiry (rotate it in the environment instead).
   */
  const isEnvAdminKey = (row: keys.ApiKeyRow) =>
    !!deps.config.MEMORY_ADMIN_KEY && row.keyHash === keys.hashKey(deps.config.MEMORY_ADMIN_KEY);

  const createScoped: RouteHandler<typeof routes.createScopedKey, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const containerTags = [...new Set([body.containerTag, ...(body.containerTags ?? [])])];
    const expiresAt = new Date(Date.now() + body.expiresInDays * DAY_MS);
    const { key, secret } = await keys.createKey(deps.db, {
      name: body.name ?? `scoped_${body.containerTag}`,
      kind: "scoped",
      containerTags,
      allowedEndpoints: [...SCOPED_KEY_ENDPOINTS],
      rateLimitMax: body.rateLimitMax,
      rateLimitWindowMs: body.rateLimitTimeWindow,
      expiresAt,
      contactEmail: body.contactEmail ?? null,
    });
    return c.json(
      {
        key: secret,
        id: key.id,
        name: key.name,
        containerTag: body.containerTag,
        containerTags,
        expiresAt: expiresAt.toISOString(),
        allowedEndpoints: [...SCOPED_KEY_ENDPOINTS],
        rateLimitMax: body.rateLimitMax,
        rateLimitTimeWindow: body.rateLimitTimeWindow,
        contactEmail: key.contactEmail,
      },
      200,
    );
  };

  const deleteScoped: RouteHandler<typeof routes.deleteScopedKey, AppEnv> = async (c) => {
    if (!(await keys.disableScopedKey(deps.db, c.req.valid("param").id))) throw notFound("scoped key");
    return c.json({ success: true as const }, 200);
  };

  const create: RouteHandler<typeof routes.createKey, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const scoped = body.kind === "scoped";
    const containerTags = [...new Set(body.containerTags ?? [])];
    const days = body.expiresInDays ?? (scoped ? DEFAULT_SCOPED_KEY_DAYS : undefined);
    const limited = scoped || body.rateLimitMax !== undefined;
    const { key, secret } = await keys.createKey(deps.db, {
      name: body.name ?? (scoped ? `scoped_${containerTags[0]}` : "admin"),
      kind: body.kind,
      containerTags,
      allowedEndpoints: scoped ? [...SCOPED_KEY_ENDPOINTS] : null,
      rateLimitMax: limited ? (body.rateLimitMax ?? DEFAULT_RATE_LIMIT_MAX) : null,
      rateLimitWindowMs: limited ? (body.rateLimitTimeWindow ?? DEFAULT_RATE_LIMIT_WINDOW_MS) : null,
      expiresAt: days ? new Date(Date.now() + days * DAY_MS) : null,
      contactEmail: body.contactEmail ?? null,
    });
    return c.json({ key: secret, ...presentKey(key) }, 200);
  };

  const list: RouteHandler<typeof routes.listKeys, AppEnv> = async (c) => {
    const rows = await keys.listKeys(deps.db);
    const notices = await noticesOfKeys(
      deps.db,
      rows.map((r) => r.id),
    );
    const now = Date.now();
    return c.json({ keys: rows.map((r) => keyInfo(r, notices.get(r.id) ?? [], isEnvAdminKey(r), now)) }, 200);
  };

  const update: RouteHandler<typeof routes.updateKey, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    const body = c.req.valid("json");
    const row = await keys.findKey(deps.db, id);
    if (!row) throw notFound("key");
    if (body.expiresAt !== undefined && isEnvAdminKey(row)) {
      throw lockout("the key from MEMORY_ADMIN_KEY never expires; rotate it in the environment instead");
    }
    const updated = await keys.updateKey(deps.db, id, {
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.contactEmail !== undefined ? { contactEmail: body.contactEmail } : {}),
      ...(body.expiresAt !== undefined
        ? { expiresAt: body.expiresAt ? new Date(body.expiresAt) : null }
        : {}),
    });
    if (!updated) throw notFound("key");
    const notices = await noticesOfKeys(deps.db, [id]);
    return c.json(keyInfo(updated, notices.get(id) ?? [], isEnvAdminKey(updated)), 200);
  };

  const disable: RouteHandler<typeof routes.disableKey, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    const row = await keys.findKey(deps.db, id);
    if (!row) throw notFound("key");
    if (!row.disabledAt) {
      if (isEnvAdminKey(row)) {
        throw lockout(
          "the key from MEMORY_ADMIN_KEY cannot be disabled here; change the environment instead",
        );
      }
      const usable = row.kind === "admin" && (!row.expiresAt || row.expiresAt.getTime() > Date.now());
      if (usable && (await keys.countUsableAdminKeys(deps.db)) <= 1) {
        throw lockout("this is the last admin key that works; create another one first");
      }
      await keys.disableKey(deps.db, id);
    }
    return c.json({ success: true as const }, 200);
  };

  const notices: RouteHandler<typeof routes.listKeyNotices, AppEnv> = async (c) => {
    const rows = await listNotices(deps.db);
    return c.json(
      { notices: rows.map((n) => ({ keyId: n.keyId, keyName: n.keyName, ...presentNotice(n) })) },
      200,
    );
  };

  return { createScoped, deleteScoped, create, list, update, disable, notices };
}
