import { describe, expect, it } from "vitest";
import { ConnectorRateLimitError, retryAfterHeaderMs, syncWaitReason } from "../../connectors/errors.ts";

// How a failed attempt at a sync is named on the run (Supermemory's lastSyncRun.errorCode), from the errors the
// providers' SDKs throw: each SDK keeps the HTTP status in its own place.
describe("syncWaitReason", () => {
  it("names rate limits, from our own error or a 429 in any SDK's shape", () => {
    expect(syncWaitReason(new ConnectorRateLimitError("slow down", 5000))).toBe("rate_limited");
    expect(syncWaitReason(Object.assign(new Error("octokit"), { status: 429 }))).toBe("rate_limited");
    expect(syncWaitReason(Object.assign(new Error("aws"), { $metadata: { httpStatusCode: 429 } }))).toBe(
      "rate_limited",
    );
  });

  it("names an unreachable or failing provider: 5xx anywhere, network codes through fetch's cause", () => {
    expect(syncWaitReason(Object.assign(new Error("gaxios"), { response: { status: 503 } }))).toBe(
      "provider_unavailable",
    );
    expect(syncWaitReason(Object.assign(new Error("notion"), { status: 502 }))).toBe("provider_unavailable");
    const refused = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    expect(syncWaitReason(new TypeError("fetch failed", { cause: refused }))).toBe("provider_unavailable");
    expect(syncWaitReason(Object.assign(new Error("timed out"), { name: "TimeoutError" }))).toBe(
      "provider_unavailable",
    );
  });

  it("names nothing else: client errors, our own bugs, non-errors", () => {
    expect(syncWaitReason(Object.assign(new Error("bad request"), { status: 400 }))).toBeNull();
    expect(syncWaitReason(new TypeError("undefined is not a function"))).toBeNull();
    expect(syncWaitReason("a string")).toBeNull();
    expect(syncWaitReason(undefined)).toBeNull();
  });
});

describe("retryAfterHeaderMs", () => {
  it("reads seconds and HTTP dates, at least a second, and nothing from an empty header", () => {
    const now = Date.parse("2026-12-07T10:00:00Z");
    expect(retryAfterHeaderMs("30", now)).toBe(30_000);
    expect(retryAfterHeaderMs("0", now)).toBe(1000);
    expect(retryAfterHeaderMs("Mon, 07 Dec 2026 10:02:00 GMT", now)).toBe(120_000);
    expect(retryAfterHeaderMs("", now)).toBeUndefined();
    expect(retryAfterHeaderMs("soon", now)).toBeUndefined();
  });
});
