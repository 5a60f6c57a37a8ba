// How fast this worker process sends requests to Notion with one integration token. Notion allows "an
// average of three requests per second" per integration, "some bursts beyond the average" included, and
// asks to back off for Retry-After after a 429 (https://developers.notion.com/reference/request-limits).
// Every connection of a tenant that uses the same token shares one budget here, so two syncs running side
// by side do not each spend the whole allowance. The budget is a GCRA (a token bucket kept as one
// timestamp): each request reserves its slot at once, so concurrent callers queue in call order.

import { createHash } from "node:crypto";

/** Notion's documented average per integration. */
export const NOTION_REQUESTS_PER_SECOND = 3;
/** Requests that may go at once after a quiet spell (Notion allows short bursts above the average). */
export const NOTION_BURST = 10;
/** Budgets of tokens not used for this long are forgotten (refreshed tokens leave old ones behind). */
const IDLE_MS = 10 * 60_000;

export class RequestBudget {
  /** When the next request would go if no burst were allowed (GCRA's theoretical arrival time). */
  private tat = Number.NEGATIVE_INFINITY;
  lastUsed = 0;

  constructor(
    readonly perSecond = NOTION_REQUESTS_PER_SECOND,
    readonly burst = NOTION_BURST,
  ) {}

  private get interval(): number {
    return 1000 / this.perSecond;
  }

  /** How many ms from `now` the next request would have to wait (whole ms; nothing is reserved). */
  delay(now: number): number {
    const tolerance = (this.burst - 1) * this.interval;
    return Math.max(0, Math.round(Math.max(this.tat, now) - tolerance - now));
  }

  /** Reserves the next request's slot: how many ms from `now` it may be sent. */
  reserve(now: number): number {
    const wait = this.delay(now);
    this.lastUsed = now;
    this.tat = Math.max(this.tat, now) + this.interval;
    return wait;
  }

  /** Notion said to wait until `until`: no request with this token goes before then. */
  pauseUntil(until: number): void {
    const tolerance = (this.burst - 1) * this.interval;
    // The first slot after the pause is `until`; a burst is not allowed again right after a 429.
    this.tat = Math.max(this.tat, until + tolerance);
  }
}

const budgets = new Map<string, RequestBudget>();

/** The process-wide budget of one token (kept by its hash, not the token itself). */
export function budgetFor(token: string, now = Date.now()): RequestBudget {
  const key = createHash("sha256").update(token).digest("hex");
  let budget = budgets.get(key);
  if (!budget) {
    for (const [k, b] of budgets) if (now - b.lastUsed > IDLE_MS) budgets.delete(k);
    budget = new RequestBudget();
    budgets.set(key, budget);
  }
  return budget;
}

/** Waits `ms`, heartbeating meanwhile so Temporal sees the activity alive; rejects when `signal` aborts. */
export async function pause(ms: number, signal: AbortSignal, heartbeat: () => void): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    signal.throwIfAborted();
    const left = end - Date.now();
    if (left <= 0) return;
    heartbeat();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(done, Math.min(left, 10_000));
      function done() {
        signal.removeEventListener("abort", aborted);
        resolve();
      }
      function aborted() {
        clearTimeout(timer);
        reject(signal.reason);
      }
      signal.addEventListener("abort", aborted, { once: true });
    });
  }
}
