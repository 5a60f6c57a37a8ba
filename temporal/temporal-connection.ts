import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { connect as tlsConnect } from "node:tls";
import type { TLSConfig } from "@temporalio/client";
import type { Config } from "../config/env.ts";

/**
 * Connection options for an external Temporal: plain on a private network, TLS with an API key
 * (Temporal Cloud), or mutual TLS with a client certificate; a private CA and the name its
 * certificate carries for a self-hosted cluster. Used by the client and the worker alike.
 */
export function temporalConnectionOptions(config: Config, address: string) {
  const custom: TLSConfig = {
    ...(config.TEMPORAL_TLS_CERT_PATH && config.TEMPORAL_TLS_KEY_PATH
      ? {
          clientCertPair: {
            crt: readFileSync(config.TEMPORAL_TLS_CERT_PATH),
            key: readFileSync(config.TEMPORAL_TLS_KEY_PATH),
          },
        }
      : {}),
    ...(config.TEMPORAL_TLS_CA_PATH
      ? { serverRootCACertificate: readFileSync(config.TEMPORAL_TLS_CA_PATH) }
      : {}),
    ...(config.TEMPORAL_TLS_SERVER_NAME ? { serverNameOverride: config.TEMPORAL_TLS_SERVER_NAME } : {}),
  };
  const customized = Object.keys(custom).length > 0;
  const tls = customized ? custom : config.TEMPORAL_TLS || config.TEMPORAL_API_KEY ? true : undefined;
  return {
    address,
    ...(tls ? { tls } : {}),
    ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}),
  };
}

export type TemporalConnectionOptions = ReturnType<typeof temporalConnectionOptions>;

/**
 * Connects, and when that fails says why in words an operator can act on. The SDK reports any failure
 * as "Failed to connect before the deadline"; a TLS handshake of our own names the real cause
 * (an unknown CA, a name mismatch, a client certificate the server wanted).
 */
export async function connectTemporal<T>(
  options: TemporalConnectionOptions,
  connect: (options: TemporalConnectionOptions) => Promise<T>,
): Promise<T> {
  try {
    return await connect(options);
  } catch (error) {
    const tls = options.tls === true ? {} : options.tls;
    const reason = tls ? await tlsHandshakeProblem(options.address, tls) : undefined;
    const how = tls ? "over TLS" : "in plain text (set TEMPORAL_TLS for a TLS endpoint)";
    throw new Error(
      `cannot connect to Temporal at ${options.address} ${how}: ${reason ?? (error as Error).message}`,
      { cause: error },
    );
  }
}

/** What goes wrong in a TLS handshake with these options, or undefined when it succeeds. */
async function tlsHandshakeProblem(address: string, tlsConfig: TLSConfig): Promise<string | undefined> {
  let host: string;
  let port: number;
  try {
    const url = new URL(`tls://${address}`);
    host = url.hostname.replace(/^\[|\]$/g, "");
    port = Number(url.port || 7233);
  } catch {
    return `TEMPORAL_ADDRESS is not host:port (${address})`;
  }
  const servername = tlsConfig.serverNameOverride ?? (isIP(host) ? undefined : host);
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host,
      port,
      servername,
      ALPNProtocols: ["h2"],
      ...(tlsConfig.serverRootCACertificate ? { ca: Buffer.from(tlsConfig.serverRootCACertificate) } : {}),
      ...(tlsConfig.clientCertPair
        ? { cert: Buffer.from(tlsConfig.clientCertPair.crt), key: Buffer.from(tlsConfig.clientCertPair.key) }
        : {}),
    });
    const done = (problem?: string) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => done("no TLS handshake within 5 s"), 5000);
    socket.once("error", (e: NodeJS.ErrnoException) => {
      if (e.syscall === "connect" || e.syscall === "getaddrinfo")
        return done(`nothing answers there (${e.code})`);
      const hint =
        e.code === "ERR_TLS_CERT_ALTNAME_INVALID"
          ? " (set TEMPORAL_TLS_SERVER_NAME to the name in the server's certificate)"
          : /certificate required/i.test(e.message)
            ? " (the server wants a client certificate: TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH)"
            : /issuer|self.signed|verify/i.test(e.message)
              ? " (TEMPORAL_TLS_CA_PATH names the CA that signed the server's certificate)"
              : "";
      // OpenSSL's own errors come as "<hex>:error:<code>:SSL routines:<function>:<reason>:<file>:<line>...".
      const reason = /SSL routines:[^:]*:([^:]+):/.exec(e.message)?.[1] ?? e.message.replace(/\s+/g, " ");
      done(`TLS handshake failed: ${reason}${hint}`);
    });
    // TLS 1.3 servers refuse a missing client certificate only after the handshake: wait a moment for that.
    socket.once("secureConnect", () => setTimeout(() => done(undefined), 500));
  });
}
