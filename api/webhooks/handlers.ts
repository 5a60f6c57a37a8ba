import type { RouteHandler } from "@hono/zod-openapi";
import { checkWebhookUrl, generateWebhookSecret, sendPing } from "../../services/webhooks.ts";
import { webhookEvents } from "../../store/vocabulary.ts";
import * as store from "../../store/webhooks.ts";
import type { ApiDeps, AppEnv } from "../deps.ts";
import { ApiError, notFound } from "../errors.ts";
import type * as routes from "./routes.ts";

function present(row: store.WebhookRow) {
  return {
    id: row.id,
    url: row.url,
    containerTags: row.containerTags,
    events: row.events,
    enabled: row.enabled,
    createdAt: row.createdAt.toISOString(),
  };
}

export function createWebhookHandlers(deps: ApiDeps) {
  const network = {
    allowPrivateNetwork: deps.config.ALLOW_PRIVATE_NETWORK,
    timeoutMs: deps.config.FETCH_TIMEOUT_MS,
  };

  /** Refused early, so a mistyped or internal URL is a 400 now rather than failed deliveries later. */
  async function checkedUrl(url: string): Promise<string> {
    try {
      return (await checkWebhookUrl(url, network)).url.href;
    } catch (error) {
      throw new ApiError(400, "validation_error", `url: ${(error as Error).message}`, "url");
    }
  }

  const create: RouteHandler<typeof routes.createWebhook, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const url = await checkedUrl(body.url);
    const secret = generateWebhookSecret();
    const row = await store.createWebhook(deps.db, {
      url,
      sealedSecret: deps.secrets.encrypt(secret),
      containerTags: [
        ...new Set([...(body.containerTag ? [body.containerTag] : []), ...(body.containerTags ?? [])]),
      ],
      events: [...new Set(body.events ?? webhookEvents)],
    });
    return c.json({ ...present(row), secret }, 200);
  };

  const list: RouteHandler<typeof routes.listWebhooks, AppEnv> = async (c) => {
    return c.json({ webhooks: (await store.listWebhooks(deps.db)).map(present) }, 200);
  };

  const get: RouteHandler<typeof routes.getWebhook, AppEnv> = async (c) => {
    const row = await store.findWebhook(deps.db, c.req.valid("param").id);
    if (!row) throw notFound("webhook");
    return c.json(present(row), 200);
  };

  const update: RouteHandler<typeof routes.updateWebhook, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const row = await store.updateWebhook(deps.db, c.req.valid("param").id, {
      ...(body.url !== undefined ? { url: await checkedUrl(body.url) } : {}),
      ...(body.containerTags !== undefined ? { containerTags: [...new Set(body.containerTags)] } : {}),
      ...(body.events !== undefined ? { events: [...new Set(body.events)] } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
    });
    if (!row) throw notFound("webhook");
    return c.json(present(row), 200);
  };

  const remove: RouteHandler<typeof routes.deleteWebhook, AppEnv> = async (c) => {
    if (!(await store.deleteWebhook(deps.db, c.req.valid("param").id))) throw notFound("webhook");
    return c.json({ success: true as const }, 200);
  };

  const test: RouteHandler<typeof routes.testWebhook, AppEnv> = async (c) => {
    const row = await store.findWebhook(deps.db, c.req.valid("param").id);
    if (!row) throw notFound("webhook");
    const { deliveryId, outcome } = await sendPing({ db: deps.db, secrets: deps.secrets, network }, row);
    return c.json(
      {
        deliveryId,
        delivered: outcome.kind === "delivered",
        responseStatus: outcome.kind === "abandoned" ? null : (outcome.status ?? null),
        error: outcome.kind === "delivered" ? null : outcome.reason,
      },
      200,
    );
  };

  const deliveries: RouteHandler<typeof routes.listWebhookDeliveries, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    if (!(await store.findWebhook(deps.db, id))) throw notFound("webhook");
    const rows = await store.listDeliveries(deps.db, id, c.req.valid("query").limit);
    return c.json(
      {
        deliveries: rows.map((d) => ({
          id: d.id,
          event: d.event,
          status: d.status,
          attempts: d.attempts,
          responseStatus: d.responseStatus,
          lastError: d.lastError,
          createdAt: d.createdAt.toISOString(),
          deliveredAt: d.deliveredAt?.toISOString() ?? null,
        })),
      },
      200,
    );
  };

  return { create, list, get, update, remove, test, deliveries };
}
