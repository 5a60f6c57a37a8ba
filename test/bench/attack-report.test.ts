import { describe, expect, it } from "vitest";
import type { AttackPhase, AttackResult } from "../../bench/attack.ts";
import { ATTACK_HEADING, attackChecks, renderAttackSection } from "../../bench/lib/attack-report.ts";
import { ATTACK_KINDS, type KindStats } from "../../bench/lib/attacker.ts";

// The attack scenario's section from made-up figures: its verdicts follow the figures against the bounds.

const MiB = 2 ** 20;
const summary = (p50: number, p95: number) => ({ n: 100, p50, p95, mean: p50, max: p95 * 2 });

function phase(name: AttackPhase["name"], p95: number, rssPeakMiB: number, errors = 0): AttackPhase {
  return {
    name,
    wallMs: 120_000,
    requests: 1000,
    errors,
    errorsBy: errors ? { "429": errors } : {},
    errorSamples: errors ? ['POST /v3/search: 429 {"error":{"code":"rate_limited"}}'] : [],
    latency: summary(p95 / 3, p95),
    byRoute: { "POST /v3/search": summary(p95 / 3, p95) },
    adds: 200,
    rssPeakBytes: rssPeakMiB * MiB,
  };
}

function result(attacked: AttackPhase, missing = 0, afterStatus = 200): AttackResult {
  const kinds = Object.fromEntries(
    ATTACK_KINDS.map((k): [string, KindStats] => [
      k,
      { sent: 10, statuses: { "401": 10 }, noAnswer: {}, unfinished: 0, mibBeforeAnswer: [0.1, 0.2] },
    ]),
  ) as AttackResult["attacker"]["kinds"];
  return {
    options: {
      phaseS: 120,
      clients: 8,
      tenants: 2,
      addShare: 0.2,
      thinkMs: 100,
      seedDocs: 20,
      bodyMiB: 300,
      bodyRate: 5,
      bodiesInFlight: 2,
      keyRate: 50,
      signInRate: 10,
      guardMiB: 2048,
      threads: 2,
      env: {},
    },
    settings: {},
    rssIdleBytes: 1000 * MiB,
    rssAfterBytes: 1100 * MiB,
    baseline: phase("baseline", 100, 1050),
    attack: attacked,
    attacker: { kinds, wallMs: 120_000, stoppedEarly: false, peakRssBytes: 80 * MiB },
    guardTripped: false,
    afterFlood: [{ who: "admin key", route: "POST /v3/documents/list", status: afterStatus }],
    lockoutMs: afterStatus === 200 ? 0 : 240_000,
    documents: [
      {
        tag: "attack-tenant-1",
        added: 100,
        present: 100 - missing,
        missing,
        done: 100,
        failed: 0,
        pending: 0,
      },
    ],
    drainMs: { between: 100, end: 100 },
  };
}

describe("the attack section", () => {
  it("says each bound holds when the figures are within it", () => {
    const r = result(phase("attack", 150, 1400));
    expect(attackChecks(r)).toMatchObject({
      p95Holds: true,
      rssHolds: true,
      nothingLost: true,
      keysAnswer: true,
    });
    const text = renderAttackSection(r).join("\n");
    expect(text.startsWith(ATTACK_HEADING)).toBe(true);
    expect(text).toContain("1.50× (bound: 2×): holds");
    expect(text).not.toContain("does not hold");
    expect(text).not.toContain("was refused");
  });

  it("says which bounds fail, from the figures", () => {
    const r = result(phase("attack", 900, 3000, 12), 3, 429);
    const text = renderAttackSection(r).join("\n");
    expect(text).toContain("Client errors: 12 (bound: 0): **does not hold**");
    expect(text).toContain("9.00× (bound: 2×): **does not hold**");
    expect(text).toContain("the rise, 2,000 MiB (bound: 512 MiB): **does not hold**");
    expect(text).toContain("**a valid key was refused**; the admin key answered again after 240.0 s");
    expect(text).toContain("missing: 3: **does not hold**");
    // The phase row names the errors by status.
    expect(text).toContain("| clients + attacker | 1,000 | 12 (429: 12) |");
  });
});
