import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../config/env.ts";
import { connectTemporal, temporalConnectionOptions } from "../../temporal/temporal-connection.ts";

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

  it("says why a connection failed: nothing listening, or plain text where TLS may be wanted", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const sdkFailure = async () => {
      throw new Error("Failed to connect before the deadline");
    };
    await expect(connectTemporal({ address: `127.0.0.1:${port}`, tls: true }, sdkFailure)).rejects.toThrow(
      `cannot connect to Temporal at 127.0.0.1:${port} over TLS: nothing answers there (ECONNREFUSED)`,
    );
    await expect(connectTemporal({ address: `127.0.0.1:${port}` }, sdkFailure)).rejects.toThrow(
      `cannot connect to Temporal at 127.0.0.1:${port} in plain text (set TEMPORAL_TLS for a TLS endpoint): Failed to connect before the deadline`,
    );
    expect(await connectTemporal({ address: "anywhere:7233" }, async (o) => o.address)).toBe("anywhere:7233");
  });
});
