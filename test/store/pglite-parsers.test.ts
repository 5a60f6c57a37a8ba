import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { sql } from "drizzle-orm";
import { pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { drizzle } from "drizzle-orm/pglite";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { queryRows } from "../../store/db.ts";
import { gatedPglite, PriorityGate } from "../../store/pglite-gate.ts";
import { installTextParsers, withoutClientParsers } from "../../store/pglite-parsers.ts";
import * as schema from "../../store/schema/index.ts";

// One value of every type drizzle keeps as text, and some PGlite parses itself, to compare drivers by.
const EVERY_KIND = sql`SELECT
  timestamp '2026-11-28 09:30:00.123' AS ts, timestamptz '2026-11-28 09:30:00+02' AS tstz,
  interval '1 day 02:03:04' AS iv, date '2026-11-28' AS d, ARRAY[1.5, 2.25]::numeric[] AS nums,
  ARRAY[timestamp '2026-01-02 03:04:05']::timestamp[] AS tss, ARRAY[timestamptz '2026-01-02 03:04:05+00'] AS tstzs,
  ARRAY[interval '5 minutes'] AS ivs, ARRAY[date '2026-01-02'] AS ds, 42::int8 AS big, 7::int4 AS small,
  '{"a": [1, 2]}'::jsonb AS doc, ARRAY['x', 'y']::text[] AS tags, true AS yes, 1.5::float8 AS f, NULL::text AS nothing`;

const stamps = pgTable("stamps", {
  id: text("id").primaryKey(),
  at: timestamp("at", { withTimezone: true }).notNull(),
});

describe("the embedded store's row parsers", () => {
  let plain: PGlite;
  let tuned: PGlite;
  beforeAll(async () => {
    plain = await PGlite.create({ extensions: { vector } });
    tuned = await PGlite.create({ extensions: { vector } });
    installTextParsers(tuned);
  });
  afterAll(async () => {
    await plain.close();
    await tuned.close();
  });

  it("give drizzle the same values as PGlite with drizzle's own parsers, in and out of a transaction", async () => {
    const reference = drizzle(plain, { schema });
    const store = drizzle(gatedPglite(tuned, new PriorityGate(), "interactive"), { schema });
    const expected = await queryRows(reference, EVERY_KIND);
    expect(expected[0]?.ts).toBe("2026-11-28 09:30:00.123");
    expect(expected[0]?.tss).toBe('{"2026-01-02 03:04:05"}');
    expect(expected[0]?.doc).toEqual({ a: [1, 2] });
    expect(await queryRows(store, EVERY_KIND)).toEqual(expected);
    expect(await store.transaction((tx) => queryRows(tx, EVERY_KIND))).toEqual(expected);
    // The query builder reads rows as arrays (drizzle's other parser set), and maps timestamps itself.
    const built = async (db: typeof reference) => {
      await db.execute(sql`CREATE TABLE IF NOT EXISTS stamps (id text PRIMARY KEY, at timestamptz NOT NULL)`);
      await db.execute(
        sql`INSERT INTO stamps VALUES ('a', '2026-11-28 09:30:00.5+00') ON CONFLICT DO NOTHING`,
      );
      return db.select().from(stamps);
    };
    const rows = await built(reference);
    expect(rows[0]?.at).toEqual(new Date("2026-11-28T09:30:00.500Z"));
    expect(await built(store)).toEqual(rows);
  });

  it("are left out of a statement only when each keeps its text as the client already does", async () => {
    const store = drizzle(gatedPglite(tuned, new PriorityGate(), "interactive"), { schema });
    const query = vi.spyOn(tuned, "query");
    try {
      await queryRows(store, sql`SELECT 1 AS one`);
      const options = query.mock.calls[0]?.[2];
      expect(options).toEqual({ rowMode: "object" });
    } finally {
      query.mockRestore();
    }
    const asDate = { [1114]: (value: string) => new Date(value) };
    expect(withoutClientParsers(tuned, { parsers: asDate })).toEqual({ parsers: asDate });
    const keep = { [1114]: (value: string) => value };
    expect(withoutClientParsers(tuned, { rowMode: "array", parsers: keep })).toEqual({ rowMode: "array" });
    // A client without them installed keeps every statement's own.
    expect(withoutClientParsers(plain, { parsers: keep })).toEqual({ parsers: keep });
    // A type outside the installed ones keeps them too.
    const other = { [25]: (value: string) => value };
    expect(withoutClientParsers(tuned, { parsers: other })).toEqual({ parsers: other });
  });
});
