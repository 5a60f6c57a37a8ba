import { TEST_ADMIN_KEY } from "./service.ts";

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are inspected loosely
  json: any;
}

/** fetch against a test service, JSON in and out, the admin key unless another is given. */
export function caller(baseUrl: () => string) {
  return async function call(
    method: string,
    path: string,
    body?: unknown,
    key: string | null = TEST_ADMIN_KEY,
  ): Promise<Reply> {
    const res = await fetch(`${baseUrl()}${path}`, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  };
}
