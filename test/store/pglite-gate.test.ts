import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openMemoryPglite, queryRows, type Store } from "../../store/db.ts";
import { PriorityGate } from "../../store/pglite-gate.ts";

describe("PriorityGate", () => {
  it("runs one piece of work at a time and serves waiting interactive work before waiting background work", async () => {
    const gate = new PriorityGate();
    const order: string[] = [];
    let running = 0;
    let releaseFirst!: () => void;
    const firstHolds = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    const work = (name: string, hold?: Promise<void>) => async () => {
      running++;
      expect(running).toBe(1);
      order.push(name);
      await hold;
      running--;
      return name;
    };
    const all = [
      gate.run("background", work("b1", firstHolds)),
      gate.run("background", work("b2")),
      gate.run("background", work("b3")),
      gate.run("interactive", work("i1")),
      gate.run("interactive", work("i2")),
    ];
    expect(gate.queued).toEqual({ interactive: 2, background: 2 });
    releaseFirst();
    expect(await Promise.all(all)).toEqual(["b1", "b2", "b3", "i1", "i2"]);
    expect(order).toEqual(["b1", "i1", "i2", "b2", "b3"]);
    expect(gate.queued).toEqual({ interactive: 0, background: 0 });
  });

  it("passes the turn on when the work fails", async () => {
    const gate = new PriorityGate();
    const failed = gate.run("background", async () => {
      throw new Error("boom");
    });
    const next = gate.run("interactive", async () => "next");
    await expect(failed).rejects.toThrow("boom");
    await expect(next).resolves.toBe("next");
  });

  it("lets the event loop turn between one waiter's work and the next, so I/O and thread messages are not starved", async () => {
    const gate = new PriorityGate();
    // Work that never waits on I/O (as PGlite's statements: WebAssembly run from promise callbacks). Handed on
    // through promises alone, 200 of them would all run before a callback queued now for the event loop.
    const ranBeforeLoop: number[] = [];
    let loopTurned = false;
    setImmediate(() => {
      loopTurned = true;
    });
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        gate.run(i % 2 ? "interactive" : "background", async () => {
          if (!loopTurned) ranBeforeLoop.push(i);
        }),
      ),
    );
    expect(loopTurned).toBe(true);
    expect(ranBeforeLoop.length).toBeLessThan(5);
    expect(gate.queued).toEqual({ interactive: 0, background: 0 });
  });
});

describe("PGlite store: API statements before waiting background work", () => {
  let store: Store;
  beforeAll(async () => {
    store = await openMemoryPglite();
  });
  afterAll(() => store.close());

  it("a query on db is answered before background transactions queued ahead of it", async () => {
    const order: string[] = [];
    let releaseFirst!: () => void;
    const firstHolds = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    const background = [0, 1, 2].map((i) =>
      store.background.transaction(async (tx) => {
        await tx.execute(sql`SELECT ${i}::int AS i`);
        if (i === 0) await firstHolds;
        order.push(`background ${i}`);
      }),
    );
    const interactive = queryRows<{ one: number }>(store.db, sql`SELECT 1 AS one`).then((rows) => {
      order.push("interactive");
      return rows;
    });
    // Let every statement above reach the gate before the first transaction ends.
    await new Promise((resolve) => setTimeout(resolve, 50));
    releaseFirst();
    expect(await interactive).toEqual([{ one: 1 }]);
    await Promise.all(background);
    expect(order).toEqual(["background 0", "interactive", "background 1", "background 2"]);
  });

  it("a transaction on db still sees and commits its own writes in order", async () => {
    await store.db.execute(sql`CREATE TEMP TABLE gate_check (n int)`);
    await Promise.all([
      store.background.transaction(async (tx) => {
        await tx.execute(sql`INSERT INTO gate_check VALUES (1)`);
      }),
      store.db.transaction(async (tx) => {
        await tx.execute(sql`INSERT INTO gate_check VALUES (2)`);
      }),
    ]);
    const rows = await queryRows<{ n: number }>(store.background, sql`SELECT n FROM gate_check ORDER BY n`);
    expect(rows.map((r) => r.n)).toEqual([1, 2]);
  });
});
