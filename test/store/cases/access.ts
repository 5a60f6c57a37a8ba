import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { expect, it } from "vitest";
import * as keys from "../../../store/api-keys.ts";
import { createConnection } from "../../../store/connections.ts";
import * as sessions from "../../../store/console-sessions.ts";
import * as users from "../../../store/console-users.ts";
import { queryRows } from "../../../store/db.ts";
import { saveOAuthState, takeOAuthState } from "../../../store/oauth-states.ts";
import { clearRateLimit, hitRateLimit, pruneRateLimits, readRateLimit } from "../../../store/rate-limits.ts";
import { SecretBox } from "../../../store/secrets.ts";
import { readSecret, readSettings, updateSettings } from "../../../store/settings.ts";
import type { StoreOf } from "./support.ts";

export function accessCases(store: StoreOf) {
  it("reads a window's count without counting, for limits only failures count against", async () => {
    const { db } = store();
    const window = 60_000;
    const start = 1_700_000_100_000; // a window boundary
    expect(await readRateLimit(db, "rl-read", 2, window, start)).toMatchObject({
      allowed: true,
      remaining: 2,
    });
    await hitRateLimit(db, "rl-read", 2, window, start);
    await hitRateLimit(db, "rl-read", 2, window, start + 1);
    // Reading twice counts nothing: the count stays at the limit, which is no longer allowed.
    for (let i = 0; i < 2; i++)
      expect(await readRateLimit(db, "rl-read", 2, window, start + 2)).toMatchObject({
        allowed: false,
        remaining: 0,
        resetAt: start + window,
      });
    // The next window reads as empty.
    expect(await readRateLimit(db, "rl-read", 2, window, start + window)).toMatchObject({
      allowed: true,
      remaining: 2,
    });
  });

  it("finds an active key by its secret, lists the active keys' hashes, and clears a counter", async () => {
    const { db } = store();
    const { key, secret } = await keys.createKey(db, { name: "hashes", kind: "admin" });
    expect(await keys.findActiveKey(db, secret)).toMatchObject({ id: key.id });
    expect(await keys.findActiveKey(db, `${secret}x`)).toBeUndefined();
    const all = await keys.activeKeyHashes(db, 1_000_000);
    expect(all).toContain(keys.hashKey(secret));
    // Past the bound asked for, no list at all: the caller then looks keys up one by one.
    expect(await keys.activeKeyHashes(db, 0)).toBeUndefined();
    await keys.disableKey(db, key.id);
    expect(await keys.findActiveKey(db, secret)).toBeUndefined();
    expect(await keys.activeKeyHashes(db, 1_000_000)).not.toContain(keys.hashKey(secret));

    const window = 60_000;
    const now = Date.now();
    await hitRateLimit(db, "rl-clear", 5, window, now);
    await hitRateLimit(db, "rl-clear", 5, window, now);
    expect((await readRateLimit(db, "rl-clear", 5, window, now)).count).toBe(2);
    await clearRateLimit(db, "rl-clear");
    expect((await readRateLimit(db, "rl-clear", 5, window, now)).count).toBe(0);
  });

  it("keeps console sessions until sign-out, expiry, or their user or key is disabled", async () => {
    const { db } = store();
    const suffix = randomBytes(4).toString("hex");
    const hour = 3_600_000;
    const user = await users.createConsoleUser(db, {
      email: `s-${suffix}@example.com`,
      password: "long passphrase here",
    });
    const admin = await keys.createKey(db, { name: `session-admin-${suffix}`, kind: "admin" });
    const later = new Date(Date.now() + hour);
    await sessions.createConsoleSession(db, {
      id: `a-${suffix}`,
      kind: "user",
      subject: user.id,
      expiresAt: later,
    });
    await sessions.createConsoleSession(db, {
      id: `b-${suffix}`,
      kind: "user",
      subject: user.id,
      expiresAt: later,
    });
    await sessions.createConsoleSession(db, {
      id: `k-${suffix}`,
      kind: "key",
      subject: admin.key.id,
      expiresAt: later,
    });
    expect(await sessions.consoleSessionIsLive(db, `a-${suffix}`, "user", user.id)).toBe(true);
    // The id alone is not enough: it must be the same subject, and not past its end.
    expect(await sessions.consoleSessionIsLive(db, `a-${suffix}`, "key", user.id)).toBe(false);
    expect(await sessions.consoleSessionIsLive(db, `a-${suffix}`, "user", "someone-else")).toBe(false);
    expect(
      await sessions.consoleSessionIsLive(
        db,
        `a-${suffix}`,
        "user",
        user.id,
        new Date(Date.now() + 2 * hour),
      ),
    ).toBe(false);
    // Sign-out ends one session; disabling the user ends the rest; disabling the key ends its own.
    await sessions.endConsoleSession(db, `a-${suffix}`);
    expect(await sessions.consoleSessionIsLive(db, `a-${suffix}`, "user", user.id)).toBe(false);
    expect(await sessions.consoleSessionIsLive(db, `b-${suffix}`, "user", user.id)).toBe(true);
    expect(await users.disableConsoleUser(db, user.id)).toBe(true);
    expect(await sessions.consoleSessionIsLive(db, `b-${suffix}`, "user", user.id)).toBe(false);
    expect(await sessions.consoleSessionIsLive(db, `k-${suffix}`, "key", admin.key.id)).toBe(true);
    await keys.disableKey(db, admin.key.id);
    expect(await sessions.consoleSessionIsLive(db, `k-${suffix}`, "key", admin.key.id)).toBe(false);
    // A session already past its end is dropped when the next one is recorded.
    await sessions.createConsoleSession(db, {
      id: `old-${suffix}`,
      kind: "user",
      subject: "x",
      expiresAt: new Date(Date.now() - 1),
    });
    await sessions.createConsoleSession(db, {
      id: `new-${suffix}`,
      kind: "user",
      subject: "x",
      expiresAt: later,
    });
    expect(await sessions.endConsoleSessionsOf(db, "user", "x")).toBe(1);
  });

  it("counts requests per key in fixed windows, refusing beyond the limit until the next window", async () => {
    const { db } = store();
    const window = 60_000;
    const start = 1_700_000_040_000; // a window boundary
    const hits = [];
    for (let i = 0; i < 3; i++) hits.push(await hitRateLimit(db, "rl-key", 2, window, start + i));
    expect(hits.map((h) => [h.allowed, h.remaining])).toEqual([
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect(hits[0]?.resetAt).toBe(start + window);
    // Another key has its own counter; the next window starts over.
    expect(await hitRateLimit(db, "rl-other", 2, window, start)).toMatchObject({
      allowed: true,
      remaining: 1,
    });
    expect(await hitRateLimit(db, "rl-key", 2, window, start + window)).toMatchObject({
      allowed: true,
      remaining: 1,
      resetAt: start + 2 * window,
    });
  });

  it("prunes the counters whose window has ended, in batches, and keeps those still counting", async () => {
    const { db } = store();
    const start = 4_000_000_020_000; // a boundary of both windows, later than any other case's rows
    await hitRateLimit(db, "rl-prune-ended-1", 5, 1_000, start);
    await hitRateLimit(db, "rl-prune-ended-2", 5, 1_000, start);
    await hitRateLimit(db, "rl-prune-ended-3", 5, 10_000, start);
    await hitRateLimit(db, "rl-prune-live", 5, 60_000, start);
    await hitRateLimit(db, "rl-prune-live", 5, 60_000, start + 1);
    const now = start + 10_000; // the 1 s and 10 s windows have ended (an end is exclusive), the minute has not
    const rows = async () =>
      (await queryRows<{ key_id: string }>(db, sql`SELECT key_id FROM rate_limits ORDER BY key_id`)).map(
        (r) => r.key_id,
      );
    const before = await rows();
    expect(before).toEqual(expect.arrayContaining(["rl-prune-ended-1", "rl-prune-ended-3", "rl-prune-live"]));
    // Every row but the live one has ended by `now` (the other cases' rows are of earlier windows): batches of 2.
    expect(await pruneRateLimits(db, now, 2)).toBe(before.length - 1);
    expect(await rows()).toEqual(["rl-prune-live"]);
    expect(await pruneRateLimits(db, now, 2)).toBe(0);
    // The live window goes on counting where it was; a pruned key starts a new window at 1.
    expect(await hitRateLimit(db, "rl-prune-live", 5, 60_000, now)).toMatchObject({ count: 3 });
    expect(await hitRateLimit(db, "rl-prune-ended-1", 5, 1_000, now)).toMatchObject({
      count: 1,
      resetAt: now + 1_000,
    });
    // Its end is the new window's: pruned once that has passed, not before.
    expect(await pruneRateLimits(db, now + 999)).toBe(0);
    expect(await pruneRateLimits(db, now + 1_000)).toBe(1);
  });

  it("hands out an OAuth state once, and clears abandoned expired ones", async () => {
    const { db } = store();
    const connection = await createConnection(db, {
      provider: "notion",
      containerTags: ["oauth"],
      metadata: {},
      sealedSecrets: null,
      syncIntervalMinutes: 60,
    });
    const state = (name: string, expiresAt: Date) => ({
      state: name,
      connectionId: connection.id,
      codeVerifier: "verifier",
      redirectUri: "http://localhost/callback",
      expiresAt,
    });
    await saveOAuthState(db, state("oauth-abandoned", new Date(Date.now() - 60_000)));
    await saveOAuthState(db, state("oauth-live", new Date(Date.now() + 600_000)));
    expect(await takeOAuthState(db, "oauth-live")).toMatchObject({
      connectionId: connection.id,
      codeVerifier: "verifier",
    });
    expect(await takeOAuthState(db, "oauth-live")).toBeUndefined();
    // Saving the live one swept the expired one away.
    expect(await takeOAuthState(db, "oauth-abandoned")).toBeUndefined();
  });

  it("merges settings patches, keeping secrets sealed in the row and readable only through the box", async () => {
    const { db } = store();
    const box = SecretBox.fromKey(randomBytes(32));
    const first = await updateSettings(db, box, {
      values: { llmModel: "small", chunkSize: 512 },
      secrets: { llmApiKey: "sk-first" },
    });
    expect(first).toEqual({ values: { llmModel: "small", chunkSize: 512 }, secretsSet: ["llmApiKey"] });
    const second = await updateSettings(db, box, {
      values: { chunkSize: null, language: "fr" },
      secrets: { llmApiKey: null, ocrKey: "ocr-secret" },
    });
    expect(second).toEqual({ values: { llmModel: "small", language: "fr" }, secretsSet: ["ocrKey"] });
    expect(await readSettings(db)).toEqual(second);
    expect(await readSecret(db, box, "ocrKey")).toBe("ocr-secret");
    expect(await readSecret(db, box, "llmApiKey")).toBeUndefined();
    expect(JSON.stringify(await readSettings(db))).not.toContain("ocr-secret");
  });

  it("keeps console users by normalised email with hashed passwords, and one shared session key", async () => {
    const { db } = store();
    const user = await users.createConsoleUser(db, {
      email: "  Ada@Example.org ",
      password: "correct horse",
    });
    expect(user.email).toBe("ada@example.org");
    expect(user.passwordHash).not.toContain("correct horse");
    expect(await users.verifyPassword("correct horse", user.passwordHash)).toBe(true);
    expect(await users.verifyPassword("wrong horse", user.passwordHash)).toBe(false);
    expect((await users.findConsoleUserByEmail(db, "ADA@example.org"))?.id).toBe(user.id);
    expect((await users.listConsoleUsers(db)).map((u) => u.id)).toContain(user.id);
    expect(await users.disableConsoleUser(db, user.id)).toBe(true);
    expect(await users.disableConsoleUser(db, user.id)).toBe(false);
    expect((await users.findConsoleUser(db, user.id))?.disabledAt).toBeInstanceOf(Date);

    const box = SecretBox.fromKey(randomBytes(32));
    const [a, b] = await Promise.all([
      users.consoleSessionSecret(db, box),
      users.consoleSessionSecret(db, box),
    ]);
    expect(a).toHaveLength(32);
    expect(b?.equals(a as Buffer)).toBe(true);
    // Kept in a row of its own: the settings the API shows never carry it.
    expect((await readSettings(db)).secretsSet).not.toContain("sessionSecret");
  });

  it("manages API keys: scoped-only disabling, first disabling kept, edits, usable admins, expiring ones", async () => {
    const { db } = store();
    const farFuture = new Date("3000-01-01T00:00:00Z");
    const admins = await keys.countUsableAdminKeys(db, farFuture);
    const admin = await keys.createKey(db, { name: "keys-admin", kind: "admin" });
    const scoped = await keys.createKey(db, {
      name: "keys-scoped",
      kind: "scoped",
      containerTags: ["keys-tag"],
      expiresAt: new Date("3000-01-01T12:00:00Z"),
    });
    expect(await keys.countUsableAdminKeys(db, farFuture)).toBe(admins + 1);
    expect(await keys.hasAdminKey(db)).toBe(true);
    expect(await keys.keyExistsForSecret(db, scoped.secret)).toBe(true);
    expect(await keys.keyExistsForSecret(db, `${scoped.secret}x`)).toBe(false);
    expect(
      (await keys.keysExpiringWithin(db, farFuture, new Date("3000-01-02T00:00:00Z"))).map((k) => k.id),
    ).toEqual([scoped.key.id]);

    expect(
      await keys.updateKey(db, scoped.key.id, { name: "renamed", contactEmail: "a@example.org" }),
    ).toMatchObject({
      name: "renamed",
      contactEmail: "a@example.org",
      containerTags: ["keys-tag"],
    });
    expect((await keys.updateKey(db, scoped.key.id, {}))?.name).toBe("renamed");
    expect((await keys.listKeys(db)).map((k) => k.id)).toEqual(
      expect.arrayContaining([admin.key.id, scoped.key.id]),
    );

    // Only scoped keys go through disableScopedKey; an admin key is refused there.
    expect(await keys.disableScopedKey(db, admin.key.id)).toBe(false);
    expect(await keys.disableScopedKey(db, scoped.key.id)).toBe(true);
    expect(await keys.disableScopedKey(db, scoped.key.id)).toBe(false);
    expect(await keys.keysExpiringWithin(db, farFuture, new Date("3000-01-02T00:00:00Z"))).toEqual([]);
    const disabled = await keys.disableKey(db, admin.key.id);
    const again = await keys.disableKey(db, admin.key.id);
    expect(again?.disabledAt?.getTime()).toBe(disabled?.disabledAt?.getTime());
    expect(await keys.countUsableAdminKeys(db, farFuture)).toBe(admins);
    expect(await keys.disableKey(db, "no-such-key")).toBeUndefined();
    expect(await keys.findActiveKey(db, admin.secret)).toBeUndefined();
  });
}
