import type { TagScope } from "../store/tag-scope.ts";
import { ApiError } from "./errors.ts";

/** Path prefixes a scoped key may call; everything else is 403 `forbidden`. */
export const SCOPED_KEY_ENDPOINTS = [
  "/v3/documents",
  "/v3/memories",
  "/v4/memories",
  "/v3/search",
  "/v4/search",
  "/v4/profile",
  "/mcp",
] as const;

/**
 * What the MCP tools reach (through the same services). A key allowed all of these may use /mcp
 * even when its stored list predates /mcp; a key with a narrower list may not.
 */
const MCP_REACHES = ["/v3/documents", "/v4/memories", "/v4/search", "/v4/profile"];

export function endpointAllowed(path: string, allowed: readonly string[]): boolean {
  const under = (prefix: string) => path === prefix || path.startsWith(`${prefix}/`);
  if (allowed.some(under)) return true;
  return under("/mcp") && MCP_REACHES.every((p) => allowed.includes(p));
}

const foreignTag = (tags: string[]) =>
  new ApiError(
    403,
    "forbidden",
    `this key may not use container tag${tags.length > 1 ? "s" : ""} ${tags.map((t) => `'${t}'`).join(", ")}`,
    "containerTags",
  );

/**
 * The caller's reach, set on the request by auth: an admin key sees everything (`tags: null`), a
 * scoped key only documents carrying one of its container tags. Handlers pass `tags` to every store
 * query (reads are filtered in SQL, other tenants' ids are simply not found), `check` the tags a
 * request names (403 for a foreign one) and ask `writeTags` which tags a new document gets.
 */
export class KeyScope {
  constructor(readonly tags: TagScope) {}

  static readonly all = new KeyScope(null);

  /** Tags a write stores: the requested ones if all are the key's (403 otherwise); none → the key's first tag. */
  writeTags(requested: string[]): string[] {
    if (!this.tags) return requested;
    this.check(requested);
    return requested.length ? requested : [this.tags[0] as string];
  }

  /** Refuses (403) any tag outside the scope. */
  check(requested: string[]): void {
    const scope = this.tags;
    if (!scope) return;
    const foreign = requested.filter((t) => !scope.includes(t));
    if (foreign.length) throw foreignTag(foreign);
  }
}
