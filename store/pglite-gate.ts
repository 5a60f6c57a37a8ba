// PGlite is one Postgres backend in this process: its statements run one at a time, in the order they were
// asked for. During a big import the worker keeps a queue of writes waiting (each document's chunks, index
// entries and status), and a search arriving behind them waited for the whole queue. The gate puts every
// statement and transaction through one queue with two classes, so a waiting API request (search, add, list)
// is served before waiting background work and never waits for more than the statement in progress.
// PostgreSQL needs no gate: it runs each pool connection's statements side by side.

import type { PGlite, Transaction } from "@electric-sql/pglite";
import { withoutClientParsers } from "./pglite-parsers.ts";

export type GateClass = "interactive" | "background";

interface Waiter {
  resolve: () => void;
}

/** One PGlite backend, two queues: interactive waiters always go before background ones. */
export class PriorityGate {
  private busy = false;
  private readonly waiting: Record<GateClass, Waiter[]> = { interactive: [], background: [] };

  async run<T>(cls: GateClass, work: () => Promise<T>): Promise<T> {
    if (this.busy) await new Promise<void>((resolve) => this.waiting[cls].push({ resolve }));
    else this.busy = true;
    try {
      return await work();
    } finally {
      if (this.waiting.interactive.length + this.waiting.background.length === 0) this.busy = false;
      // With others waiting, the slot is handed on after one turn of the event loop (it stays taken meanwhile,
      // so nothing slips in between). Handed on at once, waiters resolved through promise callbacks alone, so
      // under load one statement followed another without the loop ever turning: 8 concurrent searches on
      // 100,000 chunks kept it blocked for 1.7 s at the median, the query vectors the model threads had sent
      // back sat undelivered, and so did new requests and finished responses.
      else setImmediate(() => this.handOn());
    }
  }

  /** The slot to the first waiter, interactive before background (one may have arrived during the turn). */
  private handOn(): void {
    const next = this.waiting.interactive.shift() ?? this.waiting.background.shift();
    if (next) next.resolve();
    else this.busy = false;
  }

  /** Waiters of each class, for tests and diagnostics. */
  get queued(): Record<GateClass, number> {
    return { interactive: this.waiting.interactive.length, background: this.waiting.background.length };
  }
}

/**
 * The part of PGlite drizzle calls (`query`, `exec`, `transaction`), each call taking its turn at the gate in
 * the given class. Statements inside a transaction use the transaction's own handle and hold the gate already.
 */
export function gatedPglite(client: PGlite, gate: PriorityGate, cls: GateClass): PGlite {
  const gated = {
    query: (...[query, params, options]: Parameters<PGlite["query"]>) =>
      gate.run(cls, () => client.query(query, params, withoutClientParsers(client, options))),
    exec: (...args: Parameters<PGlite["exec"]>) => gate.run(cls, () => client.exec(...args)),
    transaction: <T>(callback: (tx: Transaction) => Promise<T>) =>
      gate.run(cls, () =>
        client.transaction((tx) => callback(overriding(tx, { query: txQuery(client, tx) }))),
      ),
  };
  // Everything else (close, dumpDataDir, listen...) is PGlite's own.
  return overriding(client, gated);
}

/** A transaction's `query`, with the parsers the client already has left out (store/pglite-parsers.ts). */
function txQuery(client: PGlite, tx: Transaction) {
  return (...[query, params, options]: Parameters<Transaction["query"]>) =>
    tx.query(query, params, withoutClientParsers(client, options));
}

/** `target` with some methods replaced and the rest its own. */
function overriding<T extends object>(target: T, methods: Record<string, unknown>): T {
  return new Proxy(target, {
    get(t, prop) {
      if (typeof prop === "string" && Object.hasOwn(methods, prop)) return methods[prop];
      // PGlite's getters read private fields, so they must see PGlite itself as `this`, not the proxy.
      const value = Reflect.get(t, prop);
      return typeof value === "function" ? value.bind(t) : value;
    },
  });
}
