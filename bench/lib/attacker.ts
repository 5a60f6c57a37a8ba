// A third party beside the real clients: from the same
// address as they are, it streams huge chunked bodies at routes that take no key and at keyed routes without a
// valid one, floods made-up bearer keys, and floods console sign-ins with wrong passwords and wrong keys. Used by
// the `attack` scenario (bench/attack.ts) and by test/security/attacker.test.ts.
//
// It runs as a process of its own (spawnAttacker, through attacker.child.ts), as an attacker would: its CPU and
// sockets are then not in the clients' event loop, and its resident memory is measured on its own. Its bodies
// come from a generator that writes one shared 64 KiB block again and again, so it holds no body in memory.

import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** What the attacker sends, one name per kind of request. */
export const ATTACK_KINDS = [
  "chunked-sign-in",
  "chunked-picker",
  "chunked-documents",
  "made-up-key",
  "sign-in-password",
  "sign-in-key",
] as const;
type AttackKind = (typeof ATTACK_KINDS)[number];
export const CHUNKED_KINDS: readonly AttackKind[] = [
  "chunked-sign-in",
  "chunked-picker",
  "chunked-documents",
];

export const ATTACK_KIND_ABOUT: Record<AttackKind, string> = {
  "chunked-sign-in": "chunked body, no length, to `POST /v3/console/session` (no key needed)",
  "chunked-picker":
    "chunked body to `POST /v3/connections/<made-up id>/picker/selection?token=<made-up>` (no key needed)",
  "chunked-documents": "chunked body to `POST /v3/documents` with a made-up bearer key",
  "made-up-key":
    "a made-up bearer key on `POST /v3/search` (small JSON body) or `GET /v3/documents/processing`",
  "sign-in-password": "`POST /v3/console/session` with the console user's e-mail and a wrong password",
  "sign-in-key": "`POST /v3/console/session` with a made-up API key",
};

export interface AttackerOptions {
  url: string;
  /** How long it starts new requests. */
  durationMs: number;
  /** Size of each chunked body (the whole of it, if nobody stops it). */
  bodyBytes: number;
  /**
   * Chunked bodies started per second, kinds in turn, at most `bodiesInFlight` at once (each on its own
   * connection). Paced, because a service that refuses a body at once would otherwise get hundreds of connections a
   * second from an attacker on its own two cores, and the run would measure the attacker's CPU, not the service.
   * Every rate here: 0 = as fast as the answers come.
   */
  bodyRate: number;
  bodiesInFlight: number;
  /** Made-up bearer keys per second (open loop), at most `keysInFlight` unanswered at once. */
  keyRate: number;
  keysInFlight: number;
  /** Console sign-ins per second (wrong password and wrong key in turn), at most `signInsInFlight` unanswered. */
  signInRate: number;
  signInsInFlight: number;
  /** The console user whose password it guesses. */
  consoleEmail: string;
  /** A request with no answer after this long counts as unanswered ("timeout"). */
  requestTimeoutMs: number;
  /** After `durationMs`, how long requests in flight may still finish; the rest are cut and counted unfinished. */
  graceMs: number;
}

export interface KindStats {
  /** Requests started. */
  sent: number;
  /** Answers by HTTP status (an answer counts even if the connection was closed after it). */
  statuses: Record<string, number>;
  /** Requests that ended without any answer, by why: ECONNRESET, EPIPE, timeout… */
  noAnswer: Record<string, number>;
  /** Still open when the grace after the end ran out (cut by the attacker itself, not by the service). */
  unfinished: number;
  /** Chunked bodies only: MiB written before the answer (or the end) came, sorted ascending. */
  mibBeforeAnswer?: number[];
}

export interface AttackerResult {
  kinds: Record<AttackKind, KindStats>;
  wallMs: number;
  /** Stopped before `durationMs` (SIGTERM from the scenario, e.g. when the service's memory passed its guard). */
  stoppedEarly: boolean;
  /** The attacker process's own peak resident memory. */
  peakRssBytes: number;
}

interface Answer {
  status?: number;
  /** Why there was no answer. */
  error?: string;
  /** Bytes of body written before the answer or the failure. */
  written: number;
}

const BLOCK = Buffer.alloc(64 * 1024, 0x61);
const HEAD = Buffer.from('{"pad":"');
const TAIL = Buffer.from('"}');

/** One JSON object of exactly `total` bytes (a string of `a`s), in 64 KiB pieces that are all the same buffer. */
export function* chunkedBody(total: number): Generator<Buffer> {
  yield HEAD;
  let left = Math.max(0, total - HEAD.length - TAIL.length);
  while (left > 0) {
    const n = Math.min(left, BLOCK.length);
    yield n === BLOCK.length ? BLOCK : BLOCK.subarray(0, n);
    left -= n;
  }
  yield TAIL;
}

const madeUpKey = () => `sm_${randomBytes(24).toString("hex")}`;

/**
 * One request on a connection of its own. With `body` as a generator the body goes chunked (no content-length);
 * writing stops as soon as an answer arrives, since that is what the service asked for by answering.
 */
function send(
  base: URL,
  req: { method: string; path: string; headers?: Record<string, string>; body?: Buffer | Iterable<Buffer> },
  timeoutMs: number,
  open: Set<() => void>,
): Promise<Answer> {
  return new Promise((resolve) => {
    let written = 0;
    let status: number | undefined;
    let settled = false;
    const fixed = Buffer.isBuffer(req.body) ? req.body : undefined;
    const r = http.request({
      host: base.hostname,
      port: base.port,
      method: req.method,
      path: req.path,
      agent: false,
      headers: {
        accept: "application/json",
        ...(req.body ? { "content-type": "application/json" } : {}),
        ...(fixed ? { "content-length": String(fixed.length) } : {}),
        ...req.headers,
      },
    });
    const finish = (a: Omit<Answer, "written">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      open.delete(cut);
      r.destroy();
      resolve({ ...a, written });
    };
    const cut = () => finish(status !== undefined ? { status } : { error: "unfinished" });
    open.add(cut);
    const timer = setTimeout(
      () => finish(status !== undefined ? { status } : { error: "timeout" }),
      timeoutMs,
    );
    r.on("response", (res) => {
      status = res.statusCode;
      res.resume();
      res.on("end", () => finish({ status }));
      res.on("error", () => finish({ status }));
      res.on("close", () => finish({ status }));
    });
    r.on("error", (e) =>
      finish(status !== undefined ? { status } : { error: (e as NodeJS.ErrnoException).code ?? e.message }),
    );
    r.on("close", () => finish(status !== undefined ? { status } : { error: "closed" }));
    if (!req.body || fixed) {
      if (fixed) written = fixed.length;
      r.end(fixed);
      return;
    }
    const pieces = req.body as Iterable<Buffer>;
    void (async () => {
      for (const piece of pieces) {
        if (settled || status !== undefined) return;
        written += piece.length;
        if (!r.write(piece)) await drained(r);
      }
      if (!settled && status === undefined) r.end();
    })();
  });
}

/** Until the request can take more body, or is gone; listeners removed either way (thousands of waits). */
function drained(r: http.ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      r.off("drain", done);
      r.off("close", done);
      resolve();
    };
    r.on("drain", done);
    r.on("close", done);
  });
}

/** Starts `next(i)` at `rate` per second (0: as soon as a slot is free), at most `inFlight` at once, until `stop()`. */
async function lane(
  rate: number,
  inFlight: number,
  stopped: () => boolean,
  wake: Promise<void>,
  next: (i: number) => Promise<void>,
): Promise<void> {
  const running = new Set<Promise<void>>();
  const interval = rate > 0 ? 1000 / rate : 0;
  let due = performance.now();
  for (let i = 0; !stopped(); i++) {
    while (running.size >= inFlight && !stopped()) await Promise.race([...running, wake]);
    if (stopped()) break;
    const p = next(i).finally(() => running.delete(p));
    running.add(p);
    if (interval) {
      due += interval;
      const now = performance.now();
      // Open loop without catching up: a lane that fell behind (slow answers) does not then burst.
      if (due < now) due = now;
      else await Promise.race([new Promise((r) => setTimeout(r, due - now)), wake]);
    }
  }
  await Promise.all(running);
}

/** Runs the attack for `durationMs` (or until `signal` aborts), then waits up to `graceMs` for what is in flight. */
export async function attack(o: AttackerOptions, signal?: AbortSignal): Promise<AttackerResult> {
  const base = new URL(o.url);
  const kinds = Object.fromEntries(
    ATTACK_KINDS.map((k) => [
      k,
      {
        sent: 0,
        statuses: {},
        noAnswer: {},
        unfinished: 0,
        ...(CHUNKED_KINDS.includes(k) ? { mibBeforeAnswer: [] } : {}),
      },
    ]),
  ) as Record<AttackKind, KindStats>;
  const open = new Set<() => void>();
  let peakRss = process.memoryUsage.rss();
  const rssTimer = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, 250);
  const started = performance.now();
  let stop = false;
  let stoppedEarly = false;
  let wakeAll = () => {};
  const wake = new Promise<void>((r) => {
    wakeAll = r;
  });
  const end = (early: boolean) => {
    if (stop) return;
    stop = true;
    stoppedEarly = early;
    wakeAll();
  };
  const deadline = setTimeout(() => end(false), o.durationMs);
  const onAbort = () => end(true);
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted) end(true);

  const record = async (kind: AttackKind, request: Parameters<typeof send>[1]) => {
    const k = kinds[kind];
    k.sent++;
    const a = await send(base, request, o.requestTimeoutMs, open);
    if (a.status !== undefined) k.statuses[a.status] = (k.statuses[a.status] ?? 0) + 1;
    else if (a.error === "unfinished") k.unfinished++;
    else k.noAnswer[a.error ?? "unknown"] = (k.noAnswer[a.error ?? "unknown"] ?? 0) + 1;
    k.mibBeforeAnswer?.push(a.written / 2 ** 20);
  };
  const id = () => randomBytes(8).toString("hex");
  const chunked = (i: number): [AttackKind, Parameters<typeof send>[1]] => {
    const kind = CHUNKED_KINDS[i % CHUNKED_KINDS.length] as AttackKind;
    const body = chunkedBody(o.bodyBytes);
    if (kind === "chunked-sign-in") return [kind, { method: "POST", path: "/v3/console/session", body }];
    if (kind === "chunked-picker")
      // A token in the query so the route gets as far as its body (without one it is refused before).
      return [kind, { method: "POST", path: `/v3/connections/${id()}/picker/selection?token=${id()}`, body }];
    return [
      kind,
      { method: "POST", path: "/v3/documents", headers: { authorization: `Bearer ${madeUpKey()}` }, body },
    ];
  };
  const searchBody = Buffer.from(JSON.stringify({ q: "what was decided", limit: 5 }));
  const lanes = [
    lane(
      o.bodyRate,
      o.bodiesInFlight,
      () => stop,
      wake,
      (i) => record(...chunked(i)),
    ),
    lane(
      o.keyRate,
      o.keysInFlight,
      () => stop,
      wake,
      (i) =>
        record(
          "made-up-key",
          i % 2 === 0
            ? {
                method: "POST",
                path: "/v3/search",
                headers: { authorization: `Bearer ${madeUpKey()}` },
                body: searchBody,
              }
            : {
                method: "GET",
                path: "/v3/documents/processing",
                headers: { authorization: `Bearer ${madeUpKey()}` },
              },
        ),
    ),
    lane(
      o.signInRate,
      o.signInsInFlight,
      () => stop,
      wake,
      (i) =>
        i % 2 === 0
          ? record("sign-in-password", {
              method: "POST",
              path: "/v3/console/session",
              body: Buffer.from(JSON.stringify({ email: o.consoleEmail, password: `not it ${id()}` })),
            })
          : record("sign-in-key", {
              method: "POST",
              path: "/v3/console/session",
              body: Buffer.from(JSON.stringify({ apiKey: madeUpKey() })),
            }),
    ),
  ];
  // After the end: what is in flight gets `graceMs` to finish, then is cut.
  const all = Promise.all(lanes);
  await wake;
  const grace = setTimeout(() => {
    for (const cut of [...open]) cut();
  }, o.graceMs);
  await all;
  clearTimeout(grace);
  clearTimeout(deadline);
  clearInterval(rssTimer);
  signal?.removeEventListener("abort", onAbort);
  for (const k of Object.values(kinds)) k.mibBeforeAnswer?.sort((a, b) => a - b);
  return {
    kinds,
    wallMs: performance.now() - started,
    stoppedEarly,
    peakRssBytes: Math.max(peakRss, process.memoryUsage.rss()),
  };
}

/** The line attacker.child.ts prints its result on. */
export const RESULT_PREFIX = "ATTACKER-RESULT ";

interface AttackerProcess {
  pid: number;
  /** Ends the attack early (SIGTERM): it stops starting requests, lets those in flight finish within the grace. */
  stop(): void;
  result: Promise<AttackerResult>;
}

/** The attacker as a process of its own (`node --import tsx bench/lib/attacker.child.ts`). */
export function spawnAttacker(o: AttackerOptions): AttackerProcess {
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", path.join(root, "bench", "lib", "attacker.child.ts"), JSON.stringify(o)],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
  );
  const pid = child.pid;
  if (!pid) throw new Error("could not start the attacker process");
  let out = "";
  let err = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    err = (err + d.toString()).slice(-4000);
  });
  const result = new Promise<AttackerResult>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => {
      const line = out.split("\n").find((l) => l.startsWith(RESULT_PREFIX));
      if (code === 0 && line) resolve(JSON.parse(line.slice(RESULT_PREFIX.length)) as AttackerResult);
      else reject(new Error(`the attacker process exited with ${code} and no result:\n${err}`));
    });
  });
  return {
    pid,
    stop: () => {
      if (child.exitCode === null) child.kill("SIGTERM");
    },
    result,
  };
}
