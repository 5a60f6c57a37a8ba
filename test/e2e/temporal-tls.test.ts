import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Supermemory from "supermemory";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { loadConfig } from "../../config/env.ts";
import { type GrpcTlsProxy, startGrpcTlsProxy } from "../support/grpc-tls-proxy.ts";
import { startTestService, TEST_ADMIN_KEY, type TestService, untilProcessed } from "../support/service.ts";

// The dev server speaks plain text, so a TLS front stands in for a Temporal cluster with a private CA
// (and for Temporal Cloud's TLS with an API key). The service's own connection code is what is tried:
// its client (grpc-js) and its worker (the Rust core) both go through the front.
describe("an external Temporal over TLS", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "temporal-tls-"));
  const file = (name: string) => path.join(dir, name);
  let mtls: GrpcTlsProxy;
  let tlsOnly: GrpcTlsProxy;
  const services: TestService[] = [];

  /** A certificate signed by the test CA, for a server or a client. */
  function issue(name: string, subject: string, extensions: string) {
    const openssl = (...args: string[]) => execFileSync("openssl", args, { stdio: "pipe" });
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", file(`${name}.key`));
    openssl(
      "req",
      "-new",
      "-key",
      file(`${name}.key`),
      "-subj",
      `/CN=${subject}`,
      "-out",
      file(`${name}.csr`),
    );
    writeFileSync(file(`${name}.ext`), extensions);
    openssl(
      "x509",
      "-req",
      "-in",
      file(`${name}.csr`),
      "-CA",
      file("ca.pem"),
      "-CAkey",
      file("ca.key"),
      "-CAcreateserial",
      "-days",
      "2",
      "-extfile",
      file(`${name}.ext`),
      "-out",
      file(`${name}.pem`),
    );
  }

  beforeAll(async () => {
    execFileSync("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", file("ca.key")]);
    execFileSync("openssl", [
      "req",
      "-x509",
      "-new",
      "-key",
      file("ca.key"),
      "-subj",
      "/CN=Memory test CA",
      "-days",
      "2",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
      "-out",
      file("ca.pem"),
    ]);
    // The certificate names the cluster, not the address it is reached at: TEMPORAL_TLS_SERVER_NAME says which.
    issue(
      "server",
      "temporal.internal",
      "subjectAltName=DNS:temporal.internal\nextendedKeyUsage=serverAuth\n",
    );
    issue("client", "memory-worker", "extendedKeyUsage=clientAuth\n");
    const upstream = inject("TEST_TEMPORAL_ADDRESS");
    const server = { key: readFileSync(file("server.key")), cert: readFileSync(file("server.pem")) };
    mtls = await startGrpcTlsProxy({ upstream, ...server, clientCa: readFileSync(file("ca.pem")) });
    tlsOnly = await startGrpcTlsProxy({ upstream, ...server });
  });

  afterAll(async () => {
    for (const s of services) await s.stop();
    await mtls?.stop();
    await tlsOnly?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function processesADocument(env: Record<string, string>) {
    const service = await startTestService({ env });
    services.push(service);
    const client = new Supermemory({ apiKey: TEST_ADMIN_KEY, baseURL: service.url });
    const { id } = await client.documents.add({
      content: "Lighthouse keepers trimmed the lamp wicks every evening before dusk.",
      containerTag: "tls",
    });
    const doc = await untilProcessed((x) => client.documents.get(x), id);
    expect(doc.status).toBe("done");
  }

  it("mutual TLS with a private CA: client and worker present the certificate and a document is processed", async () => {
    await processesADocument({
      TEMPORAL_ADDRESS: mtls.address,
      TEMPORAL_TLS_CA_PATH: file("ca.pem"),
      TEMPORAL_TLS_SERVER_NAME: "temporal.internal",
      TEMPORAL_TLS_CERT_PATH: file("client.pem"),
      TEMPORAL_TLS_KEY_PATH: file("client.key"),
    });
    // A short text is prepared by a local activity, which marks the document done just before the worker
    // completes the workflow task that ran it: wait for that call to pass the proxy, not for a fixed time.
    const completed = "/temporal.api.workflowservice.v1.WorkflowService/RespondWorkflowTaskCompleted";
    await vi.waitFor(() => expect(mtls.calls.map((c) => c.path)).toContain(completed), {
      timeout: 60_000,
      interval: 100,
    });
    const paths = new Set(mtls.calls.map((c) => c.path));
    // The client started the workflow; the worker polled for its tasks.
    expect(paths).toContain("/temporal.api.workflowservice.v1.WorkflowService/StartWorkflowExecution");
    expect(paths).toContain("/temporal.api.workflowservice.v1.WorkflowService/PollWorkflowTaskQueue");
    expect(paths).toContain("/temporal.api.workflowservice.v1.WorkflowService/PollActivityTaskQueue");
    expect(paths).toContain(completed);
    expect(new Set(mtls.calls.map((c) => c.clientCertificate))).toEqual(new Set(["memory-worker"]));
  });

  it("an API key goes with every call, over TLS", async () => {
    await processesADocument({
      TEMPORAL_ADDRESS: tlsOnly.address,
      TEMPORAL_TLS_CA_PATH: file("ca.pem"),
      TEMPORAL_TLS_SERVER_NAME: "temporal.internal",
      TEMPORAL_API_KEY: "tmprl-test-key",
    });
    expect(tlsOnly.calls.length).toBeGreaterThan(5);
    expect(new Set(tlsOnly.calls.map((c) => c.authorization))).toEqual(new Set(["Bearer tmprl-test-key"]));
  });

  it("does not start when the server cannot be trusted or wants a client certificate, and says why", async () => {
    const refusal = (env: Record<string, string>) =>
      startTestService({ env }).then(
        () => "started",
        (error: Error) => error.message,
      );
    // No CA: the system's roots do not know the test CA.
    expect(await refusal({ TEMPORAL_ADDRESS: tlsOnly.address, TEMPORAL_TLS: "true" })).toMatch(
      /^cannot connect to Temporal at 127\.0\.0\.1:\d+ over TLS: TLS handshake failed: .*certificate.*\(TEMPORAL_TLS_CA_PATH names the CA/,
    );
    // The certificate names the cluster, not the address.
    expect(
      await refusal({ TEMPORAL_ADDRESS: tlsOnly.address, TEMPORAL_TLS_CA_PATH: file("ca.pem") }),
    ).toMatch(/TLS handshake failed: .*127\.0\.0\.1.*\(set TEMPORAL_TLS_SERVER_NAME/);
    // The cluster asks for a client certificate and gets none.
    expect(
      await refusal({
        TEMPORAL_ADDRESS: mtls.address,
        TEMPORAL_TLS_CA_PATH: file("ca.pem"),
        TEMPORAL_TLS_SERVER_NAME: "temporal.internal",
      }),
    ).toMatch(/TLS handshake failed: .*certificate required.*\(the server wants a client certificate/);
  });

  it("refuses a client certificate without its key at start-up", () => {
    expect(() =>
      loadConfig({
        DATA_DIR: dir,
        TEMPORAL_ADDRESS: mtls.address,
        TEMPORAL_TLS_CERT_PATH: file("client.pem"),
      }),
    ).toThrow(/TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH: set both/);
  });
});
