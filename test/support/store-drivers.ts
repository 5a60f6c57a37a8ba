// The drivers every store suite runs on: the embedded default (PGlite) and the scale-out store (PostgreSQL).

import { openMemoryPglite, openPostgres, type Store } from "../../store/db.ts";
import { freshDatabase } from "./service.ts";

export const storeDrivers: [string, () => Promise<Store>][] = [
  ["pglite", openMemoryPglite],
  ["postgres", async () => openPostgres(await freshDatabase())],
];

/** Cosine similarity of two vectors, computed here to check what the store ranks. */
export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += (a[i] as number) * (b[i] as number);
    na += (a[i] as number) ** 2;
    nb += (b[i] as number) ** 2;
  }
  return dot / Math.sqrt(na * nb);
}
