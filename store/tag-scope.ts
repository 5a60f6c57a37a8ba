import { arrayOverlaps, type SQL } from "drizzle-orm";
import { documents } from "./schema/index.ts";

/**
 * What a key may see: `null` for an admin key (everything), otherwise its container tags. A
 * document is inside a scope when it carries at least one of the scope's tags. Every store query
 * over documents takes one, so scoping is applied in one place: the SQL.
 */
export type TagScope = readonly string[] | null;

/**
 * Where a key's customIds live: each scope has its own namespace (its tags, sorted), so one tenant's customIds
 * neither collide with nor reveal another's; an admin key writes into the shared namespace "". Container tags
 * cannot contain spaces (api/schemas.ts), so the joined form is unambiguous.
 */
export function customIdNamespace(scope: TagScope | undefined): string {
  return scope ? [...new Set(scope)].sort().join(" ") : "";
}

export function inScope(scope: TagScope | undefined): SQL | undefined {
  if (!scope) return undefined;
  return arrayOverlaps(documents.containerTags, [...scope]);
}

/**
 * The container tags of a document a caller may be shown: all of them for an admin, only those within its scope
 * for a scoped key. A document two tenants share carries both tenants' tags, and each tenant's tag names are its
 * own business (a customer's name, a project), not the other's.
 */
export function tagsWithin(tags: readonly string[], scope: TagScope | undefined): string[] {
  return scope ? tags.filter((t) => scope.includes(t)) : [...tags];
}
