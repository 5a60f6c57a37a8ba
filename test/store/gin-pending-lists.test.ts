// Migration 0018: every GIN index a search reads keeps its pending list at most 256 kB, so a store that only grows
// (PGlite runs no autovacuum, and the maintenance pass vacuums only tables with dead rows) never makes every
// search read megabytes of unmerged entries. On both drivers; nothing here is timed.

import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryRows, type Store } from "../../store/db.ts";
import { storeDrivers } from "../support/store-drivers.ts";

const SEARCHED_GIN_INDEXES = [
  "chunks_tsv_gin",
  "chunks_search_tags_gin",
  "documents_container_tags_gin",
  "documents_metadata_gin",
  "memories_tsv_gin",
  "memories_metadata_gin",
  "documents_metadata_folded_gin",
  "memories_metadata_folded_gin",
];
/** 256 kB in 8 kB pages, and the page a list may pass the limit by before the insert that passed it merges it. */
const MOST_PENDING_PAGES = 256 / 8 + 1;

describe.each(storeDrivers)("GIN pending lists on %s", (_driver, open) => {
  let store: Store;
  beforeAll(async () => {
    store = await open();
  });
  afterAll(async () => {
    await store?.close();
  });

  it("sets the 256 kB limit on every GIN index a search reads", async () => {
    const rows = await queryRows<{ name: string; options: string[] | null; method: string }>(
      store.db,
      sql`SELECT c.relname AS name, c.reloptions AS options, a.amname AS method
          FROM pg_class c JOIN pg_am a ON a.oid = c.relam
          WHERE c.relkind = 'i' AND c.relnamespace = to_regnamespace(current_schema())
            AND c.relname = ANY(${`{${SEARCHED_GIN_INDEXES.join(",")}}`}::text[])`,
    );
    expect(rows.map((r) => r.name).sort()).toEqual([...SEARCHED_GIN_INDEXES].sort());
    for (const r of rows) {
      expect(r.method).toBe("gin");
      expect(r.options).toContain("gin_pending_list_limit=256");
    }
  });

  it("merges a growing list before it passes the limit", async () => {
    // 4,000 memories of 40 distinct words each: about 2 MB of pending tsv entries without the limit.
    await store.db.execute(sql`
      INSERT INTO memories (id, container_tag, content, metadata, root_id)
      SELECT 'gin-' || i, 'gin-test',
             (SELECT string_agg('w' || md5(i::text || '-' || g), ' ') FROM generate_series(1, 40) g),
             jsonb_build_object('n', i), 'gin-' || i
      FROM generate_series(1, 4000) i`);
    for (const index of ["memories_tsv_gin", "memories_metadata_gin"]) {
      const [row] = await queryRows<{ pages: number }>(
        store.db,
        sql`SELECT gin_clean_pending_list(${index}::regclass)::int AS pages`,
      );
      expect(row?.pages).toBeLessThanOrEqual(MOST_PENDING_PAGES);
    }
    // A word of one row finds that row through the merged index.
    const [found] = await queryRows<{ ids: string[] }>(
      store.db,
      sql`SELECT array_agg(id) AS ids FROM memories WHERE tsv @@ to_tsquery('english', 'w' || md5('1234-7'))`,
    );
    expect(found?.ids).toEqual(["gin-1234"]);
  });
});
