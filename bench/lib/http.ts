// A minimal JSON client over node:http with an agent of its own, so each kind of request the bulk
// benchmark sends (batch adds, progress polls, searches, memory adds, a second tenant) has its own
// connections and never waits client-side behind another kind. Nothing is retried: every failure counts.

import http from "node:http";

export interface Outcome<T = unknown> {
  /** HTTP status, absent when no response came (connection error, timeout). */
  status?: number;
  ok: boolean;
  body?: T;
  /** Response text when it was not JSON (or a non-2xx answer). */
  text?: string;
  /** Connection error or timeout, when there was no response. */
  error?: string;
  /** The Retry-After header of a 429 or 503, in seconds. */
  retryAfter?: number;
  /** From sending the request to the end of the response (or the failure). */
  ms: number;
}

export interface JsonClient {
  request<T = unknown>(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<Outcome<T>>;
  /** As request, but throws unless the answer is 2xx. */
  must<T = unknown>(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<T>;
  close(): void;
}

export function jsonClient(opts: {
  baseUrl: string;
  apiKey: string;
  /** Sockets this client may open at once (requests beyond wait in the agent). */
  connections: number;
  timeoutMs: number;
}): JsonClient {
  const base = new URL(opts.baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  const request = <T>(method: string, path: string, body?: unknown, timeoutMs = opts.timeoutMs) =>
    new Promise<Outcome<T>>((resolve) => {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const started = performance.now();
      let settled = false;
      const finish = (o: Omit<Outcome<T>, "ms">) => {
        if (settled) return;
        settled = true;
        resolve({ ...o, ms: performance.now() - started });
      };
      const req = http.request(
        {
          agent,
          host: base.hostname,
          port: base.port,
          method,
          path,
          headers: {
            authorization: `Bearer ${opts.apiKey}`,
            accept: "application/json",
            ...(payload ? { "content-type": "application/json", "content-length": payload.length } : {}),
          },
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on("data", (d: Buffer) => parts.push(d));
          res.on("error", (e) => finish({ ok: false, status: res.statusCode, error: e.message }));
          res.on("end", () => {
            const text = Buffer.concat(parts).toString("utf8");
            const status = res.statusCode ?? 0;
            const ok = status >= 200 && status < 300;
            const retryAfter = Number(res.headers["retry-after"]);
            let parsed: T | undefined;
            try {
              parsed = text ? (JSON.parse(text) as T) : undefined;
            } catch {}
            finish({
              ok,
              status,
              body: parsed,
              text: ok && parsed !== undefined ? undefined : text.slice(0, 500),
              ...(Number.isFinite(retryAfter) && res.headers["retry-after"] ? { retryAfter } : {}),
            });
          });
        },
      );
      req.setTimeout(timeoutMs, () => {
        req.destroy(new Error(`no answer within ${timeoutMs} ms`));
      });
      req.on("error", (e) =>
        finish({ ok: false, error: `${(e as NodeJS.ErrnoException).code ?? ""} ${e.message}`.trim() }),
      );
      req.end(payload);
    });
  return {
    request,
    async must<T>(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<T> {
      const o = await request<T>(method, path, body, timeoutMs);
      if (!o.ok) throw new Error(`${method} ${path}: ${o.status ?? o.error} ${o.text ?? ""}`.trim());
      return o.body as T;
    },
    close: () => agent.destroy(),
  };
}
