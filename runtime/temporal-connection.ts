import { readFileSync } from "node:fs";
import type { Config } from "../config/env.ts";

/**
 * Connection options for an external Temporal: plain on a private network, TLS with an API key
 * (Temporal Cloud), or mutual TLS with a client certificate. Used by the client and the worker alike.
 */
export function temporalConnectionOptions(config: Config, address: string) {
  const mtls =
    config.TEMPORAL_TLS_CERT_PATH && config.TEMPORAL_TLS_KEY_PATH
      ? {
          clientCertPair: {
            crt: readFileSync(config.TEMPORAL_TLS_CERT_PATH),
            key: readFileSync(config.TEMPORAL_TLS_KEY_PATH),
          },
        }
      : undefined;
  const tls = config.TEMPORAL_TLS || mtls || config.TEMPORAL_API_KEY ? (mtls ?? true) : undefined;
  return {
    address,
    ...(tls ? { tls } : {}),
    ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}),
  };
}
