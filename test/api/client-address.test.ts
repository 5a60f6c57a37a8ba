import type { Context } from "hono";
import { describe, expect, it } from "vitest";
import { clientOrigin, parseTrustedProxies, throttleKeyOf } from "../../api/client-address.ts";

describe("throttleKeyOf", () => {
  it("keys an IPv6 address by its /64, so rotating within it counts under one key", () => {
    const key = throttleKeyOf("2001:db8:1:2:3:4:5:6");
    expect(key).toBe("2001:db8:1:2::/64");
    for (const other of ["2001:db8:1:2::1", "2001:0db8:0001:0002:ffff:ffff:ffff:ffff", "2001:db8:1:2:a::b"])
      expect(throttleKeyOf(other)).toBe(key);
    // The neighbouring /64 is someone else.
    expect(throttleKeyOf("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(throttleKeyOf("::1")).toBe("::/64");
    expect(throttleKeyOf("fe80::1%eth0")).toBe("fe80::/64");
  });

  it("keeps IPv4 addresses whole and unwraps IPv4-mapped IPv6 in either spelling", () => {
    expect(throttleKeyOf("203.0.113.7")).toBe("203.0.113.7");
    expect(throttleKeyOf("203.0.113.8")).toBe("203.0.113.8");
    expect(throttleKeyOf("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(throttleKeyOf("::ffff:cb00:7107")).toBe("203.0.113.7");
  });

  it("leaves what is not an address as it is", () => {
    expect(throttleKeyOf("unknown")).toBe("unknown");
    expect(throttleKeyOf("")).toBe("");
  });
});

describe("clientOrigin", () => {
  /** The parts of a Hono context clientOrigin reads: the socket peer, the URL and the headers. */
  function request(peer: string, headers: Record<string, string> = {}): Context {
    return {
      env: { incoming: { socket: { remoteAddress: peer } } },
      req: { url: "http://service.test/v3/documents", header: (name: string) => headers[name] },
    } as unknown as Context;
  }

  it("carries the throttle key of the client's address beside the address", () => {
    expect(clientOrigin(request("2001:db8:9:9:1:2:3:4"), undefined)).toEqual({
      address: "2001:db8:9:9:1:2:3:4",
      throttleKey: "2001:db8:9:9::/64",
      https: false,
    });
    expect(clientOrigin(request("::ffff:198.51.100.4"), undefined)).toMatchObject({
      address: "198.51.100.4",
      throttleKey: "198.51.100.4",
    });
    // Behind a trusted proxy, the forwarded client's /64.
    const trusted = parseTrustedProxies("127.0.0.1");
    expect(
      clientOrigin(request("127.0.0.1", { "x-forwarded-for": "2001:db8:5:6::77" }), trusted),
    ).toMatchObject({ address: "2001:db8:5:6::77", throttleKey: "2001:db8:5:6::/64" });
  });
});
