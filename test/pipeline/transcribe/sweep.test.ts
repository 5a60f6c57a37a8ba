import { existsSync, mkdtempSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { sweepStaleTempDirs } from "../../../pipeline/transcribe/support.ts";

it("removes temp dirs left by a killed worker, and only old ones", async () => {
  const old = mkdtempSync(join(tmpdir(), "memory-media-"));
  const fresh = mkdtempSync(join(tmpdir(), "memory-media-"));
  const fiveHoursAgo = (Date.now() - 5 * 3600_000) / 1000;
  utimesSync(old, fiveHoursAgo, fiveHoursAgo);
  expect(await sweepStaleTempDirs(["memory-media-"])).toBeGreaterThanOrEqual(1);
  expect(existsSync(old)).toBe(false);
  expect(existsSync(fresh)).toBe(true);
  expect(await sweepStaleTempDirs(["memory-media-"], 0)).toBeGreaterThanOrEqual(1);
  expect(existsSync(fresh)).toBe(false);
});
