import { createRoute, z } from "@hono/zod-openapi";
import { webhookEvents } from "../../store/vocabulary.ts";
import {
  ContainerTag,
  ErrorResponse,
  errorResponses,
  jsonBody,
  jsonResponse,
  notFoundResponse,
} from "../schemas.ts";

const security = [{ bearer: [] }];
const tags = ["webhooks"];
const forbidden = {
  403: { description: "Not an admin key", content: { "application/json": { schema: ErrorResponse } } },
} as const;

const WebhookUrl = z.string().min(1).max(2000).openapi({
  description:
    "http(s) endpoint receiving the POSTs; loopback and private addresses are refused unless ALLOW_PRIVATE_NETWORK",
  example: "https://example.com/hooks/memory",
});
const Events = z
  .array(z.enum(webhookEvents))
  .min(1)
  .max(webhookEvents.length)
  .openapi({ description: "Events to receive; default all of them" });
const ContainerTags = z
  .array(ContainerTag)
  .max(100)
  .openapi({ description: "Only events of documents or connections carrying one of these tags; none = all" });

export const CreateWebhookBody = z
  .object({
    url: WebhookUrl,
    containerTag: ContainerTag.optional(),
    containerTags: ContainerTags.optional(),
    events: Events.optional(),
  })
  .strict()
  .openapi("CreateWebhookRequest");

export const UpdateWebhookBody = z
  .object({
    url: WebhookUrl.optional(),
    containerTags: ContainerTags.optional(),
    events: Events.optional(),
    enabled: z.boolean().optional(),
  })
  .strict()
  .openapi("UpdateWebhookRequest");

export const Webhook = z
  .object({
    id: z.string(),
    url: z.string(),
    containerTags: z.array(z.string()),
    events: z.array(z.string()),
    enabled: z.boolean(),
    createdAt: z.string(),
  })
  .openapi("Webhook");

export const CreatedWebhook = Webhook.extend({
  secret: z.string().openapi({
    description:
      "Signing secret, shown once: x-memory-signature is t=<unix seconds>,v1=<hex HMAC-SHA256 of '<t>.<body>' keyed with it>",
  }),
}).openapi("CreatedWebhook");

export const Delivery = z
  .object({
    id: z.string(),
    event: z.string(),
    status: z.enum(["pending", "delivered", "failed"]),
    attempts: z.number(),
    responseStatus: z.number().nullable(),
    lastError: z.string().nullable(),
    createdAt: z.string(),
    deliveredAt: z.string().nullable(),
  })
  .openapi("WebhookDelivery");

export const PingResult = z
  .object({
    deliveryId: z.string(),
    delivered: z.boolean(),
    responseStatus: z.number().nullable(),
    error: z.string().nullable(),
  })
  .openapi("WebhookPingResult");

const IdParam = z.object({ id: z.string().min(1).max(100) });

export const createWebhook = createRoute({
  method: "post",
  path: "/",
  tags,
  security,
  summary: "Register a webhook (admin only); the signing secret is returned once",
  request: jsonBody(CreateWebhookBody),
  responses: {
    200: jsonResponse(CreatedWebhook, "The webhook and its secret"),
    ...errorResponses,
    ...forbidden,
  },
});

export const listWebhooks = createRoute({
  method: "get",
  path: "/",
  tags,
  security,
  summary: "List webhooks (admin only)",
  responses: {
    200: jsonResponse(z.object({ webhooks: z.array(Webhook) }), "Every webhook"),
    ...errorResponses,
    ...forbidden,
  },
});

export const getWebhook = createRoute({
  method: "get",
  path: "/{id}",
  tags,
  security,
  summary: "One webhook (admin only)",
  request: { params: IdParam },
  responses: {
    200: jsonResponse(Webhook, "The webhook"),
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
  },
});

export const updateWebhook = createRoute({
  method: "patch",
  path: "/{id}",
  tags,
  security,
  summary: "Change a webhook's URL, tags, events, or enable/disable it (admin only)",
  request: { params: IdParam, ...jsonBody(UpdateWebhookBody) },
  responses: {
    200: jsonResponse(Webhook, "The webhook"),
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
  },
});

export const deleteWebhook = createRoute({
  method: "delete",
  path: "/{id}",
  tags,
  security,
  summary: "Delete a webhook and its deliveries; pending retries stop (admin only)",
  request: { params: IdParam },
  responses: {
    200: jsonResponse(z.object({ success: z.literal(true) }), "Deleted"),
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
  },
});

export const testWebhook = createRoute({
  method: "post",
  path: "/{id}/test",
  tags,
  security,
  summary: "Send a signed ping now, once, and say how the receiver answered (admin only)",
  request: { params: IdParam },
  responses: {
    200: jsonResponse(PingResult, "The attempt"),
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
  },
});

export const listWebhookDeliveries = createRoute({
  method: "get",
  path: "/{id}/deliveries",
  tags,
  security,
  summary: "The webhook's latest deliveries, newest first (admin only)",
  request: {
    params: IdParam,
    query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }),
  },
  responses: {
    200: jsonResponse(z.object({ deliveries: z.array(Delivery) }), "Deliveries"),
    ...errorResponses,
    ...forbidden,
    ...notFoundResponse,
  },
});
