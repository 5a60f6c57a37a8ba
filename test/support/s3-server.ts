import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  type PutObjectCommandOutput,
  S3Client,
} from "@aws-sdk/client-s3";
import { repoRoot } from "./processes.ts";

export interface S3TestServer {
  /** `http://127.0.0.1:<port>`: pass as the connection's `endpoint`. */
  endpoint: string;
  region: string;
  /** The one key pair s3rver knows (S3RVER/S3RVER); others are refused the way AWS refuses them. */
  accessKeyId: string;
  secretAccessKey: string;
  /** A client with the right credentials, for arranging buckets and objects. */
  client: S3Client;
  createBucket(bucket: string): Promise<void>;
  putObject(
    bucket: string,
    key: string,
    body: string | Uint8Array,
    contentType?: string,
  ): Promise<PutObjectCommandOutput>;
  deleteObject(bucket: string, key: string): Promise<void>;
  /**
   * GET and HEAD of this object answer 403 AccessDenied from now on, as S3 does for an object a bucket
   * policy, an ACL or its KMS key keeps from the credentials while listing the bucket still works.
   */
  denyObject(bucket: string, key: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The server runs in its own Node process for two reasons:
 * - s3rver signs ListObjectsV2 continuation tokens with DES, which OpenSSL 3 (Node >= 17) refuses unless
 *   the legacy provider is loaded: every truncated listing would be a 500. The child gets
 *   `--openssl-legacy-provider`; the test process's crypto stays untouched.
 * - s3rver checks only that a SigV4 request's access key exists, never its signature, so a wrong secret
 *   would be accepted. The child checks header signatures (the SDK's way of signing) before s3rver sees
 *   the request and answers SignatureDoesNotMatch as S3 does. Payload hashes are taken as declared.
 * Presigned URLs (the signature in the query) are checked the same way.
 * It exits when its stdin closes, so a crashed test run leaves no server behind.
 */
const SERVER_SCRIPT = `
const crypto = require("node:crypto");
const S3rver = require("s3rver");
const [directory, accessKeyId, secret] = process.argv.slice(1);
const sha256 = (data) => crypto.createHash("sha256").update(data).digest("hex");
const hmac = (key, data) => crypto.createHmac("sha256", key).update(data).digest();
const encode = (s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());

// A presigned URL carries its signature in the query (X-Amz-Signature) over every other query parameter,
// the signed headers and UNSIGNED-PAYLOAD; s3rver itself checks only X-Amz-Date plus X-Amz-Expires
// (https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html).
function querySignatureMatches(req) {
  const [path, rawQuery = ""] = req.url.split("?", 2);
  const params = rawQuery
    .split("&")
    .filter(Boolean)
    .map((pair) => {
      const i = pair.indexOf("=");
      return [decodeURIComponent(i < 0 ? pair : pair.slice(0, i)), decodeURIComponent(i < 0 ? "" : pair.slice(i + 1))];
    });
  const get = (name) => (params.find(([n]) => n === name) || [])[1];
  const signature = get("X-Amz-Signature");
  const credential = get("X-Amz-Credential") || "";
  const [keyId, day, region, service] = credential.split("/");
  if (keyId !== accessKeyId) return true; // s3rver answers InvalidAccessKeyId itself
  const signedHeaders = get("X-Amz-SignedHeaders") || "";
  const query = params
    .filter(([n]) => n !== "X-Amz-Signature")
    .map(([n, v]) => [encode(n), encode(v)])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([n, v]) => n + "=" + v)
    .join("&");
  const headers = signedHeaders
    .split(";")
    .map((name) => name + ":" + String(req.headers[name] ?? "").trim().replace(/\\s+/g, " ") + "\\n")
    .join("");
  const canonical = [req.method, path, query, headers, signedHeaders, "UNSIGNED-PAYLOAD"].join("\\n");
  const scope = [day, region, service, "aws4_request"].join("/");
  const toSign = ["AWS4-HMAC-SHA256", get("X-Amz-Date"), scope, sha256(canonical)].join("\\n");
  const key = hmac(hmac(hmac(hmac("AWS4" + secret, day), region), service), "aws4_request");
  return crypto.createHmac("sha256", key).update(toSign).digest("hex") === signature;
}

function signatureMatches(req) {
  const auth = req.headers.authorization;
  if (!auth && /[?&]X-Amz-Signature=/.test(req.url)) return querySignatureMatches(req);
  if (!auth || !auth.startsWith("AWS4-HMAC-SHA256 ")) return true;
  const m = /Credential=([^/]+)\\/(\\d{8})\\/([^/]+)\\/([^/]+)\\/aws4_request,\\s*SignedHeaders=([^,]+),\\s*Signature=([0-9a-f]+)/.exec(auth);
  if (!m) return false;
  const [, keyId, day, region, service, signedHeaders, signature] = m;
  if (keyId !== accessKeyId) return true; // s3rver answers InvalidAccessKeyId itself
  const [path, rawQuery = ""] = req.url.split("?", 2);
  const query = rawQuery
    .split("&")
    .filter(Boolean)
    .map((pair) => {
      const i = pair.indexOf("=");
      const name = decodeURIComponent(i < 0 ? pair : pair.slice(0, i));
      const value = i < 0 ? "" : decodeURIComponent(pair.slice(i + 1));
      return [encode(name), encode(value)];
    })
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([n, v]) => n + "=" + v)
    .join("&");
  const headers = signedHeaders
    .split(";")
    .map((name) => name + ":" + String(req.headers[name] ?? "").trim().replace(/\\s+/g, " ") + "\\n")
    .join("");
  const payload = req.headers["x-amz-content-sha256"] || sha256("");
  const canonical = [req.method, path, query, headers, signedHeaders, payload].join("\\n");
  const scope = [day, region, service, "aws4_request"].join("/");
  const toSign = ["AWS4-HMAC-SHA256", req.headers["x-amz-date"], scope, sha256(canonical)].join("\\n");
  const key = hmac(hmac(hmac(hmac("AWS4" + secret, day), region), service), "aws4_request");
  return crypto.createHmac("sha256", key).update(toSign).digest("hex") === signature;
}

const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory });
server.run().then(
  ({ port }) => {
    const [handler] = server.httpServer.listeners("request");
    server.httpServer.removeAllListeners("request");
    // Objects the test denied: S3's error body for 403 AccessDenied
    // (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html#RESTErrorResponses).
    const denied = new Set();
    server.httpServer.on("request", (req, res) => {
      if (req.url === "/__test/deny" && req.method === "POST") {
        let body = "";
        req.on("data", (c) => (body += c));
        req.on("end", () => { denied.add(body); res.writeHead(204); res.end(); });
        return;
      }
      const objectPath = decodeURIComponent(req.url.split("?", 1)[0]);
      if ((req.method === "GET" || req.method === "HEAD") && denied.has(objectPath)) {
        req.resume();
        res.writeHead(403, { "content-type": "application/xml" });
        res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>' +
          "<Message>Access Denied</Message><RequestId>4442587FB7D0A2F9</RequestId><HostId>denied-by-test</HostId></Error>");
        return;
      }
      if (signatureMatches(req)) return handler(req, res);
      req.resume();
      res.writeHead(403, { "content-type": "application/xml" });
      res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code>' +
        "<Message>The request signature we calculated does not match the signature you provided.</Message></Error>");
    });
    process.stdout.write(JSON.stringify({ port }) + "\\n");
  },
  (error) => { console.error(error); process.exit(1); },
);
const stop = () => server.close().finally(() => process.exit(0));
process.stdin.on("end", stop);
process.stdin.resume();
process.on("SIGTERM", stop);
`;

/**
 * A real S3-compatible server (s3rver) on loopback at a free port, storing into a temp directory that
 * `stop()` removes. Bucket names need at least 3 characters.
 */
export async function startS3Server(opts: { buckets?: string[] } = {}): Promise<S3TestServer> {
  const directory = mkdtempSync(path.join(tmpdir(), "memory-s3rver-"));
  const accessKeyId = "S3RVER";
  const secretAccessKey = "S3RVER";
  const args = ["--openssl-legacy-provider", "-e", SERVER_SCRIPT, directory, accessKeyId, secretAccessKey];
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let port: number;
  try {
    port = await waitForPort(child);
  } catch (error) {
    child.kill("SIGKILL");
    await exited;
    rmSync(directory, { recursive: true, force: true });
    throw error;
  }
  const endpoint = `http://127.0.0.1:${port}`;
  const region = "us-east-1";
  const client = new S3Client({
    region,
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
    // Without these the SDK streams uploads with aws-chunked framing, which s3rver stores verbatim.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });

  const s3: S3TestServer = {
    endpoint,
    region,
    accessKeyId,
    secretAccessKey,
    client,
    async createBucket(bucket) {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
    },
    putObject(bucket, key, body, contentType) {
      return client.send(
        new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: contentType }),
      );
    },
    async deleteObject(bucket, key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    async denyObject(bucket, key) {
      const response = await fetch(`${endpoint}/__test/deny`, { method: "POST", body: `/${bucket}/${key}` });
      if (response.status !== 204) throw new Error(`s3 test server: deny answered ${response.status}`);
    },
    async stop() {
      client.destroy();
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin?.end();
        const killer = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(killer);
      }
      rmSync(directory, { recursive: true, force: true });
    },
  };
  try {
    for (const bucket of opts.buckets ?? []) await s3.createBucket(bucket);
  } catch (error) {
    await s3.stop();
    throw error;
  }
  return s3;
}

function waitForPort(child: ChildProcess, timeoutMs = 20_000): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    const timer = setTimeout(
      () => finish(new Error(`s3rver did not start in ${timeoutMs} ms: ${err}`)),
      timeoutMs,
    );
    const onData = (d: Buffer) => {
      out += d.toString();
      const complete = out.split("\n").slice(0, -1);
      const line = complete.find((l) => l.startsWith("{"));
      if (line) finish(null, (JSON.parse(line) as { port: number }).port);
    };
    const onErr = (d: Buffer) => {
      err += d.toString();
    };
    const onExit = (code: number | null) =>
      finish(new Error(`s3rver exited with ${code} before listening: ${err}`));
    const finish = (error: Error | null, port?: number) => {
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      child.off("exit", onExit);
      // Keep draining so a chatty server never blocks on a full pipe.
      child.stdout?.resume();
      if (error) reject(error);
      else resolve(port as number);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onErr);
    child.once("exit", onExit);
  });
}
