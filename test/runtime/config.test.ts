import { describe, expect, it } from "vitest";
import { loadConfig } from "../../config/env.ts";

describe("configuration durations", () => {
  it("reads durations as milliseconds, off where a schedule can be switched off, and refuses the rest", () => {
    const defaults = loadConfig({});
    expect(defaults.FILE_SWEEP_INTERVAL).toBe(24 * 3600_000);
    expect(defaults.FILE_SWEEP_GRACE).toBe(3600_000);
    expect(defaults.KEY_EXPIRY_NOTICE_INTERVAL).toBe(3600_000);
    expect(defaults.METRICS_PUBLIC).toBe(false);
    const set = loadConfig({ FILE_SWEEP_INTERVAL: "off", FILE_SWEEP_GRACE: "10m", METRICS_PUBLIC: "true" });
    expect(set.FILE_SWEEP_INTERVAL).toBe(0);
    expect(set.FILE_SWEEP_GRACE).toBe(600_000);
    expect(set.METRICS_PUBLIC).toBe(true);
    expect(() => loadConfig({ FILE_SWEEP_GRACE: "off" })).toThrow(/FILE_SWEEP_GRACE/);
    expect(() => loadConfig({ KEY_EXPIRY_NOTICE_INTERVAL: "soon" })).toThrow(/KEY_EXPIRY_NOTICE_INTERVAL/);
  });
});
