import { OpenAPIHono } from "@hono/zod-openapi";
import { pingStore } from "../store/health.ts";
import { bearerAuth, endpointGuard } from "./auth.ts";
import { clientOriginMiddleware, createAuthFailures } from "./auth-throttle.ts";
import { sizeLimit } from "./body-limit.ts";
import { connectionBrowserApp } from "./connections/browser.ts";
import { connectionsApp } from "./connections/index.ts";
import {
  consoleAdminApp,
  consoleSessionApp,
  consoleStaticApp,
  createConsoleSessions,
} from "./console/index.ts";
import { containerTagsApp } from "./container-tags/index.ts";
import type { ApiDeps, AppEnv } from "./deps.ts";
import { documentFileLinksApp, documentsApp } from "./documents/index.ts";
import { errorBody, renderError } from "./errors.ts";
import { keyNoticesApp, keysApp, scopedKeysApp } from "./keys/index.ts";
import { mcpApp } from "./mcp/index.ts";
import { memoriesApp } from "./memories/index.ts";
import { createObservability, PROBE_PATHS, requestLog } from "./observability.ts";
import { profileApp } from "./profile/index.ts";
import { rateLimit } from "./rate-limit.ts";
import { searchApp, searchV4App } from "./search/index.ts";
import { settingsApp } from "./settings/index.ts";
import { webhooksApp } from "./webhooks/index.ts";

/** The HTTP API. Everything under /v3 needs a bearer key; /health, /ready, /metrics and /openapi.json are public. */
export function createApp(deps: ApiDeps) {
  const app = new OpenAPIHono<AppEnv>();
  const observability = createObservability(deps);

  // First, so its duration and log line cover every other middleware and the error handler.
  app.use("*", observability.middleware);
  app.use("*", clientOriginMiddleware(deps.config));
  if (deps.onRequest) {
    const notify = deps.onRequest;
    app.use("*", async (c, next) => {
      if (!PROBE_PATHS.has(c.req.path)) notify();
      await next();
    });
  }
  app.onError((err, c) => renderError(err, c, requestLog(c, deps.log)));
  // An error may be answered before the request body was read; the server then drops the rest and
  // the socket. Saying so lets keep-alive clients open a new connection instead of reusing a dead one.
  app.use("*", async (c, next) => {
    await next();
    if (c.res.status >= 400 && c.req.raw.body !== null) {
      try {
        c.res.headers.set("Connection", "close");
      } catch {
        c.res = new Response(c.res.body, c.res);
        c.res.headers.set("Connection", "close");
      }
    }
  });
  // Before every route, those reached without a key included: no body is read past its route's limit.
  // After the middleware above, so a 413 closes its connection too.
  app.use("*", sizeLimit(deps.config));
  app.notFound((c) => c.json(errorBody("not_found", `no route for ${c.req.method} ${c.req.path}`), 404));

  app.get("/health", async (c) => {
    await pingStore(deps.db);
    return c.json({ status: "ok" });
  });
  app.route("/", observability.routes);

  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "Document memory service",
      version: "0.1.0",
      description:
        "Self-hosted document memory: ingest, process durably, search. Compatible with the supermemory SDK.",
    },
  });

  // Reached by people's browsers (OAuth callback, hosted picker): authenticated by state and link tokens, not keys.
  app.route("/v3/connections", connectionBrowserApp(deps));
  // Reached through a signed, time-limited link (GET /v3/documents/{id}/file-url on the disk store): no key.
  app.route("/v3/documents", documentFileLinksApp(deps));
  // The web console: its static files, and signing in (a session cookie the API then accepts as an admin).
  const authFailures = createAuthFailures(deps.db, deps.config);
  const consoleSessions = createConsoleSessions(deps);
  app.route("/", consoleStaticApp());
  app.route("/v3/console", consoleSessionApp(deps, consoleSessions, authFailures));

  const api = new OpenAPIHono<AppEnv>();
  api.use(
    "*",
    bearerAuth(authFailures, (c) => consoleSessions.authenticate(c)),
  );
  api.use("*", rateLimit(deps.db, deps.config));
  api.use("*", endpointGuard());
  const documents = documentsApp(deps);
  api.route("/v3/documents", documents);
  // The earlier major version of the SDK calls /v3/memories/* for the same operations.
  api.route("/v3/memories", documents);
  api.route("/v3/search", searchApp(deps));
  api.route("/v4/search", searchV4App(deps));
  api.route("/v4/memories", memoriesApp(deps));
  api.route("/v4/profile", profileApp(deps));
  api.route("/v3/auth/scoped-key", scopedKeysApp(deps));
  api.route("/v3/auth/keys", keysApp(deps));
  api.route("/v3/auth/key-notices", keyNoticesApp(deps));
  api.route("/v3/settings", settingsApp(deps));
  api.route("/v3/connections", connectionsApp(deps));
  api.route("/v3/container-tags", containerTagsApp(deps));
  api.route("/v3/webhooks", webhooksApp(deps));
  // The memory server for AI assistants (MCP, Streamable HTTP); same keys, scopes and limits.
  api.route("/mcp", mcpApp(deps));
  api.route("/v3/console", consoleAdminApp(deps, consoleSessions, authFailures));
  app.route("/", api);
  return app;
}
