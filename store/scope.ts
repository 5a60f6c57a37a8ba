import { arrayOverlaps, type SQL } from "drizzle-orm";
import { documents } from "./schema/index.ts";

/**
 * What a key may see: `null` for an admin key (everything), otherwise its container tags. A
 * document is inside a scope when it carries at least one of the scope's tags. Every store query
 * over documents takes one, so scoping is applied in one place: the SQL.
 */
export type TagScope = readonly string[] | null;

export function inScope(scope: TagScope | undefined): SQL | undefined {
  if (!scope) return undefined;
  return arrayOverlaps(documents.containerTags, [...scope]);
}
