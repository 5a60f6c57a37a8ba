import type { ApiClient } from "./client.ts";
import type { Output } from "./output.ts";

export interface ScopedKey {
  key: string;
  id: string;
  name: string;
  containerTag: string;
  containerTags: string[];
  expiresAt: string;
  allowedEndpoints: string[];
  rateLimitMax: number;
  rateLimitTimeWindow: number;
}

export async function createKeyCommand(
  client: ApiClient,
  out: Output,
  opts: { containerTag: string; name?: string; expiresInDays?: number },
) {
  const created = await client.request<ScopedKey>("POST", "/v3/auth/scoped-key", {
    body: {
      containerTag: opts.containerTag,
      ...(opts.name ? { name: opts.name } : {}),
      ...(opts.expiresInDays ? { expiresInDays: opts.expiresInDays } : {}),
    },
  });
  out.result(created, () =>
    [
      "Scoped key created. Its secret is shown only now (the service keeps a hash):",
      "",
      `    ${created.key}`,
      "",
      `id              ${created.id}`,
      `name            ${created.name}`,
      `container tags  ${created.containerTags.join(", ")}`,
      `expires         ${created.expiresAt}`,
      `rate limit      ${created.rateLimitMax} requests per ${created.rateLimitTimeWindow / 1000} s`,
      "",
      `Disable it with: npm run cli -- keys disable ${created.id}`,
    ].join("\n"),
  );
}

export async function disableKeyCommand(client: ApiClient, out: Output, id: string) {
  await client.request<{ success: true }>("DELETE", `/v3/auth/scoped-key/${encodeURIComponent(id)}`);
  out.result({ success: true, id }, () => `Key ${id} disabled: requests with it are refused from now on.`);
}
