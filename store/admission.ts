import { and, asc, eq, inArray, lt, lte, notInArray, type SQL, sql } from "drizzle-orm";
import { type Database, queryRows } from "./db.ts";
import { DOCUMENT_PRIORITY, type DocumentPriority, documents } from "./schema/index.ts";

/**
 * Admission control, the store's half. A document's run waits here (`admitted_run < processing_run`)
 * until a pass admits it; only admitted runs get a Temporal workflow. A pass sees how many runs are in
 * flight, fills the free slots interactive runs first, and shares them across fairness keys (a
 * connection, else the first container tag) so the key with the fewest runs in flight goes next.
 * Passes take turns under an advisory lock, so several API and worker processes never overfill.
 */

/** Arbitrary, fixed: the advisory lock passes take turns under (the migration lock is another number). */
const ADMISSION_LOCK = 7_384_120_211;
/** Fairness keys looked at per pass and priority: plenty for the slots of one pass. */
const KEYS_PER_PASS = 256;

const unfinished = notInArray(documents.status, ["done", "failed"]);

export function fairnessKeyOf(doc: {
  connectionId?: string | null;
  containerTags: readonly string[];
}): string {
  if (doc.connectionId) return `connection:${doc.connectionId}`;
  return doc.containerTags[0] ? `tag:${doc.containerTags[0]}` : "";
}

/** fairnessKeyOf in SQL, for a statement that changes a document's tags to `tags` (an SQL array expression). */
export function fairnessKeySql(tags: SQL): SQL {
  return sql`CASE WHEN ${documents.connectionId} IS NOT NULL THEN 'connection:' || ${documents.connectionId}
    ELSE coalesce('tag:' || (${tags})[1], '') END`;
}

export interface AdmittedRun {
  documentId: string;
  run: number;
  priority: DocumentPriority;
  fairnessKey: string;
}

export interface AdmissionCounts {
  /** Runs waiting for a slot. */
  waiting: number;
  /** Admitted runs not yet done or failed. */
  inFlight: number;
}

/**
 * Admits up to `maxInFlight − in flight` runs and returns them; the caller starts their workflows.
 * `after` rotates ties among keys with equally few runs in flight (round robin from the last key served).
 */
export async function admitRuns(
  db: Database,
  opts: { maxInFlight: number; after?: string; limit?: number },
): Promise<AdmittedRun[]> {
  return db.transaction(async (tx) => {
    const t = tx as unknown as Database;
    await queryRows(t, sql`SELECT pg_advisory_xact_lock(${ADMISSION_LOCK})`);
    const inFlight = await inFlightByKey(t);
    let total = 0;
    for (const n of inFlight.values()) total += n;
    let slots = Math.min(opts.maxInFlight - total, opts.limit ?? Number.POSITIVE_INFINITY);
    if (slots <= 0) return [];

    const picked: { id: string; priority: number; fairnessKey: string }[] = [];
    for (const priority of [DOCUMENT_PRIORITY.interactive, DOCUMENT_PRIORITY.bulk]) {
      if (slots <= 0) break;
      const keys = await waitingKeys(t, priority);
      if (!keys.length) continue;
      // Each key's runs in flight, over every priority: its fair share counts all it already holds.
      const load = new Map(keys.map((k) => [k, inFlight.get(k) ?? 0]));
      const exhausted = new Set<string>();
      // A few rounds: a key may have fewer runs waiting than it was given; its share then goes to the others.
      for (let round = 0; round < 4 && slots > 0 && exhausted.size < keys.length; round++) {
        const want = share(keys, load, exhausted, slots, opts.after);
        const rows = await waitingRuns(t, priority, want);
        const got = new Map<string, number>();
        for (const row of rows) {
          picked.push({ id: row.id, priority, fairnessKey: row.fairness_key });
          got.set(row.fairness_key, (got.get(row.fairness_key) ?? 0) + 1);
        }
        for (const [key, n] of want) {
          const g = got.get(key) ?? 0;
          load.set(key, (load.get(key) ?? 0) + g);
          if (g < n) exhausted.add(key);
        }
        slots -= rows.length;
        if (!rows.length) break;
      }
    }
    if (!picked.length) return [];
    const admitted = await t
      .update(documents)
      .set({ admittedRun: sql`${documents.processingRun}`, admittedAt: new Date() } as never)
      .where(
        and(
          inArray(
            documents.id,
            picked.map((p) => p.id),
          ),
          lt(documents.admittedRun, documents.processingRun),
        ),
      )
      .returning({
        documentId: documents.id,
        run: documents.processingRun,
        priority: documents.priority,
        fairnessKey: documents.fairnessKey,
      });
    // Back in the order the slots were shared out, so starts follow it too.
    const order = new Map(picked.map((p, i) => [p.id, i]));
    return admitted.sort((a, b) => (order.get(a.documentId) ?? 0) - (order.get(b.documentId) ?? 0));
  });
}

/**
 * Hands `slots` out one at a time to the key holding the fewest runs in flight (water filling), ties
 * broken round robin from `after`. Returns how many runs each key is to get this round.
 */
function share(
  keys: string[],
  load: Map<string, number>,
  exhausted: Set<string>,
  slots: number,
  after?: string,
): Map<string, number> {
  const start = after === undefined ? 0 : keys.findIndex((k) => k > after);
  const rotated = start <= 0 ? keys : [...keys.slice(start), ...keys.slice(0, start)];
  const open = rotated.filter((k) => !exhausted.has(k));
  const current = new Map(open.map((k) => [k, load.get(k) ?? 0]));
  const want = new Map<string, number>();
  for (let i = 0; i < slots && open.length; i++) {
    let best = open[0] as string;
    for (const k of open) if ((current.get(k) ?? 0) < (current.get(best) ?? 0)) best = k;
    current.set(best, (current.get(best) ?? 0) + 1);
    want.set(best, (want.get(best) ?? 0) + 1);
  }
  return want;
}

async function inFlightByKey(db: Database): Promise<Map<string, number>> {
  const rows = await queryRows<{ fairness_key: string; n: number | string }>(
    db,
    sql`SELECT fairness_key, count(*) AS n FROM documents
        WHERE admitted_run = processing_run AND status NOT IN ('done', 'failed')
        GROUP BY fairness_key`,
  );
  return new Map(rows.map((r) => [r.fairness_key, Number(r.n)]));
}

/**
 * The distinct fairness keys with runs waiting at this priority, by a skip scan of the partial index
 * (one index probe per key), so a pass costs the same behind 200 or 20,000 waiting runs.
 */
async function waitingKeys(db: Database, priority: number): Promise<string[]> {
  const rows = await queryRows<{ fairness_key: string | null }>(
    db,
    sql`WITH RECURSIVE k(fairness_key) AS (
          (SELECT fairness_key FROM documents
            WHERE admitted_run < processing_run AND status NOT IN ('done', 'failed') AND priority = ${priority}
            ORDER BY priority, fairness_key LIMIT 1)
          UNION ALL
          SELECT (SELECT d.fairness_key FROM documents d
                   WHERE d.admitted_run < d.processing_run AND d.status NOT IN ('done', 'failed')
                     AND d.priority = ${priority} AND d.fairness_key > k.fairness_key
                   ORDER BY d.priority, d.fairness_key LIMIT 1)
            FROM k WHERE k.fairness_key IS NOT NULL
        )
        SELECT fairness_key FROM k WHERE fairness_key IS NOT NULL LIMIT ${KEYS_PER_PASS}`,
  );
  return rows.map((r) => r.fairness_key as string);
}

/** The oldest waiting runs of each key, as many as `want` says (passes take turns, so none is taken twice). */
async function waitingRuns(
  db: Database,
  priority: number,
  want: Map<string, number>,
): Promise<{ id: string; fairness_key: string }[]> {
  if (!want.size) return [];
  const keys = [...want.keys()];
  const counts = keys.map((k) => want.get(k) ?? 0);
  return queryRows<{ id: string; fairness_key: string }>(
    db,
    sql`SELECT d.id, d.fairness_key
          FROM unnest(${sql.param(keys)}::text[], ${sql.param(counts)}::int[]) AS w(fairness_key, n)
          CROSS JOIN LATERAL (
            SELECT id, fairness_key, created_at FROM documents
             WHERE admitted_run < processing_run AND status NOT IN ('done', 'failed')
               AND priority = ${priority} AND fairness_key = w.fairness_key
             ORDER BY priority, fairness_key, created_at
             LIMIT w.n
          ) d`,
  );
}

/** Gives admitted runs whose workflow could not be started back to the queue (their slots free again). */
export async function releaseAdmission(db: Database, runs: { documentId: string; run: number }[]) {
  for (const r of runs) {
    await db
      .update(documents)
      .set({ admittedRun: sql`${documents.workflowRun}`, admittedAt: null } as never)
      .where(
        and(
          eq(documents.id, r.documentId),
          eq(documents.admittedRun, r.run),
          lt(documents.workflowRun, r.run),
        ),
      );
  }
}

const admittedRunColumns = {
  documentId: documents.id,
  run: documents.processingRun,
  priority: documents.priority,
  fairnessKey: documents.fairnessKey,
};

/**
 * Runs in flight (admitted, unfinished) untouched since `updatedBefore`: their workflows are looked up
 * one by one, in case Temporal lost them (a wiped dev-server state file). Waiting runs are not listed:
 * they have no workflow yet, by design.
 */
export function staleRunsInFlight(db: Database, updatedBefore: Date, limit = 100): Promise<AdmittedRun[]> {
  return db
    .select(admittedRunColumns)
    .from(documents)
    .where(
      and(
        unfinished,
        eq(documents.admittedRun, documents.processingRun),
        lte(documents.updatedAt, updatedBefore),
      ),
    )
    .orderBy(asc(documents.updatedAt))
    .limit(limit);
}

/**
 * Admitted runs whose workflow start was never confirmed, admitted before `admittedBefore`: the
 * process that admitted them stopped between the two steps. Their starts are retried (idempotent).
 */
export function admittedWithoutWorkflow(
  db: Database,
  admittedBefore: Date,
  limit = 1000,
): Promise<AdmittedRun[]> {
  return db
    .select(admittedRunColumns)
    .from(documents)
    .where(
      and(
        unfinished,
        eq(documents.admittedRun, documents.processingRun),
        lt(documents.workflowRun, documents.processingRun),
        lte(documents.admittedAt, admittedBefore),
      ),
    )
    .limit(limit);
}

export async function admissionCounts(db: Database): Promise<AdmissionCounts> {
  const [row] = await queryRows<{ waiting: number | string; in_flight: number | string }>(
    db,
    sql`SELECT
          (SELECT count(*) FROM documents
            WHERE admitted_run < processing_run AND status NOT IN ('done', 'failed')) AS waiting,
          (SELECT count(*) FROM documents
            WHERE admitted_run = processing_run AND status NOT IN ('done', 'failed')) AS in_flight`,
  );
  return { waiting: Number(row?.waiting ?? 0), inFlight: Number(row?.in_flight ?? 0) };
}
