// On the embedded store this process is the only writer of api_keys and of the failure counters, so the API
// remembers the keys it found active, holds the hashes of all active keys, and counts each address's failed
// authentications in memory (api/auth-throttle.ts) instead of asking the store on every request. What must hold:
// a remembered key costs no statement, a made-up key costs no key lookup, a key disabled or expired is refused at
// once, failures never refuse a right key, and with DATABASE_URL (other processes write the same tables) nothing
// is remembered. A key's own rate limit is counted in this process too (api/rate-limit.ts).

import { sql } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../api/app.ts";
import type { ApiDeps } from "../../api/deps.ts";
import { loadConfig } from "../../config/env.ts";
import { createLogger } from "../../config/logger.ts";
import * as keys from "../../store/api-keys.ts";
import { openMemoryPglite, queryRows, type Store } from "../../store/db.ts";

// The key lookups, counted: the module's own functions, wrapped.
vi.mock("../../store/api-keys.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../store/api-keys.ts")>();
  return {
    ...original,
    findActiveKey: vi.fn(original.findActiveKey),
  };
});
const lookups = () => vi.mocked(keys.findActiveKey).mock.calls.length;

const ADMIN = "sm_auth_memory_admin_key";

function appOver(store: Store, env: Record<string, string> = {}) {
  return createApp({
    db: store.db,
    config: loadConfig({ DATA_DIR: "/tmp/auth-memory-unused", MEMORY_ADMIN_KEY: ADMIN, ...env }),
    log: createLogger("silent"),
  } as unknown as ApiDeps);
}

const list = (app: ReturnType<typeof createApp>, secret: string) =>
  app.request("/v3/documents/list", {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: "{}",
  });

describe("authentication on a store only this process writes", () => {
  let store: Store;
  let app: ReturnType<typeof createApp>;

  beforeAll(async () => {
    store = await openMemoryPglite();
    await keys.createKey(store.db, { name: "admin", kind: "admin" }, ADMIN);
    app = appOver(store, { AUTH_FAILURE_LIMIT: "3", AUTH_FAILURE_WINDOW_MS: "86400000" });
  });
  afterAll(async () => {
    await store?.close();
  });
  beforeEach(() => {
    vi.mocked(keys.findActiveKey).mockClear();
  });

  it("looks a key up once, then answers from memory until a key is written; a disabled key is refused at once", async () => {
    const { key, secret } = await keys.createKey(store.db, {
      name: "tenant",
      kind: "scoped",
      containerTags: ["t"],
    });
    for (let i = 0; i < 5; i++) expect((await list(app, secret)).status).toBe(200);
    expect(lookups()).toBe(1);

    const disabled = await app.request(`/v3/auth/scoped-key/${key.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(disabled.status).toBe(200);
    const refused = await list(app, secret);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code: string }).code).toBe("unauthorized");
  });

  it("refuses a remembered key once its expiry has passed", async () => {
    const { secret } = await keys.createKey(store.db, {
      name: "short-lived",
      kind: "scoped",
      containerTags: ["t"],
      expiresAt: new Date(Date.now() + 1_000),
    });
    expect((await list(app, secret)).status).toBe(200);
    expect((await list(app, secret)).status).toBe(200);
    expect(lookups()).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await list(app, secret)).status).toBe(401);
  });

  it("counts a key's rate limit in this process: the same headers and 429, no counter row in the store", async () => {
    const { key, secret } = await keys.createKey(store.db, {
      name: "limited",
      kind: "scoped",
      containerTags: ["t"],
      rateLimitMax: 3,
      rateLimitWindowMs: 600_000,
    });
    const remaining: (string | null)[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await list(app, secret);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-limit")).toBe("3");
      remaining.push(res.headers.get("x-ratelimit-remaining"));
    }
    expect(remaining).toEqual(["2", "1", "0"]);
    const over = await list(app, secret);
    expect(over.status).toBe(429);
    expect(((await over.json()) as { code: string }).code).toBe("rate_limited");
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    const rows = await queryRows(store.db, sql`SELECT count FROM rate_limits WHERE key_id = ${key.id}`);
    expect(rows).toEqual([]);
  });

  it("refuses made-up keys without a key lookup, and never the right key, however many failed", async () => {
    // A store of its own: the tests above left failures from this (unknown) address.
    const own = await openMemoryPglite();
    await keys.createKey(own.db, { name: "admin", kind: "admin" }, ADMIN);
    const app = appOver(own, {
      AUTH_FAILURE_LIMIT: "3",
      AUTH_FAILURE_WINDOW_MS: "86400000",
      AUTH_FAILURE_MAX_DELAY_MS: "20",
    });
    expect((await list(app, ADMIN)).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await list(app, `sm_wrong_guess_${i}`)).status);
    expect(statuses).toEqual([401, 401, 401, ...Array(7).fill(429)]);
    const right = await list(app, ADMIN);
    expect(right.status).toBe(200);
    // The right key was looked up once; the ten wrong ones were refused from the held hashes.
    expect(lookups()).toBe(1);
    // No counter rows either: failures are counted in this process.
    expect(await queryRows(own.db, sql`SELECT key_id FROM rate_limits`)).toEqual([]);
    await own.close();
  });
});

describe("authentication on a shared PostgreSQL (DATABASE_URL)", () => {
  let store: Store;

  beforeAll(async () => {
    store = await openMemoryPglite();
    await keys.createKey(store.db, { name: "admin", kind: "admin" }, ADMIN);
  });
  afterAll(async () => {
    await store?.close();
  });

  it("asks the store on every request: another process may have disabled the key", async () => {
    // The URL only tells the API that other processes share the store; this test's store is still PGlite.
    const app = appOver(store, { DATABASE_URL: "postgres://unused@127.0.0.1:1/unused" });
    vi.mocked(keys.findActiveKey).mockClear();
    for (let i = 0; i < 3; i++) expect((await list(app, ADMIN)).status).toBe(200);
    expect(lookups()).toBe(3);
  });
});
