// Ids go into URLs, workflow ids and command lines: URL-safe, distinct, and never read as a command-line option.

import { describe, expect, it } from "vitest";
import { newId } from "../../store/ids.ts";

describe("newId", () => {
  it("never starts with '-', stays URL-safe and distinct", () => {
    // With a plain base64url id about 1 in 64 starts with "-": some 300 of these would.
    const ids = Array.from({ length: 20_000 }, () => newId());
    expect(ids.filter((id) => id.startsWith("-"))).toEqual([]);
    expect(ids.every((id) => /^[A-Za-z0-9_-]{22}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    // Every other character still occurs first.
    expect(new Set(ids.map((id) => id[0])).size).toBe(63);
  });
});
