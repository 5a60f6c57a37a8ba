// The API tells the runtime of every request but the monitoring probes (ApiDeps.onRequest): that is the clock
// by which table maintenance on PGlite decides the service is quiet (MAINTENANCE_QUIET_AFTER). Probes polled
// every few seconds must not keep the service "busy" forever; any real request, even a refused one, does.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../api/app.ts";
import type { ApiDeps } from "../../api/deps.ts";
import { loadConfig } from "../../config/env.ts";
import { createLogger } from "../../config/logger.ts";
import { openMemoryPglite, type Store } from "../../store/db.ts";

describe("the API's request clock", () => {
  let store: Store;
  let told = 0;
  let app: ReturnType<typeof createApp>;

  beforeAll(async () => {
    store = await openMemoryPglite();
    // Only what these requests reach: the store (health, key lookup), configuration and the log.
    app = createApp({
      db: store.db,
      config: loadConfig({
        DATA_DIR: "/tmp/request-clock-unused",
        MEMORY_ADMIN_KEY: "sm_request_clock_admin",
      }),
      log: createLogger("silent"),
      onRequest: () => {
        told++;
      },
    } as unknown as ApiDeps);
  });
  afterAll(async () => {
    await store?.close();
  });

  it("is not told of /health, /ready or /metrics", async () => {
    expect((await app.request("/health")).status).toBe(200);
    await app.request("/ready");
    await app.request("/metrics");
    expect(told).toBe(0);
  });

  it("is told of every other request, answered or refused", async () => {
    expect((await app.request("/v3/documents/list", { method: "POST", body: "{}" })).status).toBe(401);
    expect(told).toBe(1);
    await app.request("/openapi.json");
    await app.request("/no-such-route");
    expect(told).toBe(3);
  });
});
