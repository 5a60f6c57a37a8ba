import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientOrigin, parseTrustedProxies } from "../../api/client-address.ts";
import { hashPassword, PasswordHashBusy, verifyPassword } from "../../store/console-users.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService } from "../support/service.ts";

// Guessing keys and passwords: failures cost the failer (held answers, then 429 for its address) and never the
// holder of the right key or password, a bound on password hashes running at once, server-side sessions that
// sign-out and disabling end, and `Secure` cookies when the request came over https. Every request of this file
// comes from 127.0.0.1, so the service trusts that address as a proxy and each case names its client in
// X-Forwarded-For.

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
    const { address, https } = (await res.json()) as { address: string; https: boolean };
    return { address, https };
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
        // Failures are counted in fixed windows of the clock: a day's window keeps a count from starting
        // again in the middle of a case (a 10-minute one did, on a clean-clone run).
        AUTH_FAILURE_WINDOW_MS: "86400000",
        AUTH_FAILURE_MAX_DELAY_MS: "2000",
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

  it("counts failed bearer keys per address; past the limit its wrong keys get 429, its right key still works", async () => {
    const guesser = "203.0.113.1";
    for (let i = 0; i < 6; i++) {
      const res = await send("GET", "/v3/auth/keys", { address: guesser, key: `sm_guess_${i}` });
      expect(res.status, res.text).toBe(401);
    }
    const over = await send("GET", "/v3/auth/keys", { address: guesser, key: "sm_guess_7" });
    expect(over.status).toBe(429);
    expect(over.json.code).toBe("rate_limited");
    expect(Number(over.retryAfter)).toBeGreaterThan(0);
    // The holder of the right key is not refused for someone else's failures at the same address.
    expect((await send("GET", "/v3/auth/keys", { address: guesser, key: TEST_ADMIN_KEY })).status).toBe(200);
    // Another address's wrong keys are its own count.
    expect((await send("GET", "/v3/auth/keys", { address: "203.0.113.2", key: "sm_wrong" })).status).toBe(
      401,
    );
  });

  it("counts an IPv6 client's failures by its /64, so rotating addresses in it does not reset the count", async () => {
    for (let i = 0; i < 6; i++) {
      const res = await send("GET", "/v3/auth/keys", {
        address: `2001:db8:1:2::${i + 1}`,
        key: `sm_v6_${i}`,
      });
      expect(res.status, res.text).toBe(401);
    }
    const rotated = await send("GET", "/v3/auth/keys", { address: "2001:db8:1:2:ffff::9", key: "sm_v6_7" });
    expect(rotated.status).toBe(429);
    // The neighbouring /64 is someone else.
    expect((await send("GET", "/v3/auth/keys", { address: "2001:db8:1:3::1", key: "sm_v6_8" })).status).toBe(
      401,
    );
  });

  it("signs a user in with the right password after twenty wrong ones for that e-mail", async () => {
    const guesser = "198.51.100.7";
    const answers: number[] = [];
    for (let i = 0; i < 20; i++)
      answers.push((await signIn(guesser, { email: USER.email, password: "not it" })).status);
    // Six failures from the address reach its limit: the rest are 429, none of them a sign-in.
    expect(answers).toEqual([...Array(6).fill(401), ...Array(14).fill(429)]);
    // From the same address, the owner's right password signs in (held first, not locked out).
    const owner = await signIn(guesser, USER);
    expect(owner.status, owner.text).toBe(200);
    expect(owner.setCookie[0]).toMatch(/^memory_console=/);
    // And from elsewhere too.
    expect((await signIn("198.51.100.8", USER)).status).toBe(200);
  });

  it("holds at most four sign-ins of one e-mail at once: more are answered 429 at once, before any hash", async () => {
    const email = "burst@example.com";
    const created = await send("POST", "/v3/console/users", {
      address: "192.0.2.201",
      key: TEST_ADMIN_KEY,
      body: { email, password: "the burst user's passphrase" },
    });
    expect(created.status, created.text).toBe(200);
    // Failures for the e-mail from many addresses: each address stays under its limit, the e-mail's count grows.
    for (let i = 0; i < 8; i++) {
      const res = await signIn(`198.51.100.${20 + i}`, { email, password: "wrong again" });
      expect(res.status, res.text).toBe(401);
    }
    // Ten at once from ten addresses: four are held (the e-mail's delay), six refused without waiting.
    const burst = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        signIn(`198.51.100.${40 + i}`, { email, password: "burst guess" }),
      ),
    );
    const statuses = burst.map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(4).fill(401), ...Array(6).fill(429)]);
    for (const r of burst.filter((r) => r.status === 429)) expect(r.json.error).toMatch(/in progress/);
    // The right password still signs in.
    const owner = await signIn("198.51.100.60", { email, password: "the burst user's passphrase" });
    expect(owner.status, owner.text).toBe(200);
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
