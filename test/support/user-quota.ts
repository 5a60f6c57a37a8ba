// A provider's per-user request quota as the test fakes enforce it: a fixed window of `requests` per
// `windowSeconds`, counted across every token of the user. Each fake answers an exceeded quota in its own
// provider's words (Graph 429, Drive 403 userRateLimitExceeded, GitHub's secondary limit).

export interface UserQuotaSettings {
  requests: number;
  windowSeconds: number;
}

export class UserQuota {
  private start = 0;
  private used = 0;

  constructor(private readonly settings: UserQuotaSettings) {}

  /** Counts one request; past the quota, how many whole seconds until the window ends (at least 1). */
  take(now = Date.now()): { exceeded: false } | { exceeded: true; retryAfterSeconds: number } {
    const windowMs = this.settings.windowSeconds * 1000;
    if (now >= this.start + windowMs) {
      this.start = now;
      this.used = 0;
    }
    this.used++;
    if (this.used <= this.settings.requests) return { exceeded: false };
    return {
      exceeded: true,
      retryAfterSeconds: Math.max(1, Math.ceil((this.start + windowMs - now) / 1000)),
    };
  }
}
