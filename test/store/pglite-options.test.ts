import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir, totalmem } from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { openStore, queryRows } from "../../store/db.ts";
import {
  AUTO_POOL,
  autoSharedBuffers,
  availableMemory,
  resolveSharedBuffers,
  storeBytes,
} from "../../store/pglite-pool.ts";

const MB = 1024 * 1024;
const GB = 1024 * MB;

// PGLITE_SHARED_BUFFERS reaches the embedded PostgreSQL: the buffer pool is what PGlite's memory grows to hold.
describe("the embedded store's buffer pool", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const tempDir = () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pglite-options-"));
    dirs.push(dir);
    return dir;
  };

  const opened = async (pgliteSharedBuffers?: string, dataDir = tempDir()) => {
    const store = await openStore({ dataDir, pgliteSharedBuffers });
    try {
      const rows = await queryRows<{ shared_buffers: string }>(store.db, sql`SHOW shared_buffers`);
      return { shown: rows[0]?.shared_buffers, reported: store.sharedBuffers };
    } finally {
      await store.close();
    }
  };

  it("is PGlite's own default unless set, and the size given when set", async () => {
    expect(await opened()).toEqual({ shown: "128MB", reported: undefined });
    expect(await opened("32MB")).toEqual({ shown: "32MB", reported: "32MB" });
  });

  it("auto gives a new store the floor, and the store it opens is what it measures", async () => {
    const dataDir = tempDir();
    expect(await opened("auto", dataDir)).toEqual({ shown: "32MB", reported: "32MB" });
    // The first start wrote the catalog's relation files: measured, they are a few MB, far under the floor.
    const catalog = storeBytes(path.join(dataDir, "pglite"));
    expect(catalog).toBeGreaterThan(1 * MB);
    expect(autoSharedBuffers(catalog, 16 * GB)).toBe(`${AUTO_POOL.floorMb}MB`);
  });

  it("auto sizes the pool to half the store, between the floor and the ceiling, within the machine's share", () => {
    expect(autoSharedBuffers(0, 16 * GB)).toBe("32MB");
    expect(autoSharedBuffers(60 * MB, 16 * GB)).toBe("32MB");
    expect(autoSharedBuffers(200 * MB, 16 * GB)).toBe("100MB");
    expect(autoSharedBuffers(570 * MB, 16 * GB)).toBe("256MB");
    expect(autoSharedBuffers(20 * GB, 16 * GB)).toBe("256MB");
    // A 2 GB machine: at most 128MB, however big the store.
    expect(autoSharedBuffers(570 * MB, 2 * GB)).toBe("128MB");
    // A machine too small for even that share keeps the floor.
    expect(autoSharedBuffers(570 * MB, 256 * MB)).toBe("32MB");
    // The memory it weighs is the machine's, or a container's limit below it (none here: 2^64 means unlimited).
    expect(availableMemory()).toBeGreaterThan(0);
    expect(availableMemory()).toBeLessThanOrEqual(totalmem());
  });

  it("measures the relation files under base/, nested, and nothing for a directory never started", () => {
    const dir = tempDir();
    expect(storeBytes(dir)).toBe(0);
    mkdirSync(path.join(dir, "base", "5"), { recursive: true });
    writeFileSync(path.join(dir, "base", "5", "16384"), "");
    truncateSync(path.join(dir, "base", "5", "16384"), 300 * MB);
    writeFileSync(path.join(dir, "base", "5", "16384_fsm"), "x".repeat(8192));
    // Outside base/ (the WAL, the configuration) does not count.
    mkdirSync(path.join(dir, "pg_wal"));
    writeFileSync(path.join(dir, "pg_wal", "000000010000000000000002"), "x".repeat(4096));
    expect(storeBytes(dir)).toBe(300 * MB + 8192);
    expect(resolveSharedBuffers("auto", dir)).toBe(autoSharedBuffers(300 * MB + 8192));
    expect(resolveSharedBuffers("64MB", dir)).toBe("64MB");
    expect(resolveSharedBuffers(undefined, dir)).toBeUndefined();
  });
});
