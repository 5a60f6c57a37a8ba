import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEncryptionKey, SecretBox } from "../../store/secrets.ts";
import { caller } from "../support/http.ts";
import {
  freshDatabase,
  startTestService,
  TEST_ADMIN_KEY,
  type TestService,
  waitFor,
} from "../support/service.ts";

// Scoped keys end to end on PostgreSQL (so the test can read the database directly): creation,
// enforcement, expiry, disabling, rate limits shared by two API processes, encrypted settings.
describe("scoped keys, rate limits and settings", () => {
  let service: TestService;
  let second: TestService;
  let databaseUrl: string;
  let db: pg.Client;
  const call = caller(() => service.url);
  const callSecond = caller(() => second.url);

  const scopedKey = async (body: Record<string, unknown>) => {
    const res = await call("POST", "/v3/auth/scoped-key", body);
    expect(res.status, res.text).toBe(200);
    return res.json as {
      key: string;
      id: string;
      name: string;
      containerTag: string;
      containerTags: string[];
    };
  };

  beforeAll(async () => {
    databaseUrl = await freshDatabase();
    service = await startTestService({ env: { DATABASE_URL: databaseUrl } });
    // A second API process on the same database, as in scale-out mode.
    second = await startTestService({ env: { DATABASE_URL: databaseUrl }, roles: ["api"] });
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await second?.stop();
    await service?.stop();
  });

  it("creates a scoped key with its defaults and shows the secret once (only a hash is stored)", async () => {
    const res = await call("POST", "/v3/auth/scoped-key", { containerTag: "acme:team-1.x" });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      key: expect.stringMatching(/^sm_/),
      id: expect.any(String),
      name: "scoped_acme:team-1.x",
      containerTag: "acme:team-1.x",
      containerTags: ["acme:team-1.x"],
      allowedEndpoints: [
        "/v3/documents",
        "/v3/memories",
        "/v4/memories",
        "/v3/search",
        "/v4/search",
        "/v4/profile",
        "/mcp",
      ],
      rateLimitMax: 500,
      rateLimitTimeWindow: 60_000,
    });
    const days = (Date.parse(res.json.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(364.9);
    expect(days).toBeLessThanOrEqual(365);
    const { rows } = await db.query("SELECT * FROM api_keys WHERE id = $1", [res.json.id]);
    expect(JSON.stringify(rows)).not.toContain(res.json.key);
    expect(rows[0].key_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("describes the new routes in the OpenAPI document", async () => {
    const doc = await call("GET", "/openapi.json", undefined, null);
    expect(Object.keys(doc.json.paths)).toEqual(
      expect.arrayContaining(["/v3/auth/scoped-key", "/v3/auth/scoped-key/{id}", "/v3/settings"]),
    );
    expect(Object.keys(doc.json.paths["/v3/settings"]).sort()).toEqual(["get", "patch"]);
  });

  it("validates the request and lets only admin keys manage keys", async () => {
    for (const body of [
      {},
      { containerTag: "bad tag" },
      { containerTag: "a", expiresInDays: 0 },
      { containerTag: "a", expiresInDays: 366 },
      { containerTag: "a", rateLimitMax: 10_001 },
      { containerTag: "a", rateLimitTimeWindow: 3_600_001 },
      { containerTag: "a", containerTags: ["ok", "not ok"] },
    ]) {
      const res = await call("POST", "/v3/auth/scoped-key", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.code).toBe("validation_error");
    }
    const { key, id } = await scopedKey({ containerTag: "mgmt" });
    const create = await call("POST", "/v3/auth/scoped-key", { containerTag: "mgmt" }, key);
    expect(create.status).toBe(403);
    expect(create.json).toEqual({ error: expect.any(String), code: "forbidden" });
    expect((await call("DELETE", `/v3/auth/scoped-key/${id}`, undefined, key)).status).toBe(403);
    expect((await call("DELETE", "/v3/auth/scoped-key/nope")).status).toBe(404);
  });

  it("keeps a scoped key inside its endpoints and container tags", async () => {
    const a = await scopedKey({ containerTag: "tenant-a", containerTags: ["tenant-a2"], name: "A" });
    expect(a.name).toBe("A");
    expect(a.containerTags).toEqual(["tenant-a", "tenant-a2"]);
    const b = await scopedKey({ containerTag: "tenant-b" });

    // Endpoints outside the allowed prefixes: 403, whatever the route.
    for (const [method, p] of [
      ["GET", "/v3/settings"],
      ["PATCH", "/v3/settings"],
      ["POST", "/v3/auth/scoped-key"],
      ["GET", "/v3/connections"],
    ] as const) {
      const res = await call(method, p, method === "GET" ? undefined : {}, a.key);
      expect(res.status, `${method} ${p}`).toBe(403);
      expect(res.json.code).toBe("forbidden");
    }

    // A write without a tag gets the key's first tag; a foreign tag is refused.
    const own = await call("POST", "/v3/documents", { content: "alpha secret text", customId: "a-1" }, a.key);
    expect(own.status).toBe(200);
    const a2Doc = await call(
      "POST",
      "/v3/documents",
      { content: "alpha two", containerTag: "tenant-a2" },
      a.key,
    );
    expect(a2Doc.status).toBe(200);
    const foreign = await call(
      "POST",
      "/v3/documents",
      { content: "x", containerTags: ["tenant-a", "tenant-b"] },
      a.key,
    );
    expect(foreign.status).toBe(403);
    expect(foreign.json).toMatchObject({ code: "forbidden", field: "containerTags" });
    const batch = await call(
      "POST",
      "/v3/documents/batch",
      { documents: [{ content: "x", containerTag: "tenant-b" }] },
      a.key,
    );
    expect(batch.status).toBe(403);
    const bDoc = await call("POST", "/v3/documents", { content: "bravo private", customId: "b-1" }, b.key);
    expect(bDoc.status).toBe(200);

    const got = await call("GET", `/v3/documents/${own.json.id}`, undefined, a.key);
    expect(got.json.containerTags).toEqual(["tenant-a"]);

    // Another tenant's id or customId looks exactly like one that does not exist.
    const missing = await call("GET", "/v3/documents/does-not-exist", undefined, a.key);
    for (const ref of [bDoc.json.id, "b-1"]) {
      for (const method of ["GET", "PATCH", "DELETE"]) {
        const res = await call(
          method,
          `/v3/documents/${ref}`,
          method === "PATCH" ? { title: "t" } : undefined,
          a.key,
        );
        expect(res.status, `${method} ${ref}`).toBe(404);
        expect(res.json).toEqual(missing.json);
      }
    }
    // customIds live per tenant: re-using another tenant's makes A's own document, and B's stays B's, untouched.
    const same = await call("POST", "/v3/documents", { content: "mine now", customId: "b-1" }, a.key);
    expect(same.status).toBe(200);
    expect(same.json.id).not.toBe(bDoc.json.id);
    expect(JSON.stringify(same.json)).not.toContain("bravo");
    const rename = await call("PATCH", `/v3/documents/${own.json.id}`, { customId: "b-1" }, a.key);
    expect(rename.status).toBe(409); // A's own "b-1" holds it now, in A's namespace
    expect((await call("DELETE", "/v3/documents/b-1", undefined, a.key)).status).toBe(204);
    const bStill = await call("GET", "/v3/documents/b-1", undefined, b.key);
    expect(bStill.json).toMatchObject({ id: bDoc.json.id, customId: "b-1" });
    expect(bStill.text).toContain("bravo private");
    // Moving an own document to a foreign tag is refused.
    const move = await call("PATCH", `/v3/documents/${own.json.id}`, { containerTags: ["tenant-b"] }, a.key);
    expect(move.status).toBe(403);

    // Reads are filtered; naming a foreign tag is refused.
    const list = await call("POST", "/v3/documents/list", {}, a.key);
    expect(list.json.memories.map((m: { id: string }) => m.id).sort()).toEqual(
      [own.json.id, a2Doc.json.id].sort(),
    );
    expect(list.json.pagination.totalItems).toBe(2);
    expect((await call("POST", "/v3/memories/list", { containerTags: ["tenant-b"] }, a.key)).status).toBe(
      403,
    );
    const onlyA2 = await call("POST", "/v3/documents/list", { containerTags: ["tenant-a2"] }, a.key);
    expect(onlyA2.json.memories.map((m: { id: string }) => m.id)).toEqual([a2Doc.json.id]);
    const processing = await call("GET", "/v3/documents/processing", undefined, a.key);
    expect(processing.status).toBe(200);
    expect(JSON.stringify(processing.json)).not.toContain(bDoc.json.id);
    expect((await call("POST", "/v3/search", { q: "bravo", containerTag: "tenant-b" }, a.key)).status).toBe(
      403,
    );

    // Search (once processed) sees only the key's documents.
    await waitFor(async () => {
      const r = await call("GET", `/v3/documents/${bDoc.json.id}`);
      return r.json.status === "done" ? true : undefined;
    }, "b's document processed");
    const adminSearch = await call("POST", "/v3/search", { q: "bravo private" });
    expect(JSON.stringify(adminSearch.json)).toContain(bDoc.json.id);
    const search = await call("POST", "/v3/search", { q: "bravo private" }, a.key);
    expect(search.status).toBe(200);
    expect(JSON.stringify(search.json)).not.toContain("bravo");
    const byDoc = await call("POST", "/v3/search", { q: "bravo", docId: bDoc.json.id }, a.key);
    expect(byDoc.json.results).toEqual([]);

    // Bulk deletes stay inside the scope.
    const bulkIds = await call("DELETE", "/v3/documents/bulk", { ids: [bDoc.json.id, "b-1"] }, a.key);
    expect(bulkIds.json).toMatchObject({ success: false, deletedCount: 0 });
    expect((await call("DELETE", "/v3/documents/bulk", { containerTags: ["tenant-b"] }, a.key)).status).toBe(
      403,
    );
    expect((await call("GET", `/v3/documents/${bDoc.json.id}`, undefined, b.key)).status).toBe(200);
    const bulkOwn = await call("DELETE", "/v3/documents/bulk", { containerTags: ["tenant-a2"] }, a.key);
    expect(bulkOwn.json).toMatchObject({ success: true, deletedCount: 1 });
  });

  it("refuses an expired key with 401", async () => {
    const { key, id } = await scopedKey({ containerTag: "expiring", expiresInDays: 1 });
    expect((await call("POST", "/v3/documents/list", {}, key)).status).toBe(200);
    await db.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [id]);
    const res = await call("POST", "/v3/documents/list", {}, key);
    expect(res.status).toBe(401);
    expect(res.json.code).toBe("unauthorized");
  });

  it("disables a key at once and leaves its documents alone", async () => {
    const { key, id } = await scopedKey({ containerTag: "leaving" });
    const doc = await call("POST", "/v3/documents", { content: "stays after the key goes" }, key);
    expect(doc.status).toBe(200);
    expect(await call("DELETE", `/v3/auth/scoped-key/${id}`)).toMatchObject({
      status: 200,
      json: { success: true },
    });
    for (const c of [call, callSecond]) {
      const res = await c("POST", "/v3/documents/list", {}, key);
      expect(res.status).toBe(401);
      expect(res.json.code).toBe("unauthorized");
    }
    expect((await call("DELETE", `/v3/auth/scoped-key/${id}`)).status).toBe(404);
    const kept = await call("GET", `/v3/documents/${doc.json.id}`);
    expect(kept.json).toMatchObject({ status: expect.any(String), containerTags: ["leaving"] });
  });

  it("rate limits per key across API processes, with headers on every response", async () => {
    // Windows are fixed minutes of the clock (store/rate-limits.ts): a sequence that crossed a minute's end would
    // be counted in two windows (a clean-clone run once let 20 of a burst of 24 through a limit of 10 that way).
    await awayFromMinuteEnd(20_000);
    const { key } = await scopedKey({
      containerTag: "limited",
      rateLimitMax: 4,
      rateLimitTimeWindow: 60_000,
    });
    const seen: { status: number; remaining: string | null }[] = [];
    for (const c of [call, callSecond, call, callSecond, call]) {
      const res = await c("POST", "/v3/documents/list", {}, key);
      expect(res.headers.get("x-ratelimit-limit")).toBe("4");
      const reset = Number(res.headers.get("x-ratelimit-reset"));
      expect(reset * 1000).toBeGreaterThan(Date.now());
      expect(reset * 1000).toBeLessThanOrEqual(Date.now() + 61_000);
      seen.push({ status: res.status, remaining: res.headers.get("x-ratelimit-remaining") });
      if (res.status === 429) {
        expect(res.json).toEqual({ error: expect.any(String), code: "rate_limited" });
        const retry = Number(res.headers.get("retry-after"));
        expect(retry).toBeGreaterThanOrEqual(1);
        expect(retry).toBeLessThanOrEqual(60);
      }
    }
    expect(seen).toEqual([
      { status: 200, remaining: "3" },
      { status: 200, remaining: "2" },
      { status: 200, remaining: "1" },
      { status: 200, remaining: "0" },
      { status: 429, remaining: "0" },
    ]);
    // Concurrent requests through both processes: the atomic upsert lets exactly the limit through.
    await awayFromMinuteEnd(20_000);
    const { key: burst } = await scopedKey({ containerTag: "burst", rateLimitMax: 10 });
    const replies = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        (i % 2 ? call : callSecond)("POST", "/v3/documents/list", {}, burst),
      ),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(10);
    expect(replies.filter((r) => r.status === 429)).toHaveLength(14);
    expect(
      new Set(replies.filter((r) => r.status === 200).map((r) => r.headers.get("x-ratelimit-remaining"))),
    ).toEqual(new Set(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]));
    // Error responses of a limited key carry the headers too.
    const { key: other } = await scopedKey({ containerTag: "limited-2", rateLimitMax: 10 });
    const notFound = await call("GET", "/v3/documents/nope", undefined, other);
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get("x-ratelimit-remaining")).toBe("9");
    const forbidden = await call("GET", "/v3/settings", undefined, other);
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get("x-ratelimit-remaining")).toBe("8");
    // A window ends: a short window lets requests through again.
    const { key: quick } = await scopedKey({
      containerTag: "quick",
      rateLimitMax: 1,
      rateLimitTimeWindow: 1_000,
    });
    const listQuick = () => call("POST", "/v3/documents/list", {}, quick);
    const resetOf = (res: { headers: Headers }) => Number(res.headers.get("x-ratelimit-reset")) * 1000;
    let admitted = await listQuick();
    expect(admitted.status).toBe(200);
    // The next call is refused within the same window. On a machine slow enough for a window to end
    // between two calls, the call that got through opened a new window (a later reset): try within that.
    let refused = await listQuick();
    for (let tries = 0; refused.status === 200 && tries < 5; tries++) {
      expect(resetOf(refused)).toBeGreaterThan(resetOf(admitted));
      admitted = refused;
      refused = await listQuick();
    }
    expect(refused.status).toBe(429);
    // Once the window's reset time has passed (the header rounds up to the second), calls go through again.
    await new Promise((r) => setTimeout(r, Math.max(0, resetOf(refused) - Date.now()) + 20));
    expect((await listQuick()).status).toBe(200);
    // Admin keys are unlimited by default (ADMIN_RATE_LIMIT_MAX=0): no counting, no headers.
    expect((await call("POST", "/v3/documents/list", {})).headers.get("x-ratelimit-limit")).toBeNull();
  });

  it("works through the official SDK: settings as admin, documents with a scoped key", async () => {
    const admin = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url, maxRetries: 0 });
    const updated = await admin.settings.update({ githubCustomKeyEnabled: true, githubClientId: "gh-id" });
    expect(updated.updated).toMatchObject({ githubCustomKeyEnabled: true, githubClientId: "gh-id" });
    expect(await admin.settings.get()).toMatchObject({ githubClientId: "gh-id" });

    const { key } = await scopedKey({ containerTag: "sdk-tenant" });
    const tenant = new Supermemory({ apiKey: key, baseURL: service.url, maxRetries: 0 });
    const { id } = await tenant.documents.add({ content: "from the SDK" });
    const listed = await tenant.documents.list({});
    expect(listed.memories.map((m) => m.id)).toEqual([id]);
    await expect(tenant.settings.get()).rejects.toMatchObject({ status: 403 });
    await expect(tenant.documents.add({ content: "x", containerTag: "elsewhere" })).rejects.toMatchObject({
      status: 403,
    });
  });

  it("stores connector secrets encrypted and never returns them", async () => {
    const secret = "gd-client-secret-Very-Clear-1234";
    const res = await call("PATCH", "/v3/settings", {
      googleDriveCustomKeyEnabled: true,
      googleDriveClientId: "gd-client-id",
      googleDriveClientSecret: secret,
      notionClientSecret: "notion-secret-value-5678",
      chunkSize: 800,
      includeItems: { folders: ["a"] },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({
      orgId: "default",
      updated: {
        googleDriveCustomKeyEnabled: true,
        googleDriveClientId: "gd-client-id",
        googleDriveClientSecret: null,
        googleDriveClientSecretSet: true,
        notionClientSecretSet: true,
        githubClientSecret: null,
        githubClientSecretSet: false,
        chunkSize: 800,
        includeItems: { folders: ["a"] },
      },
    });
    const got = await call("GET", "/v3/settings");
    expect(got.json).toMatchObject({
      googleDriveClientSecret: null,
      googleDriveClientSecretSet: true,
      chunkSize: 800,
    });
    expect(got.text).not.toContain(secret);
    expect(res.text).not.toContain(secret);

    const { rows } = await db.query("SELECT * FROM settings");
    const stored = JSON.stringify(rows);
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain("notion-secret-value");
    expect(stored).not.toContain(Buffer.from(secret).toString("base64"));
    // The ciphertext opens with the generated key (DATA_DIR/encryption-key, mode 0600), and only with it.
    const keyFile = path.join(service.dataDir, "encryption-key");
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const sealed = rows[0].secrets.googleDriveClientSecret as string;
    expect(sealed).toMatch(/^v1:/);
    expect(SecretBox.fromKey(parseEncryptionKey(readFileSync(keyFile, "utf8"))).decrypt(sealed)).toBe(secret);
    expect(() => SecretBox.fromKey(Buffer.alloc(32, 7)).decrypt(sealed)).toThrow();

    // null clears; omitted fields stay.
    const cleared = await call("PATCH", "/v3/settings", { notionClientSecret: null, chunkSize: null });
    expect(cleared.json.updated).toMatchObject({
      notionClientSecretSet: false,
      googleDriveClientSecretSet: true,
      chunkSize: null,
      googleDriveClientId: "gd-client-id",
    });
    // chunkSize reaches processing: a document processed now is cut into chunks of at most that size.
    expect((await call("PATCH", "/v3/settings", { chunkSize: 200 })).status).toBe(200);
    const sentences = Array.from(
      { length: 12 },
      (_, i) => `Sentence number ${i} talks about chunk sizes at some length.`,
    );
    const added = await call("POST", "/v3/documents", { content: sentences.join(" ") });
    await waitFor(async () => {
      const r = await call("GET", `/v3/documents/${added.json.id}`);
      return r.json.status === "done" ? true : undefined;
    }, "document processed with chunkSize 200");
    const chunks = await db.query("SELECT length(content) AS n FROM chunks WHERE document_id = $1", [
      added.json.id,
    ]);
    expect(chunks.rows.length).toBeGreaterThanOrEqual(3);
    for (const row of chunks.rows) expect(Number(row.n)).toBeLessThanOrEqual(200);
    expect((await call("PATCH", "/v3/settings", { chunkSize: null })).json.updated.chunkSize).toBeNull();

    for (const body of [{ chunkSize: 10 }, { googleDriveClientSecret: 5 }, { unknownSetting: 1 }]) {
      expect((await call("PATCH", "/v3/settings", body)).status, JSON.stringify(body)).toBe(400);
    }
  });
});

/** Waits, if need be, until at least `marginMs` are left before the clock's next full minute. */
async function awayFromMinuteEnd(marginMs: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}
