import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { openStore, queryRows } from "../../store/db.ts";

// PGLITE_SHARED_BUFFERS reaches the embedded PostgreSQL: the buffer pool is what PGlite's memory grows to hold.
describe("the embedded store's buffer pool", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  const shown = async (pgliteSharedBuffers?: string) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "pglite-options-"));
    dirs.push(dataDir);
    const store = await openStore({ dataDir, pgliteSharedBuffers });
    try {
      const rows = await queryRows<{ shared_buffers: string }>(store.db, sql`SHOW shared_buffers`);
      return rows[0]?.shared_buffers;
    } finally {
      await store.close();
    }
  };

  it("is PGlite's own default unless set, and the size given when set", async () => {
    expect(await shown()).toBe("128MB");
    expect(await shown("32MB")).toBe("32MB");
  });
});
