import { BlockList, isIP } from "node:net";
import type { Context } from "hono";
import ipaddr from "ipaddr.js";

/** Who sent a request, as far as the service can tell: what throttles count under and what decides `Secure`. */
export interface ClientOrigin {
  /** The client's IP address, or "unknown" where the runtime gives no socket (in-process requests). */
  address: string;
  /**
   * What per-address counters (failed authentications, sign-in attempts) key on: the address, or for IPv6 its /64
   * (throttleKeyOf). Logs and anything shown to people use `address`.
   */
  throttleKey: string;
  /** The request reached the service, or the trusted proxy in front of it, over https. */
  https: boolean;
}

/**
 * TRUST_PROXY: the reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed, as a comma-separated
 * list of addresses and CIDR blocks (`127.0.0.1, 10.0.0.0/8, ::1`). Empty (the default): no header is believed
 * and a request's address is its socket's peer, so a client cannot pick the address its throttles count under.
 */
export function parseTrustedProxies(setting: string | undefined): BlockList | undefined {
  const entries = (setting ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.length === 0) return undefined;
  const list = new BlockList();
  for (const entry of entries) {
    const [address = "", prefixText] = entry.split("/");
    const family = isIP(address);
    if (!family) throw new Error(`TRUST_PROXY: "${entry}" is not an IP address or CIDR block`);
    const type = family === 6 ? "ipv6" : "ipv4";
    if (prefixText === undefined) {
      list.addAddress(address, type);
      continue;
    }
    const prefix = Number(prefixText);
    if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 6 ? 128 : 32))
      throw new Error(`TRUST_PROXY: "${entry}" has no valid prefix length`);
    list.addSubnet(address, prefix, type);
  }
  return list;
}

/**
 * The key a per-address counter counts `address` under. An IPv4 address is itself; an IPv6 address is its /64
 * (`2001:db8:1:2::/64`), because one subscriber is routinely given a whole /64 and can pick any of its 2^64
 * addresses per request, so counting each alone lets one client rotate past every limit; an IPv4-mapped IPv6
 * address (`::ffff:1.2.3.4`, either spelling) is the IPv4 address. Anything that is not an address
 * ("unknown", in-process requests) is kept as it is.
 */
export function throttleKeyOf(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === "ipv4") return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}

/** `::ffff:1.2.3.4` (an IPv4 client on a dual-stack socket) is 1.2.3.4 for matching and counting. */
function plainAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped?.[1] ?? address;
}

function isTrusted(trusted: BlockList | undefined, address: string): boolean {
  if (!trusted) return false;
  const family = isIP(address);
  if (!family) return false;
  return trusted.check(address, family === 6 ? "ipv6" : "ipv4");
}

/** The socket peer of a request served by @hono/node-server (its `env.incoming` is Node's IncomingMessage). */
function peerAddress(c: Context): string | undefined {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  const address = incoming?.socket?.remoteAddress;
  return address ? plainAddress(address) : undefined;
}

/**
 * The request's client: the socket peer, unless that peer is a trusted proxy, in which case X-Forwarded-For is
 * read from its right end (the entry the nearest proxy appended) past every trusted hop, so a client that sends
 * its own X-Forwarded-For cannot choose the address.
 */
export function clientOrigin(c: Context, trusted: BlockList | undefined): ClientOrigin {
  const peer = peerAddress(c);
  const directHttps = new URL(c.req.url).protocol === "https:";
  if (!peer) return origin("unknown", directHttps);
  if (!isTrusted(trusted, peer)) return origin(peer, directHttps);
  const hops = (c.req.header("x-forwarded-for") ?? "")
    .split(",")
    .map((hop) => plainAddress(hop.trim()))
    .filter(Boolean);
  let address = peer;
  while (hops.length > 0 && isTrusted(trusted, address)) {
    const next = hops.pop() as string;
    if (!isIP(next)) break;
    address = next;
  }
  // The proxy nearest the client writes the scheme it was reached by; a chain of proxies passes it on.
  const forwardedProto = c.req.header("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase();
  return origin(address, forwardedProto ? forwardedProto === "https" : directHttps);
}

function origin(address: string, https: boolean): ClientOrigin {
  return { address, throttleKey: throttleKeyOf(address), https };
}
