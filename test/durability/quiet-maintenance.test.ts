// On PGlite a long maintenance step (here compacting a heap that shrank for good) stops the whole embedded
// service while it runs, so the maintainTables activity defers it past MAINTENANCE_MAX_HOLD while the API is in
// use, and runs it in the first pass after the API has served no request for MAINTENANCE_QUIET_AFTER. The
// activity runs as Temporal runs it (MockActivityEnvironment gives it its context) on a real PGlite store.

import { MockActivityEnvironment } from "@temporalio/testing";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMaintenanceActivities } from "../../activities/maintenance.ts";
import { createLogger } from "../../config/logger.ts";
import { openMemoryPglite, type Store } from "../../store/db.ts";
import { heapBloat, type MaintenanceResult, MIN_COMPACT_BYTES, tableChurn } from "../../store/maintenance.ts";
import { publishTableCounters } from "../support/statistics.ts";

const ROWS = 7_500;

describe("maintenance steps over the hold bound wait for a quiet service", () => {
  let store: Store;
  let quietForMs = 0;

  beforeAll(async () => {
    store = await openMemoryPglite();
    // ~1.5 KB of incompressible text per row, inline in the heap (below the TOAST threshold): ~11 MB, of which
    // two rows in three are then deleted all over the table.
    await store.background.execute(
      sql`INSERT INTO documents (id, source)
          SELECT 'quiet-' || g, (SELECT string_agg(md5(g::text || '-' || i::text), '') FROM generate_series(1, 45) i)
            FROM generate_series(1, ${ROWS}) g`,
    );
    await store.background.execute(
      sql`DELETE FROM documents WHERE id LIKE 'quiet-%' AND right(id, 1) !~ '[036]'`,
    );
    await publishTableCounters(store.background);
  });
  afterAll(async () => {
    await store?.close();
  });

  const activities = (quietAfter: boolean) =>
    createMaintenanceActivities({
      db: store.background,
      log: createLogger("silent"),
      maintenanceMaxHoldMs: 1,
      maintenanceQuietAfterMs: 10 * 60_000,
      ...(quietAfter ? { quietForMs: () => quietForMs } : {}),
    });
  const pass = async (quietAfter: boolean) =>
    (await new MockActivityEnvironment().run(activities(quietAfter).maintainTables)) as MaintenanceResult;
  const heapBytes = async () => (await heapBloat(store.background, "documents", 0)).heapBytes;

  it("starts from a bloated heap", async () => {
    const { live } = await tableChurn(store.background, "documents");
    const bloat = await heapBloat(store.background, "documents", live);
    expect(bloat.heapBytes).toBeGreaterThan(MIN_COMPACT_BYTES);
    expect(bloat.heapBytes).toBeGreaterThan(2 * bloat.packedBytes);
  });

  it("defers the compaction while the API served a request a moment ago, and where no API shares the store", async () => {
    const before = await heapBytes();
    quietForMs = 2_000;
    const busy = await pass(true);
    expect(busy.compacted).toEqual([]);
    expect(busy.deferred).toContainEqual(expect.objectContaining({ table: "documents", step: "compact" }));
    const apart = await pass(false);
    expect(apart.compacted).toEqual([]);
    expect(apart.deferred).toContainEqual(expect.objectContaining({ table: "documents", step: "compact" }));
    expect(await heapBytes()).toBe(before);
  });

  it("runs it once the API has been quiet for MAINTENANCE_QUIET_AFTER", async () => {
    const before = await heapBytes();
    quietForMs = 10 * 60_000 + 1;
    const quiet = await pass(true);
    expect(quiet.compacted).toContain("documents");
    expect(quiet.deferred.filter((d) => d.table === "documents")).toEqual([]);
    expect(await heapBytes()).toBeLessThan(before / 2);
  });
});
