// A load test with an attacker beside it, shortened: the benchmark's `attack` scenario (bench/attack.ts)
// for 25 s per phase. Clients of two tenants search and add, alone and then beside a third party from the same
// address (127.0.0.1) that streams 300 MiB chunked bodies at routes without a key and at keyed routes without a
// valid one, floods made-up bearer keys and floods console sign-ins. The service is `main.ts` as a child process,
// so the memory measured is its own. Asserted are counts and memory, never times: every client request answered,
// every add present afterwards, the service's RSS within 512 MiB of idle, every chunked body refused with an
// answer, and valid keys from the attacker's address still answering right after the flood.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AttackResult } from "../../bench/attack.ts";
import { runAttack } from "../../bench/attack.ts";
import { ATTACK_BOUNDS } from "../../bench/lib/attack-report.ts";
import { CHUNKED_KINDS } from "../../bench/lib/attacker.ts";
import { Cleanup } from "../../bench/lib/service.ts";
import { loadConfig } from "../../config/env.ts";

const PHASE_S = 25;
/** Refusals an attacker may get for a body: unreadable (400), no valid key (401), too large (413), throttled (429). */
const REFUSALS = new Set(["400", "401", "413", "429"]);

describe("clients beside an attacker from their own address", () => {
  const cleanup = new Cleanup();
  let r: AttackResult;

  beforeAll(async () => {
    r = await runAttack(
      {
        phaseS: PHASE_S,
        clients: 8,
        tenants: 2,
        addShare: 0.2,
        thinkMs: 100,
        seedDocs: 10,
        bodyMiB: 300,
        bodyRate: 5,
        bodiesInFlight: 2,
        keyRate: 50,
        signInRate: 10,
        guardMiB: 2048,
        threads: loadConfig({}).EMBEDDING_THREADS,
        env: {},
      },
      cleanup,
    );
  }, 900_000);

  afterAll(async () => {
    await cleanup.runAll();
  });

  it("really attacked: more failures than the default failure limit (50), chunked bodies of every kind", () => {
    // Lower bounds only: how many the attacker gets out depends on how fast the service answers it (a service
    // that stalls on a body holds the floods back too); 50 a second for 25 s is 1,250 made-up keys when it does not.
    expect(r.attacker.kinds["made-up-key"].sent).toBeGreaterThan(100);
    expect(r.attacker.kinds["sign-in-password"].sent).toBeGreaterThan(10);
    expect(r.attacker.kinds["sign-in-key"].sent).toBeGreaterThan(10);
    for (const kind of CHUNKED_KINDS) expect(r.attacker.kinds[kind].sent, kind).toBeGreaterThan(0);
  });

  it("answers every client request, alone and beside the attacker", () => {
    expect(r.baseline.requests).toBeGreaterThan(0);
    expect(r.attack.requests).toBeGreaterThan(0);
    expect({
      alone: r.baseline.errorsBy,
      attacked: r.attack.errorsBy,
      samples: r.attack.errorSamples,
    }).toEqual({
      alone: {},
      attacked: {},
      samples: [],
    });
  });

  it("keeps the service's resident memory within 512 MiB of idle", () => {
    const riseMiB = (r.attack.rssPeakBytes - r.rssIdleBytes) / 2 ** 20;
    expect(riseMiB).toBeLessThanOrEqual(ATTACK_BOUNDS.rssRiseMiB);
    expect((r.baseline.rssPeakBytes - r.rssIdleBytes) / 2 ** 20).toBeLessThanOrEqual(
      ATTACK_BOUNDS.rssRiseMiB,
    );
  });

  it("refuses every chunked body with an answer: never 200, never a reset without one", () => {
    for (const kind of CHUNKED_KINDS) {
      const s = r.attacker.kinds[kind];
      const answered = Object.values(s.statuses).reduce((a, b) => a + b, 0);
      expect({ kind, noAnswer: s.noAnswer, unfinished: s.unfinished, answered }).toEqual({
        kind,
        noAnswer: {},
        unfinished: 0,
        answered: s.sent,
      });
      for (const status of Object.keys(s.statuses))
        expect(REFUSALS, `${kind} answered ${status}`).toContain(status);
    }
  });

  it("answers valid keys from the attacker's address right after the failure flood", () => {
    for (const a of r.afterFlood)
      expect({ who: a.who, status: a.status }).toEqual({ who: a.who, status: 200 });
    expect(r.lockoutMs).toBe(0);
  });

  it("loses no add: every add the clients were answered for is listed under its tenant", () => {
    expect(r.documents).toHaveLength(2);
    for (const d of r.documents) {
      expect(d.added).toBeGreaterThan(10);
      expect({ tag: d.tag, missing: d.missing }).toEqual({ tag: d.tag, missing: 0 });
      expect(d.present).toBeGreaterThanOrEqual(d.added);
    }
  });
});
