import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caller } from "../support/http.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, waitFor } from "../support/service.ts";

// The keys API behind the console's keys page: create (scoped or admin, expiry, limits, contact),
// list without secrets, move expiry, disable; only admin keys reach it.
describe("keys API", () => {
  let service: TestService;
  const call = caller(() => service.url);

  const create = async (body: Record<string, unknown>) => {
    const res = await call("POST", "/v3/auth/keys", body);
    expect(res.status, res.text).toBe(200);
    return res.json;
  };
  const listed = async () => {
    const res = await call("GET", "/v3/auth/keys");
    expect(res.status, res.text).toBe(200);
    // biome-ignore lint/suspicious/noExplicitAny: response inspected loosely
    return res.json.keys as any[];
  };

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("creates a scoped key with expiry, rate limit and contact, and the key works inside its tags", async () => {
    const before = Date.now();
    const created = await create({
      name: "ci bot",
      containerTags: ["keys-a", "keys-b", "keys-a"],
      expiresInDays: 30,
      contactEmail: "ci@example.com",
      rateLimitMax: 50,
      rateLimitTimeWindow: 10_000,
    });
    expect(created).toEqual({
      key: expect.stringMatching(/^sm_/),
      id: expect.any(String),
      name: "ci bot",
      kind: "scoped",
      keyPrefix: created.key.slice(0, 8),
      containerTags: ["keys-a", "keys-b"],
      expiresAt: expect.any(String),
      contactEmail: "ci@example.com",
      rateLimitMax: 50,
      rateLimitTimeWindow: 10_000,
      createdAt: expect.any(String),
    });
    const days = (Date.parse(created.expiresAt) - before) / 86_400_000;
    expect(days).toBeGreaterThanOrEqual(30);
    expect(days).toBeLessThan(30.01);

    const own = await call("POST", "/v3/documents/list", { containerTags: ["keys-b"] }, created.key);
    expect(own.status, own.text).toBe(200);
    expect(own.headers.get("x-ratelimit-limit")).toBe("50");
    const foreign = await call("POST", "/v3/documents/list", { containerTags: ["other"] }, created.key);
    expect(foreign.status).toBe(403);

    const defaults = await create({ containerTags: ["keys-c"] });
    expect(defaults).toMatchObject({
      name: "scoped_keys-c",
      kind: "scoped",
      contactEmail: null,
      rateLimitMax: 500,
      rateLimitTimeWindow: 60_000,
    });
    expect((Date.parse(defaults.expiresAt) - before) / 86_400_000).toBeGreaterThanOrEqual(365);
  });

  it("creates admin keys that never expire unless asked, with their own rate limit when given", async () => {
    const admin = await create({ kind: "admin", name: "ops" });
    expect(admin).toMatchObject({
      kind: "admin",
      name: "ops",
      containerTags: [],
      expiresAt: null,
      rateLimitMax: null,
      rateLimitTimeWindow: null,
    });
    expect((await call("GET", "/v3/auth/keys", undefined, admin.key)).status).toBe(200);

    const limited = await create({ kind: "admin", rateLimitMax: 2, rateLimitTimeWindow: 3_600_000 });
    expect(limited).toMatchObject({ name: "admin", rateLimitMax: 2, rateLimitTimeWindow: 3_600_000 });
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await call("GET", "/v3/auth/key-notices", undefined, limited.key)).status);
    expect(statuses).toEqual([200, 200, 429]);
  });

  it("lists every key newest first with status and notices, never a secret or its hash", async () => {
    const first = await create({ containerTags: ["list-1"], name: "list one" });
    const second = await create({ kind: "admin", name: "list two", expiresInDays: 3650 });
    const keys = await listed();
    const text = JSON.stringify(keys);
    expect(text).not.toContain(first.key);
    expect(text).not.toContain(second.key);
    expect(text).not.toContain(TEST_ADMIN_KEY);
    expect(text).not.toMatch(/[0-9a-f]{64}/);
    for (const k of keys) {
      expect(Object.keys(k).sort()).toEqual(
        [
          "containerTags",
          "contactEmail",
          "createdAt",
          "disabledAt",
          "expiresAt",
          "fromEnvironment",
          "id",
          "keyPrefix",
          "kind",
          "name",
          "notices",
          "rateLimitMax",
          "rateLimitTimeWindow",
          "status",
        ].sort(),
      );
    }
    const ids = keys.map((k) => k.id);
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(first.id));
    const times = keys.map((k) => Date.parse(k.createdAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(keys.find((k) => k.id === second.id)).toMatchObject({
      status: "active",
      disabledAt: null,
      notices: [],
      keyPrefix: second.key.slice(0, 8),
    });
  });

  it("renames a key, sets its contact and moves its expiry", async () => {
    const { id } = await create({ containerTags: ["patch-me"] });
    const at = new Date(Date.now() + 5 * 86_400_000).toISOString();
    const res = await call("PATCH", `/v3/auth/keys/${id}`, {
      name: "renamed",
      contactEmail: "owner@example.com",
      expiresAt: at,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ id, name: "renamed", contactEmail: "owner@example.com", expiresAt: at });
    const cleared = await call("PATCH", `/v3/auth/keys/${id}`, { contactEmail: null, expiresAt: null });
    expect(cleared.json).toMatchObject({ contactEmail: null, expiresAt: null, status: "active" });
    expect((await listed()).find((k) => k.id === id)).toMatchObject({ name: "renamed", expiresAt: null });
    expect((await call("PATCH", "/v3/auth/keys/nope", { name: "x" })).status).toBe(404);
  });

  it("disables a key at once (401 afterwards), and refuses to lock the operator out", async () => {
    const scoped = await create({ containerTags: ["gone"] });
    expect((await call("POST", "/v3/documents/list", { containerTags: ["gone"] }, scoped.key)).status).toBe(
      200,
    );
    expect(await call("DELETE", `/v3/auth/keys/${scoped.id}`)).toMatchObject({
      status: 200,
      json: { success: true },
    });
    const after = await call("POST", "/v3/documents/list", { containerTags: ["gone"] }, scoped.key);
    expect(after.status).toBe(401);
    expect(after.json.code).toBe("unauthorized");
    expect((await listed()).find((k) => k.id === scoped.id)).toMatchObject({
      status: "disabled",
      disabledAt: expect.any(String),
    });
    // Disabling twice is fine; an unknown id is not.
    expect((await call("DELETE", `/v3/auth/keys/${scoped.id}`)).status).toBe(200);
    expect((await call("DELETE", "/v3/auth/keys/nope")).status).toBe(404);

    const admin = await create({ kind: "admin", name: "temp admin" });
    expect((await call("DELETE", `/v3/auth/keys/${admin.id}`)).status).toBe(200);
    expect((await call("GET", "/v3/auth/keys", undefined, admin.key)).status).toBe(401);

    // The key from MEMORY_ADMIN_KEY is the operator's way in: not disabled, not given an expiry here.
    const envKey = (await listed()).find((k) => k.keyPrefix === TEST_ADMIN_KEY.slice(0, 8));
    expect(envKey).toMatchObject({ kind: "admin", status: "active", fromEnvironment: true });
    expect((await listed()).filter((k) => k.fromEnvironment)).toHaveLength(1);
    const refused = await call("DELETE", `/v3/auth/keys/${envKey.id}`);
    expect(refused.status).toBe(409);
    expect(refused.json.code).toBe("conflict");
    const moved = await call("PATCH", `/v3/auth/keys/${envKey.id}`, {
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(moved.status).toBe(409);
    expect((await call("GET", "/v3/auth/keys")).status).toBe(200);
  });

  it("refuses an admin key once its expiry has passed", async () => {
    const admin = await create({ kind: "admin", name: "short-lived", expiresInDays: 1 });
    expect((await call("GET", "/v3/auth/keys", undefined, admin.key)).status).toBe(200);
    const soon = new Date(Date.now() + 1500).toISOString();
    expect((await call("PATCH", `/v3/auth/keys/${admin.id}`, { expiresAt: soon })).status).toBe(200);
    const refused = await waitFor(async () => {
      const res = await call("GET", "/v3/auth/keys", undefined, admin.key);
      return res.status === 401 ? res : undefined;
    }, "the expired admin key to be refused");
    expect(refused.json.code).toBe("unauthorized");
    expect((await listed()).find((k) => k.id === admin.id)).toMatchObject({ status: "expired" });
  });

  it("validates requests in the one error shape", async () => {
    const bad: [string, string, unknown, string][] = [
      ["POST", "/v3/auth/keys", {}, "containerTags"],
      ["POST", "/v3/auth/keys", { kind: "scoped", containerTags: [] }, "containerTags"],
      ["POST", "/v3/auth/keys", { kind: "admin", containerTags: ["a"] }, "containerTags"],
      ["POST", "/v3/auth/keys", { kind: "root" }, "kind"],
      ["POST", "/v3/auth/keys", { containerTags: ["a"], expiresInDays: 0 }, "expiresInDays"],
      ["POST", "/v3/auth/keys", { containerTags: ["a"], expiresInDays: 3651 }, "expiresInDays"],
      ["POST", "/v3/auth/keys", { containerTags: ["a"], contactEmail: "not an email" }, "contactEmail"],
      ["POST", "/v3/auth/keys", { containerTags: ["bad tag"] }, "containerTags.0"],
      ["POST", "/v3/auth/keys", { containerTags: ["a"], rateLimitMax: 0 }, "rateLimitMax"],
      ["POST", "/v3/auth/keys", { containerTags: ["a"], secret: "mine" }, "json"],
      ["PATCH", "/v3/auth/keys/x", { expiresAt: "tomorrow" }, "expiresAt"],
      ["PATCH", "/v3/auth/keys/x", { expiresAt: new Date(Date.now() - 1000).toISOString() }, "expiresAt"],
      ["PATCH", "/v3/auth/keys/x", { contactEmail: "@" }, "contactEmail"],
      ["POST", "/v3/auth/scoped-key", { containerTag: "a", contactEmail: "nope" }, "contactEmail"],
    ];
    for (const [method, path, body, field] of bad) {
      const res = await call(method, path, body);
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400);
      expect(res.json).toEqual({
        error: expect.any(String),
        code: "validation_error",
        field: expect.any(String),
        issues: expect.any(Array),
      });
      if (field !== "json") expect(res.json.field).toBe(field);
    }
  });

  it("keeps scoped keys out of key management", async () => {
    const scoped = await create({ containerTags: ["nosy"] });
    for (const [method, path, body] of [
      ["GET", "/v3/auth/keys", undefined],
      ["POST", "/v3/auth/keys", { kind: "admin" }],
      ["PATCH", `/v3/auth/keys/${scoped.id}`, { expiresAt: null }],
      ["DELETE", `/v3/auth/keys/${scoped.id}`, undefined],
      ["GET", "/v3/auth/key-notices", undefined],
    ] as const) {
      const res = await call(method, path, body, scoped.key);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.json.code).toBe("forbidden");
    }
    expect((await listed()).find((k) => k.id === scoped.id)).toMatchObject({
      status: "active",
      expiresAt: expect.any(String),
    });
  });

  it("takes a contact email on the SDK's scoped-key call too, and documents the routes", async () => {
    const res = await call("POST", "/v3/auth/scoped-key", {
      containerTag: "sdk",
      contactEmail: "sdk@example.com",
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({
      containerTag: "sdk",
      contactEmail: "sdk@example.com",
      rateLimitMax: 500,
    });
    expect((await listed()).find((k) => k.id === res.json.id)).toMatchObject({
      contactEmail: "sdk@example.com",
    });

    const doc = await call("GET", "/openapi.json", undefined, null);
    expect(Object.keys(doc.json.paths["/v3/auth/keys"]).sort()).toEqual(["get", "post"]);
    expect(Object.keys(doc.json.paths["/v3/auth/keys/{id}"]).sort()).toEqual(["delete", "patch"]);
    expect(Object.keys(doc.json.paths["/v3/auth/key-notices"])).toEqual(["get"]);
  });
});
