import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../config/env.ts";
import { temporalConnectionOptions } from "../../runtime/temporal-connection.ts";

// Temporal Cloud cannot be reached from here: these check the options handed to the SDK's connect().
describe("Temporal connection options", () => {
  const options = (env: Record<string, string>) =>
    temporalConnectionOptions(loadConfig({ DATA_DIR: "/tmp/x", ...env }), "temporal.example:7233");

  it("connects in plain text by default", () => {
    expect(options({})).toEqual({ address: "temporal.example:7233" });
  });

  it("turns TLS on for TEMPORAL_TLS and for an API key (Temporal Cloud)", () => {
    expect(options({ TEMPORAL_TLS: "true" })).toEqual({ address: "temporal.example:7233", tls: true });
    expect(options({ TEMPORAL_API_KEY: "key-123" })).toEqual({
      address: "temporal.example:7233",
      tls: true,
      apiKey: "key-123",
    });
  });

  it("presents a client certificate for mutual TLS", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "temporal-mtls-"));
    try {
      writeFileSync(path.join(dir, "client.pem"), "CERT");
      writeFileSync(path.join(dir, "client.key"), "KEY");
      const got = options({
        TEMPORAL_TLS_CERT_PATH: path.join(dir, "client.pem"),
        TEMPORAL_TLS_KEY_PATH: path.join(dir, "client.key"),
      });
      expect(got.tls).toEqual({ clientCertPair: { crt: Buffer.from("CERT"), key: Buffer.from("KEY") } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("trusts a private CA and checks the server's certificate against the name given", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "temporal-ca-"));
    try {
      writeFileSync(path.join(dir, "ca.pem"), "CA");
      expect(
        options({
          TEMPORAL_TLS_CA_PATH: path.join(dir, "ca.pem"),
          TEMPORAL_TLS_SERVER_NAME: "temporal.internal",
        }),
      ).toEqual({
        address: "temporal.example:7233",
        tls: { serverRootCACertificate: Buffer.from("CA"), serverNameOverride: "temporal.internal" },
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
