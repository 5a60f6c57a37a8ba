// IMAP sessions for the mail connectors: logging in (with the network rules of the deployment), mapping
// imapflow's failures onto what the engine acts on, and a pool of logged-in sessions.
//
// Connections are pooled per connection id and credentials within the worker process: the engine calls
// listPage and fetchItem as separate activities, and a login per message would be slow and would trip
// providers' login rate limits (Gmail allows 15 simultaneous sessions per account).

import { createHash } from "node:crypto";
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { ImapFlow } from "imapflow";
import type { Logger } from "../../config/logger.ts";
import { isPublicAddress } from "../../pipeline/safe-fetch.ts";
import { ConnectorAuthError, ConnectorConfigError, ConnectorRateLimitError } from "../errors.ts";
import type { SyncContext } from "../types.ts";

/**
 * How long a sync waits after Gmail's bandwidth ALERT. The limit is per day and Google does not say when
 * an account is let in again (an administrator sees it in the Admin console); six hours is a few attempts a
 * day, each costing one login.
 */
export const BANDWIDTH_WAIT_MS = 6 * 60 * 60 * 1000;
const BANDWIDTH_ALERT = /exceeded command or bandwidth limits|bandwidth limits? exceeded/i;

/** A pooled connection nobody used for this long is logged out (servers drop idle sessions anyway). */
const IDLE_CLOSE_MS = 30_000;
/** Where and as whom to log in. */
export interface MailAccount {
  host: string;
  port: number;
  /** Implicit TLS (port 993); false means plain IMAP, upgraded with STARTTLS when the server offers it. */
  secure: boolean;
  tlsRejectUnauthorized: boolean;
  user: string;
  auth: { kind: "password"; password: string } | { kind: "oauth2"; accessToken: string };
}

// ---------------------------------------------------------------------------------------------------
// Errors

interface ImapErrorLike {
  message?: string;
  /** imapflow's NoConnection error: the text of the server's BYE, if one came. */
  reason?: string;
  code?: string;
  authenticationFailed?: boolean;
  serverResponseCode?: string;
  responseText?: string;
  throttleReset?: number;
  tlsFailed?: boolean;
  mailboxMissing?: boolean;
}

function asImapError(err: unknown): ImapErrorLike {
  return typeof err === "object" && err !== null ? (err as ImapErrorLike) : {};
}

/** imapflow's bare "Command failed" says nothing: the server's own text is what a person can act on. */
function describe(err: unknown): string {
  const e = asImapError(err);
  const text = e.responseText || e.reason || e.message || String(err);
  return e.serverResponseCode ? `[${e.serverResponseCode}] ${text}` : text;
}

/** Maps imapflow's failures onto what the engine acts on; everything else stays a plain (retried) error. */
export function mapImapError(err: unknown, account: MailAccount): unknown {
  if (
    err instanceof ConnectorAuthError ||
    err instanceof ConnectorConfigError ||
    err instanceof ConnectorRateLimitError
  ) {
    return err;
  }
  const e = asImapError(err);
  const where = `${account.host}:${account.port}`;
  // Gmail past its daily IMAP limits (2,500 MB download, 500 MB upload a day per account,
  // https://support.google.com/a/answer/1071518) answers "NO [ALERT] Account exceeded command or
  // bandwidth limits", at login too (where it is no verdict on the token), or ends the session with a
  // BYE saying so. The limit is per day: retrying within minutes only spends commands that count.
  if (BANDWIDTH_ALERT.test(`${e.responseText ?? ""} ${e.reason ?? ""} ${e.message ?? ""}`)) {
    return new ConnectorRateLimitError(
      `${where} refused the account for exceeding its daily IMAP limits: ${describe(err)}`,
      BANDWIDTH_WAIT_MS,
    );
  }
  // Login refusals that are not about the credentials: too many sessions (Dovecot's [LIMIT], Gmail's
  // "Too many simultaneous connections") wait like a rate limit; [UNAVAILABLE] is a server hiccup.
  if (e.serverResponseCode === "LIMIT" || /too many (simultaneous )?connections/i.test(describe(err))) {
    return new ConnectorRateLimitError(`${where} refused another session: ${describe(err)}`, 60_000);
  }
  if (e.serverResponseCode === "UNAVAILABLE" || e.serverResponseCode === "INUSE") {
    const retry = new Error(`${where} is temporarily unavailable: ${describe(err)}`);
    return Object.assign(retry, { cause: err });
  }
  if (
    e.authenticationFailed ||
    e.serverResponseCode === "AUTHENTICATIONFAILED" ||
    e.serverResponseCode === "AUTHORIZATIONFAILED"
  ) {
    const how = account.auth.kind === "oauth2" ? "the OAuth access token" : "the password";
    return new ConnectorAuthError(`${where} refused ${how} for ${account.user}: ${describe(err)}`);
  }
  if (e.code === "ETHROTTLE") {
    return new ConnectorRateLimitError(`${where} is throttling: ${describe(err)}`, e.throttleReset ?? 60_000);
  }
  // A certificate the server will keep presenting, or TLS spoken to a plain port: retrying changes nothing.
  if (
    e.tlsFailed ||
    /wrong version number|self[- ]signed|unable to verify|certificate/i.test(e.message ?? "")
  ) {
    return new ConnectorConfigError(
      `TLS with ${where} failed (check the port, \`secure\` and \`tlsRejectUnauthorized\`): ${describe(err)}`,
    );
  }
  return err;
}

export function isMissingMailbox(err: unknown): boolean {
  const e = asImapError(err);
  return e.mailboxMissing === true || e.serverResponseCode === "NONEXISTENT";
}

// ---------------------------------------------------------------------------------------------------
// Connections

interface PoolEntry {
  key: string;
  client: ImapFlow;
  users: number;
  idleTimer: NodeJS.Timeout | null;
  evicted: boolean;
}

/** Per key: the login under way, then the logged-in session. */
interface PoolSlot {
  pending: Promise<PoolEntry>;
  entry?: PoolEntry;
}

const pool = new Map<string, PoolSlot>();

function poolKey(connectionId: string, account: MailAccount): string {
  const secret = account.auth.kind === "password" ? account.auth.password : account.auth.accessToken;
  const hash = createHash("sha256")
    .update(JSON.stringify([account.host, account.port, account.secure, account.user, account.auth.kind]))
    .update("\0")
    .update(secret)
    .digest("hex");
  return `${connectionId}:${hash}`;
}

/** The account's server on a private network that this deployment keeps connectors away from. */
export class PrivateMailServerError extends ConnectorConfigError {
  constructor(host: string) {
    super(`IMAP server ${host} is on a private network, which this deployment does not allow`);
  }
}

/**
 * The address to connect to: the host itself when private networks are allowed, else its first public
 * address, resolved once here and connected to directly (with the host name kept for TLS), so a DNS answer
 * that changes between a check and the connection cannot reach the service's own network.
 */
async function mailServerAddress(host: string, allowPrivateNetwork: boolean): Promise<string> {
  if (allowPrivateNetwork) return host;
  const bare = host.replace(/^\[|\]$/g, "");
  const addresses = isIP(bare) ? [{ address: bare }] : await dnsLookup(bare, { all: true });
  const first = addresses.find((a) => isPublicAddress(a.address));
  if (!first) throw new PrivateMailServerError(host);
  return first.address;
}

function newClient(account: MailAccount, address: string): ImapFlow {
  return new ImapFlow({
    host: address,
    // TLS checks the certificate against the name the user gave, not the address it resolved to.
    ...(address !== account.host && !isIP(account.host) ? { servername: account.host } : {}),
    port: account.port,
    secure: account.secure,
    tls: { rejectUnauthorized: account.tlsRejectUnauthorized },
    auth:
      account.auth.kind === "password"
        ? { user: account.user, pass: account.auth.password }
        : { user: account.user, accessToken: account.auth.accessToken },
    logger: false,
    // Sessions here are short bursts of commands; IDLE would only add round trips between them.
    disableAutoIdle: true,
    connectionTimeout: 30_000,
    greetingTimeout: 16_000,
    socketTimeout: 120_000,
  });
}

/** Opens and logs in; the returned client has an error listener (an unheard 'error' event kills the process). */
export async function connect(
  account: MailAccount,
  log: Logger,
  signal: AbortSignal | undefined,
  allowPrivateNetwork: boolean,
): Promise<ImapFlow> {
  const client = newClient(account, await mailServerAddress(account.host, allowPrivateNetwork));
  client.on("error", (err: unknown) => {
    log.warn({ err: describe(err), host: account.host }, "imap connection error");
  });
  const onAbort = () => client.close();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await client.connect();
  } catch (err) {
    client.close();
    signal?.throwIfAborted();
    throw mapImapError(err, account);
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  return client;
}

function closeClient(client: ImapFlow, hard: boolean): void {
  if (hard || !client.usable) {
    client.close();
    return;
  }
  client.logout().catch(() => client.close());
}

/** Takes the session out of the pool; it is closed now (hard) or when its last user is done. */
function evict(entry: PoolEntry, hard: boolean): void {
  if (!entry.evicted) {
    entry.evicted = true;
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    if (pool.get(entry.key)?.entry === entry) pool.delete(entry.key);
  }
  if (hard || entry.users === 0) closeClient(entry.client, hard);
}

async function acquire(ctx: SyncContext<unknown, unknown>, account: MailAccount): Promise<PoolEntry> {
  const key = poolKey(ctx.connectionId, account);
  for (let attempt = 0; ; attempt++) {
    let slot = pool.get(key);
    if (!slot) {
      const created: PoolSlot = {
        pending: connect(account, ctx.log, ctx.signal, ctx.network.allowPrivateNetwork).then((client) => {
          const entry: PoolEntry = { key, client, users: 0, idleTimer: null, evicted: false };
          created.entry = entry;
          client.once("close", () => evict(entry, true));
          return entry;
        }),
      };
      created.pending.catch(() => {
        if (pool.get(key) === created) pool.delete(key);
      });
      pool.set(key, created);
      slot = created;
    }
    const entry = await slot.pending;
    if (!entry.evicted && entry.client.usable) {
      entry.users += 1;
      if (entry.idleTimer) {
        clearTimeout(entry.idleTimer);
        entry.idleTimer = null;
      }
      return entry;
    }
    // The server dropped the pooled session while it sat idle: open a fresh one, once.
    evict(entry, true);
    if (attempt >= 1) throw new Error(`IMAP connection to ${account.host}:${account.port} is not usable`);
  }
}

function release(entry: PoolEntry): void {
  entry.users -= 1;
  if (entry.users > 0) return;
  if (entry.evicted || !entry.client.usable) {
    evict(entry, false);
    return;
  }
  entry.idleTimer = setTimeout(() => evict(entry, false), IDLE_CLOSE_MS);
  // An idle pooled connection must not keep a worker (or a test run) alive.
  entry.idleTimer.unref();
}

export async function withClient<T>(
  ctx: SyncContext<unknown, unknown>,
  account: MailAccount,
  fn: (client: ImapFlow) => Promise<T>,
): Promise<T> {
  ctx.signal.throwIfAborted();
  const entry = await acquire(ctx, account);
  // Cancelling must not wait for a slow server: closing the socket fails the running command at once.
  const onAbort = () => evict(entry, true);
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  try {
    return await fn(entry.client);
  } catch (err) {
    if (!entry.client.usable) evict(entry, true);
    ctx.signal.throwIfAborted();
    throw mapImapError(err, account);
  } finally {
    ctx.signal.removeEventListener("abort", onAbort);
    release(entry);
  }
}

/** Logs out every pooled connection (worker shutdown, end of a test file). */
export async function closeMailConnections(): Promise<void> {
  const entries = await Promise.allSettled([...pool.values()].map((slot) => slot.pending));
  pool.clear();
  await Promise.all(
    entries.map(async (r) => {
      if (r.status !== "fulfilled") return;
      const entry = r.value;
      entry.evicted = true;
      if (entry.idleTimer) clearTimeout(entry.idleTimer);
      if (!entry.client.usable) return entry.client.close();
      await entry.client.logout().catch(() => entry.client.close());
    }),
  );
}
