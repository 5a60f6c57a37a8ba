// How fast this worker process sends requests to one provider for one account. Providers limit each user
// (or integration token) as a whole, not each of our connections: two syncs of one tenant's connections to
// the same account, running side by side, must share the allowance instead of each spending all of it and
// then both being throttled. So every request of the Notion, Google Drive, OneDrive and GitHub clients takes
// a slot from the budget of (provider, account) first, and a throttled answer (429, Drive's 403
// userRateLimitExceeded, GitHub's secondary limit) pauses that budget for every connection of the account.
//
// The budget is a GCRA (a token bucket kept as one timestamp): each request reserves its slot at once, so
// concurrent callers queue in call order. The registry lives in the process: connections synced by other
// worker processes have budgets of their own there (the providers' Retry-After still covers them).
//
// A throttled request is retried here, in place, after the wait the provider asked for (at most
// MAX_INLINE_WAIT_MS, MAX_INLINE_RETRIES times), heartbeating meanwhile: a long listing then goes on where it
// was instead of starting over in a new activity attempt. Longer or persistent throttling goes back to the
// engine as ConnectorRateLimitError, whose next attempt waits as long as the provider asked.

import { createHash } from "node:crypto";
import { ConnectorRateLimitError } from "./errors.ts";

export interface BudgetRate {
  /** Average requests a second. */
  perSecond: number;
  /** Requests that may go at once after a quiet spell. */
  burst: number;
  /** Requests in flight at once (none: no cap). */
  concurrent?: number;
}

/**
 * Each provider's budget per account, below its documented limits:
 * - notion: "an average of three requests per second" per integration, "some bursts beyond the average"
 *   allowed (https://developers.notion.com/reference/request-limits).
 * - google-drive: 325,000 quota units a minute per user per project, and "additional rate limit checks on
 *   the Drive backend" answer 429 (https://developers.google.com/drive/api/guides/limits). Units per call
 *   are not published, so the budget stays far below (1,200 requests a minute) and the backoff does the rest.
 * - microsoft-graph: SharePoint and OneDrive allow a user 3,000 requests per 5 minutes, i.e. 10 a second
 *   (https://learn.microsoft.com/en-us/sharepoint/dev/general-development/how-to-avoid-getting-throttled-or-blocked-in-sharepoint-online).
 * - github: secondary limits of "no more than 100 concurrent requests" and 900 points a minute per REST
 *   endpoint, a GET costing one point, i.e. 15 a second; GitHub asks to make requests serially
 *   (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits).
 */
export const PROVIDER_RATES = {
  notion: { perSecond: 3, burst: 10 },
  "google-drive": { perSecond: 20, burst: 40 },
  "microsoft-graph": { perSecond: 10, burst: 20 },
  github: { perSecond: 15, burst: 15, concurrent: 10 },
} as const satisfies Record<string, BudgetRate>;

export type BudgetProvider = keyof typeof PROVIDER_RATES;

/**
 * The longest wait for a throttled request spent inside one activity. The activity's heartbeat timeout is a
 * minute (workflows/sync-connection.ts) and `pause` heartbeats every 10 s, so a wait this long keeps the
 * attempt alive; Notion's per-connection window is at most 60 s too. A longer wait is the engine's.
 */
export const MAX_INLINE_WAIT_MS = 60_000;
/** A request throttled this many times in a row goes back to the engine. */
export const MAX_INLINE_RETRIES = 3;
/** Budgets not used for this long are forgotten (accounts whose connections were removed). */
const IDLE_MS = 10 * 60_000;

/** The slowest a budget slows to after throttling: a sixteenth of its rate. */
const MIN_PACE = 1 / 16;
/** Each answer that was not throttled gives back this share of the rate lost (slow recovery). */
const RECOVERY = 0.05;

export class RequestBudget {
  /** When the next request would go if no burst were allowed (GCRA's theoretical arrival time). */
  private tat = Number.NEGATIVE_INFINITY;
  /**
   * The share of `perSecond` in use: halved by each throttled answer and won back slowly by answers that
   * were not, so an account whose real allowance is below the documented one (other apps of the user, a
   * smaller tenant) settles near it instead of being throttled again after every pause.
   */
  pace = 1;
  lastUsed = 0;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly perSecond: number,
    readonly burst: number,
    readonly concurrent = Number.POSITIVE_INFINITY,
  ) {}

  private get interval(): number {
    return 1000 / (this.perSecond * this.pace);
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

  /** The provider said to wait until `until`: no request of this account goes before then, and slower after. */
  pauseUntil(until: number): void {
    this.pace = Math.max(MIN_PACE, this.pace / 2);
    const tolerance = (this.burst - 1) * this.interval;
    // The first slot after the pause is `until`; a burst is not allowed again right after a 429.
    this.tat = Math.max(this.tat, until + tolerance);
  }

  /** An answer that was not throttled: the pace recovers a little. */
  answered(): void {
    this.pace = Math.min(1, this.pace + (1 - this.pace) * RECOVERY);
  }

  /** Requests of this account in flight now. */
  get active(): number {
    return this.inFlight;
  }

  /** Waits for a place among the `concurrent` requests in flight; call the result when the answer is in. */
  async enter(signal: AbortSignal): Promise<() => void> {
    while (this.inFlight >= this.concurrent) {
      signal.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal.removeEventListener("abort", aborted);
          resolve();
        };
        const aborted = () => {
          const at = this.waiting.indexOf(go);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(signal.reason);
        };
        this.waiting.push(go);
        signal.addEventListener("abort", aborted, { once: true });
      });
    }
    this.inFlight++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.inFlight--;
      this.waiting.shift()?.();
    };
  }
}

const budgets = new Map<string, RequestBudget>();

function digest(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

/**
 * The process-wide budget of one account at one provider. `account` is the provider's stable identity of
 * the user when the client knows it (so refreshed tokens and several connections of one user share it),
 * else the token; it is kept only as a hash.
 */
export function budgetFor(provider: BudgetProvider, account: string, now = Date.now()): RequestBudget {
  const key = `${provider}:${digest(account)}`;
  let budget = budgets.get(key);
  if (!budget) {
    for (const [k, b] of budgets) if (now - b.lastUsed > IDLE_MS) budgets.delete(k);
    const rate: BudgetRate = PROVIDER_RATES[provider];
    budget = new RequestBudget(rate.perSecond, rate.burst, rate.concurrent);
    budget.lastUsed = now;
    budgets.set(key, budget);
  }
  return budget;
}

const accounts = new Map<string, Promise<string>>();
/** A token whose account could not be asked for is asked again after this long. */
const IDENTIFY_AGAIN_MS = 60_000;

/**
 * The account a token belongs to, asked of the provider once per token in this process (`identify`, e.g.
 * Drive's about.user.permissionId): every token of one user, refreshed or from another connection, then
 * maps to one budget. When the provider does not say, the token stands for its account.
 */
export function accountOf(
  provider: BudgetProvider,
  token: string,
  identify: () => Promise<string | undefined>,
): Promise<string> {
  const key = `${provider}:${digest(token)}`;
  let account = accounts.get(key);
  if (!account) {
    account = identify().then(
      (id) => {
        if (id) return `account:${id}`;
        return `token:${token}`;
      },
      () => {
        // Not known now (throttled, a network failure): the token stands in, and it is asked again later.
        setTimeout(() => accounts.delete(key), IDENTIFY_AGAIN_MS).unref();
        return `token:${token}`;
      },
    );
    accounts.set(key, account);
    // Tokens are short-lived: forget them with their budgets' idle time.
    setTimeout(() => accounts.delete(key), IDLE_MS).unref();
  }
  return account;
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

export interface BudgetedContext {
  signal: AbortSignal;
  heartbeat(): void;
  log: { info(fields: Record<string, unknown>, message: string): void };
}

/** What one attempt came to: its value, or what it threw. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * Sends one request under the account's budget: waits for its slot, sends, and when `throttled` says the
 * provider asked to wait (ms), pauses the whole budget that long and sends the same request again, up to
 * MAX_INLINE_RETRIES times and MAX_INLINE_WAIT_MS a wait. Then the last answer is handed back as it was
 * (the caller turns it into ConnectorRateLimitError). `discard` releases a throttled answer's body.
 */
export async function sendBudgeted<T>(options: {
  budget: RequestBudget;
  ctx: BudgetedContext;
  provider: string;
  send: () => Promise<T>;
  throttled: (outcome: Outcome<T>, attempt: number) => number | undefined | Promise<number | undefined>;
  discard?: (value: T) => Promise<void>;
}): Promise<T> {
  const { budget, ctx, provider } = options;
  for (let attempt = 0; ; attempt++) {
    // A queue longer than a provider's window (a long Retry-After another sync got, many syncs of one
    // account): the engine waits, as for a throttled answer of our own.
    const queued = budget.delay(Date.now());
    if (queued > MAX_INLINE_WAIT_MS) {
      throw new ConnectorRateLimitError(
        `${provider} rate limit: this account's request budget is spent`,
        queued,
      );
    }
    const wait = budget.reserve(Date.now());
    if (wait > 0) await pause(wait, ctx.signal, ctx.heartbeat);
    const leave = await budget.enter(ctx.signal);
    let outcome: Outcome<T>;
    try {
      ctx.heartbeat();
      outcome = { ok: true, value: await options.send() };
    } catch (error) {
      outcome = { ok: false, error };
    } finally {
      leave();
    }
    const asked = ctx.signal.aborted ? undefined : await options.throttled(outcome, attempt);
    if (asked !== undefined) {
      // Other syncs of this account wait too: the limit is the account's, not this request's.
      budget.pauseUntil(Date.now() + asked);
      if (attempt < MAX_INLINE_RETRIES && asked <= MAX_INLINE_WAIT_MS) {
        if (outcome.ok) await options.discard?.(outcome.value);
        ctx.log.info(
          { provider, waitMs: asked, attempt: attempt + 1 },
          `${provider}: throttled; retrying the request after the wait asked for`,
        );
        await pause(asked, ctx.signal, ctx.heartbeat);
        continue;
      }
    } else budget.answered();
    if (outcome.ok) return outcome.value;
    throw outcome.error;
  }
}
