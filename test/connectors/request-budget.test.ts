// The shared request budgets (connectors/request-budget.ts): one per provider and account in the worker
// process, used by the Notion, Google Drive, OneDrive and GitHub clients.

import { describe, expect, it } from "vitest";
import { ConnectorRateLimitError } from "../../connectors/errors.ts";
import {
  accountOf,
  budgetFor,
  MAX_INLINE_RETRIES,
  PROVIDER_RATES,
  RequestBudget,
  sendBudgeted,
} from "../../connectors/request-budget.ts";

const quiet = { info: () => {} };

function context() {
  let beats = 0;
  return {
    ctx: { signal: new AbortController().signal, heartbeat: () => void beats++, log: quiet },
    beats: () => beats,
  };
}

describe("request budget registry", () => {
  it("gives two connections of one account one budget, and other accounts or providers their own", async () => {
    // Two connections of one Drive user, each with the token of its own consent.
    const identify = async () => "permission-17";
    const first = await accountOf("google-drive", "ya29.token-of-connection-a", identify);
    const second = await accountOf("google-drive", "ya29.token-of-connection-b", identify);
    expect(first).toBe(second);
    expect(budgetFor("google-drive", first)).toBe(budgetFor("google-drive", second));
    // Another user of the same app, or the same id at another provider, is counted apart.
    const other = await accountOf("google-drive", "ya29.token-of-someone-else", async () => "permission-99");
    expect(budgetFor("google-drive", other)).not.toBe(budgetFor("google-drive", first));
    expect(budgetFor("microsoft-graph", first)).not.toBe(budgetFor("google-drive", first));
    // The rates are the provider's.
    expect(budgetFor("microsoft-graph", first).perSecond).toBe(PROVIDER_RATES["microsoft-graph"].perSecond);
    expect(budgetFor("github", first).concurrent).toBe(PROVIDER_RATES.github.concurrent);
  });

  it("asks for a token's account once, and falls back to the token when the provider will not say", async () => {
    let asked = 0;
    const identify = async () => {
      asked++;
      return "octocat-1";
    };
    const [a, b] = await Promise.all([
      accountOf("github", "ghu_refreshing", identify),
      accountOf("github", "ghu_refreshing", identify),
    ]);
    expect(a).toBe(b);
    expect(asked).toBe(1);
    const failed = await accountOf("github", "ghp_unknown", async () => {
      throw new Error("403");
    });
    expect(failed).toBe("token:ghp_unknown");
    expect(await accountOf("github", "ghp_other", async () => undefined)).not.toBe(failed);
  });

  it("pauses every connection of an account after one was throttled", () => {
    const shared = budgetFor("microsoft-graph", "account:shared-pause");
    shared.pauseUntil(Date.now() + 30_000);
    expect(budgetFor("microsoft-graph", "account:shared-pause").delay(Date.now())).toBeGreaterThan(29_000);
    expect(budgetFor("microsoft-graph", "account:not-paused").delay(Date.now())).toBe(0);
  });

  it("slows down after each throttled answer, down to a floor, and speeds up again slowly", () => {
    const budget = new RequestBudget(16, 1);
    budget.pauseUntil(0);
    expect(budget.pace).toBe(0.5);
    for (let i = 0; i < 10; i++) budget.pauseUntil(0);
    expect(budget.pace).toBe(1 / 16);
    // One request a second at the floor (16 × 1/16).
    const start = 1_000_000;
    expect([budget.reserve(start), budget.reserve(start)]).toEqual([0, 1000]);
    budget.answered();
    expect(budget.pace).toBeGreaterThan(1 / 16);
    expect(budget.pace).toBeLessThan(1 / 8);
  });

  it("keeps at most `concurrent` requests of an account in flight", async () => {
    const budget = new RequestBudget(1000, 1000, 2);
    const signal = new AbortController().signal;
    const first = await budget.enter(signal);
    const second = await budget.enter(signal);
    let thirdIn = false;
    const third = budget.enter(signal).then((leave) => {
      thirdIn = true;
      return leave;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(thirdIn).toBe(false);
    expect(budget.active).toBe(2);
    first();
    (await third)();
    expect(thirdIn).toBe(true);
    second();
    expect(budget.active).toBe(0);
  });
});

describe("sending under a budget", () => {
  it("retries a throttled request in place, pausing the account's budget, then returns the answer", async () => {
    const budget = new RequestBudget(100, 100);
    const { ctx, beats } = context();
    const answers = [429, 429, 200];
    let sent = 0;
    const status = await sendBudgeted({
      budget,
      ctx,
      provider: "test",
      send: async () => answers[sent++] as number,
      throttled: (outcome) => (outcome.ok && outcome.value === 429 ? 1000 : undefined),
    });
    expect(status).toBe(200);
    expect(sent).toBe(3);
    expect(beats()).toBeGreaterThanOrEqual(3);
  });

  it("hands the last answer back after MAX_INLINE_RETRIES, and a long wait at once", async () => {
    const { ctx } = context();
    let sent = 0;
    const persistent = await sendBudgeted({
      budget: new RequestBudget(100, 100),
      ctx,
      provider: "test",
      send: async () => {
        sent++;
        return 429;
      },
      throttled: () => 1000,
    });
    expect(persistent).toBe(429);
    expect(sent).toBe(MAX_INLINE_RETRIES + 1);

    sent = 0;
    const long = new RequestBudget(100, 100);
    const error = new Error("slow down");
    await expect(
      sendBudgeted({
        budget: long,
        ctx,
        provider: "test",
        send: async () => {
          sent++;
          throw error;
        },
        throttled: () => 120_000,
      }),
    ).rejects.toBe(error);
    expect(sent).toBe(1);
    // The next request of the account does not even go: the engine waits.
    const queued = await sendBudgeted({
      budget: long,
      ctx,
      provider: "test",
      send: async () => "sent",
      throttled: () => undefined,
    }).catch((e: unknown) => e);
    expect(queued).toBeInstanceOf(ConnectorRateLimitError);
    expect((queued as ConnectorRateLimitError).retryAfterMs).toBeGreaterThan(100_000);
  });
});
