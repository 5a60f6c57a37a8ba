import { existsSync, readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import path from "node:path";
import { encodeMultipart } from "./multipart.ts";

export const DEFAULT_URL = "http://127.0.0.1:8787";
const MAX_RATE_LIMIT_RETRIES = 10;

/** Refusals that hold for every request of a run (bad key, wrong scope): no point going on item by item. */
export function refusesEverything(error: unknown): boolean {
  return !(error instanceof ApiRequestError) || error.status === 401 || error.status === 403;
}

/** A failure the CLI reports as one line and an exit code, without a stack trace. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** An answer of the service that is not 2xx, with the service's own error code and message. */
export class ApiRequestError extends CliError {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly field?: string,
  ) {
    super(`${status} ${code}: ${detail}${field ? ` (field: ${field})` : ""}`);
  }
}

export interface ConnectionOptions {
  url?: string;
  key?: string;
}

export interface ResolvedConnection {
  url: string;
  key: string;
  /** Where the key came from, for error messages. */
  keySource: string;
}

/**
 * The service's address and key: flags first, then the environment, then the admin key the service
 * wrote at its first start (DATA_DIR/admin-key), so an operator on the same machine needs no flags.
 */
export function resolveConnection(
  opts: ConnectionOptions,
  env: NodeJS.ProcessEnv = process.env,
): ResolvedConnection {
  const url = (opts.url || env.MEMORY_URL || DEFAULT_URL).replace(/\/+$/, "");
  try {
    new URL(url);
  } catch {
    throw new CliError(`--url is not a URL: ${url}`, 2);
  }
  if (opts.key) return { url, key: opts.key, keySource: "--key" };
  if (env.MEMORY_API_KEY) return { url, key: env.MEMORY_API_KEY, keySource: "MEMORY_API_KEY" };
  if (env.MEMORY_ADMIN_KEY) return { url, key: env.MEMORY_ADMIN_KEY, keySource: "MEMORY_ADMIN_KEY" };
  const file = path.resolve(env.DATA_DIR || "./data", "admin-key");
  if (existsSync(file)) {
    const key = readFileSync(file, "utf8").trim();
    if (key) return { url, key, keySource: file };
  }
  throw new CliError(
    `no API key: pass --key, set MEMORY_API_KEY, or run where ${file} exists (the admin key the service writes at first start)`,
    2,
  );
}

export interface RequestOptions {
  body?: unknown;
  form?: FormData;
  query?: Record<string, string>;
  timeoutMs?: number;
}

/** A thin fetch wrapper: the service's error body becomes an ApiRequestError, an unreachable service a CliError. */
export class ApiClient {
  constructor(readonly connection: ResolvedConnection) {}

  get url() {
    return this.connection.url;
  }

  async request<T>(method: string, route: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.send(method, route, opts);
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new CliError(`${method} ${route}: the service answered something that is not JSON`);
    }
  }

  /** The raw response of a 2xx answer, for streamed bodies. */
  async stream(method: string, route: string, opts: RequestOptions = {}): Promise<Response> {
    return this.send(method, route, opts);
  }

  private async send(method: string, route: string, opts: RequestOptions): Promise<Response> {
    const target = new URL(this.url + route);
    for (const [k, v] of Object.entries(opts.query ?? {})) target.searchParams.set(k, v);
    const headers: Record<string, string> = { authorization: `Bearer ${this.connection.key}` };
    let body: string | undefined;
    if (opts.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(opts.body);
    }
    const timeoutMs = opts.timeoutMs ?? 60_000;
    let res: Response;
    for (let attempt = 1; ; attempt++) {
      try {
        res = opts.form
          ? await sendForm(method, target, headers, opts.form, timeoutMs)
          : await fetch(target, { method, headers, body, signal: AbortSignal.timeout(timeoutMs) });
      } catch (error) {
        throw unreachable(this.url, error);
      }
      // A scoped key's rate limit is easily reached by a large folder: wait as told, then go on.
      if (res.status !== 429 || attempt > MAX_RATE_LIMIT_RETRIES) break;
      const waitSeconds = Math.min(Number(res.headers.get("retry-after")) || 1, 60);
      await res.body?.cancel();
      await new Promise((r) => setTimeout(r, waitSeconds * 1000));
    }
    if (res.ok) return res;
    const text = await res.text().catch(() => "");
    let parsed: { error?: unknown; code?: string; field?: string } | undefined;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const apiError = new ApiRequestError(
      res.status,
      parsed?.code ?? "http_error",
      typeof parsed?.error === "string" ? parsed.error : text.slice(0, 200) || res.statusText,
      parsed?.field,
    );
    if (res.status === 401) {
      apiError.message += ` — the key from ${this.connection.keySource} was refused`;
    }
    throw apiError;
  }
}

/**
 * A multipart request through node:http rather than fetch, with its length declared and
 * `Expect: 100-continue`: the service refuses a file over its MAX_FILE_BYTES before the body is sent,
 * instead of closing the connection under it (fetch then reports only the broken pipe). An answer that
 * comes while the body is still being sent is kept too.
 */
function sendForm(
  method: string,
  target: URL,
  headers: Record<string, string>,
  form: FormData,
  timeoutMs: number,
): Promise<Response> {
  const encoded = encodeMultipart(form);
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(target, {
      method,
      headers: {
        ...headers,
        "content-type": encoded.contentType,
        "content-length": String(encoded.length),
        expect: "100-continue",
      },
      agent: false,
    });
    let answered = false;
    let sending = false;
    const sendBody = () => {
      if (sending || answered) return;
      sending = true;
      encoded.body.on("error", (err) => req.destroy(err));
      encoded.body.pipe(req);
    };
    req.on("continue", sendBody);
    // A server or proxy that ignores Expect: the body goes after a while anyway (RFC 9110, 10.1.1).
    const noContinue = setTimeout(sendBody, 3000);
    req.setTimeout(timeoutMs, () =>
      req.destroy(Object.assign(new Error("timed out"), { name: "TimeoutError" })),
    );
    req.on("error", (err) => {
      clearTimeout(noContinue);
      if (!answered) reject(err);
    });
    req.on("response", (res) => {
      answered = true;
      clearTimeout(noContinue);
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () => {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (typeof value === "string") responseHeaders.set(name, value);
        }
        const status = res.statusCode ?? 502;
        const body = status === 204 ? null : new Uint8Array(Buffer.concat(chunks));
        // Refused before the body went: the request is over, with nothing more to send.
        if (!sending) req.destroy();
        resolve(new Response(body, { status, headers: responseHeaders }));
      });
    });
  });
}

function unreachable(url: string, error: unknown): CliError {
  const e = error as { name?: string; code?: string; cause?: { code?: string; message?: string } };
  if (e?.name === "TimeoutError") return new CliError(`the service at ${url} did not answer in time`);
  const why = e?.cause?.code ?? e?.cause?.message ?? e?.code ?? (error as Error)?.message;
  return new CliError(`cannot reach the service at ${url} (${why}): is it running? (npm start)`);
}

/** Runs `task` over `items` with at most `limit` at a time, in order of the items. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await task(items[i] as T, i);
    }
  });
  await Promise.all(workers);
  return results;
}
