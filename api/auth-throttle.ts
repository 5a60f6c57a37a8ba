import { setTimeout as sleep } from "node:timers/promises";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { type Config, storeHasOneProcess } from "../config/env.ts";
import { type ApiKeyRow, activeKeyHashes, findActiveKey, hashKey, keyWriteCount } from "../store/api-keys.ts";
import type { Database } from "../store/db.ts";
import { clearRateLimit, hitRateLimit, ProcessRateLimits, readRateLimit } from "../store/rate-limits.ts";
import { type ClientOrigin, clientOrigin, parseTrustedProxies } from "./client-address.ts";
import { ApiError } from "./errors.ts";

export type ClientEnv = { Variables: { client: ClientOrigin } };

/** First on every request: who sent it (TRUST_PROXY decides whether forwarded headers count). */
export function clientOriginMiddleware(config: Config) {
  const trusted = parseTrustedProxies(config.TRUST_PROXY);
  return createMiddleware<ClientEnv>(async (c, next) => {
    c.set("client", clientOrigin(c, trusted));
    await next();
  });
}

/** What failures are counted under: the client's address, or for IPv6 its /64 (client-address.ts throttleKeyOf). */
const clientAddress = (c: Context) => (c.get("client") as ClientOrigin | undefined)?.throttleKey ?? "unknown";

function refused(resetAt: number, message: string): ApiError {
  const retryAfter = Math.max(1, Math.ceil((resetAt - Date.now()) / 1000));
  return new ApiError(429, "rate_limited", message, undefined, { "Retry-After": String(retryAfter) });
}

/** Failures answered at once; from the next one on, each is held twice as long as the one before, up to the cap. */
const FREE_FAILURES = 5;
const FIRST_DELAY_MS = 100;

/** How long an attempt is held when its address (or e-mail) has `failures` failures in the current window. */
export function failureDelayMs(failures: number, maxDelayMs: number): number {
  if (failures <= FREE_FAILURES || maxDelayMs <= 0) return 0;
  return Math.min(maxDelayMs, FIRST_DELAY_MS * 2 ** Math.min(failures - FREE_FAILURES - 1, 20));
}

/**
 * Attempts held at once, per subject (an address, an e-mail) and in all. A flood then holds a known number of
 * sockets and timers, and a known number of password hashes: past a bound, an attempt is answered 429 at once.
 */
class Holds {
  private readonly held = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly perSubject: number,
    private readonly inAll: number,
  ) {}

  /** Takes a place for each subject, or none and false when one of them (or the whole) is full. */
  take(subjects: string[]): boolean {
    if (this.total >= this.inAll) return false;
    if (subjects.some((s) => (this.held.get(s) ?? 0) >= this.perSubject)) return false;
    for (const s of subjects) this.held.set(s, (this.held.get(s) ?? 0) + 1);
    this.total++;
    return true;
  }

  release(subjects: string[]): void {
    for (const s of subjects) {
      const left = (this.held.get(s) ?? 1) - 1;
      if (left > 0) this.held.set(s, left);
      else this.held.delete(s);
    }
    this.total--;
  }
}

/** Failing bearer attempts held for their delay at once, per address and in all. */
const HELD_FAILURES_PER_ADDRESS = 16;
const HELD_FAILURES_IN_ALL = 1_024;
/** Console sign-ins in progress at once (delay and password hash), per address and per e-mail, and in all. */
const SIGN_INS_PER_SUBJECT = 4;
const SIGN_INS_IN_ALL = 256;

/**
 * Failure counts in fixed windows: in this process's memory when it is the store's only writer (the embedded
 * store: no statement per failure), in the database otherwise so every API process shares them.
 */
class FailureCounts {
  private readonly local: ProcessRateLimits | undefined;

  constructor(
    private readonly db: Database,
    readonly windowMs: number,
    onlyWriter: boolean,
  ) {
    this.local = onlyWriter ? new ProcessRateLimits() : undefined;
  }

  /** Counts one failure; the count in the current window, this one included, and when the window ends. */
  async add(counter: string): Promise<{ count: number; resetAt: number }> {
    const max = Number.MAX_SAFE_INTEGER;
    return this.local
      ? this.local.hit(counter, max, this.windowMs)
      : hitRateLimit(this.db, counter, max, this.windowMs);
  }

  async read(counter: string): Promise<number> {
    if (this.local) return this.local.count(counter, this.windowMs);
    return (await readRateLimit(this.db, counter, Number.MAX_SAFE_INTEGER, this.windowMs)).count;
  }

  async clear(counter: string): Promise<void> {
    if (this.local) this.local.clear(counter);
    else await clearRateLimit(this.db, counter);
  }
}

/** How many keys and hashes an ActiveKeys holds at most: past that, keys are looked up by a statement. */
const REMEMBERED_KEYS = 10_000;
const HELD_KEY_HASHES = 100_000;

/**
 * The active key a bearer secret names. When this process is the store's only writer (the embedded store), it
 * holds the hashes of every key not disabled, so a secret naming none (a flood of made-up keys) is refused
 * without a statement, and remembers the keys it found, so most requests authenticate without one: on PGlite
 * every statement is a turn on the store's one thread. Both are dropped as soon as this process writes api_keys
 * again (store/api-keys.ts keyWriteCount); a key past its expiry is never answered from memory.
 */
class ActiveKeys {
  private readonly found = new Map<string, { key: ApiKeyRow; writes: number }>();
  private hashes: { writes: number; set: Promise<Set<string> | undefined> } | undefined;

  constructor(
    private readonly db: Database,
    private readonly onlyWriter: boolean,
  ) {}

  async find(secret: string): Promise<ApiKeyRow | undefined> {
    if (!this.onlyWriter) return findActiveKey(this.db, secret);
    const hash = hashKey(secret);
    // Read before any statement: a key written meanwhile is then not remembered as it was before.
    const writes = keyWriteCount();
    const known = this.found.get(hash);
    if (known) {
      const expired = known.key.expiresAt && known.key.expiresAt.getTime() <= Date.now();
      if (known.writes === writes && !expired) return known.key;
      this.found.delete(hash);
    }
    const held = await this.heldHashes(writes);
    if (held && !held.has(hash)) return undefined;
    const key = await findActiveKey(this.db, secret);
    if (key) {
      this.found.set(hash, { key, writes });
      if (this.found.size > REMEMBERED_KEYS) this.found.delete(this.found.keys().next().value as string);
    }
    return key;
  }

  /** Every active key's hash as of `writes`; one statement for all the requests that ask at once. */
  private heldHashes(writes: number): Promise<Set<string> | undefined> {
    if (this.hashes?.writes !== writes) {
      const set = activeKeyHashes(this.db, HELD_KEY_HASHES).then((list) => list && new Set(list));
      // A failed read is tried again by the next request rather than kept.
      set.catch(() => {
        if (this.hashes?.set === set) this.hashes = undefined;
      });
      this.hashes = { writes, set };
    }
    return this.hashes.set;
  }
}

const TOO_MANY_FAILURES = "too many failed authentications from this address; try again later";

/**
 * What failed authentications cost, and whom. Keys carry 256 random bits and passwords at least 12 characters,
 * so counting failures cannot make guessing any harder than it is; refusing the right key or password after
 * someone else's failures would hand anyone a way to lock tenants out, most of all behind a reverse proxy where
 * every client shares one address. So a failure costs only the failer: past five failures from its address (or
 * for its e-mail) in AUTH_FAILURE_WINDOW_MS each failing attempt is held, twice as long as the one before up to
 * AUTH_FAILURE_MAX_DELAY_MS, and past AUTH_FAILURE_LIMIT it is answered 429 instead of 401. A valid key is never
 * held or refused for failures; a console sign-in is held before its password is hashed (that is its cost) and
 * then signs in when the password is right. Held attempts are bounded per address and in all (Holds).
 */
export class AuthFailures {
  private readonly counts: FailureCounts;
  private readonly keys: ActiveKeys;
  private readonly heldFailures = new Holds(HELD_FAILURES_PER_ADDRESS, HELD_FAILURES_IN_ALL);
  private readonly signIns = new Holds(SIGN_INS_PER_SUBJECT, SIGN_INS_IN_ALL);

  constructor(
    db: Database,
    private readonly limit: { max: number; windowMs: number; maxDelayMs: number },
    opts: { onlyWriter?: boolean } = {},
  ) {
    this.counts = new FailureCounts(db, limit.windowMs, opts.onlyWriter ?? false);
    this.keys = new ActiveKeys(db, opts.onlyWriter ?? false);
  }

  private counting(): boolean {
    return this.limit.max > 0 || this.limit.maxDelayMs > 0;
  }

  /** The active key a bearer secret names; a secret that names none is a failure of its address (401, or 429). */
  async authenticate(c: Context, secret: string, unknownKey: () => ApiError): Promise<ApiKeyRow> {
    const key = await this.keys.find(secret);
    if (key) return key;
    throw await this.failed(c, unknownKey());
  }

  /** The active key a secret names, or undefined: for sign-in, which counts its own failures. */
  findKey(secret: string): Promise<ApiKeyRow | undefined> {
    return this.keys.find(secret);
  }

  /**
   * Counts a failed bearer attempt against its address and gives the error to throw: `error` or, past the
   * address's limit, 429; held first by the address's delay while fewer than HELD_FAILURES_PER_ADDRESS are.
   */
  private async failed(c: Context, error: ApiError): Promise<ApiError> {
    if (!this.counting()) return error;
    const address = clientAddress(c);
    const { count, resetAt } = await this.counts.add(`auth-failures:${address}`);
    const over = this.limit.max > 0 && count > this.limit.max;
    const answer = over ? refused(resetAt, TOO_MANY_FAILURES) : error;
    const delay = failureDelayMs(count, this.limit.maxDelayMs);
    if (delay === 0) return answer;
    const subjects = [address];
    if (!this.heldFailures.take(subjects)) return refused(resetAt, TOO_MANY_FAILURES);
    try {
      await sleep(delay);
    } finally {
      this.heldFailures.release(subjects);
    }
    return answer;
  }

  /**
   * One console sign-in: held by the failures of its address and e-mail, then `attempt`. A 401 from it counts
   * against both (and past the address's limit becomes 429); a success clears the e-mail's count. At most
   * SIGN_INS_PER_SUBJECT sign-ins of one address or e-mail run at once: more are answered 429 at once.
   */
  async signIn<T>(c: Context, email: string | undefined, attempt: () => Promise<T>): Promise<T> {
    const address = clientAddress(c);
    const counters = [`auth-failures:${address}`, ...(email ? [`sign-in-failures:${email}`] : [])];
    if (!this.signIns.take(counters)) {
      throw new ApiError(
        429,
        "rate_limited",
        "sign-ins from this address or for this e-mail are in progress; try again shortly",
        undefined,
        {
          "Retry-After": "1",
        },
      );
    }
    try {
      if (this.counting()) {
        const seen = await Promise.all(counters.map((counter) => this.counts.read(counter)));
        const delay = failureDelayMs(Math.max(...seen) + 1, this.limit.maxDelayMs);
        if (delay > 0) await sleep(delay);
      }
      try {
        const result = await attempt();
        if (email && this.counting()) await this.counts.clear(counters[1] as string);
        return result;
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 401 || !this.counting()) throw error;
        const [byAddress] = await Promise.all(counters.map((counter) => this.counts.add(counter)));
        const over = this.limit.max > 0 && (byAddress?.count ?? 0) > this.limit.max;
        throw over ? refused(byAddress?.resetAt ?? Date.now(), TOO_MANY_FAILURES) : error;
      }
    } finally {
      this.signIns.release(counters);
    }
  }
}

export function createAuthFailures(db: Database, config: Config): AuthFailures {
  return new AuthFailures(
    db,
    {
      max: config.AUTH_FAILURE_LIMIT,
      windowMs: config.AUTH_FAILURE_WINDOW_MS,
      maxDelayMs: config.AUTH_FAILURE_MAX_DELAY_MS,
    },
    { onlyWriter: storeHasOneProcess(config) },
  );
}
