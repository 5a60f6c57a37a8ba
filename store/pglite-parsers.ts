// drizzle's PGlite driver sends, with every statement, parsers that keep dates, timestamps, intervals and their
// arrays (and numeric[]) as PostgreSQL's text. PGlite merges a statement's parsers into a fresh copy of its own
// table (337 entries once it has registered the database's array types) before reading the rows: measured in
// process, `SELECT 1` took 0.28 ms with those parsers and 0.15 ms without, and a search runs about ten
// statements. Installed once as the client's own parsers, the same values come back without the copy.

import { type PGlite, types } from "@electric-sql/pglite";

type QueryOptions = NonNullable<Parameters<PGlite["query"]>[2]>;

/** The types drizzle keeps as text (drizzle-orm/pglite/session.js): numeric[], timestamp[], timestamptz[], interval[], date[]. */
const KEPT_AS_TEXT = [
  types.TIMESTAMP,
  types.TIMESTAMPTZ,
  types.INTERVAL,
  types.DATE,
  1231,
  1115,
  1185,
  1187,
  1182,
] as const;

const keepText = (value: string) => value;

/** Makes keeping those types as text the client's own behaviour (after PGlite registered its array types). */
export function installTextParsers(client: PGlite): void {
  for (const type of KEPT_AS_TEXT) client.parsers[type] = keepText;
}

/** A value no real parser returns unchanged unless it keeps the text as it is. */
const PROBE = "2026-01-01 00:00:00 probe";

/**
 * The statement's options without `parsers` when each of them keeps its text as the client already does for
 * that type; otherwise the options as they are (PGlite then merges them, slower but the same rows). Checked per
 * statement, so a caller with parsers of its own, or a client whose table PGlite re-registered, still gets them.
 */
export function withoutClientParsers(
  client: PGlite,
  options: QueryOptions | undefined,
): QueryOptions | undefined {
  const parsers = options?.parsers;
  if (!parsers) return options;
  for (const [type, parse] of Object.entries(parsers)) {
    if (client.parsers[type] !== keepText || parse(PROBE) !== PROBE) return options;
  }
  const { parsers: _dropped, ...rest } = options;
  return rest;
}
