import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientOrigin, parseTrustedProxies } from "../../api/client-address.ts";
import { hashPassword, PasswordHashBusy, verifyPassword } from "../../store/console-users.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService } from "../support/service.ts";

// Guessing keys and passwords (issue 23, point 4): per-address throttles for failed bearer keys and for
// sign-ins, a bound on password hashes running at once, server-side sessions that sign-out and disabling end,
// and `Secure` cookies when the request came over https. Every request of this file comes from 127.0.0.1,
// so the service trusts that address as a proxy and each case names its client in X-Forwarded-For.

describe("the client address behind TRUST_PROXY", () => {
  /** A request as @hono/node-server hands it over: the socket's peer in `env.incoming`. */
  const origin = async (trust: string, peer: string, headers: Record<string, string> = {}) => {
    const app = new Hono();
    const trusted = parseTrustedProxies(trust);
    app.get("/", (c) => c.json(clientOrigin(c, trusted)));
    const res = await app.request(
      "http://service.test/",
      { headers },
      { incoming: { socket: { remoteAddress: peer } } },
    );
    return (await res.json()) as { address: string; https: boolean };
  };

  it("believes forwarded headers only from a trusted peer, read from the right past trusted hops", async () => {
    const spoofed = { "x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "https" };
    // No proxy trusted: the peer is the client, whatever it claims.
    expect(await origin("", "198.51.100.4", spoofed)).toEqual({ address: "198.51.100.4", https: false });
    // A peer outside the trusted list is not believed either.
    expect(await origin("10.0.0.0/8", "198.51.100.4", spoofed)).toEqual({
      address: "198.51.100.4",
      https: false,
    });
    // Behind a trusted proxy: the address it appended, and its scheme.
    expect(await origin("10.0.0.0/8", "10.1.2.3", spoofed)).toEqual({ address: "203.0.113.9", https: true });
    // A client that sends its own X-Forwarded-For gets the entry the proxy appended, not the one it wrote.
    expect(
      await origin("10.0.0.0/8, 127.0.0.1", "127.0.0.1", {
        "x-forwarded-for": "1.1.1.1, 203.0.113.9, 10.4.4.4",
      }),
    ).toEqual({ address: "203.0.113.9", https: false });
    // IPv4 clients on a dual-stack socket count as their IPv4 address.
    expect(await origin("", "::ffff:192.0.2.1")).toEqual({ address: "192.0.2.1", https: false });
  });

  it("refuses a TRUST_PROXY entry that is not an address or CIDR block", () => {
    expect(() => parseTrustedProxies("10.0.0.0/33")).toThrow(/TRUST_PROXY/);
    expect(() => parseTrustedProxies("proxy.internal")).toThrow(/TRUST_PROXY/);
    expect(parseTrustedProxies(" ")).toBeUndefined();
  });
});

describe("password hashes at once", () => {
  it("runs two, keeps sixteen waiting and refuses the rest before hashing", async () => {
    const stored = await hashPassword("correct horse");
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => verifyPassword(i === 0 ? "correct horse" : "wrong", stored)),
    );
    const refused = outcomes.filter((o) => o.status === "rejected");
    expect(refused).toHaveLength(2);
    for (const o of refused) expect((o as PromiseRejectedResult).reason).toBeInstanceOf(PasswordHashBusy);
    const answers = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    expect(answers).toHaveLength(18);
    expect(answers.filter(Boolean)).toHaveLength(1);
    // The slots are all free again: the next check runs.
    expect(await verifyPassword("correct horse", stored)).toBe(true);
  });
});

describe("sign-in and keys resist guessing", () => {
  let service: TestService;
  const USER = { email: "ada@example.com", password: "a long enough passphrase" };

  beforeAll(async () => {
    service = await startTestService({
      env: {
        TRUST_PROXY: "127.0.0.1",
        AUTH_FAILURE_LIMIT: "6",
        SIGN_IN_ADDRESS_LIMIT: "4",
        AUTH_FAILURE_WINDOW_MS: "600000",
      },
    });
    const created = await send("POST", "/v3/console/users", {
      address: "192.0.2.200",
      key: TEST_ADMIN_KEY,
      body: USER,
    });
    expect(created.status, created.text).toBe(200);
  });

  afterAll(async () => {
    await service?.stop();
  });

  async function send(
    method: string,
    path: string,
    opts: { address: string; key?: string; body?: unknown; cookie?: string; proto?: string; csrf?: string },
  ) {
    const res = await fetch(`${service.url}${path}`, {
      method,
      headers: {
        "x-forwarded-for": opts.address,
        ...(opts.proto ? { "x-forwarded-proto": opts.proto } : {}),
        ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
        ...(opts.cookie ? { cookie: opts.cookie } : {}),
        ...(opts.csrf ? { "x-csrf-token": opts.csrf } : {}),
        ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
      },
      body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
    });
    const text = await res.text();
    return {
      status: res.status,
      text,
      retryAfter: res.headers.get("retry-after"),
      setCookie: res.headers.getSetCookie(),
      json: text ? JSON.parse(text) : undefined,
    };
  }

  const signIn = (address: string, body: unknown, proto?: string) =>
    send("POST", "/v3/console/session", { address, body, proto });

  it("counts failed bearer keys per address; past the limit that address is refused, the right key included", async () => {
    const guesser = "203.0.113.1";
    for (let i = 0; i < 6; i++) {
      const res = await send("GET", "/v3/auth/keys", { address: guesser, key: `sm_guess_${i}` });
      expect(res.status, res.text).toBe(401);
    }
    const over = await send("GET", "/v3/auth/keys", { address: guesser, key: "sm_guess_7" });
    expect(over.status).toBe(429);
    expect(over.json.error.code).toBe("rate_limited");
    expect(Number(over.retryAfter)).toBeGreaterThan(0);
    // The right key from there learns nothing either.
    expect((await send("GET", "/v3/auth/keys", { address: guesser, key: TEST_ADMIN_KEY })).status).toBe(429);
    // Another address is not held back: its right key works and its wrong ones are its own count.
    expect((await send("GET", "/v3/auth/keys", { address: "203.0.113.2", key: TEST_ADMIN_KEY })).status).toBe(
      200,
    );
    expect((await send("GET", "/v3/auth/keys", { address: "203.0.113.2", key: "sm_wrong" })).status).toBe(
      401,
    );
  });

  it("bounds sign-in attempts per address before any password is hashed, and counts wrong ones as failures", async () => {
    const guesser = "198.51.100.7";
    for (const email of ["a@example.com", "b@example.com", "c@example.com", USER.email]) {
      const res = await signIn(guesser, { email, password: "not it" });
      expect(res.status, res.text).toBe(401);
    }
    const over = await signIn(guesser, USER);
    expect(over.status).toBe(429);
    expect(over.json.error.message).toMatch(/sign-in attempts from this address/);
    // The user is not locked out from elsewhere.
    expect((await signIn("198.51.100.8", USER)).status).toBe(200);
    // Four wrong sign-ins and two wrong keys make six failures: the address's next key is refused.
    expect((await send("GET", "/v3/auth/keys", { address: guesser, key: "sm_one" })).status).toBe(401);
    expect((await send("GET", "/v3/auth/keys", { address: guesser, key: "sm_two" })).status).toBe(401);
    expect((await send("GET", "/v3/auth/keys", { address: guesser, key: TEST_ADMIN_KEY })).status).toBe(429);
  });

  it("ends a session on the server at sign-out: a kept copy of the cookie stops working", async () => {
    const address = "192.0.2.10";
    const res = await signIn(address, { apiKey: TEST_ADMIN_KEY });
    expect(res.status, res.text).toBe(200);
    const cookie = res.setCookie[0]?.split(";")[0] as string;
    expect((await send("GET", "/v3/console/session", { address, cookie })).status).toBe(200);
    expect((await send("GET", "/v3/auth/keys", { address, cookie })).status).toBe(200);

    const out = await send("DELETE", "/v3/console/session", { address, cookie });
    expect(out.status, out.text).toBe(200);
    // The browser drops the cookie; someone who copied it gets nothing more from it.
    expect((await send("GET", "/v3/console/session", { address, cookie })).status).toBe(401);
    expect((await send("GET", "/v3/auth/keys", { address, cookie })).status).toBe(401);
  });

  it("ends a console user's sessions when the user is disabled", async () => {
    const other = { email: "grace@example.com", password: "another long passphrase" };
    const address = "192.0.2.11";
    const created = await send("POST", "/v3/console/users", { address, key: TEST_ADMIN_KEY, body: other });
    expect(created.status, created.text).toBe(200);
    const res = await signIn(address, other);
    expect(res.status, res.text).toBe(200);
    const cookie = res.setCookie[0]?.split(";")[0] as string;
    expect((await send("GET", "/v3/console/session", { address, cookie })).status).toBe(200);
    const disabled = await send("DELETE", `/v3/console/users/${created.json.id}`, {
      address,
      key: TEST_ADMIN_KEY,
    });
    expect(disabled.status, disabled.text).toBe(200);
    expect((await send("GET", "/v3/console/session", { address, cookie })).status).toBe(401);
  });

  it("marks the cookie Secure when the request reached the trusted proxy over https", async () => {
    const overHttps = await signIn("192.0.2.20", { apiKey: TEST_ADMIN_KEY }, "https");
    expect(overHttps.status, overHttps.text).toBe(200);
    expect(overHttps.setCookie[0]).toMatch(/;\s*Secure/i);
    const overHttp = await signIn("192.0.2.21", { apiKey: TEST_ADMIN_KEY }, "http");
    expect(overHttp.status, overHttp.text).toBe(200);
    expect(overHttp.setCookie[0]).not.toMatch(/;\s*Secure/i);
  });
});
