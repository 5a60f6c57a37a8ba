import { mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import pg from "pg";
import lockfile from "proper-lockfile";
import { gatedPglite, PriorityGate } from "./pglite-gate.ts";
import { installTextParsers } from "./pglite-parsers.ts";
import { resolveSharedBuffers } from "./pglite-pool.ts";
import * as schema from "./schema/index.ts";

export type Schema = typeof schema;
/** Both drivers expose the same query builder; code above this module never knows which one it has. */
export type Database = PgDatabase<PgQueryResultHKT, Schema>;

export interface Store {
  /** For API requests: on PGlite their statements go before waiting background work (see pglite-gate.ts). */
  db: Database;
  /** For the worker, admission and maintenance loops. The same pool as `db` on PostgreSQL. */
  background: Database;
  driver: "pglite" | "postgres";
  /** PGlite only: the buffer pool it started with (PGLITE_SHARED_BUFFERS, `auto` resolved); unset for PGlite's own. */
  sharedBuffers?: string;
  close(): Promise<void>;
}

const migrationsFolder = fileURLToPath(new URL("./migrations", import.meta.url));

export class StoreLockedError extends Error {}

/**
 * Embedded PGlite under `<dataDir>/pglite`. PGlite itself does not lock its directory, and two
 * processes writing one directory corrupt it, so we take an exclusive lock first.
 */
export async function openPglite(
  dataDir: string,
  /** shared_buffers: a size, or `auto` to size it from the store (store/pglite-pool.ts); PGlite's own when unset. */
  opts: { sharedBuffers?: string } = {},
): Promise<Store> {
  const dir = path.join(dataDir, "pglite");
  mkdirSync(dir, { recursive: true });
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(dir, { stale: 15_000, update: 5_000, lockfilePath: `${dir}.lock` });
  } catch (error) {
    throw new StoreLockedError(
      `The embedded database at ${dir} is in use by another process (${(error as Error).message}). ` +
        "Stop it, or set DATABASE_URL to share a PostgreSQL server between processes.",
    );
  }
  try {
    // Sized after the lock is held: no other process is changing the directory while it is measured.
    const sharedBuffers = resolveSharedBuffers(opts.sharedBuffers, dir);
    const client = await PGlite.create(dir, {
      extensions: { vector },
      // PGlite's memory is WebAssembly's, which grows and never shrinks: its buffer pool, once filled, stays.
      startParams: sharedBuffers
        ? [...PGlite.defaultStartParams, "-c", `shared_buffers=${sharedBuffers}`]
        : undefined,
    });
    installTextParsers(client);
    const { db, background } = gatedDatabases(client);
    await migratePglite(db, { migrationsFolder });
    return {
      db,
      background,
      driver: "pglite",
      ...(sharedBuffers ? { sharedBuffers } : {}),
      async close() {
        await client.close();
        await release();
      },
    };
  } catch (error) {
    await release();
    throw error;
  }
}

/** An in-memory PGlite, for tests that need a throwaway store. */
export async function openMemoryPglite(): Promise<Store> {
  const client = await PGlite.create({ extensions: { vector } });
  installTextParsers(client);
  const { db, background } = gatedDatabases(client);
  await migratePglite(db, { migrationsFolder });
  return { db, background, driver: "pglite", close: () => client.close() };
}

/** Two query builders over one PGlite backend, taking turns at one gate in their own class. */
function gatedDatabases(client: PGlite) {
  const gate = new PriorityGate();
  return {
    db: drizzlePglite(gatedPglite(client, gate, "interactive"), { schema }),
    background: drizzlePglite(gatedPglite(client, gate, "background"), { schema }),
  };
}

export async function openPostgres(url: string, poolSize = 10): Promise<Store> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // An idle client that loses its server must not crash the process; the next query reconnects.
  pool.on("error", () => {});
  // The pool listens for errors only on idle clients. A checked-out client between two queries (inside a
  // transaction, say) that loses its server would emit an unhandled 'error' and kill the process; its next
  // query fails instead, and the pool discards it on release.
  pool.on("connect", (client) => client.on("error", () => {}));
  const db = drizzlePg(pool, { schema });
  try {
    await migrateExclusively(url, () => migratePg(db, { migrationsFolder }));
  } catch (error) {
    await pool.end();
    throw error;
  }
  return { db, background: db, driver: "postgres", close: () => pool.end() };
}

/** Any constant works, as long as every process of this service uses the same one. */
const MIGRATION_LOCK = 7_305_019_872;

/**
 * Several processes starting at once against a new database (two APIs and two workers in a deployment)
 * would run the same migrations side by side and fail on each other's `CREATE`s; a session-level
 * advisory lock makes them take turns, and the later ones find nothing left to do.
 */
async function migrateExclusively(url: string, migrate: () => Promise<void>): Promise<void> {
  const lock = new pg.Client({ connectionString: url });
  lock.on("error", () => {}); // a lost server fails the pending query, which is what reports it
  await lock.connect();
  try {
    await lock.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    await migrate();
  } finally {
    // Closing the session releases the lock even if the unlock itself fails.
    await lock.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => undefined);
    await lock.end().catch(() => undefined);
  }
}

export function openStore(opts: {
  databaseUrl?: string;
  dataDir: string;
  /** PGlite's buffer pool (PostgreSQL's shared_buffers), e.g. "32MB" or "auto"; PGlite's own default when unset. */
  pgliteSharedBuffers?: string;
}): Promise<Store> {
  return opts.databaseUrl
    ? openPostgres(opts.databaseUrl)
    : openPglite(opts.dataDir, { sharedBuffers: opts.pgliteSharedBuffers });
}

/** Raw SQL rows, the same for both drivers (each returns an object with `rows`). */
export async function queryRows<T = Record<string, unknown>>(
  db: Database,
  query: Parameters<Database["execute"]>[0],
): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}
