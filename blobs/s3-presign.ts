// A presigned S3 GET: Signature Version 4 carried in the query string, as AWS specifies it in "Authenticating
// Requests: Using Query Parameters (AWS Signature Version 4)"
// (https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html) and "Create a signed AWS API
// request" (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html).
// Signed here with node:crypto rather than through @aws-sdk/s3-request-presigner, which the project does not
// ship: the algorithm is a few HMACs, and the S3 test server checks the signatures it makes.

import { createHash, createHmac } from "node:crypto";

export interface PresignRequest {
  bucket: string;
  /** The object's full key (the store's prefix included). */
  key: string;
  region: string;
  /** An S3-compatible endpoint (MinIO, R2, ...); AWS's regional endpoint when absent. */
  endpoint?: string;
  forcePathStyle: boolean;
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  expiresInSeconds: number;
  /** `response-*` overrides S3 applies to the answer (e.g. `response-content-disposition`). */
  responseHeaders?: Record<string, string>;
  now?: Date;
}

/** RFC 3986 encoding as SigV4 wants it: everything but A-Z a-z 0-9 - _ . ~ is %XX (upper case). */
export function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

const sha256Hex = (data: string) => createHash("sha256").update(data).digest("hex");
const hmac = (key: Buffer | string, data: string) => createHmac("sha256", key).update(data).digest();

/** Where the object is reached: virtual-hosted style unless path style is asked for (or the bucket has dots). */
function objectLocation(req: PresignRequest): { origin: string; host: string; path: string } {
  // S3 keys are encoded segment by segment: "/" separates them and stays as it is.
  const keyPath = req.key.split("/").map(uriEncode).join("/");
  const base = new URL(req.endpoint ?? `https://s3.${req.region}.amazonaws.com`);
  const prefix = base.pathname.replace(/\/+$/, "");
  // A dotted bucket name does not match the wildcard certificate of a virtual host, so it goes in the path.
  if (req.forcePathStyle || req.bucket.includes(".")) {
    return { origin: base.origin, host: base.host, path: `${prefix}/${uriEncode(req.bucket)}/${keyPath}` };
  }
  const host = `${req.bucket}.${base.host}`;
  return { origin: `${base.protocol}//${host}`, host, path: `${prefix}/${keyPath}` };
}

/** The URL that GETs `key` without credentials until `expiresInSeconds` have passed. */
export function presignS3Get(req: PresignRequest): string {
  const now = req.now ?? new Date();
  const amzDate = now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
  const day = amzDate.slice(0, 8);
  const scope = `${day}/${req.region}/s3/aws4_request`;
  const { origin, host, path } = objectLocation(req);
  const params: Record<string, string> = {
    ...req.responseHeaders,
    "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
    "X-Amz-Credential": `${req.credentials.accessKeyId}/${scope}`,
    "X-Amz-Date": amzDate,
    "X-Amz-Expires": String(req.expiresInSeconds),
    "X-Amz-SignedHeaders": "host",
  };
  if (req.credentials.sessionToken) params["X-Amz-Security-Token"] = req.credentials.sessionToken;
  const query = Object.entries(params)
    .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join("&");
  // The payload of a presigned GET is not known when signing: S3 takes UNSIGNED-PAYLOAD.
  const canonical = ["GET", path, query, `host:${host}\n`, "host", "UNSIGNED-PAYLOAD"].join("\n");
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256Hex(canonical)].join("\n");
  const signingKey = hmac(
    hmac(hmac(hmac(`AWS4${req.credentials.secretAccessKey}`, day), req.region), "s3"),
    "aws4_request",
  );
  const signature = createHmac("sha256", signingKey).update(toSign).digest("hex");
  return `${origin}${path}?${query}&X-Amz-Signature=${signature}`;
}
